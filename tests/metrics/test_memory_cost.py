"""What session memory costs: the extractions, priced as Claude Code's forked call (docs §1.3), and no
summariser call for an SM-compaction whose summary is the notes file (docs §2.6 step 3)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from workbench.memory.fork import NO_EXTRACTION, ExtractionCall, edit_calls, edit_tokens, extraction_call
from workbench.memory.prompt import build_update_prompt, default_memory_path
from workbench.memory.template import SessionMemory
from workbench.metrics import cost_sessions, savings_sessions, validity_sessions
from workbench.replay import replay_frames, replay_session, replay_sessions
from workbench.strategies import create
from workbench.strategies.sm_compact import SMCompact
from workbench.tokens.js import rough_tokens
from workbench.transcript import Session, load_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay"))
from synthetic import make_session
from test_cost import _info

SMALL = {"context_window": 60_000, "max_output_tokens": 20_000}  # threshold 27,000


# ---------------------------------------------------------------- hand-computed prices
def _steps() -> pd.DataFrame:
    """Prompts 10k, 12k, 15k, then 4k after a compaction; extractions before steps 1 and 2."""
    steps = pd.DataFrame(
        {
            "session_id": "x",
            "strategy": "sm-compact",
            "step": [0, 1, 2, 3],
            "context_tokens": [10_000, 12_000, 15_000, 4_000],
            "tokens_without_compaction": [10_000, 12_000, 15_000, 17_000],
        }
    )
    for column, value in NO_EXTRACTION.items():
        steps[column] = value
    # before step 1: the fork read prompt(0) + the 500-token response, a 1k update prompt, 200 tokens of edits
    steps.loc[1, ["memory_extraction", "extraction_context_tokens", "extraction_prompt_tokens"]] = [True, 10_500, 1_000]
    steps.loc[1, ["extraction_notes_tokens", "extraction_edit_tokens", "extractor"]] = [600, 200, "offline"]
    # before step 2: prompt(1) + 800, a 1.2k prompt, 300 tokens of edits
    steps.loc[2, ["memory_extraction", "extraction_context_tokens", "extraction_prompt_tokens"]] = [True, 12_800, 1_200]
    steps.loc[2, ["extraction_notes_tokens", "extraction_edit_tokens", "extractor"]] = [900, 300, "offline"]
    return steps


def _event(**fields) -> pd.DataFrame:
    base = {
        "session_id": "x",
        "strategy": "sm-compact",
        "step": 3,
        "keep_start": 7,
        "dropped_uuids": [],
        "tokens_before": 17_000,
        "tokens_after": 4_000,
        "summary": "s" * 4_000,  # 1,000 rough tokens
    }
    return pd.DataFrame([{**base, **fields}])


def _cost(steps: pd.DataFrame, events: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> pd.Series:
    import workbench.metrics.cost as cost

    monkeypatch.setattr(cost, "session_call_info", lambda session, strip=True: _info(4))
    sessions = {"x": Session(id="x", records=(), models=("claude-opus-4-6",))}
    return cost_sessions(steps, events, sessions).iloc[0]


# requests: writes 10k + 2k + 3k + 4k (head replaced) = 19k × 6.25, reads 10k + 12k = 22k × 0.50, 400 out × 25
STEPS_USD = (19_000 * 6.25 + 22_000 * 0.50 + 400 * 25) / 1e6  # $0.13975
# extraction 1: read prompt(0) = 10k, write the 500-token response + the 1k prompt, 200 out
# extraction 2: read prompt(1) = 12k, write 800 + 1.2k, 300 out
MEMORY_USD = (10_000 * 0.50 + 1_500 * 6.25 + 200 * 25 + 12_000 * 0.50 + 2_000 * 6.25 + 300 * 25) / 1e6  # $0.045375


def test_two_extractions_and_an_sm_compaction_make_no_summariser_call(monkeypatch: pytest.MonkeyPatch) -> None:
    row = _cost(_steps(), _event(kind="sm-compact", summary_source="session-memory"), monkeypatch)
    assert row["step_cost_usd"] == pytest.approx(STEPS_USD)
    assert row["memory_extractions"] == 2
    assert row["memory_cost_usd"] == pytest.approx(0.045375) == pytest.approx(MEMORY_USD)
    assert row["summarizer_calls"] == 0 and row["summarizer_cost_usd"] == 0
    assert row["cost_usd"] == pytest.approx(0.185125)
    assert row["memory_share"] == pytest.approx(0.045375 / 0.185125)
    assert row["summarizer_share"] == 0
    # an events table written before summary_source existed: the SM kinds still mean "the notes file"
    old = _cost(_steps(), _event(kind="sm-compact"), monkeypatch)
    assert old["summarizer_calls"] == 0 and old["cost_usd"] == pytest.approx(0.185125)


def test_a_fallback_to_full_compaction_is_one_summariser_call(monkeypatch: pytest.MonkeyPatch) -> None:
    row = _cost(_steps(), _event(kind="full-compact", summary_source="offline", fallbacks=["no"]), monkeypatch)
    # the summariser reads 17k − (4k − 1k) = 14k from the cache and writes the 1k summary
    assert row["summarizer_calls"] == 1
    assert row["summarizer_cost_usd"] == pytest.approx((14_000 * 0.50 + 1_000 * 25) / 1e6)  # $0.032
    assert row["memory_cost_usd"] == pytest.approx(MEMORY_USD)  # the extractions happened all the same
    assert row["cost_usd"] == pytest.approx(0.217125)


def test_an_hour_ttl_session_writes_at_the_hour_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.metrics.cost as cost

    info = _info(4)
    hour = replace(info, ttl=3_600.0)
    monkeypatch.setattr(cost, "session_call_info", lambda session, strip=True: hour)
    sessions = {"x": Session(id="x", records=(), models=("claude-opus-4-6",))}
    row = cost_sessions(_steps(), _event(kind="sm-compact", summary_source="session-memory"), sessions).iloc[0]
    assert row["memory_cost_usd"] == pytest.approx(
        (10_000 * 0.50 + 1_500 * 10 + 200 * 25 + 12_000 * 0.50 + 2_000 * 10 + 300 * 25) / 1e6
    )


def test_steps_without_the_extraction_columns_price_no_extraction() -> None:
    steps = _steps().drop(columns=list(NO_EXTRACTION))
    row = cost_sessions(steps, _event(kind="sm-compact", summary_source="session-memory")).iloc[0]
    assert row["memory_extractions"] == 0 and row["memory_cost_usd"] == 0


# ---------------------------------------------------------------- what one extraction reads and writes
def test_edit_calls_replace_changed_lines_and_anchor_insertions() -> None:
    before = "# A\n_a_\nold line\n\n# B\n_b_"
    after = "# A\n_a_\nnew line\n\n# B\n_b_\nadded"
    calls = edit_calls(before, after, "/notes.md")
    assert calls == [
        {"file_path": "/notes.md", "old_string": "old line", "new_string": "new line"},
        {"file_path": "/notes.md", "old_string": "_b_", "new_string": "_b_\nadded"},  # anchored on the line before
    ]
    assert edit_calls("x\ny", "top\nx\ny", "/n")[0] == {"file_path": "/n", "old_string": "x", "new_string": "top\nx"}
    assert edit_calls(before, before, "/n") == []
    expected = sum(
        rough_tokens('Edit{"file_path":"/notes.md",' + tail)
        for tail in (
            '"old_string":"old line","new_string":"new line"}',
            '"old_string":"_b_","new_string":"_b_\\nadded"}',
        )
    )
    assert edit_tokens(before, after, "/notes.md") == expected


def test_extraction_call_measures_the_prompt_with_the_notes_before() -> None:
    session = make_session(turns=2, tools=1)
    records = list(session.records)
    after = SessionMemory.from_contents({"Current State": "fixing bug 1", "Worklog": "- read src/mod1.py"})

    class Offline:
        name = "offline"

    call = extraction_call(records, 12_345, None, after, Offline())
    path = default_memory_path(records)
    template = SessionMemory.empty().text
    assert call == ExtractionCall(
        context_tokens=12_345,
        prompt_tokens=rough_tokens(build_update_prompt(template, path)),
        notes_tokens=rough_tokens(after.text),
        edit_tokens=edit_tokens(template, after.text, path),
        extractor="offline",
    )
    assert call.columns["memory_extraction"] and call.columns["extraction_prompt_tokens"] == call.prompt_tokens

    class Online:  # reports what its calls really wrote
        name = "anthropic:claude-sonnet-4-6"
        notes_path = "/n.md"
        last_report = type("Report", (), {"usage": {"input_tokens": 9, "output_tokens": 321}})()

    online = extraction_call(records, 1, after, after, Online())
    assert online.edit_tokens == 321 and online.extractor == "anthropic:claude-sonnet-4-6"
    assert online.prompt_tokens == rough_tokens(build_update_prompt(after.text, "/n.md"))


# ---------------------------------------------------------------- the replay records every extraction
def test_the_replay_records_each_extraction_on_the_next_step_and_never_as_a_compaction() -> None:
    session = make_session(turns=8, tools=3, result_chars=6_000)
    hooks = []

    class Watched(SMCompact):  # the views of the hook runs that extracted
        def observe(self, view, state):  # type: ignore[no-untyped-def]
            call = super().observe(view, state)
            if call is not None:
                hooks.append((view.step, view.tokens, view.records[-1].kind))
            return call

    result = replay_session(session, Watched({"trigger": SMALL, "full_compact": {"trigger": SMALL}}))
    steps, events = replay_frames([result])
    extracted = steps[steps["memory_extraction"]]
    assert len(extracted) >= 2
    assert (extracted["extractor"] == "offline").all()
    assert steps.loc[~steps["memory_extraction"], "extractor"].isna().all()
    assert (extracted["extraction_notes_tokens"] > 0).all()
    assert (extracted["extraction_prompt_tokens"] > extracted["extraction_notes_tokens"]).all()  # rules + notes
    # each on the row of the call after the response whose hook ran it, with the size that hook saw
    rows = zip(extracted["step"], extracted["extraction_context_tokens"], strict=True)
    assert [(step - 1, tokens) for step, tokens in rows] == [(step, tokens) for step, tokens, _ in hooks]
    assert {kind for _, _, kind in hooks} == {"assistant"}  # the response, not yet its tool results
    # extractions are not compactions: not events, not counted, not in the compaction violation rate
    assert set(events["kind"]) <= {"sm-compact", "full-compact"}
    assert savings_sessions(steps, events)["compactions"].iloc[0] == len(events)
    valid = validity_sessions(steps, events).iloc[0]
    assert valid["compactions"] == len(events)
    # the same replay without session memory: no extraction anywhere
    for name in ("none", "full-compact"):
        plain = replay_frames([replay_session(session, create(name))])[0]
        assert not plain["memory_extraction"].any() and (plain["extraction_context_tokens"] == 0).all()


def test_a_pipeline_stage_that_extracts_is_recorded() -> None:
    session = make_session(turns=8, tools=3, result_chars=6_000)
    sm = replay_frames([replay_session(session, create("sm-compact", {"trigger": SMALL}))])[0]
    pipeline = create("openhands-pipeline", {"stages": [{"name": "sm-compact", "config": {"trigger": SMALL}}]})
    piped = replay_frames([replay_session(session, pipeline)])[0]
    assert piped["memory_extraction"].tolist() == sm["memory_extraction"].tolist()


# ---------------------------------------------------------------- the corpus
LONG = ("258c7280", "4d5611e5", "8463c716")


@pytest.fixture(scope="module")
def long_sessions(corpus):
    loaded = load_paths([corpus / "claude-code" / "marot-spotter"])
    return [s for s in loaded if not s.is_subagent and s.id[:8] in LONG]


@pytest.mark.corpus
def test_extractions_per_session_on_the_long_sessions(long_sessions) -> None:
    assert sorted(s.id[:8] for s in long_sessions) == sorted(LONG)
    counts = {}
    for name in ("sm-compact", "sm-compact-reference", "sm-compact-naive", "claude-code", "none", "full-compact"):
        steps, events = replay_frames(replay_sessions(long_sessions, create(name)))
        per = steps.groupby("session_id")["memory_extraction"].sum()
        counts[name] = {sid[:8]: int(n) for sid, n in per.items()}
        money = cost_sessions(steps, events, long_sessions).set_index("session_id")
        assert (money["memory_extractions"] == per.reindex(money.index)).all()
        if name in ("none", "full-compact"):
            assert (money["memory_cost_usd"] == 0).all()
        else:  # SM-compaction itself makes no summariser call on these sessions (no fallback)
            assert (events["summary_source"] == "session-memory").all() and len(events) == 3
            assert (money["summarizer_calls"] == 0).all() and (money["memory_cost_usd"] > 0).all()
    # the extraction trigger (docs §1.3) does not depend on the keep window or the cut adjustment
    pinned = {"258c7280": 17, "4d5611e5": 13, "8463c716": 15}
    assert counts["sm-compact"] == counts["sm-compact-reference"] == counts["sm-compact-naive"] == pinned
    assert counts["claude-code"] == pinned
    assert counts["none"] == counts["full-compact"] == dict.fromkeys(LONG, 0)
