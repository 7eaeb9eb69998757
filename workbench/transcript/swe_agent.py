"""SWE-agent trajectories (``*.traj``: one JSON object per run).

Items are the entries of ``history`` — the exact message list SWE-agent sent to the model — so each
entry becomes one Record (``Record.raw`` is the entry as recorded):

* ``system`` → kind ``system``; ``user`` → kind ``user`` (``subtype`` = ``message_type``, or
  ``demonstration`` for ``is_demo`` entries);
* ``assistant`` → kind ``assistant``: ``thinking_blocks`` (when recorded), the content as text, and one
  ``tool_use`` per ``tool_calls`` entry (function-calling runs). Older text-parsing runs have no tool
  calls: the command is inside the text, and the observation comes back as a plain ``user`` message —
  that is exactly what the model saw, so it is kept that way.
* ``tool`` → a ``user`` record with a ``tool_result`` per ``tool_call_ids`` entry (the content goes to
  the first; further ids get empty content).

Demonstration trajectories reuse tool-call ids; a reused id is renamed ``<id>#<n>`` so every tool_use
id is unique and results pair with the newest use (``Session.metadata["renamed_tool_ids"]``).

A file without ``history`` (very old runs) falls back to ``trajectory`` steps: two items per step,
the response (assistant text) and the observation (user text).

What the format lacks: uuids (positional ``<session>:<index>``), message ids, per-call usage (only the
run's totals in ``info.model_stats``, kept in ``Session.metadata``), timestamps, and mostly thinking.
``info``, ``environment``, ``replay_config`` and ``trajectory`` (without its per-step ``messages``
copies of the history) are kept in ``Session.metadata``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .chat_jsonl import ToolIds, content_blocks, openai_tool_use
from .files import read_document
from .jsonio import BadInput, decode_json_document, unreadable_session
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = ["SweAgentLoader", "session_from_traj"]

FORMAT = "swe-agent"


class _ItemError(ValueError):
    pass


def _text_blocks(content: Any) -> tuple[tuple[Block, ...], bool]:
    if content is not None and not isinstance(content, (str, list)):
        raise _ItemError(f"content must be a string or a list, found {type(content).__name__}")
    return content_blocks(content)


def _record(entry: Any, index: int, sid: str, source: str, ids: ToolIds, model: str | None) -> Record:
    if not isinstance(entry, Mapping):
        raise _ItemError(f"expected an object, found {type(entry).__name__}")
    role = entry.get("role")
    blocks, string_content = _text_blocks(entry.get("content"))
    subtype = entry.get("message_type") if isinstance(entry.get("message_type"), str) else None
    kind: str
    if role == "system":
        kind = "system"
    elif role == "user":
        kind = "user"
        subtype = "demonstration" if entry.get("is_demo") else subtype
    elif role == "assistant":
        kind = "assistant"
        thinking = entry.get("thinking_blocks")
        extra = tuple(Block.from_raw(b) for b in thinking) if isinstance(thinking, list) else ()
        calls = entry.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise _ItemError(f"tool_calls must be a list, found {type(calls).__name__}")
        uses = tuple(openai_tool_use(c, f"{sid}:{index}:call{i}", ids) for i, c in enumerate(calls or ()))
        if extra or uses:
            text = tuple(b for b in blocks if not (b.kind == "text" and not b.text))
            blocks, string_content = (*extra, *text, *uses), False
    elif role == "tool":
        call_ids = entry.get("tool_call_ids")
        if isinstance(call_ids, list) and call_ids and all(isinstance(c, str) for c in call_ids):
            content = entry.get("content")
            blocks = tuple(
                Block(
                    "tool_result",
                    {
                        "type": "tool_result",
                        "tool_use_id": ids.result(c),
                        "content": content if i == 0 and content is not None else "",
                    },
                )
                for i, c in enumerate(call_ids)
            )
            string_content = False
        else:
            subtype = subtype or "observation"
        kind = "user"
    else:
        raise _ItemError(f"unknown role {role!r}")
    return Record(
        kind=kind,
        uuid=f"{sid}:{index}",
        session_id=sid,
        role="user" if role == "tool" else role,
        blocks=blocks,
        string_content=string_content,
        has_content=True,
        model=model if role == "assistant" else None,
        subtype=subtype,
        agent_id=entry.get("agent") if isinstance(entry.get("agent"), str) else None,
        raw=dict(entry),
        source=source,
        line_no=index + 1,
    )


def _step_records(steps: list[Any], sid: str, source: str) -> tuple[list[Record], list[Skip]]:
    records: list[Record] = []
    skipped: list[Skip] = []
    for index, step in enumerate(steps):
        for half, (role, key) in enumerate((("assistant", "response"), ("user", "observation"))):
            item = 2 * index + half
            if not isinstance(step, Mapping) or not isinstance(step.get(key), str):
                skipped.append(Skip(source, item + 1, f"trajectory.{index}: no string '{key}'"))
                continue
            records.append(
                Record(
                    kind=role,
                    uuid=f"{sid}:{item}",
                    session_id=sid,
                    role=role,
                    blocks=(Block.text_block(step[key]),),
                    string_content=True,
                    has_content=True,
                    subtype=f"trajectory_{key}",
                    raw={"step": index, key: step[key]},
                    source=source,
                    line_no=item + 1,
                )
            )
    return records, skipped


def _model_name(obj: Mapping[str, Any]) -> str | None:
    config = obj.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            return None
    try:
        name = config["agent"]["model"]["name"]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def session_from_traj(obj: Any, *, session_id: str, source: str) -> Session:
    if not isinstance(obj, Mapping):
        raise _ItemError(f"expected a trajectory object, found {type(obj).__name__}")
    history, steps = obj.get("history"), obj.get("trajectory")
    model = _model_name(obj)
    ids = ToolIds()
    records: list[Record] = []
    skipped: list[Skip] = []
    if isinstance(history, list):
        n = len(history)
        for index, entry in enumerate(history):
            try:
                records.append(_record(entry, index, session_id, source, ids, model))
            except _ItemError as exc:
                skipped.append(Skip(source, index + 1, f"history.{index}: {exc}"))
    elif isinstance(steps, list):
        n = 2 * len(steps)
        records, skipped = _step_records(steps, session_id, source)
    else:
        raise _ItemError("neither a 'history' nor a 'trajectory' list")
    meta: dict[str, Any] = {k: v for k, v in obj.items() if k not in ("history", "trajectory")}
    if isinstance(steps, list):
        meta["trajectory"] = [
            {k: v for k, v in s.items() if k != "messages"} if isinstance(s, Mapping) else s for s in steps
        ]
    if ids.renamed:
        meta["renamed_tool_ids"] = ids.renamed
    caps = {"thinking"} if any(b.kind == "thinking" for r in records for b in r.blocks) else set()
    return Session(
        id=session_id,
        records=tuple(records),
        source=source,
        format=FORMAT,
        session_id=session_id,
        models=(model,) if model else (),
        skipped=tuple(skipped),
        lines=n,
        capabilities=frozenset(caps),
        metadata=meta,
    )


class SweAgentLoader:
    """SWE-agent ``.traj`` files: one Session per file (see the module docstring)."""

    name = FORMAT
    suffixes = (".traj",)

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.lstrip()[:1] == b"{"

    def load(self, path: Path) -> list[Session]:
        source = str(path)
        data = read_document(path)
        try:
            return [session_from_traj(decode_json_document(data), session_id=path.stem, source=source)]
        except BadInput as exc:
            return [unreadable_session(path, FORMAT, exc.reason, exc.line, data)]
        except _ItemError as exc:
            return [unreadable_session(path, FORMAT, f"not a SWE-agent trajectory: {exc}", 1, data)]


register(SweAgentLoader())
