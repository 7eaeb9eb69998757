"""Replaying the real corpus reproduces where Claude Code really compacted."""

from __future__ import annotations

import pytest

from workbench.replay import replay_session, strip_recorded_compactions
from workbench.strategies import create
from workbench.transcript.steps import api_calls


def _recorded_boundaries(session):
    """(message_id of the last API call before each recorded auto compact_boundary, preTokens)."""
    records = session.conversation()
    calls = api_calls(records)
    out = []
    for index, record in enumerate(records):
        if record.is_compact_boundary and record.compact_metadata.get("trigger") == "auto":
            before = [c for c in calls if c.first < index]
            out.append((before[-1].message_id, record.compact_metadata["preTokens"]))
    return out


@pytest.fixture(scope="module")
def compacted_sessions(main_sessions):
    found = [s for s in main_sessions if _recorded_boundaries(s)]
    assert len(found) == 3
    return found


@pytest.mark.parametrize("strategy", ["claude-code", "full-compact"])
def test_first_auto_compaction_after_the_same_api_call(compacted_sessions, strategy) -> None:
    for session in compacted_sessions:
        [(message_id, pre_tokens)] = _recorded_boundaries(session)
        result = replay_session(session, create(strategy))
        auto = [e for e in result.events if e["trigger"] == "auto"]
        assert auto, f"{session.id}: no auto-compaction"
        first = auto[0]
        assert first["after_message_id"] == message_id, (session.id, first["step"], first["tokens_before"], pre_tokens)
        assert abs(first["tokens_before"] - pre_tokens) / pre_tokens < 0.01


def test_recorded_reference_reports_each_boundary(compacted_sessions) -> None:
    for session in compacted_sessions:
        result = replay_session(session, create("recorded"))
        [event] = result.events
        [(message_id, pre_tokens)] = _recorded_boundaries(session)
        assert event["kind"] == "recorded-compact" and event["after_message_id"] == message_id
        assert event["tokens_before"] == pre_tokens and event["summary"].startswith("This session is being continued")


PAIRING = {"tool_result_without_tool_use", "tool_use_without_tool_result", "duplicate_tool_use_id"}


def _rules(results) -> list[str]:
    return [rule for r in results for e in r.events for rule in e["violation_rules"]]


def test_the_reference_adjustment_fixes_pairing_but_not_the_thinking_rule(compacted_sessions) -> None:
    reference = [replay_session(s, create("sm-compact-reference")) for s in compacted_sessions]
    naive = [replay_session(s, create("sm-compact-naive")) for s in compacted_sessions]
    assert [len(r.events) for r in reference] == [1, 1, 1]
    assert all(e["kind"] == "sm-compact" and not e["fallbacks"] for r in reference for e in r.events)
    # the reference adjustment fixes pairing; what it leaves is the thinking rule (docs/replay.md: the kept
    # window opens mid tool loop with a thinking-less response, 3 of 3 real auto-compactions)
    assert not PAIRING & set(_rules(reference))
    assert _rules(reference) == ["final_assistant_missing_thinking"] * 3
    assert PAIRING & set(_rules(naive))
    # claude-code reproduces v2.1.88 as shipped, i.e. the reference SM step
    shipped = [replay_session(s, create("claude-code", {"version": "2.1.88"})) for s in compacted_sessions]
    assert [e["keep_start"] for r in shipped for e in r.events if e["kind"] == "sm-compact"] == [
        e["keep_start"] for r in reference for e in r.events
    ]


def test_why_the_reference_cut_lands_inside_the_running_tool_loop(compacted_sessions) -> None:
    """Every response before these compactions made a tool call, so ``lastSummarizedMessageId`` (set only
    after a tool-free turn, docs §1.2) was never set and the window expands backward from ``len - 1``
    (docs §2.6 step 4): the keep window starts after the prompt that opened the running tool loop."""
    for session in compacted_sessions:
        [event] = replay_session(session, create("sm-compact-reference")).events
        records = strip_recorded_compactions(session.conversation())[0]
        calls = api_calls(records)[: event["step"]]
        assert all(any(b.type == "tool_use" for i in c.indices for b in records[i].blocks) for c in calls)
        prompts = [
            i
            for i, r in enumerate(records[: calls[-1].first])
            if r.kind == "user" and r.blocks and not any(b.type == "tool_result" for b in r.blocks)
        ]
        assert event["keep_start"] > prompts[-1]


def test_sm_compact_is_valid_on_the_whole_corpus(main_sessions) -> None:
    """With ``sm-compact`` (reference + our thinking-aware cut), zero violations."""
    results = [replay_session(s, create("sm-compact")) for s in main_sessions]
    assert sum(len(r.events) for r in results) == 3
    assert sum(e["violations"] for r in results for e in r.events) == 0
    assert sum(s["violations"] for r in results for s in r.steps) == 0
    moved = [e for r in results for e in r.events if e["keep_start"] < e["naive_start"]]
    assert len(moved) == 3  # the cut had to move on every compaction


def test_the_compaction_agents_own_call_is_never_compacted(claude_sessions) -> None:
    agents = [s for s in claude_sessions if s.agent_id and s.agent_id.startswith("acompact")]
    assert len(agents) == 3 and all(s.metadata["query_source"] == "compact" for s in agents)
    for session in agents:
        result = replay_session(session, create("claude-code"))
        assert result.peak_context_tokens > 167_000  # above the threshold, yet:
        assert result.events == []
