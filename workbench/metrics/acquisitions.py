"""Acquisitions: the tool calls by which an agent brings information into its context.

Shared by the measured recovery on recorded compactions (`workbench.metrics.recovery`) and the
counterfactual recovery of a strategy (`workbench.metrics.expected_recovery`). One `Acquisition` per
``tool_use`` block on a session's main chain, classified by what it acquires:

========= ======================================================================= ===========================
kind      tool calls                                                              key
========= ======================================================================= ===========================
read      Claude Code ``Read``; SWE-agent ``open``; OpenHands ``str_replace_      ``input.file_path`` (or
          editor`` with ``command: view``; ``view``/``read_file`` elsewhere       ``path``) as written
command   ``Bash`` (Claude Code), ``bash``/``execute_bash`` (SWE-agent,           ``input.command`` exactly
          OpenHands), ``shell``/``shell_command`` (Codex; a list is space-joined)  (no normalisation)
search    ``Grep``, ``Glob``                                                      the tool name + canonical
                                                                                  JSON of the whole input
edit      ``Edit``, ``Write``, ``MultiEdit``, ``NotebookEdit``; ``str_replace_     the edited path
          editor`` with another command; SWE-agent ``edit``/``create``/``insert``
question  ``AskUserQuestion``                                                     the questions' text,
                                                                                  whitespace-collapsed
========= ======================================================================= ===========================

Keys are compared exactly, as the issue defines the measure (``Read`` calls whose ``file_path`` *equals*
an earlier one); Claude Code's Read requires absolute paths, so one file has one key there. ``offset``/
``limit`` are ignored: a partial re-read of a file is still a re-read. The tool result (matched by
``tool_use_id``) gives the acquired content and its size; ``answered`` is False for an error result or
none at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..transcript.model import Block, Record, canonical_json

__all__ = ["Acquisition", "acquisitions", "result_record"]

_READ_TOOLS = frozenset({"Read", "open", "view", "read_file"})
_COMMAND_TOOLS = frozenset({"Bash", "bash", "execute_bash", "shell", "shell_command"})
_SEARCH_TOOLS = frozenset({"Grep", "Glob"})
_EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "edit", "create", "insert"})
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Acquisition:
    """One classified tool call: where it is (index into the records given, line) and what it acquired."""

    kind: str  # read | command | search | edit | question
    key: str
    tool: str
    index: int  # index of the tool_use's record in the records given
    line: int | None  # 1-based source line of that record
    tool_use_id: str | None
    result_index: int | None  # index of the record holding its tool_result
    result: Block | None
    answered: bool

    @property
    def result_text(self) -> str:
        return self.result.result_text() if self.result is not None else ""


def _path(data: Mapping[str, Any]) -> str | None:
    for field in ("file_path", "path", "notebook_path"):
        value = data.get(field)
        if isinstance(value, str) and value:
            return value
    return None


def _classify(block: Block) -> tuple[str, str] | None:
    name = block.name or ""
    data = block.input if isinstance(block.input, Mapping) else {}
    if name == "str_replace_editor":
        path = _path(data)
        if path is None:
            return None
        return ("read" if data.get("command") == "view" else "edit"), path
    if name in _READ_TOOLS:
        path = _path(data)
        return ("read", path) if path else None
    if name in _EDIT_TOOLS:
        path = _path(data)
        return ("edit", path) if path else None
    if name in _COMMAND_TOOLS:
        command = data.get("command")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        return ("command", command) if isinstance(command, str) and command else None
    if name in _SEARCH_TOOLS:
        return "search", f"{name} {canonical_json(dict(data))}"
    if name == "AskUserQuestion":
        questions = data.get("questions")
        items = questions if isinstance(questions, list) else []
        texts = [q.get("question", "") for q in items if isinstance(q, Mapping)]
        text = _SPACE.sub(" ", " | ".join(t for t in texts if t) or str(data.get("question") or "")).strip()
        return ("question", text) if text else None
    return None


def acquisitions(records: Sequence[Record]) -> list[Acquisition]:
    """Every classified tool call in ``records`` (in order), each with its tool result when recorded."""
    results: dict[str, tuple[int, Block]] = {}
    for index, record in enumerate(records):
        for block in record.tool_results():
            if block.tool_use_id and block.tool_use_id not in results:
                results[block.tool_use_id] = (index, block)
    out: list[Acquisition] = []
    for index, record in enumerate(records):
        if record.kind != "assistant":
            continue
        for block in record.tool_uses():
            kind_key = _classify(block)
            if kind_key is None:
                continue
            found = results.get(block.id or "")
            out.append(
                Acquisition(
                    kind=kind_key[0],
                    key=kind_key[1],
                    tool=block.name or "",
                    index=index,
                    line=record.line_no,
                    tool_use_id=block.id,
                    result_index=found[0] if found else None,
                    result=found[1] if found else None,
                    answered=found is not None and not found[1].is_error,
                )
            )
    return out


def result_record(acquisition: Acquisition) -> Record | None:
    """A one-block user record holding only the acquisition's tool result (what a token estimator counts)."""
    if acquisition.result is None:
        return None
    return Record(kind="user", role="user", blocks=(acquisition.result,), has_content=True)
