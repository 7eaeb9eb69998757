"""Context size at a point in a session: recorded usage and Claude Code's ``tokenCountWithEstimation``.

These are position-dependent (they need the records *before* an API call), unlike the per-record
estimators in `workbench.tokens.estimators`. Reference: docs §6.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..transcript.model import Record
from .estimators import ClaudeRough, Estimator

__all__ = [
    "SYNTHETIC_TEXTS",
    "get_token_usage",
    "messages_after_compact_boundary",
    "prompt_tokens",
    "token_count_from_last_api_response",
    "token_count_with_estimation",
    "usage_tokens",
]

#: Assistant texts Claude Code writes itself; their ``usage`` is not a real API measurement (docs §6).
SYNTHETIC_TEXTS = frozenset(
    {
        "[Request interrupted by user]",
        "[Request interrupted by user for tool use]",
        "The user doesn't want to take this action right now. STOP what you are doing and wait for the user"
        " to tell you how to proceed.",
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file"
        " edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to"
        " tell you how to proceed.",
        "No response requested.",
    }
)

_ROUGH = ClaudeRough()


def _int(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return int(value) if isinstance(value, (int, float)) else 0


def usage_tokens(usage: Mapping[str, Any]) -> int:
    """``getTokenCountFromUsage``: input + cache creation + cache read + output."""
    return (
        _int(usage, "input_tokens")
        + _int(usage, "cache_creation_input_tokens")
        + _int(usage, "cache_read_input_tokens")
        + _int(usage, "output_tokens")
    )


def prompt_tokens(usage: Mapping[str, Any]) -> int:
    """What the request itself measured: input + cache creation + cache read (no output)."""
    return (
        _int(usage, "input_tokens")
        + _int(usage, "cache_creation_input_tokens")
        + _int(usage, "cache_read_input_tokens")
    )


def get_token_usage(record: Record) -> Mapping[str, Any] | None:
    """``getTokenUsage``: an assistant record's usage unless the record is synthetic."""
    if record.kind != "assistant" or record.usage is None or record.model == "<synthetic>":
        return None
    for block in record.blocks:
        if block.kind == "text":  # only the first text block is compared
            return None if block.text in SYNTHETIC_TEXTS else record.usage
    return record.usage


def token_count_from_last_api_response(records: Sequence[Record]) -> int | None:
    """``tokenCountFromLastAPIResponse``: usage total of the last real response, no estimate."""
    for record in reversed(records):
        usage = get_token_usage(record)
        if usage is not None:
            return usage_tokens(usage)
    return None


def _anchor(records: Sequence[Record], walk_siblings: bool = True) -> tuple[int, Mapping[str, Any]] | None:
    """Index of the first sibling of the last usage-bearing response, and that response's usage."""
    for i in range(len(records) - 1, -1, -1):
        usage = get_token_usage(records[i])
        if usage is None:
            continue
        response_id = records[i].message_id
        anchor = i
        if response_id is not None and walk_siblings:
            for j in range(i - 1, -1, -1):
                prior = records[j]
                prior_id = prior.message_id if prior.kind == "assistant" else None
                if prior_id == response_id:
                    anchor = j
                elif prior_id is not None:
                    break
        return anchor, usage
    return None


def token_count_with_estimation(
    records: Sequence[Record],
    *,
    counts: Sequence[int] | None = None,
    estimator: Estimator = _ROUGH,
    walk_siblings: bool = True,
) -> int:
    """``tokenCountWithEstimation``: last real usage + rough estimate of the records after its response.

    The anchor moves back to the *first* record of the last response (same ``message.id``), so records
    interleaved between split siblings are counted; the later siblings are counted by the estimate as
    well as by the usage, as in the reference (docs §6 step 2-3). ``counts`` are precomputed per-record
    rough counts aligned with ``records`` (saves recounting in a replay loop).

    ``walk_siblings=False`` anchors at the last usage-bearing record itself. The v2.1.39 recordings in
    the corpus match that variant exactly where the final usage was persisted (see docs/architecture.md's
    calibration table); v2.1.88 (the reference) walks back.
    """
    found = _anchor(records, walk_siblings)

    def rough(start: int) -> int:
        if counts is not None:
            return sum(counts[start:])
        return sum(estimator.count_many(records[start:]))

    if found is None:
        return rough(0)
    anchor, usage = found
    return usage_tokens(usage) + rough(anchor + 1)


def messages_after_compact_boundary(records: Sequence[Record]) -> list[Record]:
    """``getMessagesAfterCompactBoundary``: from the last compact boundary (included) on."""
    for i in range(len(records) - 1, -1, -1):
        if records[i].is_compact_boundary:
            return list(records[i:])
    return list(records)
