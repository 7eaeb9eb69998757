"""Records → the ``messages`` of an online request (conversation + one extra user message).

Both model-backed pieces send "the conversation, then one user message with the instructions", as
Claude Code's forked agents do (docs §1.3 extraction, §5.1 compaction):

1. `workbench.request.normalize.normalize` (``normalizeMessagesForAPI``, docs §8.1);
2. the instruction message appended, merged into a trailing user message with ``mergeUserMessages``;
3. `workbench.request.repair.repair` (``ensureToolResultPairing``, docs §8.2): the extraction hook runs
   before the last turn's tool results exist, so the trailing ``tool_use`` blocks get the synthetic
   ``[Tool result missing due to internal error]`` results prepended to the instruction message,
   exactly as Claude Code's request would carry them.

Then, to make a recorded conversation a request any model accepts (our additions, documented):

* ``strip_media``: image/document blocks (also inside tool_result content) become ``[image]`` /
  ``[document]`` text (Claude Code's ``stripImages`` on the compaction path, docs §5.1);
* ``drop_thinking``: thinking/redacted_thinking blocks are dropped. Their signatures belong to the
  recorded model, and the API ignores earlier turns' thinking anyway; an assistant left empty gets
  ``(no content)``;
* empty / whitespace-only text blocks are dropped (the API rejects them); a message left empty gets
  ``(no content)``;
* a conversation that starts with an assistant message gets a leading user message
  ``[earlier conversation truncated for compaction retry]`` (Claude Code's marker for the same case).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..request.normalize import ApiMessage, Request, merge_user, normalize
from ..request.repair import repair
from ..transcript.model import Record

__all__ = ["TRUNCATED_HEAD_TEXT", "conversation_messages", "strip_media_blocks"]

TRUNCATED_HEAD_TEXT = "[earlier conversation truncated for compaction retry]"
NO_CONTENT = "(no content)"
_THINKING = frozenset({"thinking", "redacted_thinking"})
_MEDIA = {"image": "[image]", "document": "[document]"}


def strip_media_blocks(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Images → ``[image]``, documents → ``[document]`` text blocks, also inside tool_result content."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind in _MEDIA:
            out.append({"type": "text", "text": _MEDIA[str(kind)]})
        elif kind == "tool_result" and isinstance(block.get("content"), list):
            out.append({**block, "content": strip_media_blocks(block["content"])})
        else:
            out.append(dict(block))
    return out


def _clean(blocks: list[dict[str, Any]], *, drop_thinking: bool) -> list[dict[str, Any]]:
    kept = []
    for block in blocks:
        kind = block.get("type")
        if drop_thinking and kind in _THINKING:
            continue
        if kind == "text" and not str(block.get("text") or "").strip():
            continue
        kept.append(block)
    return kept or [{"type": "text", "text": NO_CONTENT}]


def conversation_messages(
    records: Sequence[Record],
    instruction: str | None = None,
    *,
    strip_media: bool = False,
    drop_thinking: bool = True,
) -> list[dict[str, Any]]:
    """The API ``messages`` for ``records`` followed by the user message ``instruction`` (if any)."""
    messages = list(normalize(records).messages)
    if instruction is not None:
        extra = ApiMessage("user", ({"type": "text", "text": instruction},), is_meta=True)
        if messages and messages[-1].role == "user":
            messages[-1] = merge_user(messages[-1], extra)
        else:
            messages.append(extra)
    repaired, _ = repair(Request(tuple(messages)))
    out: list[dict[str, Any]] = []
    for message in repaired.messages:
        blocks = [dict(b) for b in message.content]
        if strip_media:
            blocks = strip_media_blocks(blocks)
        out.append({"role": message.role, "content": _clean(blocks, drop_thinking=drop_thinking)})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": TRUNCATED_HEAD_TEXT}]})
    return out
