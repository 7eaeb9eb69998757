from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from record_builders import assistant, result, session, text, tool_use, user

from workbench.metrics import extract_facts, fidelity, fidelity_events, fidelity_sessions, section_coverage
from workbench.metrics.fidelity import COMPACT_SECTIONS, reference_fidelity
from workbench.replay import replay_frames, replay_sessions
from workbench.strategies import create
from workbench.strategies.base import Compaction, ContextView, Strategy, StrategyConfig
from workbench.transcript import Session

MODEL = "claude-opus-4-6"
HAND = {"session_id": "hand"}


def parser_session() -> Session:
    """The fidelity docstring's worked example: r1-r3 then the call that uses app/parser.py again."""
    return session(
        [
            user("Please fix the tokenizer bug reported yesterday in src/app/parser.py", uuid="r1", cwd=None, **HAND),
            assistant(
                tool_use("t1", "Bash", command="pytest tests/test_parser.py"),
                message_id="m1",
                uuid="a1",
                model=MODEL,
                **HAND,
            ),
            result("t1", "FAILED tests/test_parser.py::test_x - ValueError: bad", uuid="r3", **HAND),
            assistant(
                tool_use("t2", "Edit", file_path="/repo/src/app/parser.py", old_string="x", new_string="y"),
                message_id="m2",
                uuid="a2",
                model=MODEL,
                **HAND,
            ),
        ]
    )


def _event(**changes: Any) -> dict[str, Any]:
    return {
        "session_id": "hand",
        "strategy": "s",
        "kind": "test",
        "step": 1,
        "dropped_uuids": ["r1", "a1", "r3"],
        "kept_uuids": [],
        "summary": "Fixing src/app/parser.py",
        "keep_start": 3,
        **changes,
    }


def test_facts_keep_their_records():
    facts = {(f.kind, f.key): f for f in extract_facts(parser_session().records)}
    assert facts[("path", "app/parser.py")].uuids == {"r1", "a2"}
    assert facts[("path", "tests/test_parser.py")].uuids == {"a1", "r3"}
    assert facts[("command", "pytest tests/test_parser.py")].uuids == {"a1"}
    assert facts[("error", "FAILED tests/test_parser.py::test_x - ValueError: bad")].uuids == {"r3"}
    assert [f.kind for f in facts.values() if f.uuids == {"r1"}] == ["directive"]


def test_worked_example():
    row = fidelity_events(parser_session(), [_event()]).iloc[0]
    assert (row["dropped_facts"], row["dropped_facts_kept"]) == (5, 1)
    assert row["dropped_recall"] == pytest.approx(0.2)
    assert (row["needed_facts"], row["needed_facts_kept"]) == (2, 1)
    assert row["needed_recall"] == pytest.approx(0.5)


def test_summary_that_keeps_everything_needed():
    summary = "User: fix the tokenizer bug reported yesterday in src/app/parser.py. Ran pytest tests/test_parser.py."
    row = fidelity_events(parser_session(), [_event(summary=summary)]).iloc[0]
    assert row["needed_recall"] == 1.0
    assert row["dropped_recall"] == pytest.approx(4 / 5)  # the error line did not survive


def test_kept_records_count_as_context():
    row = fidelity_events(parser_session(), [_event(dropped_uuids=["a1"], summary=None)]).iloc[0]
    # a1's facts: its command (lost) and tests/test_parser.py (still in r3, kept)
    assert (row["dropped_facts"], row["dropped_facts_kept"]) == (2, 1)
    assert row["needed_facts"] == 0 and row["needed_recall"] == 1.0


def test_nothing_dropped_is_one():
    steps = pd.DataFrame({"session_id": ["hand"], "strategy": ["s"], "step": [0]})
    out = fidelity_sessions(pd.DataFrame(), steps).iloc[0]
    assert (out["needed_recall"], out["dropped_recall"], out["compactions"]) == (1.0, 1.0, 0)


def test_section_coverage():
    text = "\n".join(f"{i}. {name}:" for i, name in enumerate(COMPACT_SECTIONS[:6], 1))
    cov = section_coverage(text)
    assert cov["summary_template"] == "compact" and cov["section_coverage"] == pytest.approx(6 / 9)
    assert section_coverage("# Session Title\n# Current State\n")["summary_template"] == "session-memory"
    assert section_coverage(None)["summary_tokens"] == 0


def test_directive_presence_is_word_overlap():
    s = session(
        [
            user("Never commit generated migrations directly", uuid="u1", cwd=None, **HAND),
            assistant(text("ok"), message_id="m1", uuid="a1", model=MODEL, **HAND),
        ]
    )
    kept = fidelity_events(s, [_event(step=0, dropped_uuids=["u1"], summary="never commit migrations directly")])
    lost = fidelity_events(s, [_event(step=0, dropped_uuids=["u1"], summary="unrelated")])
    assert kept.iloc[0]["needed_recall"] == 1.0 and lost.iloc[0]["needed_recall"] == 0.0


class _Config(StrategyConfig):
    threshold: int = 167_000
    keep_tokens: int = 0


class _Cut(Strategy):
    """Test-local: above the threshold keep the last ``keep_tokens`` (rough) of the context, no summary."""

    name = "test-cut"
    unsafe = True
    Config = _Config

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        if view.tokens < self.config.threshold:
            return None
        start, total = len(view.records), 0
        while start > 0 and total + view.rough[start - 1] <= self.config.keep_tokens:
            start -= 1
            total += view.rough[start]
        kept = view.records[start:]
        return Compaction(
            kind="cut",
            trigger="auto",
            records=tuple(kept),
            dropped=tuple(r.uuid for r in view.records[:start]),
            start=start,
            naive_start=start,
        )


@pytest.fixture(scope="module")
def long_sessions(main_sessions):
    return [s for s in main_sessions if len(s.records) > 1000]


def _needed(sessions, strategy) -> tuple[float, int]:
    steps, events = replay_frames(replay_sessions(sessions, strategy))
    per_session = fidelity_sessions(fidelity(sessions, events), steps)
    needed = per_session["needed_facts"].sum()
    return per_session["needed_facts_kept"].sum() / needed if needed else 1.0, len(events)


@pytest.mark.corpus
def test_needed_recall_discriminates(long_sessions):
    assert len(long_sessions) >= 3
    nothing, n_nothing = _needed(long_sessions, _Cut({"keep_tokens": 0}))
    window, n_window = _needed(long_sessions, _Cut({"keep_tokens": 40_000}))
    everything, n_everything = _needed(long_sessions, create("none"))
    assert n_nothing >= 3 and n_window >= 3 and n_everything == 0
    assert nothing < window <= everything == 1.0
    assert nothing < 0.05


@pytest.mark.corpus
def test_sm_compact_between_nothing_and_everything(long_sessions):
    try:
        recall, events = _needed(long_sessions, create("sm-compact"))
    except (ImportError, AttributeError) as exc:  # sm-compact's memory extractor is being rewritten concurrently
        pytest.skip(f"sm-compact not runnable here: {exc}")
    nothing, _ = _needed(long_sessions, _Cut({"keep_tokens": 0}))
    assert events >= 1
    assert nothing < recall <= 1.0


@pytest.mark.corpus
def test_reference_scores_claudes_summaries(claude_sessions):
    ref = reference_fidelity(claude_sessions)
    assert set(ref["source"]) == {"compact-summary", "acompact-transcript"}
    assert len(ref[ref["source"] == "compact-summary"]) == 3
    summaries = ref[ref["source"] == "compact-summary"]
    assert (summaries["section_coverage"] == 1.0).all()
    assert ((summaries["needed_recall"] > 0.3) & (summaries["needed_recall"] < 1.0)).all()
    assert (summaries["dropped_recall"] < summaries["needed_recall"]).all()


@pytest.mark.corpus
def test_recorded_strategy_matches_reference(claude_sessions):
    _, events = replay_frames(replay_sessions(claude_sessions, create("recorded")))
    per_event = fidelity(claude_sessions, events)
    ref = reference_fidelity(claude_sessions)
    ref = ref[ref["source"] == "compact-summary"].set_index("session_id")["needed_recall"]
    got = per_event.set_index("session_id")["needed_recall"]
    assert got.sort_index().round(6).tolist() == ref.sort_index().round(6).tolist()


def test_presence_does_not_penalise_form():
    """A paraphrasing summary names a file by its basename or an identifier in another case or separator
    style; both count as kept (a strict rule, key among the text's atoms, would miss both)."""
    from workbench.metrics.facts import Fact, FactIndex

    path = Fact("path", "app/parser.py", "src/app/parser.py", frozenset())
    symbol = Fact("symbol", "session_live", "session_live", frozenset())
    camel = Fact("symbol", "SessionLive", "SessionLive", frozenset())
    summary = FactIndex(["Fixed the bug in parser.py; the Session Live view and session_live.ex now agree."])
    assert path in summary and symbol in summary and camel in summary
    assert Fact("path", "app/lexer.py", "app/lexer.py", frozenset()) not in summary
    assert Fact("symbol", "render_view", "render_view", frozenset()) not in summary
    # combining per-text indexes keeps the loose forms
    assert camel in FactIndex.combine([FactIndex(["nothing here"]), FactIndex(["see SessionLive"])])
