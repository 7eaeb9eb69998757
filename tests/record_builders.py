"""The one place the unit tests build transcript records by hand (imported as ``record_builders``: tests/ is
on sys.path because of tests/conftest.py).

Content blocks are raw JSON dicts, shaped as in the ``message.content`` list of a Claude Code transcript line:

- ``text(value)``
- ``thinking(value="hmm", *, signature="sig")``
- ``tool_use(tool_id, name="Bash", **inputs)``: the tool's ``input`` is ``inputs`` (``{"command": "ls"}`` when
  none is given)
- ``tool_result(tool_id, content="ok", *, is_error=None)``: ``is_error`` is written only when given

Records (``workbench.transcript.model.Record``) take their blocks as those dicts (or as ``Block`` objects);
every optional part is a keyword, and any other keyword is passed on as a ``Record`` field (``usage=``,
``timestamp=``, ``session_id=``, ``model=``, ...). Each record gets a fresh ``uuid`` unless one is given
(``uuid=None`` builds a record without one):

- ``user(*content, uuid=..., cwd=CWD, **fields)``: one ``str`` is string content, otherwise a list of blocks (a
  ``str`` among them is a text block); ``cwd`` is the line's working directory (``None``: no ``cwd``) and
  ``raw=`` adds other fields of the line
- ``result(tool_id, content="ok", *, is_error=False, uuid=..., **fields)``: a user record answering one call
- ``assistant(*blocks, message_id=None, uuid=..., **fields)``
- ``say(text, *, message_id=None, uuid=..., **fields)``: an assistant record with one text block
- ``system(subtype, content="", *, uuid=..., **fields)``: a system record with string content
- ``developer(text, *, uuid=..., **fields)``: a Codex developer message (a ``system`` record, role ``developer``)

``session(records, *, session_id="hand")`` wraps records into a Claude Code ``Session`` that has usage,
message ids and uuids.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from workbench.transcript.model import Block, Record, Session

CWD = "/repo"

_ids = itertools.count()


class _Fresh:
    """The default of ``uuid=``: a new id for each record."""

    def __repr__(self) -> str:
        return "<fresh uuid>"


FRESH: Any = _Fresh()


def _uuid(value: str | None, prefix: str) -> str | None:
    return f"{prefix}-{next(_ids)}" if value is FRESH else value


def _block(block: Block | Mapping[str, Any] | str) -> Block:
    if isinstance(block, Block):
        return block
    return Block.from_raw(text(block) if isinstance(block, str) else block)


# ------------------------------------------------------------------ content blocks (raw JSON dicts)
def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str = "hmm", *, signature: str = "sig") -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def tool_use(tool_id: str, name: str = "Bash", **inputs: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": inputs or {"command": "ls"}}


def tool_result(tool_id: str, content: Any = "ok", *, is_error: bool | None = None) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


# ------------------------------------------------------------------ records
def user(
    *content: Block | Mapping[str, Any] | str, uuid: str | None = FRESH, cwd: str | None = CWD, **fields: Any
) -> Record:
    string = len(content) == 1 and isinstance(content[0], str)
    return Record(
        "user",
        uuid=_uuid(uuid, "u"),
        role="user",
        blocks=tuple(_block(b) for b in content),
        string_content=string,
        has_content=True,
        raw={**({"cwd": cwd} if cwd is not None else {}), **fields.pop("raw", {})},
        **fields,
    )


def result(
    tool_id: str, content: Any = "ok", *, is_error: bool = False, uuid: str | None = FRESH, **fields: Any
) -> Record:
    block = tool_result(tool_id, content, is_error=is_error)
    return Record("user", uuid=_uuid(uuid, "r"), role="user", blocks=(_block(block),), has_content=True, **fields)


def assistant(
    *blocks: Block | Mapping[str, Any], message_id: str | None = None, uuid: str | None = FRESH, **fields: Any
) -> Record:
    return Record(
        "assistant",
        uuid=_uuid(uuid, "a"),
        role="assistant",
        message_id=message_id,
        blocks=tuple(_block(b) for b in blocks),
        has_content=True,
        **fields,
    )


def say(value: str, *, message_id: str | None = None, uuid: str | None = FRESH, **fields: Any) -> Record:
    return assistant(text(value), message_id=message_id, uuid=uuid, **fields)


def system(subtype: str, content: str = "", *, uuid: str | None = FRESH, **fields: Any) -> Record:
    return Record(
        "system",
        uuid=_uuid(uuid, "s"),
        subtype=subtype,
        blocks=(Block.text_block(content),),
        string_content=True,
        **fields,
    )


def developer(value: str, *, uuid: str | None = FRESH, **fields: Any) -> Record:
    return Record(
        "system", uuid=_uuid(uuid, "d"), role="developer", blocks=(_block(value),), has_content=True, **fields
    )


# ------------------------------------------------------------------ sessions
def session(records: Iterable[Record], *, session_id: str = "hand") -> Session:
    return Session(
        id=session_id,
        records=tuple(records),
        format="claude-code",
        session_id=session_id,
        capabilities=frozenset({"usage", "message_ids", "uuids"}),
    )
