"""Hand-built records for the online tests."""

from __future__ import annotations

from typing import Any

from workbench.transcript.model import Block, Record

CWD = "/repo"
SESSION = "sess-123"


def user(text: str) -> Record:
    return Record(
        kind="user",
        role="user",
        blocks=(Block.text_block(text),),
        string_content=True,
        has_content=True,
        session_id=SESSION,
        raw={"cwd": CWD},
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


def session() -> list[Record]:
    """Request, a read, a failing test, a fix, an answer; message ids per API response."""
    return [
        user("Fix the failing date parser tests in utils"),
        assistant(thinking("let me look"), message_id="m1"),
        assistant(call("t1", "Read", file_path=f"{CWD}/utils/dates.py"), message_id="m1"),
        result("t1", "def parse_iso(s):\n    return s"),
        assistant(call("t2", "Bash", command="pytest tests/test_dates.py"), message_id="m2"),
        result("t2", "FAILED tests/test_dates.py::test_iso - ValueError: bad month", is_error=True),
        assistant(
            call("t3", "Edit", file_path=f"{CWD}/utils/dates.py", old_string="a", new_string="b"), message_id="m3"
        ),
        result("t3", "ok"),
        say("Fixed: parse_iso now validates the month.", message_id="m4"),
        user("Thanks. Now add a test for leap years"),
        assistant(call("t4", "Read", file_path=f"{CWD}/tests/test_dates.py"), message_id="m5"),
    ]
