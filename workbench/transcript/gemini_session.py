"""Gemini CLI saved sessions (``~/.gemini/tmp/<project hash>/chats/session-*.json``).

What Gemini CLI's chat recording service writes: one JSON document per session,
``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}`` where each message is
``{"id", "timestamp", "type": "user" | "gemini", "content"}`` and a ``gemini`` message (one model
response, i.e. one API call) adds ``model``, ``tokens`` (``input`` = promptTokenCount, ``output`` =
candidatesTokenCount, ``cached`` = cachedContentTokenCount, ``thoughts``, ``tool``, ``total``),
``thoughts`` (thought *summaries*: ``subject``, ``description``, ``timestamp``) and ``toolCalls``
(``id``, ``name``, ``args``, ``result`` = the ``functionResponse`` parts sent back, ``status``, …).
Newer versions may write ``content`` as a list of parts and other message types (``info``, ``error``).

Items (``Session.lines`` counts them) and the records they become:

* a ``user`` message → a ``user`` record (string content);
* a ``gemini`` message → an ``assistant`` record (uuid and ``message_id`` = the message id, one step):
  the text, then one ``tool_use`` per tool call (id = the call's id, input = ``args``); ``usage`` from
  ``tokens`` in Anthropic keys (``input_tokens`` = input − cached, ``cache_read_input_tokens`` = cached,
  ``output_tokens`` = output + thoughts). An all-zero ``tokens`` is "not recorded" (the sample's first
  response has zeros although its prompt held ~7k tokens), so usage is None there;
* its tool calls' results → a second item, a ``user`` record ``<id>/results`` with one ``tool_result``
  per call (the ``functionResponse`` ``output``, or its ``error`` with ``is_error``; a call without a
  result, e.g. cancelled, gets its status as an error result), which is what Gemini CLI sends back;
* any other message type → kind ``event`` (``subtype`` = the type; shown to the user, not sent).

Thought summaries are kept in ``Record.raw`` but are not content blocks: they are summaries shown in the
UI, not the model's thinking as sent back, so Anthropic's thinking rules do not apply to them and the
``thinking`` capability is not claimed. What the format lacks: the system prompt and tool definitions,
the content of Gemini CLI's own chat compression (not recorded), parent links. ``projectHash``,
``startTime``, ``lastUpdated`` are in ``Session.metadata``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .files import read_document
from .jsonio import BadInput, decode_json_document, unreadable_session
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = ["GeminiSessionLoader", "session_from_conversation"]

FORMAT = "gemini-cli-session"
_KEYS = re.compile(rb'"(sessionId|projectHash|startTime|messages)"\s*:')


class _ItemError(ValueError):
    pass


def _num(tokens: Mapping[str, Any], key: str) -> int:
    value = tokens.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(tokens: Any) -> dict[str, int] | None:
    if not isinstance(tokens, Mapping) or not any(_num(tokens, k) for k in ("input", "output", "cached", "total")):
        return None
    cached = _num(tokens, "cached")
    return {
        "input_tokens": _num(tokens, "input") - cached,
        "cache_read_input_tokens": cached,
        "output_tokens": _num(tokens, "output") + _num(tokens, "thoughts"),
    }


def _text(content: Any) -> str:
    """``content`` as text: a string, or the text of a list of parts (other parts as JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif part is not None:
                out.append(json.dumps(part, sort_keys=True))
        return "\n".join(out)
    if content is None:
        return ""
    raise _ItemError(f"content is a {type(content).__name__}")


def _result(call: Mapping[str, Any]) -> tuple[str, bool]:
    """The text Gemini CLI sent back for one call, and whether it was an error."""
    status = call.get("status")
    parts = call.get("result")
    if parts is None:
        return f"[no result recorded; status {status}]", True
    texts, error = [], status == "error"
    for part in parts if isinstance(parts, list) else [parts]:
        response = part.get("functionResponse") if isinstance(part, Mapping) else None
        if isinstance(response, Mapping):
            body = response.get("response")
            if isinstance(body, Mapping) and "error" in body:
                texts.append(str(body["error"]))
                error = True
            elif isinstance(body, Mapping) and "output" in body:
                texts.append(body["output"] if isinstance(body["output"], str) else json.dumps(body["output"]))
            else:
                texts.append(json.dumps(body, sort_keys=True))
        else:
            texts.append(_text(part))
    return "\n".join(texts), error


def _records(message: Any, index: int, sid: str, source: str) -> list[Record]:
    if not isinstance(message, Mapping):
        raise _ItemError(f"expected a message object, found {type(message).__name__}")
    kind = message.get("type")
    if not isinstance(kind, str):
        raise _ItemError("message without a 'type' string")
    mid = message.get("id") if isinstance(message.get("id"), str) else f"{sid}:{index}"
    timestamp = message.get("timestamp") if isinstance(message.get("timestamp"), str) else None
    common: dict[str, Any] = {"session_id": sid, "source": source, "line_no": index + 1, "timestamp": timestamp}
    text = _text(message.get("content"))
    if kind == "user":
        blocks = (Block.text_block(text),)
        return [
            Record(
                kind="user",
                uuid=mid,
                role="user",
                blocks=blocks,
                string_content=True,
                has_content=True,
                raw=dict(message),
                **common,
            )
        ]
    if kind != "gemini":
        return [Record(kind="event", uuid=mid, subtype=kind, raw=dict(message), **common)]
    calls = message.get("toolCalls") or []
    if not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls):
        raise _ItemError("toolCalls is not a list of objects")
    uses: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for k, call in enumerate(calls):
        call_id = call.get("id") if isinstance(call.get("id"), str) else f"{mid}:call{k}"
        args = call.get("args")
        uses.append(
            {
                "type": "tool_use",
                "id": call_id,
                "name": str(call.get("name") or ""),
                "input": dict(args) if isinstance(args, Mapping) else {},
            }
        )
        output, error = _result(call)
        results.append(
            {"type": "tool_result", "tool_use_id": call_id, "content": output, **({"is_error": True} if error else {})}
        )
    raw_blocks = ([{"type": "text", "text": text}] if text else []) + uses
    model = message.get("model") if isinstance(message.get("model"), str) else None
    out = [
        Record(
            kind="assistant",
            uuid=mid,
            message_id=mid,
            role="assistant",
            blocks=tuple(Block.from_raw(b) for b in raw_blocks),
            has_content=True,
            usage=_usage(message.get("tokens")),
            model=model,
            stop_reason="tool_use" if uses else "end_turn",
            raw=dict(message),
            **common,
        )
    ]
    if results:
        out.append(
            Record(
                kind="user",
                uuid=f"{mid}/results",
                parent_uuid=mid,
                role="user",
                blocks=tuple(Block.from_raw(b) for b in results),
                has_content=True,
                raw={"type": "tool_results", "message_id": mid, "results": [c.get("result") for c in calls]},
                **common,
            )
        )
    return out


def session_from_conversation(data: Any, path: Path) -> Session:
    """One Session from a parsed saved-session document (see the module docstring)."""
    source = str(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
        return unreadable_session(path, FORMAT, "not a Gemini CLI session: no 'messages' list")
    sid = str(data["sessionId"]) if isinstance(data.get("sessionId"), str) else path.stem
    records: list[Record] = []
    skipped: list[Skip] = []
    for index, message in enumerate(data["messages"]):
        try:
            records.extend(_records(message, index, sid, source))
        except _ItemError as exc:
            skipped.append(Skip(source, index + 1, f"messages[{index}]: {exc}", json.dumps(message).encode()))
    caps = {"uuids", "message_ids"}
    if any(r.usage for r in records):
        caps.add("usage")
    if any(r.timestamp for r in records):
        caps.add("timestamps")
    return Session(
        id=sid,
        records=tuple(records),
        source=source,
        format=FORMAT,
        session_id=sid,
        models=tuple(dict.fromkeys(r.model for r in records if r.model)),
        skipped=tuple(skipped),
        lines=len(records) + len(skipped),
        capabilities=frozenset(caps),
        metadata={k: data.get(k) for k in ("projectHash", "startTime", "lastUpdated", "summary") if k in data},
    )


class GeminiSessionLoader:
    """Gemini CLI's own saved sessions (``session-*.json``); see the module docstring.

    Sniffing asks for a JSON *object* whose keys include ``sessionId`` and ``messages`` and one of
    ``projectHash`` / ``startTime``: OpenHands ``.json`` files are lists or ``{"history": …}``, Anthropic
    request files have no ``sessionId``, Claude Code files are ``.jsonl``.
    """

    name: str = FORMAT
    suffixes: tuple[str, ...] = (".json",)

    def sniff(self, path: Path, head: bytes) -> bool:
        if not head.lstrip().startswith(b"{"):
            return False
        keys = {m.group(1) for m in _KEYS.finditer(head)}
        return {b"sessionId", b"messages"} <= keys and bool(keys & {b"projectHash", b"startTime"})

    def load(self, path: Path) -> list[Session]:
        data = read_document(path)  # capped: a document is one unit for the parser
        try:
            document = decode_json_document(data)
        except BadInput as exc:
            return [unreadable_session(path, FORMAT, exc.reason, exc.line or 1, data[:200])]
        return [session_from_conversation(document, path)]


register(GeminiSessionLoader())
