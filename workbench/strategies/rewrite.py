"""In-place rewrites of tool outputs, shared by every strategy that clears, masks or truncates them.

They replace ``tool_result`` contents (same ids, same pairing), so a request built from the result keeps
every API invariant; the compaction they report drops no conversation record (``start`` is None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..transcript.model import Block, Record
from .base import Compaction

__all__ = ["in_place", "rewrite_tool_results"]


def rewrite_tool_results(
    records: Sequence[Record], new_content: Callable[[Block], Any | None], ids: set[str] | None = None
) -> tuple[list[Record], int]:
    """Replace tool_result contents (those in ``ids``, all when None): ``new_content(block)`` returns the
    new content, or None to leave the block alone. Returns the records and how many blocks changed."""
    out: list[Record] = []
    changed = 0
    for record in records:
        if record.kind != "user" or not record.tool_results():
            out.append(record)
            continue
        blocks = []
        touched = False
        for block in record.blocks:
            content = None
            if block.kind == "tool_result" and (ids is None or block.tool_use_id in ids):
                content = new_content(block)
            if content is None:
                blocks.append(block)
            else:
                blocks.append(Block(block.kind, {**block.raw, "content": content}))
                changed += 1
                touched = True
        out.append(record.with_blocks(blocks) if touched else record)
    return out, changed


def in_place(
    kind: str, trigger: str, old: Sequence[Record], new: Sequence[Record], details: dict[str, Any]
) -> Compaction:
    """A compaction that rewrote some records and dropped none of the conversation (``start`` None)."""
    new_ids = {id(r) for r in new}
    old_ids = {id(r) for r in old}
    return Compaction(
        kind=kind,
        trigger=trigger,
        records=tuple(new),
        dropped=tuple(r.uuid for r in old if id(r) not in new_ids),
        added=tuple(r for r in new if id(r) not in old_ids),
        start=None,
        details=details,
    )
