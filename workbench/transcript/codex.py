"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``).

No real sample is in the corpus; this follows the documented rollout layout (codex-rs ``protocol``
``RolloutLine``): each line is ``{"timestamp", "type", "payload"}`` with ``type`` one of
``session_meta``, ``response_item``, ``event_msg``, ``turn_context``, ``compacted``. The older layout
(first line the session meta ``{"id", "timestamp", "instructions"}``, then bare response items and
``{"record_type": "state"}`` lines) is read too. Items are lines; each becomes one Record (``raw`` = the
parsed line, ``line`` = its exact text, ``timestamp`` = the line's):

* ``response_item`` ``message``: ``user`` → kind ``user``, ``assistant`` → ``assistant``, ``developer``/
  ``system`` → ``system``; ``input_text``/``output_text`` parts → text blocks (other parts kept raw).
* ``reasoning`` → ``assistant`` with a ``thinking`` block (the summary texts, or ``content`` texts when
  recorded; ``encrypted_content`` stays in ``raw`` only).
* ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` → ``assistant`` with a ``tool_use``
  (id = ``call_id``; ``arguments`` parsed; a custom tool's free-form ``input`` string becomes
  ``{"input": text}``; a local shell call's ``action`` is its input); ``web_search_call`` → a
  ``server_tool_use`` block.
* ``function_call_output`` / ``custom_tool_call_output`` → ``user`` with a ``tool_result``.
* ``compacted`` (``RolloutItem::Compacted``: ``message``, the summary text of a local compaction, empty
  for a remote one; ``replacement_history``, the history Codex continued with, from openai/codex
  ``core/src/compact.rs`` @ e06dd0e5; ``window_id`` from ``compact_remote_v2.rs`` @ 009bd870) → one
  record that is both the recorded compaction's boundary and its summary: kind ``system``, ``subtype``
  ``compact_boundary``, ``is_compact_summary``, as text the ``message``, or when it is empty the texts of
  the ``replacement_history`` messages (an opaque ``compaction`` item as a marker of its size).
  `compaction_summary` gives the summary as a Claude Code ``isCompactSummary`` user message; Codex records
  no trigger and no pre-compaction size with it, so ``compact_metadata`` is empty.
* ``event_msg`` ``context_compacted`` (written beside ``compacted`` by versions that persist legacy
  events): the same compaction as a ``compacted`` line between the same two API responses; one without
  such a line is a compaction whose summary was not recorded and becomes a boundary (kind ``system``,
  ``subtype`` ``compact_boundary``, no content).
* ``session_meta``, ``turn_context`` (its ``model`` is applied to following assistant records),
  ``event_msg`` and ``state`` lines → metadata kinds of those names (``subtype`` = payload ``type``);
  line or response-item types this loader does not know are kept the same way (no content), not skipped.
* ``event_msg`` ``token_count``: its ``last_token_usage`` is the usage of the API call just made; it is
  set (Anthropic keys: ``input_tokens`` = input − cached, ``cache_read_input_tokens`` = cached,
  ``output_tokens``) on the latest assistant record before it.

* **One API response, one message id.** Codex writes one response as several items (a ``reasoning``, then
  one ``function_call`` per tool of a parallel batch, or a ``message``) and records no response id. The
  items of one response get a shared synthetic ``message_id`` (``<session>:response:<n>``), as Claude
  Code's streamed records share ``message.id``: a response is the run of model-side items up to the next
  input (a tool output, a user or developer message, a ``turn_context``, a compaction) or ``token_count``
  event with usage, which Codex writes when a response ends. Without it a parallel batch would read as
  several API calls, each an assistant message whose ``tool_use`` has no ``tool_result`` right after it.

What the format lacks: message ids and uuids (positional ``<session>:<line>``); per-call usage only
where ``token_count`` events were written; reasoning text is only a summary (or encrypted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

from .chat_jsonl import parse_arguments
from .files import read_lines
from .jsonio import BadInput, decode_json_line
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = ["CodexRolloutLoader", "compaction_summary", "record_from_line"]

FORMAT = "codex"


class _LineError(ValueError):
    pass


class _Common(TypedDict):
    """The `Record` fields every line sets, whatever its type."""

    uuid: str
    session_id: str
    timestamp: str | None
    raw: dict[str, Any]
    line: str | None
    source: str
    line_no: int


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parts(content: Any) -> tuple[Block, ...]:
    if isinstance(content, str):
        return (Block.text_block(content),)
    blocks = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, Mapping) and part.get("type") in ("input_text", "output_text", "text"):
            blocks.append(Block.text_block(_str(part.get("text")) or ""))
        else:
            blocks.append(Block.from_raw(part))
    return tuple(blocks)


def _texts(items: Any) -> str:
    return "\n".join(_str(i.get("text")) or "" for i in _list(items) if isinstance(i, Mapping))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _item(item: Mapping[str, Any], uuid: str) -> tuple[str, str | None, tuple[Block, ...], str | None]:
    """(kind, role, blocks, subtype) of one response item."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "assistant", "developer", "system"):
            raise _LineError(f"message with unknown role {role!r}")
        return ("system" if role in ("developer", "system") else role), role, _parts(item.get("content")), None
    if kind == "reasoning":
        text = _texts(item.get("content")) or _texts(item.get("summary"))
        return "assistant", "assistant", (Block("thinking", {"type": "thinking", "thinking": text}),), "reasoning"
    call_id = _str(item.get("call_id")) or _str(item.get("id")) or f"{uuid}:call"
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        if kind == "function_call":
            tool_input = parse_arguments(item.get("arguments"))
        elif kind == "custom_tool_call":
            tool_input = {"input": item.get("input")}
        else:
            action = item.get("action")
            tool_input = dict(action) if isinstance(action, Mapping) else {}
        name = _str(item.get("name")) or ("local_shell" if kind == "local_shell_call" else "")
        block = Block("tool_use", {"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        return "assistant", "assistant", (block,), kind
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        if isinstance(output, Mapping):  # older rollouts: {"content": ..., "success": ...}
            output = output.get("content")
        result = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": output if isinstance(output, (str, list)) else json.dumps(output),
        }
        return "user", "user", (Block("tool_result", result),), kind
    if kind == "web_search_call":
        search = {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": item.get("action") or {}}
        return "assistant", "assistant", (Block.from_raw(search),), kind
    if not isinstance(kind, str):
        raise _LineError("response item without a 'type' string")
    return "response_item", None, (), kind  # a type this loader does not know: kept raw, no content


def record_from_line(obj: Any, *, sid: str, line_no: int, source: str, line: str | None) -> Record:
    if not isinstance(obj, Mapping):
        raise _LineError(f"expected an object, found {type(obj).__name__}")
    uuid = f"{sid}:{line_no}"
    line_type, payload = obj.get("type"), obj.get("payload")
    timestamp = _str(obj.get("timestamp"))
    common: _Common = {
        "uuid": uuid,
        "session_id": sid,
        "timestamp": timestamp,
        "raw": dict(obj),
        "line": line,
        "source": source,
        "line_no": line_no,
    }
    if "payload" not in obj:  # older layout: bare items, the meta line, state lines
        if obj.get("record_type") == "state":
            return Record(kind="state", **common)
        if "instructions" in obj or ("id" in obj and "type" not in obj):
            return Record(kind="session_meta", **common)
        line_type, payload = "response_item", obj
    if not isinstance(payload, Mapping):
        raise _LineError(f"{line_type!r} line without a payload object")
    if line_type == "response_item":
        kind, role, blocks, subtype = _item(payload, uuid)
        has_content = kind != "response_item"
        return Record(kind=kind, role=role, blocks=blocks, has_content=has_content, subtype=subtype, **common)
    if line_type == "compacted":
        text = _str(payload.get("message")) or _replacement_text(payload.get("replacement_history"))
        return Record(
            kind="system",
            subtype="compact_boundary",
            is_compact_summary=True,
            blocks=(Block.text_block(text),),
            string_content=True,
            has_content=True,
            **common,
        )
    if isinstance(line_type, str) and line_type:  # event_msg, turn_context, session_meta, newer types
        return Record(kind=line_type, subtype=_str(payload.get("type")), **common)
    raise _LineError("rollout line without a 'type' string")


def _replacement_text(items: Any) -> str:
    """The texts of a ``replacement_history``'s messages, an opaque compaction item as a marker."""
    parts = []
    for item in _list(items):
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message":
            parts.append("\n".join(b.text for b in _parts(item.get("content")) if b.kind == "text"))
        elif item.get("type") in ("compaction", "compaction_summary"):
            parts.append(f"[compaction: {len(_str(item.get('encrypted_content')) or '')} characters encrypted]")
    return "\n\n".join(p for p in parts if p)


def compaction_summary(record: Record) -> Record | None:
    """The summary of a recorded Codex compaction (a ``compacted`` record: boundary and summary in one) as
    Claude Code records one: a string-content user message with ``is_compact_summary``, uuid
    ``<boundary uuid>:summary``. None for any other record, or when the compaction recorded no text."""
    if not (record.is_compact_boundary and record.is_compact_summary and record.text):
        return None
    return Record(
        kind="user",
        role="user",
        uuid=f"{record.uuid}:summary",
        session_id=record.session_id,
        timestamp=record.timestamp,
        blocks=(Block.text_block(record.text),),
        string_content=True,
        has_content=True,
        is_compact_summary=True,
        raw={"type": "user", "message": {"role": "user", "content": record.text}, "isCompactSummary": True},
        source=record.source,
        line_no=record.line_no,
        modified=True,
    )


def _lone_compaction_events(records: list[Record]) -> list[Record]:
    """``context_compacted`` events with no ``compacted`` record between the same two assistant records
    become boundaries (module docstring)."""
    out = list(records)
    gap_start = 0
    for end in [*(i for i, r in enumerate(records) if r.kind == "assistant"), len(records)]:
        gap = range(gap_start, end)
        if not any(records[i].is_compact_boundary for i in gap):
            for i in gap:
                if records[i].kind == "event_msg" and records[i].subtype == "context_compacted":
                    out[i] = replace(records[i], kind="system", subtype="compact_boundary")
        gap_start = end + 1
    return out


def _usage(info: Any) -> dict[str, int] | None:
    last = info.get("last_token_usage") if isinstance(info, Mapping) else None
    if not isinstance(last, Mapping) or not isinstance(last.get("input_tokens"), int):
        return None
    cached = last.get("cached_input_tokens") if isinstance(last.get("cached_input_tokens"), int) else 0
    out = {"input_tokens": last["input_tokens"] - cached, "cache_read_input_tokens": cached}
    if isinstance(last.get("output_tokens"), int):
        out["output_tokens"] = last["output_tokens"]
    return out


class CodexRolloutLoader:
    """Codex CLI rollout JSONL: one Session per file (see the module docstring)."""

    name = FORMAT
    suffixes = (".jsonl",)

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        if path.name.startswith("rollout-") and first.lstrip().startswith(b"{"):
            return True
        return b'"payload"' in first and (b'"session_meta"' in first or b'"response_item"' in first)

    def load(self, path: Path) -> list[Session]:
        source = str(path)
        lines, trailing = read_lines(path)
        records: list[Record] = []
        skipped: list[Skip] = []
        model = session_id = version = None
        responses = 0  # synthetic message ids given so far
        open_response = False  # whether the last model-side item's response can still grow
        for number, chunk in enumerate(lines, start=1):
            try:
                obj = decode_json_line(chunk)
                text = chunk.decode("utf-8")
                record = record_from_line(obj, sid=path.stem, line_no=number, source=source, line=text)
            except BadInput as exc:
                skipped.append(Skip(source, number, exc.reason, chunk))
                continue
            except _LineError as exc:
                skipped.append(Skip(source, number, str(exc), chunk))
                continue
            payload = record.raw.get("payload", record.raw)
            if record.kind == "turn_context" and isinstance(payload.get("model"), str):
                model = payload["model"]
            if record.kind == "session_meta":
                session_id = session_id or _str(payload.get("id"))
                version = version or _str(payload.get("cli_version"))
            if record.kind == "assistant" and model:
                record = replace(record, model=model)
            if record.kind == "assistant":
                responses += not open_response
                open_response = True
                record = replace(record, message_id=f"{path.stem}:response:{responses}")
            elif record.kind in ("user", "system", "turn_context"):
                open_response = False
            if record.kind == "event_msg" and record.subtype == "token_count":
                usage = _usage(payload.get("info"))
                open_response = open_response and usage is None
                target = next((i for i in range(len(records) - 1, -1, -1) if records[i].kind == "assistant"), None)
                if usage and target is not None and records[target].usage is None:
                    records[target] = replace(records[target], usage=usage)
            records.append(record)
        records = _lone_compaction_events(records)
        caps = {"timestamps"} if any(r.timestamp for r in records) else set()
        caps |= {"usage"} if any(r.usage for r in records) else set()
        caps |= {"thinking"} if any(b.kind == "thinking" for r in records for b in r.blocks) else set()
        caps |= {"compact_boundaries"} if any(r.subtype == "compact_boundary" for r in records) else set()
        return [
            Session(
                id=session_id or path.stem,
                records=tuple(records),
                source=source,
                format=FORMAT,
                session_id=session_id,
                models=tuple(dict.fromkeys(r.model for r in records if r.model)),
                client_version=version,
                skipped=tuple(skipped),
                lines=len(lines),
                trailing_newline=trailing,
                capabilities=frozenset(caps),
            )
        ]


register(CodexRolloutLoader())
