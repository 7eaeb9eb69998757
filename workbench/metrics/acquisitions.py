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
search    ``Grep``, ``Glob``                                                      the tool, ``pattern`` and
                                                                                  the search's scope (below)
fetch     ``WebFetch``, ``WebSearch``                                             the normalised URL; the
                                                                                  query (below)
task      ``Task``/``Agent`` (a sub-agent)                                        ``subagent_type`` and the
                                                                                  prompt (below)
edit      ``Edit``, ``Write``, ``MultiEdit``, ``NotebookEdit``; ``str_replace_     the edited path
          editor`` with another command; SWE-agent ``edit``/``create``/``insert``
question  ``AskUserQuestion``                                                     the questions' text,
                                                                                  whitespace-collapsed
========= ======================================================================= ===========================

Keys are compared exactly (``Read`` calls whose ``file_path`` *equals* an earlier one); Claude Code's Read
requires absolute paths, so one file has one key there. ``offset``/``limit`` are ignored: a partial
re-read of a file is still a re-read.

The other re-acquisitions are keyed by what they acquire, not how the result is shown:

* ``Grep``: ``pattern``, ``path`` (a trailing ``/`` and a bare ``.`` removed), ``glob``, ``type`` and
  ``-i``; ``output_mode``, ``-n``, context lines (``-A``/``-B``/``-C``), ``head_limit`` and ``offset`` only
  shape the output and are ignored (like a Read's ``offset``). ``Glob``: ``pattern`` and ``path``.
* ``WebFetch``: the URL with scheme and host in lower case, ``http`` as ``https`` (the tool upgrades HTTP
  to HTTPS), no fragment and no trailing ``/``; its ``prompt`` (what to extract from the page) is
  ignored: the page is what is fetched again. ``WebSearch``: the ``query``, lower case,
  whitespace-collapsed (allowed and blocked domains ignored).
* ``Task``/``Agent``: ``subagent_type`` and the ``prompt``, whitespace-collapsed (``description``, a
  3-5 word label, ignored): a sub-agent sent the same prompt again redoes the same work.

``subject`` is what a summary would name the call by (the path, the command, the pattern, the URL, the
query, the sub-agent's description), for `workbench.metrics.carried.mentions`. The tool result (matched
by ``tool_use_id``) gives the acquired content and its size; ``answered`` is False for an error result or
none at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..transcript.model import Block, Record, canonical_json

__all__ = ["REACQUIRED_KINDS", "Acquisition", "acquisitions", "result_record"]

#: The kinds whose repetition after a compaction is re-acquisition (`workbench.metrics.recovery`).
REACQUIRED_KINDS = ("read", "command", "search", "fetch", "task")

_READ_TOOLS = frozenset({"Read", "open", "view", "read_file"})
_COMMAND_TOOLS = frozenset({"Bash", "bash", "execute_bash", "shell", "shell_command"})
_SEARCH_TOOLS = frozenset({"Grep", "Glob"})
_TASK_TOOLS = frozenset({"Task", "Agent"})
_EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "edit", "create", "insert"})
#: Grep arguments that choose what is searched (the others only shape the output).
_GREP_SCOPE = ("glob", "type", "-i")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Acquisition:
    """One classified tool call: where it is (index into the records given, line) and what it acquired."""

    kind: str  # read | command | search | fetch | task | edit | question
    key: str
    tool: str
    index: int  # index of the tool_use's record in the records given
    line: int | None  # 1-based source line of that record
    tool_use_id: str | None
    result_index: int | None  # index of the record holding its tool_result
    result: Block | None
    answered: bool
    subject: str = ""  # what a summary would name it by (defaults to the key)

    @property
    def result_text(self) -> str:
        return self.result.result_text() if self.result is not None else ""

    @property
    def named(self) -> str:
        """What a summary would name the call by (`workbench.metrics.carried.mentions`)."""
        return self.subject or self.key


def _path(data: Mapping[str, Any]) -> str | None:
    for field in ("file_path", "path", "notebook_path"):
        value = data.get(field)
        if isinstance(value, str) and value:
            return value
    return None


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _scope_path(value: Any) -> str:
    path = value.strip() if isinstance(value, str) else ""
    path = path.rstrip("/") if len(path) > 1 else path
    return "" if path in (".", "./") else path


def _search(name: str, data: Mapping[str, Any]) -> tuple[str, str, str] | None:
    pattern = data.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return None
    scope: dict[str, Any] = {"pattern": pattern, "path": _scope_path(data.get("path"))}
    if name == "Grep":
        scope.update({field: data[field] for field in _GREP_SCOPE if data.get(field)})
    return "search", f"{name} {canonical_json(scope)}", pattern


def _url(url: str) -> str:
    """A URL as WebFetch fetches it: scheme and host lower case, HTTPS for HTTP, no fragment, no end ``/``."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    scheme = "https" if scheme == "http" else scheme
    return urlunsplit((scheme, parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def _fetch(name: str, data: Mapping[str, Any]) -> tuple[str, str, str] | None:
    if name == "WebFetch":
        url = data.get("url")
        return ("fetch", f"WebFetch {_url(url)}", url.strip()) if isinstance(url, str) and url.strip() else None
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        return None
    return "fetch", f"WebSearch {_collapse(query).lower()}", _collapse(query)


def _task(data: Mapping[str, Any]) -> tuple[str, str, str] | None:
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    agent = data.get("subagent_type") if isinstance(data.get("subagent_type"), str) else ""
    description = data.get("description")
    subject = description if isinstance(description, str) and description.strip() else prompt.strip()
    return "task", f"task {agent}: {_collapse(prompt)}", subject.strip().splitlines()[0]


def _classify(block: Block) -> tuple[str, str, str] | None:
    name = block.name or ""
    data = block.input if isinstance(block.input, Mapping) else {}
    if name == "str_replace_editor":
        path = _path(data)
        if path is None:
            return None
        return ("read" if data.get("command") == "view" else "edit"), path, path
    if name in _READ_TOOLS:
        path = _path(data)
        return ("read", path, path) if path else None
    if name in _EDIT_TOOLS:
        path = _path(data)
        return ("edit", path, path) if path else None
    if name in _COMMAND_TOOLS:
        command = data.get("command")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        return ("command", command, command) if isinstance(command, str) and command else None
    if name in _SEARCH_TOOLS:
        return _search(name, data)
    if name in ("WebFetch", "WebSearch"):
        return _fetch(name, data)
    if name in _TASK_TOOLS:
        return _task(data)
    if name == "AskUserQuestion":
        questions = data.get("questions")
        items = questions if isinstance(questions, list) else []
        texts = [q.get("question", "") for q in items if isinstance(q, Mapping)]
        text = _collapse(" | ".join(t for t in texts if t) or str(data.get("question") or ""))
        return ("question", text, text) if text else None
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
            classified = _classify(block)
            if classified is None:
                continue
            found = results.get(block.id or "")
            out.append(
                Acquisition(
                    kind=classified[0],
                    key=classified[1],
                    tool=block.name or "",
                    index=index,
                    line=record.line_no,
                    tool_use_id=block.id,
                    result_index=found[0] if found else None,
                    result=found[1] if found else None,
                    answered=found is not None and not found[1].is_error,
                    subject=classified[2],
                )
            )
    return out


def result_record(acquisition: Acquisition) -> Record | None:
    """A one-block user record holding only the acquisition's tool result (what a token estimator counts)."""
    if acquisition.result is None:
        return None
    return Record(kind="user", role="user", blocks=(acquisition.result,), has_content=True)
