"""The API view of a transcript: Claude Code's ``normalizeMessagesForAPI`` (docs §8.1).

`normalize` turns canonical records into the `Request` Claude Code would send: user/assistant messages
with content as block dicts, each message remembering the record uuids that formed it (so a validator
finding can name records).

Reproduced, in order (docs §8.1):

1. Selection (step 2): only ``user``/``assistant`` records are sent; ``system`` records are dropped except
   ``local_command``, which becomes a user message with the system content as text; ``isVirtual``
   records and synthetic API-error assistants (``model == "<synthetic>"`` **and** ``isApiErrorMessage``:
   an interruption notice such as ``[Request interrupted by user]`` is synthetic but no API error, and
   is sent) are dropped; ``progress``, compact boundaries and metadata lines are not messages.
2. User messages merge into a preceding user message (``mergeUserMessages``): string content becomes a
   text block, a ``\\n`` is appended to the earlier text at a text|text seam, tool_result blocks are
   hoisted first. ``tool_reference`` blocks are stripped (tool search assumed off).
3. Assistant messages: tool_use blocks keep only ``type``/``id``/``name``/``input``; the output is walked
   back over user messages containing a tool_result and assistants with a different ``message.id``; an
   assistant with the same id absorbs the content (split stream records rejoined, docs §7.4).
4. Post passes: orphaned thinking-only assistants dropped, trailing thinking stripped from a final
   assistant (``[No message content]`` if it empties), whitespace-only assistants dropped (then
   adjacent users re-merged), empty non-final assistants get ``(no content)``, ``is_error`` tool_results
   keep only text content.

Assumptions (the reference does not pin them down for recorded transcripts):

* ``attachment`` records are dropped: v2.1.88 does not persist them for non-ant users (docs §7.2), so
  the corpus has none; their ``normalizeAttachmentForAPI`` expansion is not reproduced.
* The PDF/image error stripping and the media-count limit (docs §8.1, §8.2) are not reproduced.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..transcript.model import Record

__all__ = ["ApiMessage", "MessageMemo", "Request", "is_sent", "normalize", "record_message"]

NO_MESSAGE_CONTENT = "[No message content]"
NO_CONTENT = "(no content)"
_THINKING = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class ApiMessage:
    """One message of a request. ``content`` block dicts are shared, treat them as read-only.

    ``record_uuids`` are the uuids of the records merged into it (empty for messages a repair
    inserted); ``message_id`` the API response id of an assistant message.
    """

    role: str
    content: tuple[Mapping[str, Any], ...]
    record_uuids: tuple[str, ...] = ()
    message_id: str | None = None
    is_meta: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": [dict(b) for b in self.content]}

    def block_types(self) -> list[str | None]:
        return [b.get("type") for b in self.content]


@dataclass(frozen=True, slots=True)
class Request:
    """The ``messages`` of one API request, in order."""

    messages: tuple[ApiMessage, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.messages)

    def to_api(self) -> list[dict[str, Any]]:
        """The messages as the JSON the API receives."""
        return [m.to_dict() for m in self.messages]


def _is_synthetic_error(record: Record) -> bool:
    """A synthetic API-error assistant (docs §8.1 step 2): both ``<synthetic>`` and ``isApiErrorMessage``."""
    return record.kind == "assistant" and record.model == "<synthetic>" and record.is_api_error


def is_sent(record: Record) -> bool:
    """Whether a record becomes (part of) an API message (docs §8.1 step 2)."""
    if record.raw.get("isVirtual"):
        return False
    if record.kind == "user":
        return True
    if record.kind == "assistant":
        return not _is_synthetic_error(record)
    return record.kind == "system" and record.subtype == "local_command"


def _user_blocks(record: Record) -> list[Mapping[str, Any]]:
    if record.kind == "system":
        return [{"type": "text", "text": record.blocks[0].text if record.blocks else ""}]
    blocks: list[Mapping[str, Any]] = []
    for block in record.blocks:
        raw = block.raw
        if raw.get("type") == "tool_reference":
            continue
        if block.kind == "tool_result" and isinstance(raw.get("content"), list):
            inner = raw["content"]
            kept = [part for part in inner if not (isinstance(part, Mapping) and part.get("type") == "tool_reference")]
            if len(kept) != len(inner):
                raw = {**raw, "content": kept}
        blocks.append(raw)
    return blocks


def _assistant_blocks(record: Record) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for block in record.blocks:
        if block.kind == "tool_use":
            out.append(
                {
                    "type": "tool_use",
                    "id": block.raw.get("id"),
                    "name": block.raw.get("name"),
                    "input": block.raw.get("input"),
                }
            )
        else:
            out.append(block.raw)
    return out


def _has_tool_result(message: ApiMessage) -> bool:
    return any(b.get("type") == "tool_result" for b in message.content)


def _hoist_tool_results(blocks: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    results = [b for b in blocks if b.get("type") == "tool_result"]
    return tuple(results + [b for b in blocks if b.get("type") != "tool_result"])


def merge_user(a: ApiMessage, b: ApiMessage) -> ApiMessage:
    """``mergeUserMessages``: text seam gets ``\\n``, tool_results hoisted first, no smoosh (§8.1)."""
    left = list(a.content)
    right = list(b.content)
    if left and right and left[-1].get("type") == "text" and right[0].get("type") == "text":
        left[-1] = {**left[-1], "text": f"{left[-1].get('text', '')}\n"}
    return ApiMessage(
        "user",
        _hoist_tool_results(left + right),
        a.record_uuids + b.record_uuids,
        is_meta=a.is_meta and b.is_meta,
    )


def _merge_users(messages: Iterable[ApiMessage]) -> list[ApiMessage]:
    out: list[ApiMessage] = []
    for message in messages:
        if message.role == "user" and out and out[-1].role == "user":
            out[-1] = merge_user(out[-1], message)
        else:
            out.append(message)
    return out


def _append_assistant(out: list[ApiMessage], message: ApiMessage, ids: set[str], log: UndoLog | None = None) -> None:
    """The backward walk that rejoins split siblings across interleaved tool_results (§8.1 step 3).

    ``ids``: the message ids of the assistant messages in ``out`` (updated here). The walk can only end
    on a sibling when one is in ``out``, so a first-seen id is appended without walking. ``log``: see
    `fold_message`.
    """
    if message.message_id is not None and message.message_id in ids:
        for j in range(len(out) - 1, -1, -1):
            prior = out[j]
            if prior.role == "user":
                if _has_tool_result(prior):
                    continue
                break
            if prior.message_id != message.message_id:
                continue
            if log is not None:
                log.append((j, prior))
            out[j] = ApiMessage(
                "assistant",
                prior.content + message.content,
                prior.record_uuids + message.record_uuids,
                prior.message_id,
            )
            return
    if message.message_id is not None and message.message_id not in ids:
        if log is not None:
            log.append((-1, message.message_id))
        ids.add(message.message_id)
    out.append(message)


#: What `fold_message` changed, to undo it: ``(j, message)`` put ``message`` back at ``out[j]``, ``(-1, id)``
#: removes ``id`` from the assistant ids (appended messages are undone by truncating ``out``)
UndoLog = list[tuple[int, Any]]


def fold_message(out: list[ApiMessage], ids: set[str], message: ApiMessage, log: UndoLog | None = None) -> None:
    """One record's message folded into the request being built (merging, §8.1 steps 2-3): ``normalize``'s
    loop body. ``log``, when given, gets an entry for every earlier message replaced and every id added,
    so an incremental caller (`workbench.request.incremental`) can rewind the fold to an earlier record."""
    if message.role == "assistant":
        _append_assistant(out, message, ids, log)
    elif out and out[-1].role == "user":
        if log is not None:
            log.append((len(out) - 1, out[-1]))
        out[-1] = merge_user(out[-1], message)
    else:
        out.append(message)


def _is_whitespace_only(message: ApiMessage) -> bool:
    return bool(message.content) and all(
        b.get("type") == "text" and not str(b.get("text", "")).strip() for b in message.content
    )


def has_non_thinking(message: ApiMessage) -> bool:
    """An assistant message holding anything but thinking (``filterOrphanedThinkingOnlyMessages`` keeps the
    thinking-only messages sharing its ``message.id``)."""
    return message.role == "assistant" and any(b.get("type") not in _THINKING for b in message.content)


def is_thinking_only(message: ApiMessage) -> bool:
    return (
        message.role == "assistant"
        and bool(message.content)
        and all(b.get("type") in _THINKING for b in message.content)
    )


def is_whitespace_only_assistant(message: ApiMessage) -> bool:
    return message.role == "assistant" and _is_whitespace_only(message)


def post_passes(out: list[ApiMessage], with_content: Container[str | None] | None = None) -> list[ApiMessage]:
    """The post passes of §8.1 step 4 over the merged messages ``out`` (returns a new list).

    ``with_content``: the message ids of every assistant message of the request holding more than thinking,
    when ``out`` is only its tail (`workbench.request.incremental`); computed from ``out`` when None.
    """
    # filterOrphanedThinkingOnlyMessages
    if with_content is None:
        with_content = {m.message_id for m in out if has_non_thinking(m)}
    out = [m for m in out if not (is_thinking_only(m) and m.message_id not in with_content)]
    # filterTrailingThinkingFromLastAssistant
    if out and out[-1].role == "assistant":
        last = out[-1]
        content = list(last.content)
        while content and content[-1].get("type") in _THINKING:
            content.pop()
        if len(content) != len(last.content):
            if not content:
                content = [{"type": "text", "text": NO_MESSAGE_CONTENT}]
            out[-1] = ApiMessage("assistant", tuple(content), last.record_uuids, last.message_id)
    # filterWhitespaceOnlyAssistantMessages, then re-merge adjacent users
    kept = [m for m in out if not is_whitespace_only_assistant(m)]
    if len(kept) != len(out):
        out = _merge_users(kept)
    # ensureNonEmptyAssistantContent
    for i, m in enumerate(out[:-1]):
        if m.role == "assistant" and not m.content:
            out[i] = ApiMessage("assistant", ({"type": "text", "text": NO_CONTENT},), m.record_uuids, m.message_id)
    # sanitizeErrorToolResultContent
    for i, m in enumerate(out):
        if m.role == "user" and any(_needs_sanitizing(b) for b in m.content):
            out[i] = ApiMessage("user", tuple(_sanitize(b) for b in m.content), m.record_uuids, is_meta=m.is_meta)
    return out


def _needs_sanitizing(block: Mapping[str, Any]) -> bool:
    content = block.get("content")
    return (
        block.get("type") == "tool_result"
        and bool(block.get("is_error"))
        and isinstance(content, list)
        and any(not (isinstance(p, Mapping) and p.get("type") == "text") for p in content)
    )


def _sanitize(block: Mapping[str, Any]) -> Mapping[str, Any]:
    if not _needs_sanitizing(block):
        return block
    return {**block, "content": [p for p in block["content"] if isinstance(p, Mapping) and p.get("type") == "text"]}


def record_message(record: Record) -> ApiMessage | None:
    """The message one record becomes before any merging, None for a record that is not sent."""
    if not is_sent(record):
        return None
    uuids = (record.uuid,) if record.uuid else ()
    if record.kind == "assistant":
        return ApiMessage("assistant", tuple(_assistant_blocks(record)), uuids, record.message_id)
    return ApiMessage("user", tuple(_user_blocks(record)), uuids, is_meta=record.is_meta)


#: ``id(record) → (record, record_message(record))``: see `normalize`'s ``memo``
MessageMemo = dict[int, tuple[Record, "ApiMessage | None"]]


def remembered_message(record: Record, memo: MessageMemo | None) -> ApiMessage | None:
    """`record_message` of ``record``, built once per ``memo`` (built every time without one)."""
    if memo is None:
        return record_message(record)
    hit = memo.get(id(record))
    if hit is None:
        hit = memo[id(record)] = (record, record_message(record))
    return hit[1]


def normalize(records: Iterable[Record], *, memo: MessageMemo | None = None) -> Request:
    """``normalizeMessagesForAPI`` over ``records`` (in order), see the module docstring (docs §8.1).

    Args:
        records: canonical records, typically ``Session.conversation()`` after the last compact
            boundary; records that are not sent (progress, metadata, most system lines) are skipped.
        memo: each record's own message (`record_message`), kept across calls by whoever checks the
            same records again and again (the replay engine checks a strategy's context before calls):
            records and messages are immutable, so a record's message is built once. It holds the record
            it was built from, so an ``id`` is never reused while its entry is there.

    Returns:
        The request, each message carrying the uuids of the records that formed it.
    """
    out: list[ApiMessage] = []
    assistant_ids: set[str] = set()
    for record in records:
        message = remembered_message(record, memo)
        if message is not None:
            fold_message(out, assistant_ids, message)
    return Request(tuple(post_passes(out)))
