"""Hand-made records and replay frames for the metric tests (no corpus needed)."""

from __future__ import annotations

from workbench.transcript import Block, Record, Session


def user(uuid: str, text: str) -> Record:
    return Record(
        kind="user",
        uuid=uuid,
        role="user",
        blocks=(Block.text_block(text),),
        string_content=True,
        has_content=True,
        session_id="hand",
    )


def assistant(uuid: str, mid: str, blocks: list[dict], usage: dict | None = None, ts: str | None = None) -> Record:
    return Record(
        kind="assistant",
        uuid=uuid,
        role="assistant",
        message_id=mid,
        model="claude-opus-4-6",
        blocks=tuple(Block.from_raw(b) for b in blocks),
        has_content=True,
        usage=usage,
        timestamp=ts,
        session_id="hand",
    )


def result(uuid: str, tool_use_id: str, text: str, *, is_error: bool = False) -> Record:
    raw = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": is_error}
    return Record(
        kind="user", uuid=uuid, role="user", blocks=(Block.from_raw(raw),), has_content=True, session_id="hand"
    )


def session(records: list[Record], sid: str = "hand") -> Session:
    return Session(
        id=sid,
        records=tuple(records),
        format="claude-code",
        session_id=sid,
        capabilities=frozenset({"usage", "message_ids", "uuids"}),
    )


def parser_session() -> Session:
    """The fidelity docstring's worked example: r1-r3 then the call that uses app/parser.py again."""
    return session(
        [
            user("r1", "Please fix the tokenizer bug reported yesterday in src/app/parser.py"),
            assistant(
                "a1",
                "m1",
                [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest tests/test_parser.py"}}],
            ),
            result("r3", "t1", "FAILED tests/test_parser.py::test_x - ValueError: bad"),
            assistant(
                "a2",
                "m2",
                [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Edit",
                        "input": {"file_path": "/repo/src/app/parser.py", "old_string": "x", "new_string": "y"},
                    }
                ],
            ),
        ]
    )
