"""Tests for behaviour whose mutants survived the suite at some point (each names the mutant it kills)."""

from __future__ import annotations

from helpers import view_of
from record_builders import assistant, result, system, text, tool_result, tool_use, user

from workbench.memory import ExtractionTrigger
from workbench.memory.template import SessionMemory
from workbench.strategies.keep_window import keep_window
from workbench.strategies.microcompact import (
    TOOL_RESULT_CLEARED_MESSAGE,
    TimeBasedConfig,
    time_based_microcompact,
)
from workbench.strategies.sm_compact import SMCompactReferenceConfig, new_sm_state, sm_compaction
from workbench.strategies.triggers import AutoCompactTrigger
from workbench.transcript.model import Block, Record

text_block = Block.text_block


def _loop(n: int, *, at: str = "2026-01-01T00:00:00Z") -> list[Record]:
    """A prompt, one response calling Bash ``n`` times, the ``n`` results (each 100 chars/4 tokens)."""
    calls = tuple(tool_use(f"t{i}", "Bash", command=f"step {i}") for i in range(n))
    response = assistant(*calls, message_id="a", timestamp=at)
    return [user("go"), response, *(result(f"t{i}", "x" * 400) for i in range(n))]


def _after(records: list[Record], minutes: int, seconds: int = 0):  # type: ignore[no-untyped-def]
    view = view_of(records)
    stamp = f"2026-01-01T{minutes // 60:02d}:{minutes % 60:02d}:{seconds:02d}Z"
    return type(view)(**{**view.__dict__, "timestamp": stamp})


def _cleared(compaction) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        b.tool_use_id for r in compaction.records for b in r.tool_results() if b.content == TOOL_RESULT_CLEARED_MESSAGE
    ]


# ---------------------------------------------------------------- time-based microcompact (docs §3.3)
def test_keep_recent_zero_still_keeps_the_last_result() -> None:
    """``max(1, keepRecent)``: keep_recent 0 would otherwise clear everything (``slice(-0)`` keeps all)."""
    compaction = time_based_microcompact(_after(_loop(3), 61), TimeBasedConfig(enabled=True, keep_recent=0))
    assert _cleared(compaction) == ["t0", "t1"]


def test_keep_recent_at_least_the_count_clears_nothing() -> None:
    assert time_based_microcompact(_after(_loop(3), 61), TimeBasedConfig(enabled=True, keep_recent=3)) is None
    compaction = time_based_microcompact(_after(_loop(3), 61), TimeBasedConfig(enabled=True, keep_recent=2))
    assert _cleared(compaction) == ["t0"]


def test_cleared_results_get_the_exact_string_and_keep_their_ids() -> None:
    compaction = time_based_microcompact(_after(_loop(2), 90), TimeBasedConfig(enabled=True, keep_recent=1))
    block = compaction.records[2].blocks[0]
    assert block.content == "[Old tool result content cleared]" and block.tool_use_id == "t0"
    assert compaction.details["tokens_saved"] == 100
    # already cleared: nothing left to do
    again = view_of(list(compaction.records))
    again = type(again)(**{**again.__dict__, "timestamp": "2026-01-01T02:00:00Z"})
    assert time_based_microcompact(again, TimeBasedConfig(enabled=True, keep_recent=1)) is None


def test_the_gap_threshold_is_inclusive() -> None:
    """``gapMinutes < gapThresholdMinutes`` → null, so exactly 60 minutes fires and 59:59 does not."""
    config = TimeBasedConfig(enabled=True, keep_recent=1)
    assert time_based_microcompact(_after(_loop(2), 60), config) is not None
    assert time_based_microcompact(_after(_loop(2), 59, 59), config) is None


# ---------------------------------------------------------------- warning state (docs §4.2)
def test_percent_left_rounds_half_up_and_clamps_at_zero() -> None:
    trigger = AutoCompactTrigger()  # threshold 167,000
    assert trigger.percent_left(146_125) == 13  # 12.5 → 13 (Math.round), Python's round() gives 12
    assert trigger.percent_left(146_126) == 12
    assert trigger.percent_left(150_300) == 10  # exactly 10.0
    assert trigger.percent_left(167_000) == 0 and trigger.percent_left(180_000) == 0
    assert trigger.percent_left(0) == 100


def test_warning_and_blocking_edges() -> None:
    trigger = AutoCompactTrigger()
    assert trigger.warning(147_000) and not trigger.warning(146_999)
    assert trigger.is_at_blocking_limit(177_000) and not trigger.is_at_blocking_limit(176_999)
    assert AutoCompactTrigger(blocking_base="window").blocking_limit == 197_000


# ---------------------------------------------------------------- keep window (docs §2.4)
def test_the_floor_is_the_last_of_two_boundaries() -> None:
    chat = [user(text("q")), assistant(text("a"), message_id="m")]
    records = [*chat, system("compact_boundary"), *chat, system("compact_boundary"), *chat]
    window = keep_window(records, -1, min_tokens=10_000, counts=[10] * len(records))
    assert window.naive_start == 6  # not 3 (first boundary + 1), not 0


def test_boundary_records_in_the_kept_tail_are_filtered_out() -> None:
    """docs §2.6 step 5: ``messagesToKeep`` drops compact boundaries inside the kept range (the range opens
    before the boundary when ``lastSummarizedMessageId`` is older than it)."""
    config = SMCompactReferenceConfig(min_tokens=0, min_text_block_messages=3, max_tokens=10_000)
    state = new_sm_state(config)
    state.memory = SessionMemory.from_contents({"Current State": "testing"})
    records = [
        user("old"),
        assistant(text("a1"), message_id="m1"),
        system("compact_boundary"),
        user("new"),
        assistant(text("a2"), message_id="m2"),
        assistant(text("a3"), message_id="m3"),
    ]
    state.trigger.last_summarized_message_id = records[1].uuid
    compaction = sm_compaction(view_of(records), state, config, adjust=True)
    assert compaction.start == 2 and not compaction.fallbacks
    kept = compaction.records[2:]
    assert [r.uuid for r in kept] == [r.uuid for r in records[3:]]


# ---------------------------------------------------------------- extraction trigger (docs §1.3)
def test_tool_calls_are_counted_strictly_after_the_last_memory_message() -> None:
    """The message whose uuid is ``lastMemoryMessageUuid`` itself is not counted: its 3 tool calls do not
    make ``toolOK`` true again."""
    trigger = ExtractionTrigger()
    response = assistant(tool_use("a"), tool_use("b"), tool_use("c"), message_id="X")
    messages = [user(text("q")), response]
    assert trigger.observe(messages, tokens=20_000).extracted
    assert trigger.last_memory_message_uuid == response.uuid
    later = [*messages, user(tool_result("a"), tool_result("b"), tool_result("c"))]
    assert not trigger.observe(
        [*later, assistant(tool_use("d"), tool_use("e"), message_id="Y")], tokens=30_000
    ).extracted
    assert trigger.observe(
        [*later, assistant(tool_use("d"), tool_use("e"), tool_use("f"), message_id="Y")], tokens=30_000
    ).extracted


# ---------------------------------------------------------------- reached by no selected test before
def test_the_articles_truncation_variant() -> None:
    from workbench.strategies import create
    from workbench.strategies.microcompact import TruncateConfig, truncate_old_outputs

    records = _loop(3)  # three 400-char results
    config = TruncateConfig(context_window=1_000, pct_of_window=50, keep_chars=100, keep_recent=1)
    assert truncate_old_outputs(view_of(records, tokens=499), config) is None  # below 50% of the window
    compaction = truncate_old_outputs(view_of(records, tokens=500), config)
    texts = [b.content for r in compaction.records for b in r.tool_results()]
    assert texts[:2] == ["x" * 100 + "\n...truncated, showing first 100 of 400 chars"] * 2
    assert (
        texts[2] == "x" * 400 and compaction.details == {"truncated": 2} and compaction.kind == "microcompact-truncate"
    )
    # already truncated, or short enough: nothing to do
    assert truncate_old_outputs(view_of(list(compaction.records), tokens=500), config) is None
    assert truncate_old_outputs(view_of(records, tokens=500), config.model_copy(update={"keep_chars": 400})) is None
    assert truncate_old_outputs(view_of(records, tokens=500), config.model_copy(update={"keep_recent": 3})) is None
    strategy = create("microcompact-truncate", {"context_window": 1_000, "pct_of_window": 50, "keep_chars": 100})
    assert strategy.compact(view_of(records, tokens=500), strategy.new_state()) is None  # keep_recent 5 keeps all three
    assert create("microcompact", {"enabled": True, "keep_recent": 1}).compact(_after(_loop(2), 61), None) is not None


def test_a_manual_compact_skips_the_size_check() -> None:
    from workbench.strategies import create
    from workbench.strategies.sm_compact import kept_records

    strategy = create("sm-compact-reference", {"min_tokens": 0, "min_text_block_messages": 3})
    state = strategy.new_state()
    state.memory = SessionMemory.from_contents({"Current State": "testing"})
    records = [user("q"), *(assistant(text("abcd" * 1000), message_id=f"m{i}") for i in range(3))]
    view = view_of(records, tokens=10)
    compaction = strategy.compact_manual(view, state)
    assert compaction.kind == "sm-compact" and compaction.trigger == "manual" and not compaction.fallbacks
    assert compaction.records[0].compact_metadata["trigger"] == "auto"  # SM's boundary always says auto
    assert [r.uuid for r in kept_records(compaction)] == [r.uuid for r in records[1:]]
    assert strategy.compact(view, state) is None  # 10 tokens: the automatic path does not fire


def test_last_api_response_and_the_slice_after_the_last_boundary() -> None:
    from workbench.tokens.context import messages_after_compact_boundary, token_count_from_last_api_response

    real = Record(
        "assistant",
        role="assistant",
        message_id="r",
        has_content=True,
        model="m",
        usage={"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 2},
        blocks=(text_block("ok"),),
    )
    fake = Record(
        "assistant",
        role="assistant",
        message_id="s",
        has_content=True,
        model="<synthetic>",
        usage={"input_tokens": 99},
        blocks=(text_block("No response requested."),),
    )
    assert token_count_from_last_api_response([user("q"), real, fake, user("x")]) == 17
    assert token_count_from_last_api_response([user("q")]) is None
    b1, b2 = system("compact_boundary"), system("compact_boundary")
    records = [user("a"), b1, user("b"), b2, user("c")]
    assert messages_after_compact_boundary(records) == records[3:]
    assert messages_after_compact_boundary(records[:1]) == records[:1]


def test_adjustment_moves_describe_themselves() -> None:
    from workbench.request.invariants import Move

    assert Move("tool_pair", "t1", 2, 5).describe() == "tool pair t1: kept tool_result in #5 needs its tool_use in #2"
    assert Move("split_response", "X", 1, 3).describe() == (
        "split response message.id X: #1 and kept #3 are one streamed response"
    )


def test_estimator_registry_and_tiktoken() -> None:
    import pytest

    from workbench.tokens import estimators

    assert estimators.estimator_names()[:2] == ["claude-rough", "claude-padded"]
    with pytest.raises(ValueError, match="already registered"):
        estimators.register_estimator("claude-rough", estimators.ClaudeRough)
    with pytest.raises(ValueError, match="unknown estimator 'nope'"):
        estimators.get_estimator("nope")
    records = [user("hello world"), assistant(text("abcdefgh"), message_id="m")]
    assert estimators.total(estimators.get_estimator("claude-rough"), records) == 3 + 2
    tiktoken = estimators.TiktokenEstimator("o200k_base")
    assert tiktoken.name == "tiktoken:o200k_base"
    assert tiktoken.count(user("")) == 0 and tiktoken.count(records[0]) == 2
    assert repr(tiktoken) == "<estimator tiktoken:o200k_base>"


# ---------------------------------------------------------------- survivors of the first `make mutation` run
def test_only_compactable_tools_are_cleared() -> None:
    """``COMPACTABLE_TOOLS``: a TodoWrite result is never cleared, whatever its age."""
    todo = assistant(tool_use("todo", "TodoWrite", todos=[]), message_id="t", timestamp="2026-01-01T00:00:00Z")
    records = [*_loop(2), todo, result("todo", "y" * 400)]
    compaction = time_based_microcompact(_after(records, 61), TimeBasedConfig(enabled=True, keep_recent=1))
    assert _cleared(compaction) == ["t0"]


def test_no_timestamp_means_no_time_based_trigger() -> None:
    records = _loop(2, at=None)  # type: ignore[arg-type]
    assert time_based_microcompact(_after(records, 61), TimeBasedConfig(enabled=True)) is None
    view = view_of(_loop(2))  # a view without a timestamp
    assert time_based_microcompact(view, TimeBasedConfig(enabled=True)) is None
    bad = type(view)(**{**view.__dict__, "timestamp": "yesterday"})
    assert time_based_microcompact(bad, TimeBasedConfig(enabled=True)) is None


def _results(*sizes: int, char: str = "x") -> list[Record]:
    calls = tuple(tool_use(f"t{i}", "Bash", command="ls") for i in range(len(sizes)))
    results = (tool_result(f"t{i}", char * n) for i, n in enumerate(sizes))
    return [user("go"), assistant(*calls, message_id="a"), user(*results)]


def test_tool_result_budget_edges() -> None:
    from workbench.strategies.microcompact import ToolResultBudgetConfig, apply_tool_result_budget

    config = ToolResultBudgetConfig(max_result_chars=5_000, max_message_chars=3_000, preview_bytes=2_000)
    assert apply_tool_result_budget(view_of(_results(1_500, 1_500)), config) is None  # exactly the message cap
    compaction = apply_tool_result_budget(view_of(_results(1_600, 1_500)), config)
    assert (compaction.kind, compaction.trigger, compaction.details) == ("tool-result-budget", "size", {"persisted": 1})
    preview = compaction.records[2].tool_results()[0].content
    # the whole 1,600-char result fits the 2KB preview: no "..." continuation line
    assert preview.endswith("Preview (first 2KB):\n" + "x" * 1_600 + "\n</persisted-output>")
    # a 2-byte character cut by the 2,000-byte preview is dropped, not an error
    wide = apply_tool_result_budget(
        view_of(_results(1_600, 1_500, char="é")), config.model_copy(update={"preview_bytes": 1_999})
    )
    text = wide.records[2].tool_results()[0].content
    assert "é" * 999 + "\n...\n</persisted-output>" in text and "é" * 1_000 not in text


def test_the_usage_measure_falls_back_to_the_estimate_without_usage() -> None:
    trigger = AutoCompactTrigger(measure="usage")
    view = view_of([user("q")], tokens=170_000)
    assert trigger.size(view) == 170_000 and trigger.fires(view)
    with_usage = type(view)(**{**view.__dict__, "usage_tokens": 100})
    assert trigger.size(with_usage) == 100 and not trigger.fires(with_usage)
    assert AutoCompactTrigger().size(with_usage) == 170_000


def test_every_version_field_reaches_the_resolved_trigger() -> None:
    from workbench.strategies.triggers import for_version
    from workbench.strategies.versions import version_constants

    row = version_constants("2.1.88").model_copy(
        update={"autocompact_buffer": 10_000, "warning_buffer": 15_000, "blocking_buffer": 5_000, "circuit_breaker": 7}
    )
    trigger = for_version(AutoCompactTrigger(), row, "claude-opus-4-6")
    assert (trigger.buffer_tokens, trigger.warning_buffer_tokens, trigger.manual_buffer_tokens) == (
        10_000,
        15_000,
        5_000,
    )
    assert (trigger.threshold, trigger.blocking_limit, trigger.max_consecutive_failures) == (170_000, 175_000, 7)
    # one trigger config, two rows: two answers (the memo is keyed by the row)
    old = for_version(AutoCompactTrigger(), version_constants("2.0.57"), "claude-opus-4-6")
    assert old.threshold == 155_000 and trigger.threshold == 170_000


def test_calculate_messages_to_keep_index_defaults_and_arguments() -> None:
    from workbench.strategies.keep_window import calculate_messages_to_keep_index

    records = [user(text(f"u{i}")) if i % 2 == 0 else assistant(text(f"a{i}"), message_id=f"m{i}") for i in range(10)]
    # minTokens 10,000 reached exactly with exactly minTextBlockMessages 5: five messages kept
    assert calculate_messages_to_keep_index(records, -1, counts=[2_000] * 10) == 5
    assert keep_window(records, -1, counts=[2_000] * 10).start == 5
    # maxTokens 40,000 reached exactly by four messages
    assert calculate_messages_to_keep_index(records, -1, min_text_block_messages=100, counts=[10_000] * 10) == 6
    assert keep_window(records, -1, min_text_block_messages=100, counts=[10_000] * 10).start == 6
    # every argument is passed through
    assert calculate_messages_to_keep_index(records, 3, min_tokens=1, min_text_block_messages=1, counts=[1] * 10) == 4
    assert (
        calculate_messages_to_keep_index(
            records, -1, min_tokens=3, min_text_block_messages=1, max_tokens=5, counts=[1] * 10
        )
        == 7
    )
    assert calculate_messages_to_keep_index(records, -1, min_tokens=0, min_text_block_messages=2, max_tokens=5) == 8


def test_the_sibling_walk_crosses_interleaved_results() -> None:
    from workbench.tokens.context import token_count_with_estimation

    usage = {"input_tokens": 1_000, "output_tokens": 10}
    first = assistant(tool_use("a", "Bash", command="ls"), message_id="X", model="m", usage=usage)
    second = assistant(tool_use("b", "Bash", command="pwd"), message_id="X", model="m", usage=usage)
    records = [user("go"), first, result("a", "r" * 400), second, result("b", "s" * 40)]
    # anchored at the first sibling: both results and the second tool_use are estimated
    assert token_count_with_estimation(records) == 1_010 + 100 + 5 + 10  # Bash{"command":"pwd"}: 21 chars
    other = Record(
        "assistant",
        role="assistant",
        message_id="Y",
        has_content=True,
        model="m",
        usage=usage,
        blocks=(Block.text_block("done"),),
    )
    assert token_count_with_estimation([*records, user("next"), other]) == 1_010


def test_what_ends_a_tool_loop_for_the_thinking_aware_cut() -> None:
    from workbench.request.invariants import _is_prompt, _starts_with_thinking

    assert _is_prompt(user("fix it")) and _is_prompt(user(text("fix it"), tool_result("a")))
    assert _is_prompt(system("local_command", "<local-command-stdout>ok</local-command-stdout>"))
    assert not _is_prompt(user(tool_result("a"), tool_result("b")))
    assert not _is_prompt(assistant(text("hi"), message_id="m"))
    assert not _is_prompt(user("virtual", raw={"isVirtual": True}))
    assert not _is_prompt(system("turn_duration", "3s"))
    thinking_block = Block("thinking", {"type": "thinking", "thinking": "plan", "signature": "s"})
    redacted = Block("redacted_thinking", {"type": "redacted_thinking", "data": "xyz"})
    assert _starts_with_thinking([text_block("  \n"), thinking_block])
    assert _starts_with_thinking([redacted])
    assert not _starts_with_thinking([text_block("hi"), thinking_block])
    assert not _starts_with_thinking([text_block(" ")]) and not _starts_with_thinking([])


class _CountingExtractor:
    """Records what each extraction saw; the memory is the number of records seen so far."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str | None], object]] = []

    def extract(self, records, memory):  # type: ignore[no-untyped-def]
        self.calls.append(([r.uuid for r in records], memory))
        return SessionMemory.from_contents({"Worklog": f"extraction {len(self.calls)}"})


def test_the_post_sampling_hook_extracts_only_what_is_new() -> None:
    from workbench.strategies.sm_compact import observe_sm

    config = SMCompactReferenceConfig()
    state = new_sm_state(config)
    state.extractor = _CountingExtractor()
    records = [user("q"), assistant(text("first answer"), message_id="m1")]
    observe_sm(view_of(records, tokens=12_000), state)
    assert state.extractions == 1 and state.last_extracted is records[-1]
    assert state.extractor.calls == [([r.uuid for r in records], None)]
    first_memory = state.memory
    assert state.history == [{"step": 0, "memory": first_memory}]
    more = [*records, user("next"), assistant(text("second answer"), message_id="m2")]
    observe_sm(view_of(more, tokens=18_000, step=3), state)
    assert state.extractions == 2 and state.last_extracted is more[-1]
    assert state.extractor.calls[1] == ([r.uuid for r in more[2:]], first_memory)
    assert state.memory.section("Worklog").content == "extraction 2" and state.history[-1]["step"] == 3
    # below the update threshold (5,000 more tokens): no extraction; sub-agents and empty views never extract
    observe_sm(view_of([*more, user("x"), assistant(text("y"), message_id="m3")], tokens=19_000), state)
    sub = view_of([*more, user("x"), assistant(text("y"), message_id="m4")], tokens=40_000)
    observe_sm(type(sub)(**{**sub.__dict__, "is_subagent": True}), state)
    observe_sm(view_of([], tokens=90_000), state)
    assert state.extractions == 2


def test_tool_call_counting_edges() -> None:
    from workbench.memory import TriggerConfig

    # no assistant message at all: no tool calls in the last turn, so the token threshold alone decides
    assert ExtractionTrigger().observe([user("q")], tokens=20_000).extracted
    # from the start when lastMemoryMessageUuid is unset: the very first message's calls count
    first = assistant(tool_use("a"), tool_use("b"), tool_use("c"), message_id="X")
    assert ExtractionTrigger().observe([first], tokens=20_000).extracted
    # the message right after lastMemoryMessageUuid counts, and the uuid is found at any distance
    trigger = ExtractionTrigger()
    marked = assistant(text("noted"), message_id="M")
    assert trigger.observe([user("q"), marked], tokens=20_000).extracted
    assert trigger.observe([user("q"), marked, first], tokens=30_000).extracted
    # set but gone: 0 calls, even with a one-call threshold
    gone = ExtractionTrigger(TriggerConfig(tool_calls_between_updates=1))
    gone.initialized, gone.last_memory_message_uuid = True, "compacted-away"
    assert not gone.observe([user("q"), assistant(tool_use("d"), message_id="Y")], tokens=30_000).extracted


def test_the_sm_strategies_compact_only_above_the_threshold() -> None:
    from workbench.strategies import create

    for name, kind in (("sm-compact-reference", "sm-compact"), ("sm-compact-naive", "sm-compact-naive")):
        strategy = create(name, {"min_tokens": 0, "min_text_block_messages": 2})
        state = strategy.new_state()
        state.memory = SessionMemory.from_contents({"Current State": "testing"})
        records = [user("q"), assistant(text("a"), message_id="m1"), user("r"), assistant(text("b"), message_id="m2")]
        assert strategy.compact(view_of(records, tokens=166_999), state) is None
        assert strategy.compact(view_of(records, tokens=167_000), state).kind == kind
