"""Claude Code's cut-point adjustment, ``adjustIndexToPreserveAPIInvariants`` (docs §2.5).

SM-compact keeps ``messages[start:]`` verbatim. A naive ``start`` can orphan tool_results (their
tool_use was summarized away) or split one streamed response (docs §7.4) so that its thinking sibling is
lost. `adjust_to_api_invariants` moves ``start`` earlier, never later, in two steps:

1. Tool pairs: every tool_result id in the kept range (all kept user records, not only the first)
   without a kept tool_use pulls ``start`` back to the assistant record holding that tool_use.
2. Same-``message.id`` siblings: any earlier assistant record sharing a ``message.id`` with a kept
   assistant record pulls ``start`` back to it; the id set is taken once and not extended by the walk.

``start <= 0`` and ``start >= len(records)`` (keep nothing) are returned unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..transcript.model import Record

__all__ = ["adjust_to_api_invariants"]


def adjust_to_api_invariants(records: Sequence[Record], start: int) -> int:
    """The adjusted first kept index (docs §2.5); always ``<= start``.

    Args:
        records: the message list SM-compact sees (Claude Code's in-memory order, i.e. file order).
        start: the naive first kept index.

    Returns:
        The index from which records can be kept without breaking tool pairing or split responses.
    """
    if start <= 0 or start >= len(records):
        return start
    kept = records[start:]
    result_ids = {i for r in kept if r.kind == "user" and not r.string_content for i in r.tool_result_ids()}
    use_ids = {i for r in kept if r.kind == "assistant" for i in r.tool_use_ids()}
    needed = result_ids - use_ids
    adjusted = start
    i = start - 1
    while needed and i >= 0:
        record = records[i]
        if record.kind == "assistant":
            found = needed.intersection(record.tool_use_ids())
            if found:
                adjusted = i
                needed -= found
        i -= 1
    message_ids = {r.message_id for r in records[adjusted:] if r.kind == "assistant" and r.message_id is not None}
    for i in range(adjusted - 1, -1, -1):
        record = records[i]
        if record.kind == "assistant" and record.message_id in message_ids:
            adjusted = i
    return adjusted
