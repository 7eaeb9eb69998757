"""SM-compact's keep window, ``calculateMessagesToKeepIndex`` (docs §2.4), as a pure function.

Given the message list and the index of the last summarized message, it finds the first message kept
verbatim after a session-memory compaction: start right after the summarized message, and expand
backwards until both minimums (tokens, text-block messages) are met or the token maximum is crossed,
never past the last compact boundary; then apply `adjust_to_api_invariants` (docs §2.5).

Quirks reproduced on purpose (docs §2.4, §10):

* Token counts are ``estimateMessageTokens([msg])`` per record (``claude-padded``: ×4/3, ``ceil``,
  string-content user messages count 0), "text-block message" is ``hasTextBlocks`` (§2.2).
* If the already-kept tail meets the thresholds, no backward expansion happens.
* The record that crosses ``max_tokens`` is included, so the window can exceed it.
* The floor is the last ``compact_boundary`` + 1 (0 without one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..request.invariants import adjust_to_api_invariants
from ..tokens.estimators import get_estimator
from ..transcript.model import Record

__all__ = ["KeepWindow", "calculate_messages_to_keep_index", "keep_window"]


@dataclass(frozen=True, slots=True)
class KeepWindow:
    """Where the keep window starts: ``naive_start`` before, ``start`` after the API-invariant
    adjustment; ``tokens``/``text_messages`` are what the naive window ``[naive_start:]`` holds."""

    naive_start: int
    start: int
    tokens: int
    text_messages: int


def keep_window(
    records: Sequence[Record],
    last_summarized_index: int,
    *,
    min_tokens: int = 10_000,
    min_text_block_messages: int = 5,
    max_tokens: int = 40_000,
    counts: Sequence[int] | None = None,
) -> KeepWindow:
    """``calculateMessagesToKeepIndex`` with both the naive and the adjusted start (docs §2.4).

    Args:
        records: the message list (post-compact-boundary slice, or a whole session).
        last_summarized_index: index of the ``lastSummarizedMessageId`` record; negative when unset.
        min_tokens: ``minTokens`` (default config, docs §2.1).
        min_text_block_messages: ``minTextBlockMessages``.
        max_tokens: ``maxTokens``.
        counts: per-record ``claude-padded`` counts aligned with ``records`` (computed when None).

    Returns:
        The window; ``KeepWindow(0, 0, 0, 0)`` for an empty list.
    """
    if not records:
        return KeepWindow(0, 0, 0, 0)
    if counts is None:
        counts = get_estimator("claude-padded").count_many(records)
    start = last_summarized_index + 1 if last_summarized_index >= 0 else len(records)
    tokens = sum(counts[start:])
    text = sum(1 for r in records[start:] if r.has_text_blocks)
    if tokens >= max_tokens or (tokens >= min_tokens and text >= min_text_block_messages):
        return KeepWindow(start, adjust_to_api_invariants(records, start), tokens, text)
    floor = next((i + 1 for i in range(len(records) - 1, -1, -1) if records[i].is_compact_boundary), 0)
    for i in range(start - 1, floor - 1, -1):
        tokens += counts[i]
        text += records[i].has_text_blocks
        start = i
        if tokens >= max_tokens or (tokens >= min_tokens and text >= min_text_block_messages):
            break
    return KeepWindow(start, adjust_to_api_invariants(records, start), tokens, text)


def calculate_messages_to_keep_index(
    records: Sequence[Record],
    last_summarized_index: int,
    *,
    min_tokens: int = 10_000,
    min_text_block_messages: int = 5,
    max_tokens: int = 40_000,
    counts: Sequence[int] | None = None,
) -> int:
    """``calculateMessagesToKeepIndex``: the adjusted first kept index (see `keep_window`)."""
    return keep_window(
        records,
        last_summarized_index,
        min_tokens=min_tokens,
        min_text_block_messages=min_text_block_messages,
        max_tokens=max_tokens,
        counts=counts,
    ).start
