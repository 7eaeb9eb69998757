"""Post-compact cleanup, main thread vs sub-agent (the seed article's point): one Claude
Code process, module state shared by its agents (`workbench.strategies.process`)."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic import make_session

from workbench.memory.template import SessionMemory
from workbench.replay import replay_process, replay_session
from workbench.strategies import create
from workbench.strategies.base import ContextView
from workbench.tokens.estimators import get_estimator
from workbench.transcript import Block, Record

NOTES = SessionMemory.from_contents({"Current State": "main thread: migrating the parser", "Worklog": "ran tests"})
SMALL = {"context_window": 60_000, "max_output_tokens": 20_000}  # threshold 27,000


def _view(records: list[Record], *, tokens: int, subagent: bool) -> ContextView:
    rough = tuple(get_estimator("claude-rough").count_many(records))
    padded = tuple(get_estimator("claude-padded").count_many(records))
    return ContextView(tuple(records), tokens, rough, padded, 0, is_subagent=subagent, version="2.1.88")


def _chat(prefix: str, n: int) -> list[Record]:
    out = []
    for i in range(n):
        out.append(
            Record(
                "user",
                uuid=f"{prefix}u{i}",
                role="user",
                blocks=(Block.text_block(f"ask {i} " * 50),),
                string_content=True,
                has_content=True,
            )
        )
        out.append(
            Record(
                "assistant",
                uuid=f"{prefix}a{i}",
                role="assistant",
                message_id=f"{prefix}m{i}",
                has_content=True,
                blocks=(Block.text_block(f"answer {i} " * 400),),
            )
        )
    return out


def _process(**config):  # type: ignore[no-untyped-def]
    strategy = create("claude-code", {"version": "2.1.88", **config})
    main = strategy.new_state()
    main.sm.memory = NOTES
    main.sm.trigger.tokens_at_last_extraction = 150_000
    main.sm.trigger.last_summarized_message_id = "main-u3"
    return strategy, main, strategy.new_agent_state(main)


def test_a_subagent_shares_the_process_but_not_its_turn_state() -> None:
    _, main, agent = _process()
    assert agent.process is main.process and agent.sm is main.sm
    assert agent is not main and agent.budget_checked == 0


def test_a_subagent_compaction_leaves_the_main_threads_caches_alone() -> None:
    """``runPostCompactCleanup(agent:*)``: only resetMicrocompactState; the memory-file caches and the
    context-collapse store are the main thread's and are not touched."""
    strategy, main, agent = _process()
    compaction = strategy.compact(_view(_chat("sub-", 8), tokens=190_000, subagent=True), agent)
    assert compaction is not None
    process = main.process
    assert (process.microcompact_resets, process.memory_file_cache_clears, process.context_collapse_resets) == (1, 0, 0)
    assert process.cleanups == [{"agent": None, "main_thread": False}]
    # the session memory itself is the main thread's and survives
    assert main.sm.memory is NOTES and main.sm.trigger.tokens_at_last_extraction == 150_000


def test_a_subagent_reads_the_sessions_memory() -> None:
    """A sub-agent's SM-compaction uses the session's notes (getSessionMemoryContent has no agent scope):
    the main thread's lastSummarizedMessageId is not in the sub-agent's messages, so it falls back
    (v2.1.88); once unset, the sub-agent's conversation is summarised with the *main thread's* notes."""
    strategy, _, agent = _process()
    first = strategy.compact(_view(_chat("sub-", 8), tokens=190_000, subagent=True), agent)
    assert first.kind == "full-compact" and first.fallbacks == ("lastSummarizedMessageId not found",)
    second = strategy.compact(_view(_chat("sub2-", 8), tokens=190_000, subagent=True), agent)
    assert second.kind == "sm-compact" and "main thread: migrating the parser" in second.summary


def test_v2_1_88_lets_a_subagent_clear_the_main_threads_last_summarized_id() -> None:
    """``autoCompactIfNeeded`` resets the process-wide lastSummarizedMessageId after any compaction, a
    sub-agent's included (as shipped); ``subagent_resets_last_summarized=false`` is the article's intent."""
    strategy, main, agent = _process()
    strategy.compact(_view(_chat("sub-", 8), tokens=190_000, subagent=True), agent)
    assert main.sm.trigger.last_summarized_message_id is None
    strategy, main, agent = _process(subagent_resets_last_summarized=False)
    strategy.compact(_view(_chat("sub-", 8), tokens=190_000, subagent=True), agent)
    assert main.sm.trigger.last_summarized_message_id == "main-u3"


def test_a_main_thread_compaction_resets_the_main_thread_state() -> None:
    strategy, main, agent = _process()
    records = _chat("main-", 8)
    compaction = strategy.compact(_view(records, tokens=190_000, subagent=False), main)
    assert compaction.kind == "sm-compact" and not compaction.fallbacks
    process = agent.process
    assert (process.microcompact_resets, process.memory_file_cache_clears, process.context_collapse_resets) == (1, 1, 1)
    assert main.sm.trigger.last_summarized_message_id is None


def _later(stamp: str | None, minutes: int) -> str | None:
    if stamp is None:
        return None
    hour, minute = int(stamp[11:13]), int(stamp[14:16])
    total = hour * 60 + minute + minutes
    return f"{stamp[:11]}{total // 60:02d}:{total % 60:02d}{stamp[16:]}"


@pytest.fixture
def main_and_agent():  # type: ignore[no-untyped-def]
    """A main session and a sub-agent that starts 30 minutes in (while the main thread waits for it)."""
    main = make_session(turns=6, tools=3, result_chars=8_000)
    agent = make_session(turns=4, tools=3, result_chars=8_000)
    records = [
        dataclasses.replace(r, timestamp=_later(r.timestamp, 30), uuid=f"sub-{r.uuid}", is_sidechain=True)
        for r in agent.records
    ]
    agent = dataclasses.replace(
        agent, id="synthetic/agent-x", agent_id="x", parent_session_id="synthetic", records=tuple(records)
    )
    return main, agent


def test_replay_process_shares_one_process_and_equals_separate_replays_without_compaction(main_and_agent) -> None:
    main, agent = main_and_agent
    strategy = create("claude-code", {"sm": {"trigger": {"context_window": 1_000_000}}})
    together = replay_process([main, agent], strategy)
    apart = [replay_session(main, strategy), replay_session(agent, strategy)]
    assert [r.steps for r in together] == [r.steps for r in apart]


def test_replay_process_interleaves_and_a_subagent_sees_the_main_memory(main_and_agent) -> None:
    main, agent = main_and_agent
    strategy = create("claude-code", {"sm": {"trigger": SMALL}})
    together = replay_process([main, agent], strategy)
    alone = replay_session(agent, strategy)
    # on its own the sub-agent has no session memory; in the process it has the main thread's
    assert [e["fallbacks"] for e in alone.events][:1] == [["no session memory"]]
    assert together[1].events and together[1].events[0]["fallbacks"] != ["no session memory"]


def test_replay_process_rejects_unrelated_sessions(main_and_agent) -> None:
    main, agent = main_and_agent
    with pytest.raises(ValueError, match="one main session"):
        replay_process([agent], create("claude-code"))
    stranger = dataclasses.replace(agent, parent_session_id="someone-else")
    with pytest.raises(ValueError, match="not sub-agents"):
        replay_process([main, stranger], create("claude-code"))
