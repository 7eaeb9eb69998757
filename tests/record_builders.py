"""Hand-built records shared by the unit tests (imported as ``record_builders``: tests/ is on sys.path
because of tests/conftest.py)."""

from __future__ import annotations

from typing import Any

from workbench.transcript.model import Block, Record

CWD = "/repo"


def user(text: str, **kw: Any) -> Record:
    return Record(
        kind="user",
        role="user",
        blocks=(Block.text_block(text),),
        string_content=True,
        has_content=True,
        raw={"cwd": CWD},
        **kw,
    )


def assistant(*blocks: Block, message_id: str | None = None) -> Record:
    return Record(kind="assistant", role="assistant", blocks=blocks, message_id=message_id, has_content=True)


def say(text: str, message_id: str | None = None) -> Record:
    return assistant(Block.text_block(text), message_id=message_id)


def call(tool_id: str, name: str, **inputs: Any) -> Block:
    return Block("tool_use", {"type": "tool_use", "id": tool_id, "name": name, "input": inputs})


def result(tool_id: str, content: Any, *, is_error: bool = False) -> Record:
    block = Block(
        "tool_result", {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}
    )
    return Record(kind="user", role="user", blocks=(block,), has_content=True)


def thinking(text: str) -> Block:
    return Block("thinking", {"type": "thinking", "thinking": text, "signature": "sig"})
