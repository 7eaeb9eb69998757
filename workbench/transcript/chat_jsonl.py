"""Generic chat-format JSONL: OpenAI Chat Completions ``messages`` (``tool_calls`` / ``tool`` role) and
Anthropic-style ``messages``; plus the OpenAI → canonical helpers other loaders share.

Two layouts:

* one conversation per line: ``{"messages": [...], "tools": ..., "id": ...}`` (fine-tuning / eval
  exports). Each line becomes a Session ``<file stem>:<line>``; its items are the messages.
* one message per line: ``{"role": ..., "content": ...}``. The file is one Session; items are lines.

Mapping: ``system``/``developer`` → kind ``system``; ``assistant`` ``tool_calls`` → ``tool_use`` blocks
(``arguments`` parsed from JSON; unparseable arguments are kept as ``{"_raw_arguments": text}``);
``tool`` (and legacy ``function``) messages → a ``user`` record with one ``tool_result``. A tool-call id
used twice in one conversation is renamed ``<id>#<n>`` (results follow the newest use) so API pairing
holds; ``Session.metadata["renamed_tool_ids"]`` counts them. Anthropic block lists pass through as-is.

What the format lacks: uuids (records get positional ``<session>:<index>`` uuids), message ids,
timestamps, usage and thinking, unless a message carries ``usage``/``reasoning_content``.

Sniffing is deliberately narrow: only ``.jsonl`` whose first line is a single message (``"role"`` at
the top level, no ``"messages"``), or a ``messages`` line with OpenAI-only markers (``tool_calls``,
``"role":"tool"``). Note the earlier ``anthropic-messages`` loader claims every ``.jsonl`` whose first line
has ``"messages"``; use ``format="chat-jsonl"`` to force this loader for those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .files import read_lines
from .jsonio import BadInput, decode_json_line
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = [
    "ChatJsonlLoader",
    "ToolIds",
    "normalize_usage",
    "openai_tool_use",
    "records_from_messages",
    "session_from_messages",
]

FORMAT = "chat-jsonl"


def normalize_usage(usage: Any) -> dict[str, int] | None:
    """Anthropic-style usage keys from an OpenAI/LiteLLM ``usage`` object (recorded numbers only).

    ``input_tokens`` = prompt − cached − cache-creation, ``cache_read_input_tokens`` = cached,
    ``output_tokens`` = completion. Keys the source lacks are left out."""
    if not isinstance(usage, Mapping):
        return None

    def num(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    prompt = num(usage.get("prompt_tokens"))
    completion = num(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = num(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    cached = num(usage.get("cache_read_input_tokens")) or cached
    creation = num(usage.get("cache_creation_input_tokens"))
    out: dict[str, int] = {}
    if prompt is not None:
        out["input_tokens"] = prompt - (cached or 0) - (creation or 0)
    if cached is not None:
        out["cache_read_input_tokens"] = cached
    if creation is not None:
        out["cache_creation_input_tokens"] = creation
    if completion is not None:
        out["output_tokens"] = completion
    return out or None


class ToolIds:
    """Keeps tool-call ids unique within a session: a reused id becomes ``<id>#<n>``."""

    def __init__(self) -> None:
        self._uses: dict[str, int] = {}
        self._current: dict[str, str] = {}
        self.renamed = 0

    def use(self, call_id: str) -> str:
        count = self._uses.get(call_id, 0) + 1
        self._uses[call_id] = count
        new = call_id if count == 1 else f"{call_id}#{count}"
        self.renamed += count > 1
        self._current[call_id] = new
        return new

    def result(self, call_id: str) -> str:
        return self._current.get(call_id, call_id)


def parse_arguments(arguments: Any) -> Any:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            return {"_raw_arguments": arguments}
        return value if isinstance(value, dict) else {"_raw_arguments": arguments}
    return {} if arguments is None else {"_raw_arguments": arguments}


def openai_tool_use(call: Any, fallback_id: str, ids: ToolIds | None = None) -> Block:
    """One OpenAI ``tool_calls`` entry (or legacy ``function_call``) as a tool_use block."""
    call = call if isinstance(call, Mapping) else {}
    function = call.get("function") if isinstance(call.get("function"), Mapping) else call
    call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else fallback_id
    if ids is not None:
        call_id = ids.use(call_id)
    name = function.get("name") if isinstance(function.get("name"), str) else ""
    return Block(
        "tool_use",
        {"type": "tool_use", "id": call_id, "name": name, "input": parse_arguments(function.get("arguments"))},
    )


def content_blocks(content: Any) -> tuple[tuple[Block, ...], bool]:
    """(blocks, string_content) of an OpenAI/Anthropic ``content`` value (None → no blocks)."""
    if isinstance(content, str):
        return (Block.text_block(content),), True
    if isinstance(content, list):
        return tuple(Block.from_raw(part) for part in content), False
    return (), False


class MessageError(ValueError):
    """A message that cannot become a Record (the message is the Skip reason)."""


def record_from_message(
    message: Any, *, uuid: str, ids: ToolIds, source: str, line_no: int, line: str | None = None
) -> Record:
    if not isinstance(message, Mapping):
        raise MessageError(f"expected a message object, found {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str):
        raise MessageError("message has no 'role' string")
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise MessageError(f"{role} message content must be a string, a list or null")
    blocks, string_content = content_blocks(content)
    kind = role
    if role in ("system", "developer"):
        kind = "system"
    elif role in ("tool", "function"):
        call_id = message.get("tool_call_id") or message.get("name") or f"{uuid}:result"
        result = content if content is not None else ""
        blocks = (
            Block("tool_result", {"type": "tool_result", "tool_use_id": ids.result(str(call_id)), "content": result}),
        )
        kind, role, string_content = "user", "user", False
    elif role == "assistant":
        extra: list[Block] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            extra.append(Block("thinking", {"type": "thinking", "thinking": reasoning}))
        calls = message.get("tool_calls")
        uses = (
            [openai_tool_use(c, f"{uuid}:call{i}", ids) for i, c in enumerate(calls)] if isinstance(calls, list) else []
        )
        if isinstance(message.get("function_call"), Mapping):
            uses.append(openai_tool_use(message["function_call"], f"{uuid}:call", ids))
        if extra or uses:
            text = [b for b in blocks if not (b.kind == "text" and not b.text)]
            blocks, string_content = (*extra, *text, *uses), False
    elif role != "user":
        raise MessageError(f"unknown role {role!r}")
    name = message.get("model")
    return Record(
        kind=kind,
        uuid=uuid,
        message_id=message.get("id") if isinstance(message.get("id"), str) else None,
        role=role,
        blocks=blocks,
        string_content=string_content,
        has_content=True,
        usage=normalize_usage(message.get("usage")),
        model=name if isinstance(name, str) else None,
        raw=dict(message),
        line=line,
        source=source,
        line_no=line_no,
    )


def records_from_messages(
    messages: list[Any], *, prefix: str, source: str, ids: ToolIds | None = None
) -> tuple[list[Record], list[Skip]]:
    ids = ids or ToolIds()
    records: list[Record] = []
    skipped: list[Skip] = []
    for index, message in enumerate(messages):
        try:
            records.append(
                record_from_message(message, uuid=f"{prefix}:{index}", ids=ids, source=source, line_no=index + 1)
            )
        except MessageError as exc:
            skipped.append(Skip(source, index + 1, f"messages.{index}: {exc}"))
    return records, skipped


def session_from_messages(obj: Any, *, session_id: str, source: str, format: str = FORMAT) -> Session:
    """A ``{"messages": [...], ...}`` object (or a bare message list) as one Session."""
    if isinstance(obj, list):
        obj = {"messages": obj}
    if not isinstance(obj, Mapping) or not isinstance(obj.get("messages"), list):
        return Session(
            id=session_id,
            records=(),
            source=source,
            format=format,
            lines=1,
            skipped=(Skip(source, 1, "no 'messages' list"),),
        )
    ids = ToolIds()
    records, skipped = records_from_messages(obj["messages"], prefix=session_id, source=source, ids=ids)
    meta = {k: v for k, v in obj.items() if k != "messages"}
    if ids.renamed:
        meta["renamed_tool_ids"] = ids.renamed
    models = tuple(dict.fromkeys(r.model for r in records if r.model))
    if isinstance(obj.get("model"), str):
        models = (obj["model"], *models)
    return Session(
        id=session_id,
        records=tuple(records),
        source=source,
        format=format,
        session_id=session_id,
        models=tuple(dict.fromkeys(models)),
        skipped=tuple(skipped),
        lines=len(obj["messages"]),
        capabilities=_capabilities(records),
        metadata=meta,
    )


def _capabilities(records: list[Record]) -> frozenset[str]:
    caps = set()
    if any(r.usage for r in records):
        caps.add("usage")
    if any(b.kind == "thinking" for r in records for b in r.blocks):
        caps.add("thinking")
    return frozenset(caps)


_OPENAI_MARK = re.compile(rb'"tool_calls"|"role"\s*:\s*"tool"|"tool_call_id"')


class ChatJsonlLoader:
    """Chat-format JSONL (OpenAI or Anthropic ``messages``): see the module docstring."""

    name = FORMAT
    suffixes = (".jsonl",)

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0].strip()
        if not first.startswith(b"{"):
            return False
        if b'"messages"' in first:
            return bool(_OPENAI_MARK.search(first))
        return first.startswith((b'{"role"', b'{ "role"')) or (
            b'"role"' in first and b'"content"' in first and b'"type"' not in first[:40] and b'"uuid"' not in first
        )

    def load(self, path: Path) -> list[Session]:
        lines, trailing = read_lines(path)
        parsed: list[tuple[int, Any, bytes, str | None]] = []
        for number, chunk in enumerate(lines, start=1):
            try:
                parsed.append((number, decode_json_line(chunk), chunk, None))
            except BadInput as exc:
                parsed.append((number, None, chunk, exc.reason))
        first = next((obj for _, obj, _, err in parsed if err is None), None)
        if isinstance(first, Mapping) and "messages" in first:
            return [self._conversation(path, n, obj, chunk, err) for n, obj, chunk, err in parsed]
        return [self._message_file(path, parsed, len(lines), trailing)]

    @staticmethod
    def _conversation(path: Path, number: int, obj: Any, chunk: bytes, err: str | None) -> Session:
        sid = f"{path.stem}:{number}"
        if err is not None:
            return Session(
                id=sid,
                records=(),
                source=str(path),
                format=FORMAT,
                lines=1,
                skipped=(Skip(str(path), number, err, chunk),),
            )
        session = session_from_messages(obj, session_id=sid, source=str(path))
        # Skips inside one conversation name the file line; the message index is in the reason.
        skipped = tuple(Skip(s.file, number, s.reason, chunk) for s in session.skipped)
        return replace(session, skipped=skipped)

    @staticmethod
    def _message_file(path: Path, parsed: list[tuple[int, Any, bytes, str | None]], n: int, trailing: bool) -> Session:
        ids = ToolIds()
        records: list[Record] = []
        skipped: list[Skip] = []
        for number, obj, chunk, err in parsed:
            if err is not None:
                skipped.append(Skip(str(path), number, err, chunk))
                continue
            try:
                records.append(
                    record_from_message(
                        obj,
                        uuid=f"{path.stem}:{number - 1}",
                        ids=ids,
                        source=str(path),
                        line_no=number,
                        line=chunk.decode("utf-8"),
                    )
                )
            except MessageError as exc:
                skipped.append(Skip(str(path), number, str(exc), chunk))
        return Session(
            id=path.stem,
            records=tuple(records),
            source=str(path),
            format=FORMAT,
            session_id=path.stem,
            models=tuple(dict.fromkeys(r.model for r in records if r.model)),
            skipped=tuple(skipped),
            lines=n,
            trailing_newline=trailing,
            capabilities=_capabilities(records),
            metadata={"renamed_tool_ids": ids.renamed} if ids.renamed else {},
        )


register(ChatJsonlLoader())
