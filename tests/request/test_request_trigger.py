"""shouldExtractMemory state machine (docs §1.2, §1.3), with token counts passed in."""

from __future__ import annotations

import pytest
from record_builders import assistant, text, tool_result, tool_use, user

from workbench.memory import ExtractionTrigger, TriggerConfig, should_extract_memory


def test_config_defaults_and_validation() -> None:
    assert TriggerConfig() == TriggerConfig(10_000, 5_000, 3)
    with pytest.raises(ValueError):
        TriggerConfig(minimum_tokens_between_update=0)
    with pytest.raises(ValueError):
        TriggerConfig(tool_calls_between_updates=-1)


def test_below_init_threshold_nothing_happens() -> None:
    trigger = ExtractionTrigger()
    result = trigger.observe([user("q"), assistant(text("a"), message_id="X")], tokens=9_999)
    assert not result.extracted and not trigger.initialized


def test_natural_break_extracts_and_sets_last_summarized() -> None:
    messages = [user("q"), assistant(text("a"), message_id="X")]
    result = should_extract_memory(messages, tokens=10_000)
    assert result.extracted and result.last_summarized_message_id == messages[-1].uuid


def test_tool_loop_needs_three_tool_calls_and_does_not_move_last_summarized() -> None:
    trigger = ExtractionTrigger()
    messages = [user("q"), assistant(tool_use("a"), message_id="X")]
    assert not trigger.observe(messages, tokens=12_000).extracted
    assert trigger.initialized
    messages += [
        user(tool_result("a")),
        assistant(tool_use("b"), message_id="Y"),
        user(tool_result("b")),
        assistant(tool_use("c"), message_id="Z"),
    ]
    result = trigger.observe(messages, tokens=12_000)
    assert result.extracted and result.last_summarized_message_id is None
    assert trigger.last_memory_message_uuid == messages[-1].uuid


def test_token_threshold_is_relative_to_last_extraction_and_never_lowered() -> None:
    trigger = ExtractionTrigger()
    messages = [user("q"), assistant(text("a"), message_id="X")]
    assert trigger.observe(messages, tokens=20_000).extracted
    messages = [*messages, user("more"), assistant(text("b"), message_id="Y")]
    assert not trigger.observe(messages, tokens=24_999).extracted
    trigger.after_compaction()
    assert trigger.last_summarized_message_id is None and trigger.tokens_at_last_extraction == 20_000
    result = trigger.observe(messages, tokens=25_000)
    assert result.extracted and result.last_summarized_message_id == messages[-1].uuid


def test_tool_count_is_zero_when_last_memory_message_is_gone() -> None:
    trigger = ExtractionTrigger()
    trigger.initialized = True
    trigger.last_memory_message_uuid = "vanished"
    messages = [user("q"), assistant(tool_use("a"), tool_use("b"), tool_use("c"), message_id="X")]
    assert not trigger.observe(messages, tokens=50_000).extracted


def test_default_token_count_is_token_count_with_estimation() -> None:
    result = should_extract_memory([user("q" * 80_000), assistant(text("a"), message_id="X")])
    assert result.tokens == 20_000 and result.extracted
