"""OpenHands event streams / trajectories (``.json``: a list of events, or ``{"history": [...]}`` /
``{"trajectory": [...]}`` as in evaluation outputs).

Items are events; each becomes one Record with ``raw`` = the event, ``timestamp`` = its timestamp and
a positional uuid ``<session>:<event id>`` (events carry integer ids, unique within a stream). Mapping
(what OpenHands' ``ConversationMemory`` sends to the model):

* user ``message`` action → ``user`` text; agent ``message`` / ``finish`` without tool-call metadata →
  ``assistant`` text; ``system`` action → ``system`` text.
* agent action with ``tool_call_metadata`` → ``assistant`` record: the model's text (the response
  message content, else ``args.thought``) and a ``tool_use`` (id = ``tool_call_id``, input = the call's
  parsed ``arguments`` from ``model_response``, else the action's ``args``). ``message_id`` is
  ``model_response.id``; several actions from one response share it and only the first carries text
  and ``usage``. Usage is the LiteLLM ``usage`` normalised to Anthropic keys (see
  `chat_jsonl.normalize_usage`).
* observation with ``tool_call_metadata`` → ``user`` record with the matching ``tool_result`` (the
  observation's ``content``; OpenHands' own prompt decoration, e.g. exit-code suffixes, is not added).
  Agent observations without metadata (non-function-calling agents) → ``user`` text.
* everything else (agent-state changes, ``null`` observations, ``recall``, ``condensation``, …) →
  kind ``event`` with ``subtype`` = the action/observation name and no content.

What the format lacks: uuids (positional), thinking, and usage for the user/observation side; the
system prompt and tool definitions are only present if a ``system`` action was recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .chat_jsonl import normalize_usage, parse_arguments
from .files import read_document
from .jsonio import BadInput, decode_json_document, unreadable_session
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = ["OpenHandsLoader", "session_from_events"]

FORMAT = "openhands"


class _EventError(ValueError):
    pass


def _response(event: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]:
    """(tool_call_metadata, model_response, response message) — empty mappings when absent."""
    meta = event.get("tool_call_metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    response = meta.get("model_response")
    response = response if isinstance(response, Mapping) else {}
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        message = {}
    return meta, response, message if isinstance(message, Mapping) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _record(event: Any, sid: str, source: str, index: int, seen_responses: set[str]) -> Record:
    if not isinstance(event, Mapping):
        raise _EventError(f"expected an event object, found {type(event).__name__}")
    action, observation = _str(event.get("action")), _str(event.get("observation"))
    if action is None and observation is None:
        raise _EventError("event has neither 'action' nor 'observation'")
    source_name = _str(event.get("source"))
    args_value = event.get("args")
    args: Mapping[str, Any] = args_value if isinstance(args_value, Mapping) else {}
    meta, response, message = _response(event)
    call_id = _str(meta.get("tool_call_id"))
    blocks: tuple[Block, ...]
    kind, role, blocks, string_content = "event", None, (), False
    message_id = usage = model = None
    if action is not None and call_id and source_name == "agent":
        message_id = _str(response.get("id"))
        model = _str(response.get("model"))
        blocks_list: list[Block] = []
        first = message_id is None or message_id not in seen_responses
        if first:
            text = _str(message.get("content")) or _str(args.get("thought")) or ""
            if text:
                blocks_list.append(Block.text_block(text))
            usage = normalize_usage(response.get("usage"))
            if message_id:
                seen_responses.add(message_id)
        calls_value = message.get("tool_calls")
        calls: list[Any] = calls_value if isinstance(calls_value, list) else []
        call = next((c for c in calls if isinstance(c, Mapping) and c.get("id") == call_id), None)
        if call is not None and isinstance(call.get("function"), Mapping):
            tool_input = parse_arguments(call["function"].get("arguments"))
        else:
            tool_input = dict(args)
        name = _str(meta.get("function_name")) or action
        blocks_list.append(Block("tool_use", {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}))
        kind, role, blocks = "assistant", "assistant", tuple(blocks_list)
    elif observation is not None and call_id:
        content = event.get("content")
        result = content if isinstance(content, (str, list)) else _str(event.get("message")) or ""
        blocks = (Block("tool_result", {"type": "tool_result", "tool_use_id": call_id, "content": result}),)
        kind, role = "user", "user"
    elif action in ("message", "system") or (action == "finish" and source_name == "agent"):
        text = _str(args.get("content")) or _str(event.get("message")) or _str(args.get("thought")) or ""
        if action == "system":
            kind = role = "system"
        elif source_name == "user":
            kind = role = "user"
        elif source_name == "agent":
            kind = role = "assistant"
        if kind != "event":
            blocks, string_content = (Block.text_block(text),), True
    elif observation is not None and source_name == "agent" and observation not in ("null", "agent_state_changed"):
        content = _str(event.get("content")) or ""
        kind, role, blocks, string_content = "user", "user", (Block.text_block(content),), True
    elif (
        action is not None
        and source_name == "agent"
        and action not in ("change_agent_state", "recall", "condensation", "condensation_request")
    ):
        text = _str(args.get("thought")) or _str(event.get("message")) or ""
        kind, role, blocks, string_content = "assistant", "assistant", (Block.text_block(text),), True
    event_id = event.get("id")
    return Record(
        kind=kind,
        uuid=f"{sid}:{event_id if isinstance(event_id, int) else f'#{index}'}",
        session_id=sid,
        message_id=message_id,
        role=role,
        blocks=blocks,
        string_content=string_content,
        has_content=kind != "event",
        usage=usage,
        timestamp=_str(event.get("timestamp")),
        model=model,
        subtype=action or observation,
        raw=dict(event),
        source=source,
        line_no=index + 1,
    )


def session_from_events(
    events: list[Any], *, session_id: str, source: str, metadata: Mapping[str, Any] | None = None
) -> Session:
    records: list[Record] = []
    skipped: list[Skip] = []
    seen: set[str] = set()
    for index, event in enumerate(events):
        try:
            records.append(_record(event, session_id, source, index, seen))
        except _EventError as exc:
            skipped.append(Skip(source, index + 1, f"event {index}: {exc}"))
    caps = {"timestamps", "message_ids"} if any(r.message_id for r in records) else {"timestamps"}
    if any(r.usage for r in records):
        caps.add("usage")
    return Session(
        id=session_id,
        records=tuple(records),
        source=source,
        format=FORMAT,
        session_id=session_id,
        models=tuple(dict.fromkeys(r.model for r in records if r.model)),
        skipped=tuple(skipped),
        lines=len(events),
        capabilities=frozenset(caps),
        metadata=dict(metadata or {}),
    )


def _events_of(obj: Any) -> tuple[list[Any], dict[str, Any]] | None:
    if isinstance(obj, list):
        return obj, {}
    if isinstance(obj, Mapping):
        for key in ("history", "trajectory", "events"):
            if isinstance(obj.get(key), list):
                return obj[key], {k: v for k, v in obj.items() if k != key}
    return None


def _looks_like_events(head: bytes) -> bool:
    return b'"source"' in head and (b'"action"' in head or b'"observation"' in head) and b'"id"' in head


class OpenHandsLoader:
    """OpenHands event-stream JSON: one Session per file (see the module docstring)."""

    name = FORMAT
    suffixes = (".json",)

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.lstrip()[:1]
        if first == b"[":
            return _looks_like_events(head)
        return first == b"{" and b'"history"' in head and _looks_like_events(head) and b'"role"' not in head[:200]

    def load(self, path: Path) -> list[Session]:
        source = str(path)
        data = read_document(path)
        try:
            found = _events_of(decode_json_document(data))
        except BadInput as exc:
            return [unreadable_session(path, FORMAT, exc.reason, exc.line, data)]
        if found is None:
            return [unreadable_session(path, FORMAT, "not an OpenHands event list (no list of events)", 1, data)]
        return [session_from_events(found[0], session_id=path.stem, source=source, metadata=found[1])]


register(OpenHandsLoader())
