"""SM-compaction's fallbacks and quirks (docs §2.6 and §10), on hand-made contexts."""

from __future__ import annotations

from dataclasses import replace

from synthetic import make_session

from workbench.memory.template import SessionMemory
from workbench.memory.trigger import ExtractionTrigger
from workbench.replay import replay_session
from workbench.strategies import create
from workbench.strategies.base import ContextView
from workbench.strategies.sm_compact import SMCompactConfig, SMState, sm_compaction
from workbench.summarize.prompt import COMPACT_SUMMARY_PREFIX
from workbench.tokens.estimators import get_estimator

SMALL = {"context_window": 60_000, "max_output_tokens": 20_000}  # threshold 27,000


def _view(records, tokens=30_000) -> ContextView:
    records = tuple(records)
    rough = get_estimator("claude-rough").count_many(records)
    padded = get_estimator("claude-padded").count_many(records)
    return ContextView(records, tokens, rough, padded, step=5)


def _state(memory=None, last_summarized=None) -> SMState:
    trigger = ExtractionTrigger()
    trigger.last_summarized_message_id = last_summarized
    return SMState(trigger=trigger, memory=memory)


MEMORY = SessionMemory.from_contents({"Current State": "Fixing bug 3 in src/mod3.py", "Worklog": "- ran tests"})
CONFIG = SMCompactConfig(trigger=SMALL, full_compact={"trigger": SMALL})


def test_no_memory_falls_back_to_full_compaction() -> None:
    records = make_session(turns=4).records
    result = sm_compaction(_view(records), _state(), CONFIG, adjust=True)
    assert result.kind == "full-compact" and result.fallbacks == ("no session memory",)
    assert [r.kind for r in result.records[:2]] == ["system", "user"]  # boundary, summary; nothing kept


def test_template_only_memory_falls_back() -> None:
    result = sm_compaction(_view(make_session(turns=4).records), _state(SessionMemory.empty()), CONFIG, adjust=True)
    assert result.fallbacks == ("session memory is the empty template",)


def test_unknown_last_summarized_id_falls_back() -> None:
    state = _state(MEMORY, last_summarized="not-in-context")
    result = sm_compaction(_view(make_session(turns=4).records), state, CONFIG, adjust=True)
    assert result.fallbacks == ("lastSummarizedMessageId not found",)


def test_keeps_a_verbatim_tail_and_resets_last_summarized() -> None:
    records = make_session(turns=4).records
    last_text = next(i for i in range(len(records) - 1, -1, -1) if records[i].uuid == "a2.txt")
    state = _state(MEMORY, last_summarized="a2.txt")
    result = sm_compaction(_view(records), state, CONFIG, adjust=True)
    assert result.kind == "sm-compact" and not result.fallbacks
    boundary, summary, *kept = result.records
    assert boundary.is_compact_boundary and boundary.raw["parentUuid"] is None
    assert boundary.logical_parent_uuid == records[-1].uuid
    assert summary.is_compact_summary and summary.string_content
    assert summary.text.startswith(COMPACT_SUMMARY_PREFIX) and "Fixing bug 3" in summary.text
    assert "Recent messages are preserved verbatim." in summary.text
    # the window expands backward from after lastSummarizedMessageId until both minimums are met
    assert result.naive_start <= last_text + 1
    assert kept == list(records[result.start :])
    assert state.trigger.last_summarized_message_id is None  # reset after a successful compaction


def test_resumed_session_without_last_summarized_expands_back_from_the_end() -> None:
    records = make_session(turns=4).records
    result = sm_compaction(_view(records), _state(MEMORY), CONFIG, adjust=True)
    assert result.kind == "sm-compact"
    assert result.details["last_summarized_index"] == len(records) - 1
    assert 0 < result.start < len(records)


def test_post_compact_estimate_above_threshold_falls_back() -> None:
    records = make_session(turns=4, result_chars=30_000).records
    config = SMCompactConfig(trigger=SMALL, full_compact={"trigger": SMALL}, min_tokens=30_000, max_tokens=60_000)
    result = sm_compaction(_view(records), _state(MEMORY), config, adjust=True)
    assert result.fallbacks == ("post-compact estimate above the auto-compact threshold",)


def test_extraction_state_is_per_session_and_sub_agents_do_not_extract() -> None:
    session = make_session(turns=8, tools=3, result_chars=6_000)
    strategy = create("sm-compact", {"trigger": SMALL, "full_compact": {"trigger": SMALL}})
    first = replay_session(session, strategy)
    again = replay_session(session, strategy)
    assert first.events == again.events  # fresh state per replay, deterministic
    sidechain = tuple(replace(r, is_sidechain=True) for r in session.records)
    sub = replace(session, agent_id="x", records=sidechain)
    result = replay_session(sub, strategy)
    assert result.events and all(e["fallbacks"] == ["no session memory"] for e in result.events)


def test_each_extraction_is_recorded_with_the_notes_it_started_from() -> None:
    """The step rows carry each extraction's forked call (docs §1.3): its update prompt holds the notes
    *before* that extraction (the template before the first one), so later prompts grow with the notes,
    and the extractor that ran is named."""
    session = make_session(turns=8, tools=3, result_chars=6_000)
    strategy = create("sm-compact", {"trigger": SMALL, "full_compact": {"trigger": SMALL}})
    rows = [row for row in replay_session(session, strategy).steps if row["memory_extraction"]]
    assert len(rows) >= 2
    assert {row["extractor"] for row in rows} == {"offline"}
    prompts = [row["extraction_prompt_tokens"] for row in rows]
    assert prompts[0] < prompts[-1]  # the first prompt holds the empty template, the last the grown notes
    assert all(row["extraction_notes_tokens"] > 0 and row["extraction_edit_tokens"] > 0 for row in rows)
    assert all(row["extraction_context_tokens"] > 0 for row in rows)
