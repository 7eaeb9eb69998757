"""Claude Code's pairing repair, ``ensureToolResultPairing`` (docs §8.2), as an optional step.

`repair` takes a normalized `Request` and returns the repaired request plus one `Repair` per change,
so a study can count how often Claude Code papers over a broken cut instead of failing with a 400.

Reproduced (docs §8.2):

* A user message whose preceding output message is not an assistant loses its tool_result blocks; if
  that empties it, it becomes ``[Orphaned tool result removed due to conversation resume]`` when it is
  first, and is dropped otherwise.
* Assistant messages: tool_use ids are deduplicated across the whole request (later duplicates removed);
  ``server_tool_use``/``mcp_tool_use`` blocks without a matching result in the same message are dropped;
  an emptied assistant becomes ``[Tool use interrupted]``.
* The message after an assistant: missing results are prepended as synthetic error results
  (``[Tool result missing due to internal error]``), or a new meta user message carries them when the
  next message is not a user message; results for ids not in the assistant, and duplicate results,
  are removed; an emptied next user message is replaced by a meta ``(no content)`` user message.

Assumption: a final assistant message with unanswered tool_use gets a synthetic result message too
(the reference inserts one whenever the next message is not a user message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .normalize import ApiMessage, Request

__all__ = ["MISSING_RESULT_TEXT", "ORPHAN_TEXT", "Repair", "repair"]

ORPHAN_TEXT = "[Orphaned tool result removed due to conversation resume]"
INTERRUPTED_TEXT = "[Tool use interrupted]"
MISSING_RESULT_TEXT = "[Tool result missing due to internal error]"
NO_CONTENT = "(no content)"
_SERVER_USES = frozenset({"server_tool_use", "mcp_tool_use"})

# A block's tool_use id, None when the block has none: a missing id is matched like any other (one
# id-less tool_use pairs with one id-less tool_result), as the reference matches an undefined id and
# as `validate` counts it.
ToolId = str | None


@dataclass(frozen=True, slots=True)
class Repair:
    """One change ``repair`` made.

    ``kind`` is one of ``orphaned_tool_result``, ``duplicate_tool_use``, ``unpaired_server_tool_use``,
    ``empty_assistant``, ``synthetic_tool_result``, ``unexpected_tool_result``,
    ``duplicate_tool_result``, ``inserted_no_content``. ``message`` is the index in the *input* request.
    """

    kind: str
    message: int
    tool_use_id: str | None = None
    record_uuids: tuple[str, ...] = ()


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _missing_result(tool_use_id: ToolId) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": MISSING_RESULT_TEXT, "is_error": True}


def _fix_assistant(index: int, message: ApiMessage, seen_uses: dict[ToolId, int], repairs: list[Repair]) -> ApiMessage:
    content: list[Mapping[str, Any]] = []
    before = len(repairs)
    server_results = {b.get("tool_use_id") for b in message.content if str(b.get("type", "")).endswith("_tool_result")}
    for block in message.content:
        kind = block.get("type")
        if kind == "tool_use":
            use_id = block.get("id")
            if use_id in seen_uses:
                repairs.append(Repair("duplicate_tool_use", index, use_id, message.record_uuids))
                continue
            seen_uses[use_id] = index
        elif kind in _SERVER_USES and block.get("id") not in server_results:
            repairs.append(Repair("unpaired_server_tool_use", index, block.get("id"), message.record_uuids))
            continue
        content.append(block)
    if not content and message.content:
        repairs.append(Repair("empty_assistant", index, None, message.record_uuids))
        content = [_text(INTERRUPTED_TEXT)]
    if len(repairs) == before:
        return message
    return ApiMessage("assistant", tuple(content), message.record_uuids, message.message_id)


def _fix_next(
    index: int, use_ids: list[ToolId], nxt: ApiMessage, seen_results: dict[ToolId, int], repairs: list[Repair]
) -> ApiMessage | None:
    """The user message after an assistant; None when it emptied and must become ``(no content)``."""
    wanted = set(use_ids)
    kept: list[Mapping[str, Any]] = []
    present: set[ToolId] = set()
    for block in nxt.content:
        if block.get("type") == "tool_result":
            result_id = block.get("tool_use_id")
            if result_id not in wanted:
                repairs.append(Repair("unexpected_tool_result", index + 1, result_id, nxt.record_uuids))
                continue
            if result_id in present or result_id in seen_results:
                repairs.append(Repair("duplicate_tool_result", index + 1, result_id, nxt.record_uuids))
                continue
            present.add(result_id)
            seen_results.setdefault(result_id, index)
        kept.append(block)
    missing = [use_id for use_id in use_ids if use_id not in present]
    for use_id in missing:
        repairs.append(Repair("synthetic_tool_result", index + 1, use_id, nxt.record_uuids))
        seen_results.setdefault(use_id, index)
    content = [_missing_result(use_id) for use_id in missing] + kept
    if not content:
        return None
    if len(content) == len(nxt.content) and not missing:
        return nxt
    return ApiMessage("user", tuple(content), nxt.record_uuids, is_meta=nxt.is_meta)


def repair_step(
    i: int,
    messages: Sequence[ApiMessage],
    last_role: str | None,
    seen_uses: dict[ToolId, int],
    seen_results: dict[ToolId, int],
    repairs: list[Repair],
) -> list[ApiMessage]:
    """``ensureToolResultPairing``'s loop body for ``messages[i]``: the messages it puts out (none, one, or an
    assistant and the message after it, which that step handles). ``last_role``: the role of the last
    message put out so far (None before the first); ``seen_uses``/``seen_results``: ids seen, each → the
    index of the assistant message whose step saw it (updated); ``repairs`` gets what was changed."""
    message = messages[i]
    if message.role == "user":
        if i > 0 and messages[i - 1].role == "assistant":
            return []  # the previous assistant's step handled it
        if last_role != "assistant" and any(b.get("type") == "tool_result" for b in message.content):
            for block in message.content:
                if block.get("type") == "tool_result":
                    repairs.append(Repair("orphaned_tool_result", i, block.get("tool_use_id"), message.record_uuids))
            content = tuple(b for b in message.content if b.get("type") != "tool_result")
            if not content:
                if last_role is not None:
                    return []
                content = (_text(ORPHAN_TEXT),)
            message = ApiMessage("user", content, message.record_uuids, is_meta=message.is_meta)
        return [message]
    fixed = _fix_assistant(i, message, seen_uses, repairs)
    use_ids: list[ToolId] = [b.get("id") for b in fixed.content if b.get("type") == "tool_use"]
    nxt = messages[i + 1] if i + 1 < len(messages) else None
    if nxt is not None and nxt.role == "user":
        fixed_next = _fix_next(i, use_ids, nxt, seen_results, repairs)
        if fixed_next is None:
            repairs.append(Repair("inserted_no_content", i + 1, None, nxt.record_uuids))
            fixed_next = ApiMessage("user", (_text(NO_CONTENT),), nxt.record_uuids, is_meta=True)
        return [fixed, fixed_next]
    if use_ids:
        for use_id in use_ids:
            repairs.append(Repair("synthetic_tool_result", i + 1, use_id))
            seen_results.setdefault(use_id, i)
        return [fixed, ApiMessage("user", tuple(_missing_result(u) for u in use_ids), (), is_meta=True)]
    return [fixed]


def repair(request: Request) -> tuple[Request, list[Repair]]:
    """``ensureToolResultPairing`` (docs §8.2): the repaired request and what was changed.

    Args:
        request: a normalized request (see `workbench.request.normalize.normalize`).

    Returns:
        ``(repaired, repairs)``; ``repairs`` is empty and ``repaired`` equal to ``request`` when the
        pairing was already intact.
    """
    messages = request.messages
    out: list[ApiMessage] = []
    repairs: list[Repair] = []
    seen_uses: dict[ToolId, int] = {}
    seen_results: dict[ToolId, int] = {}
    for i in range(len(messages)):
        put = repair_step(i, messages, out[-1].role if out else None, seen_uses, seen_results, repairs)
        out.extend(put)
    if not repairs:
        return request, []
    return Request(tuple(out)), repairs
