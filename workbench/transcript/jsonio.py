"""Decoding JSON input with reasons a user can act on, shared by every loader.

Loaders never raise on bad input: a line or file that cannot be decoded becomes a `Skip` whose reason
comes from `BadInput` (invalid UTF-8 with the byte offset, invalid JSON with line/column, blank line,
nesting too deep, a line or document over the size cap of `files.max_line_bytes`). A leading UTF-8
byte-order mark is not part of the JSON (editors on Windows write one); it is ignored, and loaders keep
it in ``Record.line`` so export stays byte-identical.

**The decoder.** Lines and documents are decoded by `orjson` (about 3x the standard library's speed on
the corpus; docs/performance.md says why orjson), with the standard library as the fallback wherever the two
could differ, so what a user sees is unchanged:

* anything orjson rejects is decoded again by `json` (which accepts ``NaN`` / ``Infinity``, ``1e999``,
  lone surrogate escapes such as ``"\\udc80"``; nesting orjson refuses, past 1,024 levels, is past the
  standard library's recursion limit too) and otherwise raises the error whose wording the skip reasons
  use: ``invalid JSON: Expecting value at column N``, ``nested too deeply``);
* a line holding a run of 19 or more digits goes to `json` directly: orjson turns integers outside
  the 64-bit range into floats (``10**30`` would load as ``1e+30``), the standard library keeps them
  exact (`sanitize` then reports the exact value). Such a run is rare (it also matches digits inside a
  string, which costs only speed).

Both are tested line for line against `json.loads` (``tests/transcript/test_decoder.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from .files import BOM, OversizedLine, oversized_reason, read_document
from .model import Session, Skip

__all__ = [
    "BadInput",
    "decode_json_document",
    "decode_json_line",
    "decode_line",
    "loads",
    "read_json_document",
    "unreadable_session",
]

#: A run of digits that may be an integer orjson cannot keep exact (outside -2**63 .. 2**64-1), found by
#: mapping every digit to ``0`` and everything else to a space (``bytes.translate`` and ``in`` run at
#: ~500 MB/s here; a regex ``[0-9]{19}`` at ~40, slower than orjson itself).
_DIGIT_MAP = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_RUN = b"0" * 19


def loads(data: bytes) -> Any:
    """`json.loads` semantics at orjson's speed (module docstring): orjson first, the standard library
    where orjson rejects the input or could round an integer. ``data`` is UTF-8 JSON without a BOM."""
    if _LONG_RUN not in data.translate(_DIGIT_MAP):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data.decode("utf-8"))  # not json.loads(bytes): that guesses UTF-16/32 from NUL bytes


class BadInput(ValueError):
    """Input that cannot be decoded; ``reason`` is what the Skip reports, ``line`` where (1-based)."""

    def __init__(self, reason: str, line: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _checked(data: bytes, what: str = "line") -> tuple[bytes, str]:
    """``(data without a BOM, data as text with it)`` with the reasons a user sees (orjson's messages
    do not name the byte)."""
    if isinstance(data, OversizedLine):
        raise BadInput(oversized_reason(data.size, what))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"invalid UTF-8 at byte {exc.start}") from None
    return (data[3:] if data.startswith(BOM) else data), text


def decode_line(data: bytes) -> tuple[Any, str]:
    """One JSONL line (without its newline) to ``(value, its text)``; the text keeps a BOM (export)."""
    body, text = _checked(data)
    if not text.removeprefix("\ufeff").strip():  # str.strip: Unicode whitespace is blank too, as before
        raise BadInput("blank line")
    try:
        return loads(body), text
    except json.JSONDecodeError as exc:
        raise BadInput(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise BadInput("invalid JSON: nested too deeply") from None


def decode_json_line(data: bytes) -> Any:
    """One JSONL line (without its newline) to a value."""
    return decode_line(data)[0]


def decode_json_document(data: bytes) -> Any:
    """A whole JSON file to a value; errors name the line and column."""
    body, _ = _checked(data, "file")
    try:
        return loads(body)
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
