"""One pass over a session's records: what the offline memory extractor and summariser write from.

User requests and corrections, tool calls with their (clipped) results, final answers, todos, errors
and definitions seen in code; shared by `workbench.memory.extractor` and `workbench.summarize.offline`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..transcript.model import Record

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "DOC_FILE",
    "WS",
    "SessionFacts",
    "ToolCall",
    "clip",
    "collect_facts",
    "error_calls",
    "first_error_line",
    "is_correction",
    "is_real_request",
    "one_line",
]

DEFAULT_MAX_RESULT_CHARS = 6000

_CORRECTION = re.compile(
    r"^(no|nope|wrong|stop|wait|actually)\b|\b(don'?t|do not|instead|wrong|incorrect|not what i|shouldn'?t|"
    r"should not|revert|undo|that's not|thats not)\b",
    re.IGNORECASE,
)
# An error line starts like an error or reports one anywhere. Two patterns rather than one alternation:
# the start-only branch would otherwise be tried (and fail) at every position, doubling the scan time.
_ERROR_START = re.compile(r"\s*(?:\*\*\s*\(|error\b|traceback\b|fatal:|failed\b|panic:)", re.IGNORECASE)
# ``\b(?:error:|[1-9]\d* (?:failures?|errors?)\b)`` with IGNORECASE, spelt so that the scan is fast: a
# pattern that starts with ``\b``, or with a cased letter under IGNORECASE, has no first-character set, so
# the regex engine tries the whole pattern at every position (~20 ns a character, the largest item of an
# extraction on long shell outputs). This one starts with the set of its first characters (``[Ee1-9]``), so
# the engine skips to them, and checks the boundary behind that character (``\b`` before a word character is
# "no word character before it"). Each letter's class is exactly what IGNORECASE matches for it (``ı`` and
# ``İ`` for i, ``ſ`` for s; `tests/memory/test_memory_facts.py` derives the classes from all of Unicode), so
# it matches the same texts, about 3x as fast.
_ERROR_ANYWHERE = re.compile(
    r"[Ee1-9](?<!\w[Ee1-9])(?:(?<=[Ee])[Rr][Rr][Oo][Rr]:"
    r"|(?<=[1-9])\d* (?:[Ff][Aa][Iiİı][Ll][Uu][Rr][Ee][Ssſ]?|[Ee][Rr][Rr][Oo][Rr][Ssſ]?)\b)"
)
_DEFINITION = re.compile(
    r"^\s*(?:async\s+)?(?:def|defp|defmodule|class|function|func|fn|interface|struct|enum)\s+([A-Za-z_][\w.!?]*)",
    re.MULTILINE,
)
DOC_FILE = re.compile(r"(?:^|/)(?:README[^/]*|CLAUDE\.md|AGENTS\.md|CONTRIBUTING[^/]*|[^/]+\.md)$", re.IGNORECASE)
_HARNESS_PREFIXES = ("<", "[Request interrupted", "Caveat:")
WS = re.compile(r"\s+")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a trailing ``…`` when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def one_line(text: str, limit: int) -> str:
    """``text`` with each whitespace run made one space, ends stripped, clipped to ``limit``.

    Same result as ``WS.sub(" ", text).strip()``: ``str.split()`` splits on exactly the characters
    ``\\s`` matches (``str.isspace``), and is several times faster.

    A long text is folded from a prefix first: the folded prefix is a prefix of the folded text (its words
    are the text's first words, the last one perhaps cut), so once it is longer than ``limit`` it clips to
    the same line, and the rest (a tool result can be thousands of characters) is never split.
    """
    if limit > 0 and len(text) > 2 * limit + 16:
        head = " ".join(text[: 2 * limit + 16].split())
        if len(head) > limit:
            return clip(head, limit)
    return clip(" ".join(text.split()), limit)


def _is_error_text(text: str) -> bool:
    """Whether ``text`` starts like an error (``Error …``, ``Traceback``, ``fatal:``, ``** (``) or reports
    one anywhere (``error:``, ``3 failures``)."""
    if _ERROR_START.match(text):
        return True
    # A match holds "rror" or "lure" in some case: its letters r, o, l, u, e have no case variants besides the
    # upper-case one, and `str.lower` lowers character by character, so the lowered text then holds them
    # too. Most outputs have neither: the substring tests skip their scan.
    lowered = text.lower()
    if "rror" not in lowered and "lure" not in lowered:
        return False
    return _ERROR_ANYWHERE.search(text) is not None


def is_real_request(text: str) -> bool:
    """A typed user request, not a harness message (task notifications, command wrappers, interrupts)."""
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith(_HARNESS_PREFIXES)


def is_correction(text: str) -> bool:
    """Heuristic: the user is correcting the assistant ("no", "don't", "instead", "wrong", …)."""
    return bool(_CORRECTION.search(text[:600]))


@dataclass(frozen=True, slots=True)
class ToolCall:
    index: int
    name: str
    input: dict[str, Any]
    result: str = ""
    is_error: bool = False

    @property
    def target(self) -> str:
        """The file, path, pattern, command or URL the call is about."""
        for key in ("file_path", "notebook_path", "command", "pattern", "path", "url", "query", "skill"):
            value = self.input.get(key)
            if isinstance(value, str) and value:
                return value
        questions = self.input.get("questions")
        if isinstance(questions, list) and questions and isinstance(questions[0], dict):
            return str(questions[0].get("question") or "")
        return str(self.input.get("description") or "")


@dataclass(frozen=True)
class SessionFacts:
    """What the records plainly say, in record order. Indices are positions in the given records."""

    user_messages: tuple[tuple[int, str], ...] = ()
    compact_summaries: tuple[tuple[int, str], ...] = ()
    calls: tuple[ToolCall, ...] = ()
    answers: tuple[tuple[int, str], ...] = ()
    last_assistant_text: str = ""
    hook_errors: tuple[tuple[int, str], ...] = ()
    todos: tuple[tuple[str, str], ...] = ()
    definitions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cwd: str = ""

    def rel(self, path: str) -> str:
        """``path`` relative to the session's working directory when it lies inside it."""
        prefix = self.cwd.rstrip("/") + "/"
        return path[len(prefix) :] if self.cwd and path.startswith(prefix) else path

    @property
    def requests(self) -> list[tuple[int, str]]:
        return [(i, t) for i, t in self.user_messages if is_real_request(t)]

    def files(self) -> dict[str, list[ToolCall]]:
        """File path → the calls that read or changed it, ordered by last touch (oldest first)."""
        out: dict[str, list[ToolCall]] = {}
        for call in self.calls:
            path = call.input.get("file_path") or call.input.get("notebook_path")
            if isinstance(path, str) and path:
                out.setdefault(path, []).append(call)
        return dict(sorted(out.items(), key=lambda kv: kv[1][-1].index))

    def commands(self) -> list[ToolCall]:
        return [c for c in self.calls if c.name == "Bash" and isinstance(c.input.get("command"), str)]


def _message_groups(records: Sequence[Record]) -> list[list[int]]:
    """Indices of assistant records grouped by API response (shared ``message.id``, docs §7.4)."""
    groups: list[list[int]] = []
    last_id: object = object()
    for i, record in enumerate(records):
        if record.kind != "assistant":
            continue
        if groups and record.message_id is not None and record.message_id == last_id:
            groups[-1].append(i)
        else:
            groups.append([i])
        last_id = record.message_id
    return groups


def collect_facts(records: Sequence[Record], max_result_chars: int = DEFAULT_MAX_RESULT_CHARS) -> SessionFacts:
    """One pass over ``records``: user messages, tool calls with their results, answers, todos.

    User messages are the user records with text and no tool_result, the queued prompts
    (``queue-operation`` ``enqueue``, which reach the model as attachments and are otherwise not
    recorded as messages) and the answers to ``AskUserQuestion``. Compact-summary messages are kept
    apart as earlier context; meta messages only contribute error lines (hook feedback).
    """
    users: list[tuple[int, str]] = []
    summaries: list[tuple[int, str]] = []
    hook_errors: list[tuple[int, str]] = []
    pending: dict[str, tuple[int, str, dict[str, Any]]] = {}
    results: dict[str, tuple[str, bool]] = {}
    todos: tuple[tuple[str, str], ...] = ()
    definitions: dict[str, list[str]] = {}
    queued: set[str] = set()
    cwd = next((r.raw["cwd"] for r in records if isinstance(r.raw.get("cwd"), str)), "")
    for i, record in enumerate(records):
        if record.kind == "queue-operation" and record.raw.get("operation") == "enqueue":
            text = record.raw.get("content")
            if isinstance(text, str) and text.strip() and text not in queued:
                queued.add(text)
                users.append((i, text))
            continue
        if record.kind == "user":
            tool_results = record.tool_results()
            for block in tool_results:
                if block.tool_use_id:
                    results[block.tool_use_id] = (block.result_text()[:max_result_chars], block.is_error)
                    asked = pending.get(block.tool_use_id)
                    if asked and asked[1] == "AskUserQuestion" and not block.is_error:
                        users.append((i, block.result_text()))
            if tool_results:
                continue
            text = record.text
            if not text.strip():
                continue
            if record.is_compact_summary:
                summaries.append((i, text))
            elif record.is_meta:
                if _is_error_text(text):
                    hook_errors.append((i, text))
            elif text in queued:
                queued.discard(text)
            else:
                users.append((i, text))
        elif record.kind == "assistant":
            for block in record.tool_uses():
                data = dict(block.input) if isinstance(block.input, dict) else {}
                pending[block.id or f"#{i}"] = (i, block.name or "?", data)
                if block.name == "TodoWrite" and isinstance(data.get("todos"), list):
                    todos = tuple(
                        (str(t.get("status", "")), str(t.get("content", "")))
                        for t in data["todos"]
                        if isinstance(t, dict)
                    )
                path = data.get("file_path")
                code = data.get("new_string") or data.get("content")
                if isinstance(path, str) and isinstance(code, str):
                    names = definitions.setdefault(path, [])
                    names.extend(n for n in _DEFINITION.findall(code) if n not in names)
    calls = tuple(
        ToolCall(idx, name, data, *results.get(use_id, ("", False))) for use_id, (idx, name, data) in pending.items()
    )
    answers: list[tuple[int, str]] = []
    last_text = ""
    for group in _message_groups(records):
        text = "\n".join(records[i].text for i in group if records[i].text).strip()
        if text:
            last_text = text
            if not any(records[i].tool_uses() for i in group):
                answers.append((group[-1], text))
    return SessionFacts(
        user_messages=tuple(users),
        compact_summaries=tuple(summaries),
        calls=tuple(sorted(calls, key=lambda c: c.index)),
        answers=tuple(answers),
        last_assistant_text=last_text,
        hook_errors=tuple(hook_errors),
        todos=todos,
        definitions={k: tuple(v) for k, v in definitions.items()},
        cwd=cwd,
    )


def first_error_line(text: str, limit: int) -> str:
    for line in text.splitlines():
        if _is_error_text(line):
            return one_line(line, limit)
    return one_line(text, limit)


def error_calls(facts: SessionFacts) -> list[ToolCall]:
    """Calls whose result is an error: flagged ``is_error``, or a shell output with an error line."""
    return [c for c in facts.calls if c.is_error or (c.name == "Bash" and _is_error_text(c.result))]
