"""calculateMessagesToKeepIndex (docs §2.4) with hand-set per-record token counts."""

from __future__ import annotations

from record_builders import assistant, system, text, thinking, tool_result, tool_use, user

from workbench.strategies.keep_window import calculate_messages_to_keep_index, keep_window
from workbench.tokens.estimators import get_estimator


def chat(n: int) -> list:
    """n alternating user/assistant text messages (every one a text-block message)."""
    return [user(text(f"u{i}")) if i % 2 == 0 else assistant(text(f"a{i}"), message_id=f"m{i}") for i in range(n)]


def test_empty_list_keeps_from_zero() -> None:
    assert calculate_messages_to_keep_index([], -1) == 0


def test_expands_back_until_both_minimums_are_met() -> None:
    records = chat(10)
    # 4 messages reach 12k tokens but only 4 text-block messages: one more is taken.
    window = keep_window(records, -1, counts=[3000] * 10)
    assert (window.naive_start, window.start, window.tokens, window.text_messages) == (5, 5, 15000, 5)
    assert keep_window(records, 9, counts=[3000] * 10) == window
    # text messages are plentiful, tokens are not: expansion runs until 10k
    assert keep_window(records, -1, counts=[1000] * 10).naive_start == 0


def test_tail_already_meeting_thresholds_is_not_expanded() -> None:
    records = chat(10)
    assert keep_window(records, 2, counts=[100] * 3 + [5000] * 7).naive_start == 3


def test_message_crossing_max_tokens_is_included() -> None:
    records = chat(6)
    window = keep_window(records, -1, counts=[1, 1, 1, 30000, 20000, 1])
    assert window.naive_start == 3 and window.tokens == 50001


def test_floor_is_last_compact_boundary_plus_one() -> None:
    records = [*chat(4), system("compact_boundary", "Conversation compacted"), *chat(3)]
    window = keep_window(records, -1, counts=[10] * len(records))
    assert window.naive_start == 5


def test_adjustment_pulls_start_back_over_a_split_tool_use() -> None:
    records = [
        user("q"),
        assistant(thinking(), message_id="X"),
        assistant(tool_use("t"), message_id="X"),
        user(tool_result("t")),
        assistant(text("done"), message_id="Y"),
    ]
    window = keep_window(records, 2, min_tokens=1, min_text_block_messages=1, counts=[5] * 5)
    assert (window.naive_start, window.start) == (3, 1)


def test_default_counts_are_claude_padded() -> None:
    records = chat(4)
    padded = get_estimator("claude-padded").count_many(records)
    assert keep_window(records, -1) == keep_window(records, -1, counts=padded)
