"""Decoding JSON input with reasons a user can act on, shared by every loader.

Loaders never raise on bad input: a line or file that cannot be decoded becomes a `Skip` whose reason
comes from `BadInput` (invalid UTF-8 with the byte offset, invalid JSON with line/column, blank line,
nesting too deep, a line or document over the size cap of `files.max_line_bytes`). A leading UTF-8
byte-order mark is not part of the JSON (editors on Windows write one); it is ignored, and loaders keep
it in ``Record.line`` so export stays byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .files import OversizedLine, oversized_reason, read_document
from .model import Session, Skip

__all__ = ["BadInput", "decode_json_document", "decode_json_line", "read_json_document", "unreadable_session"]


class BadInput(ValueError):
    """Input that cannot be decoded; ``reason`` is what the Skip reports, ``line`` where (1-based)."""

    def __init__(self, reason: str, line: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _text(data: bytes, what: str = "line") -> str:
    if isinstance(data, OversizedLine):
        raise BadInput(oversized_reason(data.size, what))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"invalid UTF-8 at byte {exc.start}") from None
    return text.removeprefix("\ufeff")


def decode_json_line(data: bytes) -> Any:
    """One JSONL line (without its newline) to a value."""
    text = _text(data)
    if not text.strip():
        raise BadInput("blank line")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise BadInput("invalid JSON: nested too deeply") from None


def decode_json_document(data: bytes) -> Any:
    """A whole JSON file to a value; errors name the line and column."""
    text = _text(data, "file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", exc.lineno) from None
    except RecursionError:
        raise BadInput("invalid JSON: nested too deeply") from None


def read_json_document(path: Path) -> tuple[Any, bytes]:
    """``(value, bytes)`` of a JSON file read whole (`files.read_document`, capped); `BadInput` when it
    cannot be decoded or is over the cap (then ``bytes`` is not kept). OSError propagates."""
    data = read_document(path)
    return decode_json_document(data), data


def unreadable_session(
    path: Path, fmt: str, reason: str, line: int = 1, data: bytes = b"", sid: str | None = None
) -> Session:
    """A file (or one item of it) that yields no records: one Skip, so ``lines == records + skipped``."""
    return Session(
        id=sid or path.stem,
        records=(),
        source=str(path),
        format=fmt,
        lines=1,
        skipped=(Skip(str(path), line, reason, data),),
    )
