"""More tests for mutants that survived `make mutation`: the keep window's early return and edges,
SM-compaction's result and cut choice, ``getTokenUsage``'s synthetic rule."""

from __future__ import annotations

from helpers import view_of
from record_builders import assistant, system, text, thinking, tool_result, tool_use, user

from workbench.memory.template import SessionMemory
from workbench.strategies.keep_window import KeepWindow, keep_window
from workbench.strategies.sm_compact import (
    MEMORY_PATH,
    SMCompactConfig,
    SMCompactReferenceConfig,
    new_sm_state,
    sm_compaction,
)
from workbench.tokens.context import get_token_usage, token_count_with_estimation
from workbench.tokens.estimators import get_estimator
from workbench.transcript.model import Block, Record


def chat(n: int) -> list[Record]:
    return [user(text(f"u{i}")) if i % 2 == 0 else assistant(text(f"a{i}"), message_id=f"m{i}") for i in range(n)]


# ---------------------------------------------------------------- keep window (docs §2.4)
def test_the_already_kept_tail_is_reported_exactly() -> None:
    assert keep_window([], -1) == KeepWindow(0, 0, 0, 0)
    records = chat(10)
    # lastSummarizedIndex 0 is an index (start 1), not "unset"
    window = keep_window(records, 0, min_tokens=9, min_text_block_messages=9, counts=[1] * 10)
    assert window == KeepWindow(1, 1, 9, 9)
    # the tail reaches maxTokens exactly: kept as it is
    assert keep_window(records, 7, min_text_block_messages=9, max_tokens=4, counts=[2] * 10) == KeepWindow(8, 8, 4, 2)
    # the tail reaches minTokens exactly with enough text messages
    assert keep_window(records, 7, min_tokens=4, min_text_block_messages=2, counts=[2] * 10) == KeepWindow(8, 8, 4, 2)
    # one token short of each: expansion
    assert keep_window(records, 7, min_text_block_messages=9, max_tokens=5, counts=[2] * 10).naive_start == 7
    assert keep_window(records, 7, min_tokens=5, min_text_block_messages=2, counts=[2] * 10).naive_start == 7


def test_a_boundary_at_either_end_bounds_the_scan() -> None:
    records = [*chat(4), system("compact_boundary")]
    assert keep_window(records, -1, counts=[1] * 5).naive_start == 5  # the boundary is the last record
    records = [user(text("q")), system("compact_boundary"), *chat(4)]
    assert keep_window(records, -1, counts=[1] * 6).naive_start == 2


# ---------------------------------------------------------------- SM-compaction's result (docs §2.6)
NOTES = SessionMemory.from_contents({"Current State": "testing the parser"})


def _state(config: SMCompactConfig, memory: SessionMemory = NOTES):  # type: ignore[no-untyped-def]
    state = new_sm_state(config)
    state.memory = memory
    return state


def test_the_compaction_record() -> None:
    config = SMCompactReferenceConfig(min_tokens=0, min_text_block_messages=2)
    records = chat(6)
    compaction = sm_compaction(view_of(records, tokens=170_000), _state(config), config, adjust=True)
    boundary, summary = compaction.added
    assert compaction.records[:2] == compaction.added and compaction.kind == "sm-compact"
    assert compaction.trigger == "auto" and boundary.compact_metadata["trigger"] == "auto"
    assert boundary.compact_metadata["preTokens"] == 170_000  # no usage known: the estimate
    assert summary.is_compact_summary and compaction.summary == summary.text
    assert (
        compaction.summary.startswith("This session is being continued") and "testing the parser" in compaction.summary
    )
    assert compaction.details == {
        "post_compact_tokens": 3,  # ceil(4/3 × (1 + 1))
        "last_summarized_index": 5,
        "summary_source": "session-memory",
    }
    assert compaction.dropped == tuple(r.uuid for r in records[:4])
    naive = sm_compaction(view_of(records), _state(config), config, adjust=False)
    assert naive.kind == "sm-compact-naive"


def test_a_truncated_memory_names_the_memory_file() -> None:
    config = SMCompactReferenceConfig(min_tokens=0, min_text_block_messages=2)
    long = SessionMemory.from_contents({"Worklog": "\n".join(f"step {i}: " + "x" * 90 for i in range(200))})
    compaction = sm_compaction(view_of(chat(6)), _state(config, long), config, adjust=True)
    assert compaction.summary.endswith(MEMORY_PATH) and "[... section truncated for length ...]" in compaction.summary


def test_the_view_counts_drive_the_window() -> None:
    config = SMCompactReferenceConfig(min_tokens=10_000, min_text_block_messages=1)
    records = chat(6)
    view = view_of(records)
    big = type(view)(**{**view.__dict__, "padded": (5_000,) * 6})
    assert sm_compaction(big, _state(config), config, adjust=True).start == 4
    assert sm_compaction(view, _state(config), config, adjust=True).start == 0


def _split_loop() -> list[Record]:
    """A tool loop whose last response is split: its tool_use sibling is before the naive cut."""
    return [
        user("do it"),  # 0
        assistant(thinking(), message_id="A"),  # 1
        assistant(tool_use("a"), message_id="A"),  # 2
        user(tool_result("a")),  # 3
        assistant(text("next"), tool_use("b"), message_id="B"),  # 4
        user(tool_result("b")),  # 5
    ]


def test_which_cut_each_variant_keeps() -> None:
    records = _split_loop()
    config = SMCompactReferenceConfig(min_tokens=0, min_text_block_messages=1)
    state = _state(config)
    state.trigger.last_summarized_message_id = records[2].uuid  # naive cut at 3: an orphaned result
    reference = sm_compaction(view_of(records), state, config, adjust=True)
    assert (reference.naive_start, reference.start) == (3, 2 - 1)  # pulled back over the pair and the sibling
    state = _state(config)
    state.trigger.last_summarized_message_id = records[2].uuid
    naive = sm_compaction(
        view_of(records), state, SMCompactConfig(min_tokens=0, min_text_block_messages=1), adjust=False
    )
    assert naive.start == naive.naive_start == 3  # the naive variant never adjusts, thinking-aware or not
    # the thinking-aware cut: the reference cut at B (no thinking) moves back to A (thinking)
    aware = SMCompactConfig(min_tokens=0, min_text_block_messages=1)
    state = _state(aware)
    state.trigger.last_summarized_message_id = records[3].uuid
    assert sm_compaction(view_of(records), state, aware, adjust=True).start == 1
    state = _state(config)
    state.trigger.last_summarized_message_id = records[3].uuid
    assert sm_compaction(view_of(records), state, config, adjust=True).start == 4
    # without any thinking block in the session the thinking-aware cut is the reference's
    plain = [r if r.uuid != records[1].uuid else assistant(text("plan"), message_id="A") for r in records]
    state = _state(aware)
    state.trigger.last_summarized_message_id = plain[3].uuid
    assert sm_compaction(view_of(plain), state, aware, adjust=True).start == 4


def test_a_manual_fallback_is_a_manual_full_compaction() -> None:
    config = SMCompactReferenceConfig()
    state = new_sm_state(config)  # no memory
    compaction = sm_compaction(view_of(chat(4)), state, config, adjust=True, trigger="manual")
    assert compaction.kind == "full-compact" and compaction.trigger == "manual"
    assert compaction.records[0].compact_metadata["trigger"] == "manual"


# ---------------------------------------------------------------- getTokenUsage (docs §6)
USAGE = {"input_tokens": 100, "output_tokens": 5}


def _assistant(*blocks: Block, model: str = "claude-opus-4-6", usage=USAGE) -> Record:  # type: ignore[no-untyped-def]
    """A response ``x`` with ``usage``: a real model's unless ``model`` says otherwise."""
    return assistant(*blocks, message_id="x", model=model, usage=usage)


def test_which_usage_is_real() -> None:
    say = Block.text_block
    assert get_token_usage(_assistant(say("hello"))) == USAGE
    assert get_token_usage(_assistant(say("hello"), model="<synthetic>")) is None
    assert get_token_usage(_assistant(say("No response requested."))) is None
    assert (
        get_token_usage(
            _assistant(Block("thinking", {"type": "thinking", "thinking": "t"}), say("No response requested."))
        )
        is None
    )
    assert get_token_usage(_assistant(say("hello"), say("No response requested."))) == USAGE  # only the first text
    assert (
        get_token_usage(_assistant(Block("tool_use", {"type": "tool_use", "id": "a", "name": "Bash", "input": {}})))
        == USAGE
    )
    assert get_token_usage(_assistant(say("hello"), usage=None)) is None
    assert get_token_usage(Record("user", role="user", usage=USAGE, blocks=(say("hi"),), has_content=True)) is None


def test_precomputed_counts_give_the_same_estimate() -> None:
    records = [user("go " * 40), _assistant(Block.text_block("ok")), user("more " * 80)]
    counts = get_estimator("claude-rough").count_many(records)
    assert token_count_with_estimation(records, counts=counts) == token_count_with_estimation(records) == 105 + 100
    assert token_count_with_estimation(records[:1], counts=counts[:1]) == token_count_with_estimation(records[:1]) == 30


# ---------------------------------------------------------------- the adjustment's reasons (docs §2.5)
def test_the_worked_example_with_its_reasons() -> None:
    from workbench.request.invariants import Move, explain_adjustment

    records = [
        user("q"),
        assistant(thinking(), message_id="X"),  # 1
        assistant(tool_use("A"), message_id="X"),  # 2
        assistant(tool_use("B"), message_id="X"),  # 3
        user(tool_result("A"), tool_result("B")),  # 4
    ]
    adjustment = explain_adjustment(records, 3)
    assert (adjustment.pair_start, adjustment.start) == (2, 1)
    assert adjustment.moves == (Move("tool_pair", "A", 2, 4), Move("split_response", "X", 1, 2))
    assert explain_adjustment(records, 0).moves == () and explain_adjustment(records, 5).moves == ()


def test_the_pair_walk_reaches_index_zero_and_finds_every_missing_use() -> None:
    from workbench.request.invariants import adjust_to_api_invariants

    assert adjust_to_api_invariants([assistant(tool_use("a"), message_id="X"), user(tool_result("a"))], 1) == 0
    records = [
        user("q"),
        assistant(tool_use("b"), message_id="X"),
        assistant(tool_use("a"), message_id="Y"),
        user(tool_result("a"), tool_result("b")),
    ]
    assert adjust_to_api_invariants(records, 3) == 1


def test_the_stand_in_summary_record() -> None:
    from workbench.request.invariants import SUMMARY_TEXT, summary_record

    record = summary_record()
    assert (record.kind, record.role, record.string_content, record.has_content) == ("user", "user", True, True)
    assert record.is_compact_summary and record.is_visible_in_transcript_only and record.text == SUMMARY_TEXT


# ---------------------------------------------------------------- smaller pieces
def test_tool_result_tokens_of_array_content() -> None:
    from workbench.strategies.microcompact import tool_result_tokens

    def block(content):  # type: ignore[no-untyped-def]
        return Block("tool_result", {"type": "tool_result", "tool_use_id": "t", "content": content})

    parts = [
        {"type": "text", "text": "x" * 40},
        {"type": "image", "source": {}},
        {"type": "document", "source": {}},
        {"type": "text", "text": 7},
        "stray",
        {"type": "tool_reference", "tool_name": "Read"},
    ]
    assert tool_result_tokens(block(parts)) == 10 + 2_000 + 2_000
    assert tool_result_tokens(block("y" * 8)) == 2 and tool_result_tokens(block(None)) == 0
    assert tool_result_tokens(block([])) == 0


def test_new_sm_state_takes_the_configured_thresholds() -> None:
    from workbench.memory import TriggerConfig
    from workbench.memory.extractor import OfflineMemoryExtractor

    config = SMCompactConfig(
        minimum_message_tokens_to_init=7, minimum_tokens_between_update=8, tool_calls_between_updates=9
    )
    state = new_sm_state(config)
    assert state.trigger.config == TriggerConfig(7, 8, 9) and isinstance(state.extractor, OfflineMemoryExtractor)
    online = new_sm_state(SMCompactConfig(extractor="anthropic", extractor_model="claude-haiku-4-5"))
    assert type(online.extractor).__name__ == "OnlineMemoryExtractor" and online.extractor.model == "claude-haiku-4-5"


def test_usage_arithmetic() -> None:
    from workbench.tokens.context import prompt_tokens, usage_tokens

    usage = {
        "input_tokens": 1,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 300,
        "output_tokens": 4000,
    }
    assert prompt_tokens(usage) == 321 and usage_tokens(usage) == 4321
    assert prompt_tokens({"input_tokens": 2.0, "cache_read_input_tokens": "many"}) == 2 and usage_tokens({}) == 0


# ---------------------------------------------------------------- third batch
def test_slices_after_the_last_boundary_at_either_end() -> None:
    from workbench.strategies.sm_compact import _unseen
    from workbench.tokens.context import messages_after_compact_boundary

    records = [system("compact_boundary"), user("a"), user("b"), system("compact_boundary")]
    assert messages_after_compact_boundary(records) == records[3:]
    assert messages_after_compact_boundary(records[:3]) == records[:3]
    chat6 = chat(6)
    assert _unseen(chat6, chat6[-1]) == [] and _unseen(chat6, chat6[-2]) == chat6[-1:]
    assert _unseen(chat6, chat6[2]) == chat6[3:] and _unseen(chat6, None) == chat6
    assert _unseen(chat6, user("elsewhere")) == chat6


def test_the_extraction_trigger_state() -> None:
    import pytest

    from workbench.memory import ExtractionTrigger, TriggerConfig

    fresh = ExtractionTrigger()
    assert (fresh.initialized, fresh.tokens_at_last_extraction, fresh.extractions) == (False, 0, 0)
    eager = ExtractionTrigger(TriggerConfig(minimum_message_tokens_to_init=1))
    assert eager.observe([user("q"), assistant(text("a"), message_id="m")], tokens=5_000).extracted  # 5,000 − 0 ≥ 5,000
    assert eager.observe([user("q"), assistant(text("a"), message_id="m")], tokens=10_000).extracted
    assert eager.extractions == 2
    with pytest.raises(ValueError, match="tool_calls_between_updates must be a positive integer, got True"):
        TriggerConfig(tool_calls_between_updates=True)


def test_time_based_microcompact_result_and_gates() -> None:
    from workbench.strategies.microcompact import TimeBasedConfig, time_based_microcompact

    calls = tuple(
        Block("tool_use", {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"f{i}"}})
        for i in range(3)
    )
    response = Record(
        "assistant", role="assistant", message_id="a", has_content=True, timestamp="2026-01-01T00:00:00Z", blocks=calls
    )
    results = [
        Record(
            "user",
            role="user",
            has_content=True,
            blocks=(Block("tool_result", {"type": "tool_result", "tool_use_id": f"t{i}", "content": "z" * 80}),),
        )
        for i in range(3)
    ]
    view = view_of([user("go"), response, *results])
    later = type(view)(**{**view.__dict__, "timestamp": "2026-01-01T01:30:00Z"})
    config = TimeBasedConfig(enabled=True, keep_recent=1)
    compaction = time_based_microcompact(later, config)
    assert (compaction.kind, compaction.trigger) == ("microcompact", "time")
    assert compaction.details == {"cleared": 2, "gap_minutes": 90.0, "tokens_saved": 40}
    assert time_based_microcompact(type(later)(**{**later.__dict__, "is_subagent": True}), config) is None
    no_assistant = view_of([user("go"), *results])
    assert (
        time_based_microcompact(
            type(no_assistant)(**{**no_assistant.__dict__, "timestamp": "2026-01-02T00:00:00Z"}), config
        )
        is None
    )


def test_truncation_reports_its_trigger() -> None:
    from workbench.strategies.microcompact import TruncateConfig, truncate_old_outputs

    records = [
        user("go"),
        assistant(tool_use("t0"), tool_use("t1"), message_id="a"),
        user(tool_result("t0")),
        user(tool_result("t1")),
    ]
    records[2] = Record(
        "user",
        role="user",
        has_content=True,
        blocks=(Block("tool_result", {"type": "tool_result", "tool_use_id": "t0", "content": "q" * 500}),),
    )
    compaction = truncate_old_outputs(
        view_of(records, tokens=999), TruncateConfig(context_window=1_000, keep_chars=10, keep_recent=1)
    )
    assert (compaction.kind, compaction.trigger) == ("microcompact-truncate", "pct")


def test_estimate_message_tokens_ignores_string_content() -> None:
    from workbench.tokens.estimators import estimate_message_tokens

    assert estimate_message_tokens([user("x" * 400)]) == 0
    assert estimate_message_tokens([user(text("x" * 400)), user("y" * 400)]) == 134  # ceil(100 × 4/3)


def test_register_estimator_adds_a_factory(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workbench.tokens import estimators

    monkeypatch.setattr(estimators, "_FACTORIES", dict(estimators._FACTORIES))
    estimators.register_estimator("test:rough-again", estimators.ClaudeRough)
    assert estimators._FACTORIES["test:rough-again"] is estimators.ClaudeRough
    assert "test:rough-again" in estimators.estimator_names()


def test_the_thinking_aware_cut_may_land_exactly_on_the_floor() -> None:
    from workbench.request.invariants import adjust_for_thinking

    records = [
        user("q"),  # 0
        assistant(text("a"), message_id="A"),  # 1
        system("compact_boundary"),  # 2: floor 3
        assistant(thinking(), tool_use("c"), message_id="C"),  # 3
        user(tool_result("c")),  # 4
        assistant(text("d"), tool_use("d"), message_id="D"),  # 5
        user(tool_result("d")),  # 6
    ]
    assert adjust_for_thinking(records, 5) == 3


# ---------------------------------------------------------------- fourth batch (last survivors)
def test_index_zero_and_binding_maxima() -> None:
    from workbench.strategies.keep_window import calculate_messages_to_keep_index

    records = chat(10)
    assert keep_window(records, 0, min_tokens=0, min_text_block_messages=0, counts=[1] * 10).naive_start == 1
    assert (
        calculate_messages_to_keep_index(
            records, -1, min_tokens=9, min_text_block_messages=1, max_tokens=5, counts=[1] * 10
        )
        == 5
    )
    config = SMCompactReferenceConfig(min_tokens=5, max_tokens=5, min_text_block_messages=100)
    view = view_of(records)
    padded = type(view)(**{**view.__dict__, "padded": (1,) * 10})
    assert sm_compaction(padded, _state(config), config, adjust=True).naive_start == 5


def test_an_empty_context_still_compacts_with_the_memory() -> None:
    config = SMCompactReferenceConfig()
    compaction = sm_compaction(view_of([]), _state(config), config, adjust=True)
    assert compaction.kind == "sm-compact" and compaction.records[0].logical_parent_uuid is None


def test_the_budget_checks_the_first_record_by_default() -> None:
    from workbench.strategies.microcompact import ToolResultBudgetConfig, apply_tool_result_budget

    results = Record(
        "user",
        role="user",
        has_content=True,
        blocks=(Block("tool_result", {"type": "tool_result", "tool_use_id": "t", "content": "x" * 200}),),
    )
    compaction = apply_tool_result_budget(view_of([results]), ToolResultBudgetConfig(max_result_chars=100))
    assert compaction is not None and compaction.details == {"persisted": 1}


def test_tool_result_tokens_adds_every_part() -> None:
    from workbench.strategies.microcompact import tool_result_tokens

    parts = [
        {"type": "text", "text": "x" * 40},
        {"type": "image"},
        {"type": "document"},
        {"type": "text", "text": "y" * 8},
    ]
    block = Block("tool_result", {"type": "tool_result", "tool_use_id": "t", "content": parts})
    assert tool_result_tokens(block) == 10 + 2_000 + 2_000 + 2


def test_explain_adjustment_edges() -> None:
    from workbench.request.invariants import adjust_to_api_invariants, explain_adjustment

    records = [
        user("q"),
        assistant(text("a"), message_id="X"),
        assistant(tool_use("a"), message_id="Y"),
        user("note"),
        user(tool_result("a")),
    ]
    assert adjust_to_api_invariants(records, 4) == 2  # found two records back, past a non-assistant
    assert explain_adjustment(records, 0).pair_start == 0 and explain_adjustment(records, 5).pair_start == 5


def test_the_slice_after_a_boundary_near_the_start() -> None:
    from workbench.tokens.context import messages_after_compact_boundary

    records = [user("a"), system("compact_boundary"), user("b")]
    assert messages_after_compact_boundary(records) == records[1:]
