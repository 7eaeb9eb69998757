"""Deviations from the v2.1.88 reference found by a line-by-line audit against the reference; each test fails on
the old behaviour (named in its docstring)."""

from __future__ import annotations

import pytest
from helpers import view_of
from record_builders import assistant, result, say, tool_use, user

from workbench.memory.template import SessionMemory
from workbench.replay.sizes import UncompactedSize
from workbench.request.invariants import adjust_to_api_invariants
from workbench.strategies import claude_code, create, sm_compact
from workbench.strategies.full_compact import FullCompactConfig, post_compact_file_attachments
from workbench.strategies.microcompact import TimeBasedConfig, time_based_microcompact
from workbench.strategies.sm_compact import SMCompactReferenceConfig, new_sm_state, sm_compaction
from workbench.tokens.context import token_count_with_estimation
from workbench.tokens.estimators import estimate_message_tokens, get_estimator
from workbench.transcript.model import Block, Record

NOTES = SessionMemory.from_contents({"Current State": "fixing the parser", "Worklog": "read the failing test"})
#: keep exactly the last three text messages: no token minimum, a generous maximum
WINDOW = {"min_tokens": 0, "min_text_block_messages": 3, "max_tokens": 10_000}


def _sm_state(config: SMCompactReferenceConfig):  # type: ignore[no-untyped-def]
    state = new_sm_state(config)
    state.memory = NOTES
    return state


def _chat(n: int) -> list[Record]:
    """A prompt then ``n`` one-token answers ("abcd": chars/4 = 1, claude-padded ceil(4/3) = 2 each)."""
    return [user("please fix it", uuid="u0"), *(say("abcd", message_id=f"m{i}") for i in range(n))]


def test_post_compact_size_check_rounds_the_whole_list_once() -> None:
    """docs §2.6 step 8: ``estimateMessageTokens(postCompactMessages)`` = ceil(4/3 × 3) = 4 for three
    one-token messages; the old check summed the per-record ceilings (2+2+2 = 6) and fell back to full
    compaction at a threshold of 5."""
    config = SMCompactReferenceConfig(**WINDOW)
    records = _chat(3)
    assert estimate_message_tokens(records[1:]) == 4
    assert sum(get_estimator("claude-padded").count_many(records[1:])) == 6
    compaction = sm_compaction(view_of(records), _sm_state(config), config, adjust=True, threshold=5)
    assert compaction.kind == "sm-compact" and not compaction.fallbacks
    assert compaction.details["post_compact_tokens"] == 4
    assert sm_compaction(view_of(records), _sm_state(config), config, adjust=True, threshold=4).fallbacks == (
        "post-compact estimate above the auto-compact threshold",
    )


def test_a_fallback_to_full_compaction_resets_last_summarized_message_id() -> None:
    """docs §1.2/§2.6 step 11 (``autoCompactIfNeeded`` resets it after full compaction too): the old code
    kept the stale id, so every later SM-compact fell back with 'lastSummarizedMessageId not found'."""
    config = SMCompactReferenceConfig(**WINDOW)
    state = _sm_state(config)
    state.trigger.last_summarized_message_id = "compacted-away"
    first = sm_compaction(view_of(_chat(3)), state, config, adjust=True)
    assert first.fallbacks == ("lastSummarizedMessageId not found",)
    assert state.trigger.last_summarized_message_id is None
    second = sm_compaction(view_of(_chat(4)), state, config, adjust=True)
    assert second.kind == "sm-compact" and not second.fallbacks


def test_sm_boundary_pre_tokens_is_the_last_api_usage() -> None:
    """docs §2.6 step 7: ``preCompactTokenCount = tokenCountFromLastAPIResponse(messages)``; the old code
    wrote the engine's estimate (``view.tokens``)."""
    config = SMCompactReferenceConfig(**WINDOW)
    view = view_of(_chat(3), tokens=170_000)
    view = type(view)(**{**view.__dict__, "usage_tokens": 168_500})
    compaction = sm_compaction(view, _sm_state(config), config, adjust=True)
    assert compaction.records[0].compact_metadata["preTokens"] == 168_500


def test_an_exception_inside_sm_compaction_falls_back_to_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs §2.6 step 9: any thrown error → null → full compaction; the old code let it escape."""
    config = SMCompactReferenceConfig(**WINDOW)

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError("summary.md unreadable")

    monkeypatch.setattr("workbench.strategies.keep_window.keep_window", broken)
    compaction = sm_compaction(view_of(_chat(3)), _sm_state(config), config, adjust=True)
    assert compaction.kind == "full-compact"
    assert compaction.fallbacks == ("session-memory compaction error: OSError: summary.md unreadable",)


def test_the_circuit_breaker_stops_after_three_failures_per_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs §4.4: three consecutive failed compactions skip auto-compaction for the rest of the user turn;
    the next user prompt re-arms it. The old code declared the constant and never used it."""
    attempts = []

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        attempts.append(1)
        raise RuntimeError("API Error: 529 overloaded")

    monkeypatch.setattr(claude_code, "full_compaction", failing)
    strategy = create("claude-code", {"session_memory": False, "version": "2.1.88"})
    state = strategy.new_state()
    records = _chat(3)
    for _ in range(5):
        assert strategy.compact(view_of(records, tokens=190_000), state) is None
    assert len(attempts) == 3
    records = [*records, user("now try again", uuid="u1")]
    assert strategy.compact(view_of(records, tokens=190_000), state) is None
    assert len(attempts) == 4
    # before v2.1.76 there was no breaker
    old = create("claude-code", {"session_memory": False, "version": "2.1.50"})
    old_state = old.new_state()
    for _ in range(5):
        old.compact(view_of(_chat(3), tokens=190_000), old_state)
    assert len(attempts) == 9


def test_time_based_microcompact_that_saves_nothing_is_no_event() -> None:
    """docs §3.3: ``tokensSaved === 0`` returns null. A one-character output (chars/4 rounds to 0) cleared
    saves nothing; the old code reported a microcompact event for it."""
    records = [
        user("go"),
        assistant(
            tool_use("t1", "Bash", command="true"),
            tool_use("t2", "Bash", command="ls"),
            message_id="a",
            timestamp="2026-01-01T00:00:00Z",
        ),
        result("t1", "x"),
        result("t2", "a long listing " * 20),
    ]
    view = view_of(records)
    later = type(view)(**{**view.__dict__, "timestamp": "2026-01-01T02:00:00Z"})
    assert time_based_microcompact(later, TimeBasedConfig(enabled=True, keep_recent=1)) is None
    records[2] = result("t1", "a big old output " * 40)
    view = view_of(records)
    later = type(view)(**{**view.__dict__, "timestamp": "2026-01-01T02:00:00Z"})
    event = time_based_microcompact(later, TimeBasedConfig(enabled=True, keep_recent=1))
    assert event is not None and event.details["tokens_saved"] == 170


def test_claude_md_is_not_re_attached_after_full_compaction() -> None:
    """docs §5.4: CLAUDE.md and other memory files are excluded from the re-attached files (they return
    with the user context); the old code re-attached a recently read CLAUDE.md."""
    reads = [
        assistant(tool_use("c", "Read", file_path="/repo/src/app.py"), message_id="r1"),
        result("c", "print('app')"),
        assistant(tool_use("d", "Read", file_path="/repo/CLAUDE.md"), message_id="r2"),
        result("d", "# Project rules"),
        assistant(tool_use("e", "Read", file_path="/repo/.claude/rules/style.md"), message_id="r3"),
        result("e", "be terse"),
    ]
    attached = post_compact_file_attachments(reads, FullCompactConfig())
    assert [r.uuid for r in attached] == ["attachment-c"]


def test_an_empty_message_id_is_no_id_for_the_sibling_step() -> None:
    """docs §2.5 step 2 tests ``message.id`` for truthiness: two unrelated responses recorded with an empty
    id are not siblings; the old code pulled the cut back to the earlier one."""
    records = [
        user("q"),
        Record("assistant", role="assistant", message_id="", has_content=True, blocks=(Block.text_block("one"),)),
        user("and?"),
        Record("assistant", role="assistant", message_id="", has_content=True, blocks=(Block.text_block("two"),)),
    ]
    assert adjust_to_api_invariants(records, 3) == 3


def test_the_engine_size_matches_token_count_with_estimation_around_a_synthetic_assistant() -> None:
    """docs §6 step 2: the walk back to the first sibling stops at *any* assistant with another id, a
    synthetic one included. The old engine anchored on the first usage-bearing sibling and skipped the
    synthetic record (it has no real usage), so it also counted the records between the siblings."""
    usage = {"input_tokens": 1000, "output_tokens": 10}
    records = [
        user("go"),
        assistant(tool_use("t1", "Bash", command="make"), message_id="X", usage=usage, model="m"),
        result("t1", "compiler output " * 30),
        Record(
            "assistant",
            role="assistant",
            message_id="S",
            has_content=True,
            usage=usage,
            model="<synthetic>",
            blocks=(Block.text_block("No response requested."),),
        ),
        assistant(
            tool_use("t2", "Bash", command="ls"),
            message_id="X",
            model="m",
            usage={"input_tokens": 1000, "output_tokens": 50},
        ),
        result("t2", "a b c"),
        user("next"),
    ]
    rough = get_estimator("claude-rough").count_many(records)
    size = UncompactedSize(records, rough, [])
    for n in range(2, len(records) + 1):  # from the first response on (before it the engine adds the overhead)
        assert size.before(n) == token_count_with_estimation(records[:n]), n


def test_sm_compact_module_keeps_its_public_names() -> None:
    assert {"sm_compaction", "SMState"} <= set(sm_compact.__all__)


def test_the_breakers_turn_is_the_last_real_prompt() -> None:
    """``_turn`` (the circuit breaker's scope): the last user record with text that is not meta, not a compact
    summary and holds no tool_result, whatever else follows it; None without one."""
    mixed = Record(  # text *and* a tool_result: a tool loop's message, not a prompt
        kind="user",
        role="user",
        uuid="mixed",
        blocks=(*result("t1", "out").blocks, Block.text_block("also text")),
        has_content=True,
    )
    empty = Record(kind="user", role="user", uuid="empty", blocks=(Block.text_block(""),), string_content=True)
    tail = [
        say("working"),
        result("t0", "done"),
        mixed,
        user("note", uuid="meta", is_meta=True),
        user("summary", uuid="summary", is_compact_summary=True),
        empty,
        say("more"),
    ]

    def turn(records: list[Record]) -> str | None:
        return claude_code._turn(view_of(records), create("claude-code").new_state())

    assert turn([user("first", uuid="p1"), *tail]) == "p1"
    assert turn([user("first", uuid="p1"), user("second", uuid="p2"), *tail]) == "p2"
    assert turn(tail) is None
    array = Record(kind="user", role="user", uuid="p3", blocks=(Block.text_block("array prompt"),), has_content=True)
    assert turn([*tail, array, result("t2", "x")]) == "p3"


def test_the_breakers_turn_walks_back_only_over_new_records_and_rescans_after_a_compaction() -> None:
    """``_turn`` remembers where it found the prompt: asked again with records appended it answers as a
    full scan would, a new prompt among them wins, and a context where that prompt moved (a compaction
    dropped what was before it) or is gone is scanned again in full."""
    state = create("claude-code").new_state()
    p1, p2 = user("first", uuid="p1"), user("second", uuid="p2")
    loop = [say("a"), result("t0", "x"), say("b")]
    assert claude_code._turn(view_of([p1, *loop]), state) == "p1"
    assert state.turn_at == (0, p1)
    assert claude_code._turn(view_of([p1, *loop, *loop]), state) == "p1"
    assert claude_code._turn(view_of([p1, *loop, p2, *loop]), state) == "p2"
    assert state.turn_at == (4, p2)
    assert claude_code._turn(view_of([p2, *loop]), state) == "p2"  # moved to 0: found again by a full scan
    assert state.turn_at == (0, p2)
    assert claude_code._turn(view_of(loop), state) is None  # gone
    assert claude_code._turn(view_of([*loop, p1]), state) == "p1"
    # a different prompt object at the remembered position is not taken for the remembered one
    assert claude_code._turn(view_of([*loop, user("other", uuid="o")]), state) == "o"


def test_the_breakers_turn_tests_each_record_of_the_tool_loop_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked before every call of a long tool loop, ``_turn`` tests only the records it has not passed
    before (it was the whole loop on every call: quadratic in the loop's length)."""
    tested: list[Record] = []
    real = claude_code._starts_turn
    monkeypatch.setattr(claude_code, "_starts_turn", lambda record: tested.append(record) or real(record))
    state = create("claude-code").new_state()
    records = [user("go", uuid="p1")]
    for n in range(50):
        records += [say(f"step {n}"), result(f"t{n}", "out")]
        assert claude_code._turn(view_of(records), state) == "p1"
    assert len(tested) == 1 + 100  # the prompt once, then each new record once


def test_the_breakers_turn_does_not_walk_an_unchanged_tool_loop_again() -> None:
    """While the records after the prompt are the same objects in the same places, ``_turn`` looks only at
    what was appended (it walked back over the whole loop on every call, skipping the known records one
    membership test at a time: quadratic); a record of the loop replaced since (a microcompact's copy) is
    looked at again, and a prompt put there is found."""

    class Counting(dict):  # type: ignore[type-arg]
        lookups = 0

        def __contains__(self, key: object) -> bool:
            Counting.lookups += 1
            return super().__contains__(key)

    state = create("claude-code").new_state()
    state.not_turns = Counting()
    records = [user("go", uuid="p1")]
    for n in range(50):
        records += [say(f"step {n}"), result(f"t{n}", "out")]
        assert claude_code._turn(view_of(records), state) == "p1"
    assert Counting.lookups == 1 + 100  # the prompt, then each appended record once
    records[7] = user("typed in the middle", uuid="p2")  # a changed tail: scanned again, by the memo
    assert claude_code._turn(view_of(records), state) == "p2"
    assert state.turn_at == (7, records[7])
    records[7] = result("t3", "cleared")
    assert claude_code._turn(view_of(records), state) == "p1"


def test_the_remembered_turn_equals_a_full_scan_at_every_call_of_real_sessions(
    corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At every call of a replay of real sessions, with compactions (a low trigger), the remembered
    `_turn` answers what a scan of the whole context from a fresh state answers."""
    from workbench.replay import replay_session
    from workbench.transcript import load_paths

    remembered = claude_code._turn
    asked = []

    def both(view, state):  # type: ignore[no-untyped-def]
        answer = remembered(view, state)
        assert answer == remembered(view, claude_code.ClaudeCodeState(process=state.process)), view.step
        asked.append(answer)
        return answer

    monkeypatch.setattr(claude_code, "_turn", both)
    strategy = create("claude-code", {"version": "2.1.88", "sm": {"trigger": {"pct_of_window": 8}}})
    sessions = [s for s in load_paths([corpus / "claude-code"]) if len(s.records) > 200][:4]
    compactions = sum(len(replay_session(s, strategy).events) for s in sessions)
    assert compactions > 2 and len(asked) > 200 and len(set(asked)) > 4
