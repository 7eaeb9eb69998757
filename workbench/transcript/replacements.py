"""What Claude Code sent in place of a tool result: its recorded ``content-replacement`` entries.

Claude Code's per-message tool-result budget (``toolResultStorage.ts``; docs §3.7: when one user message's
tool results together exceed 200,000 characters, the largest are persisted to disk and replaced by a
preview) is applied to the *request*, not to the transcript. The transcript keeps each result whole and
records the decision in a separate line, so a resumed session sends the same bytes again::

    {"type": "content-replacement", "sessionId": "...", "agentId": "...",
     "replacements": [{"kind": "tool-result", "toolUseId": "toolu_...", "replacement": "<persisted-output>..."}]}

``replacement`` is the exact string the model saw. Read as written, the transcript overstates what was
sent, and a replay that applies the budget again subtracts the same saving a second time (the recorded
usage already reflects the preview). `as_sent` gives the records as the requests carried them; the
replay engine works on that view, and `Record.line` keeps the recorded line for a byte-identical export.

(The per-result persistence above 50,000 characters is different: Claude Code writes the
``<persisted-output>`` preview into the transcript itself, so the recording already shows it.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .block import Block
from .model import Record

__all__ = ["as_sent", "recorded_replacements"]


def recorded_replacements(records: Sequence[Record]) -> dict[str, str]:
    """``tool_use_id`` → the replacement Claude Code sent, from every ``content-replacement`` line."""
    out: dict[str, str] = {}
    for record in records:
        if record.kind != "content-replacement":
            continue
        items = record.raw.get("replacements")
        if not isinstance(items, Sequence) or isinstance(items, str):
            continue
        for item in items:
            if not isinstance(item, Mapping) or item.get("kind", "tool-result") != "tool-result":
                continue
            tool_use_id, replacement = item.get("toolUseId"), item.get("replacement")
            if isinstance(tool_use_id, str) and isinstance(replacement, str):
                out[tool_use_id] = replacement
    return out


def as_sent(records: Sequence[Record], replacements: Mapping[str, str] | None = None) -> list[Record]:
    """``records`` with each replaced tool result's content swapped for what Claude Code sent (the same
    record objects where nothing was replaced). ``replacements``: default `recorded_replacements`."""
    found = recorded_replacements(records) if replacements is None else replacements
    if not found:
        return list(records)
    out = []
    for record in records:
        hits = [b for b in record.blocks if b.kind == "tool_result" and b.tool_use_id in found]
        if not hits:
            out.append(record)
            continue
        blocks = [
            Block(b.kind, {**b.raw, "content": found[b.tool_use_id]})  # type: ignore[index]
            if b.kind == "tool_result" and b.tool_use_id in found
            else b
            for b in record.blocks
        ]
        out.append(record.with_blocks(blocks, string_content=record.string_content))
    return out
