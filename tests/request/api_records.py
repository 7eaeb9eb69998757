"""Tiny record builders for hand-made API fixtures (imported by the tests in this folder)."""

from __future__ import annotations

import itertools
from typing import Any

from workbench.transcript.model import Block, Record

_ids = itertools.count()


def _uuid(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


def user(*blocks: dict[str, Any] | str, uuid: str | None = None, **fields: Any) -> Record:
    """A user record; a single ``str`` argument makes string content."""
    if len(blocks) == 1 and isinstance(blocks[0], str):
        parsed: tuple[Block, ...] = (Block.text_block(blocks[0]),)
        string = True
    else:
        parsed = tuple(Block.from_raw(b if isinstance(b, dict) else text(b)) for b in blocks)
        string = False
    return Record(
        "user", uuid=uuid or _uuid("u"), role="user", blocks=parsed, string_content=string, has_content=True, **fields
    )


def assistant(msg_id: str, *blocks: dict[str, Any], uuid: str | None = None, **fields: Any) -> Record:
    return Record(
        "assistant",
        uuid=uuid or _uuid("a"),
        role="assistant",
        message_id=msg_id,
        model=fields.pop("model", "claude-test"),
        blocks=tuple(Block.from_raw(b) for b in blocks),
        has_content=True,
        **fields,
    )


def system(subtype: str, content: str = "", **fields: Any) -> Record:
    return Record(
        "system", uuid=_uuid("s"), subtype=subtype, blocks=(Block.text_block(content),), string_content=True, **fields
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str = "hmm", signature: str = "sig") -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def tool_use(use_id: str, name: str = "Bash", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": {"command": "ls"}, **extra}


def tool_result(use_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content, **extra}
