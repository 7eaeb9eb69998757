"""In-place rewrites of tool outputs, shared by every strategy that clears, masks or truncates them.

They replace ``tool_result`` contents (same ids, same pairing), so a request built from the result keeps
every API invariant; the compaction they report drops no conversation record (``start`` is None).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from ..transcript.model import Block, Record
from .base import Compaction

__all__ = ["extends", "in_place", "index_results", "rewrite_at", "rewrite_tool_results"]

NewContent = Callable[[Block], Any | None]


def _rewritten(record: Record, new_content: NewContent, ids: set[str] | None) -> tuple[Record, int]:
    """``record`` with its tool_result blocks (those in ``ids``, all when None) rewritten, and how many."""
    if record.kind != "user" or not record.tool_results():
        return record, 0
    blocks = []
    changed = 0
    for block in record.blocks:
        content = None
        if block.kind == "tool_result" and (ids is None or block.tool_use_id in ids):
            content = new_content(block)
        if content is None:
            blocks.append(block)
        else:
            blocks.append(Block(block.kind, {**block.raw, "content": content}))
            changed += 1
    return (record.with_blocks(blocks) if changed else record), changed


def rewrite_tool_results(
    records: Sequence[Record], new_content: NewContent, ids: set[str] | None = None
) -> tuple[list[Record], int]:
    """Replace tool_result contents (those in ``ids``, all when None): ``new_content(block)`` returns the
    new content, or None to leave the block alone. Returns the records and how many blocks changed."""
    out: list[Record] = []
    changed = 0
    for record in records:
        record, count = _rewritten(record, new_content, ids)
        out.append(record)
        changed += count
    return out, changed


def extends(records: Sequence[Record], context: Sequence[Record]) -> bool:
    """Whether ``records`` begin with ``context``'s very records (by identity, compared in C): what an
    incremental strategy's index of the context it last returned or saw still describes."""
    return len(records) >= len(context) and all(map(operator.is_, records, context))


def index_results(results: dict[str, list[int]], index: int, record: Record) -> None:
    """Note ``index`` under each tool_use id whose tool_result the user record ``record`` holds: where an
    incremental state finds the records `rewrite_at` must look at for an id."""
    if record.kind == "user":
        for tool_use_id in {b.tool_use_id for b in record.tool_results()}:
            if tool_use_id is not None:
                results.setdefault(tool_use_id, []).append(index)


def rewrite_at(
    records: Sequence[Record], positions: Sequence[int], new_content: NewContent, ids: set[str]
) -> tuple[list[Record], int, tuple[int, ...]]:
    """`rewrite_tool_results` of ``ids`` when only the records at ``positions`` (ascending) can hold them:
    the same records and count, and the positions of the records it replaced (``Compaction.changed_at``)."""
    out = list(records)
    changed = 0
    at = []
    for position in positions:
        record, count = _rewritten(out[position], new_content, ids)
        if count:
            out[position] = record
            changed += count
            at.append(position)
    return out, changed, tuple(at)


def in_place(
    kind: str,
    trigger: str,
    old: Sequence[Record],
    new: Sequence[Record],
    details: dict[str, Any],
    *,
    changed_at: tuple[int, ...] | None = None,
) -> Compaction:
    """A compaction that rewrote some records and dropped none of the conversation (``start`` None).

    ``changed_at``: the positions where ``new`` holds another record than ``old`` (the same length, every
    other record the same object), when the strategy knows them (`rewrite_at`): what was dropped and
    added is then read at those positions instead of compared over the whole context, and the engine does
    the same (`Compaction.changed_at`)."""
    if changed_at is not None:
        dropped = tuple(old[i].uuid for i in changed_at)
        added = tuple(new[i] for i in changed_at)
    else:
        new_ids = {id(r) for r in new}
        old_ids = {id(r) for r in old}
        dropped = tuple(r.uuid for r in old if id(r) not in new_ids)
        added = tuple(r for r in new if id(r) not in old_ids)
    return Compaction(
        kind=kind,
        trigger=trigger,
        records=tuple(new),
        dropped=dropped,
        added=added,
        start=None,
        details=details,
        changed_at=changed_at,
    )
