"""Model-backed session-memory extraction: Claude Code's forked "update the notes" call (docs §1.1, §1.3).

`OnlineMemoryExtractor` implements `workbench.memory.extractor.MemoryExtractor`. One extraction is:

1. the notes so far (``previous``, else the template) are rendered and inlined in the update prompt
   (`workbench.memory.prompt.build_update_prompt`: the rules of ``getDefaultUpdatePrompt``, paraphrased,
   with the notes in ``<current_notes_content>`` and the notes path, then the size reminders of
   `workbench.memory.template.generate_section_reminders`);
2. the request is the conversation (`workbench.online.messages.conversation_messages`: normalize,
   the prompt as one extra user message, pairing repair) with **one tool, Edit**;
3. **Edit emulation** (our choice of the two options; it is what Claude Code does, and it is cheap:
   the model writes only the changed lines). Each ``tool_use`` named ``Edit`` is applied in order to
   the notes text with the Edit tool's rules: ``file_path`` must be the notes path (else the
   ``only Edit on <path> is allowed`` denial, like Claude Code's ``canUseTool``), ``old_string`` must
   occur (exactly once unless ``replace_all``), ``old_string != new_string``. Any other tool is denied.
   Text blocks are ignored (no full-file answer is parsed);
4. when every edit of a turn applied, the extraction stops (the prompt says "then stop"; Claude Code
   would send the tool results back and let the model end its turn — we save that call). When an edit
   failed and ``max_turns`` allows, the tool results (errors included, ``is_error``) go back to the model
   for another turn, as the forked agent loop would;
5. the structure is validated: the same ``# `` headings in the same order, each followed by its
   unchanged italic description line, nothing but whitespace before the first heading. A broken
   structure is **rejected**: the previous memory is returned and the reason is recorded in
   `ExtractionReport.structure_error` (``fell_back=True``).

Every request is cached (`workbench.online.cache`), so re-running a replay re-applies the same edits
without a call. Each call's `ExtractionReport` is in ``last_report`` / ``reports``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..memory.prompt import DEFAULT_UPDATE_PROMPT, build_update_prompt, default_memory_path
from ..memory.template import SessionMemory
from ..transcript.model import Record
from .cache import ResponseCache
from .client import DEFAULT_MODEL, MESSAGES, OnlineCaller, RetryPolicy
from .messages import conversation_messages

__all__ = [
    "DEFAULT_UPDATE_PROMPT",
    "EDIT_TOOL",
    "EditOutcome",
    "ExtractionReport",
    "OnlineMemoryExtractor",
    "apply_edit",
    "build_update_prompt",
    "default_memory_path",
    "structure_error",
]

#: The Edit tool as the model sees it (Claude Code's Edit: file_path, old_string, new_string, replace_all).
EDIT_TOOL: dict[str, Any] = {
    "name": "Edit",
    "description": (
        "Performs exact string replacements in files. The edit FAILS if old_string is not found or is not "
        "unique in the file (provide more surrounding context, or set replace_all). old_string and "
        "new_string must differ."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
            "old_string": {"type": "string", "description": "The text to replace"},
            "new_string": {"type": "string", "description": "The text to replace it with"},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace all occurrences of old_string (default false)",
            },
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class EditOutcome:
    tool_use_id: str
    ok: bool
    message: str


def apply_edit(text: str, notes_path: str, name: str, data: Any) -> tuple[str, str | None]:
    """Apply one tool call to the notes: ``(new_text, None)`` or ``(text, error message)``."""
    if name != "Edit":
        return text, f"only Edit on {notes_path} is allowed"
    if not isinstance(data, Mapping):
        return text, "Edit input must be an object"
    path, old, new = data.get("file_path"), data.get("old_string"), data.get("new_string")
    if path != notes_path:
        return text, f"only Edit on {notes_path} is allowed"
    if not isinstance(old, str) or not isinstance(new, str):
        return text, "old_string and new_string must be strings"
    if old == new:
        return text, "No changes to make: old_string and new_string are exactly the same."
    if old == "":
        return text, "old_string must not be empty: the notes file already exists."
    count = text.count(old)
    if count == 0:
        return text, f"String to replace not found in file.\nString: {old}"
    if count > 1 and not data.get("replace_all"):
        return text, (
            f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
            "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
            f"context to uniquely identify the instance.\nString: {old}"
        )
    return (text.replace(old, new) if data.get("replace_all") else text.replace(old, new, 1)), None


def structure_error(text: str, reference: SessionMemory) -> str | None:
    """Why ``text`` breaks the notes structure of ``reference`` (headings, italic lines), or None."""
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith("# ")]
    expected = [s.heading for s in reference.sections]
    found = [lines[i] for i in heads]
    if found != expected:
        missing = [h for h in expected if h not in found]
        extra = [h for h in found if h not in expected]
        detail = f"missing {missing}" if missing else ""
        detail += ("; " if detail and extra else "") + (f"added {extra}" if extra else "")
        return "section headers changed: " + (detail or "order or duplicates changed")
    if heads and any(line.strip() for line in lines[: heads[0]]):
        return "text added before the first section header"
    for i, section in zip(heads, reference.sections, strict=True):
        want = f"_{section.description}_"
        got = lines[i + 1] if i + 1 < len(lines) else ""
        if section.description and got != want:
            return f"italic description of {section.heading!r} changed"
    return None


def _echo(block: Mapping[str, Any]) -> dict[str, Any]:
    """A response block as it goes back in the next request (API fields only)."""
    kind = block.get("type")
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": block.get("input") or {}}
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    return dict(block)


@dataclass
class ExtractionReport:
    """What one `OnlineMemoryExtractor.extract` did."""

    notes_path: str
    turns: int = 0
    edits: list[EditOutcome] = field(default_factory=list)
    ignored_text: str = ""
    stop_reason: str | None = None
    structure_error: str | None = None
    fell_back: bool = False
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def applied(self) -> int:
        return sum(1 for e in self.edits if e.ok)

    @property
    def errors(self) -> list[str]:
        out = [e.message for e in self.edits if not e.ok]
        return [*out, self.structure_error] if self.structure_error else out


class OnlineMemoryExtractor(OnlineCaller):
    """`MemoryExtractor` that asks a model to Edit the notes (see the module docstring).

    Args:
        model: the model (Claude Code uses the main-loop model for the fork).
        max_tokens: output budget of each extraction turn.
        client: an ``anthropic.Anthropic``; default: built from ``ANTHROPIC_API_KEY`` at the first call.
        cache: ``True`` (default on-disk cache), ``False`` or a `ResponseCache`/path.
        retry: bounded-backoff policy for 429/5xx/529.
        max_turns: model turns per extraction (further turns only after a failed edit).
        notes_path: the path the prompt names; default `default_memory_path` of the records.
        prompt_template: a custom update prompt (``{{currentNotes}}``, ``{{notesPath}}``), like
            ``~/.claude/session-memory/config/prompt.md``.
        temperature: sent only when given.
        drop_thinking: drop recorded thinking blocks from the request (see `workbench.online.messages`).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        max_tokens: int = 8192,
        client: Any = None,
        cache: ResponseCache | bool | None = True,
        *,
        retry: RetryPolicy | None = None,
        max_turns: int = 3,
        notes_path: str | None = None,
        prompt_template: str | None = None,
        temperature: float | None = None,
        drop_thinking: bool = True,
    ) -> None:
        super().__init__(model, client=client, cache=cache, retry=retry)
        if max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        self.max_tokens = max_tokens
        self.max_turns = max_turns
        self.notes_path = notes_path
        self.prompt_template = prompt_template or DEFAULT_UPDATE_PROMPT
        self.temperature = temperature
        self.drop_thinking = drop_thinking
        self.name = f"anthropic:{model}"
        self.last_report: ExtractionReport | None = None
        self.reports: list[ExtractionReport] = []

    def _repr_fields(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens, "max_turns": self.max_turns}

    def _params(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
            "tools": [EDIT_TOOL],
        }
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def extract(self, records: Sequence[Record], previous: SessionMemory | None = None) -> SessionMemory:
        before = previous or SessionMemory.empty()
        path = self.notes_path or default_memory_path(records)
        report = ExtractionReport(notes_path=path)
        self.last_report = report
        self.reports.append(report)
        notes = before.text
        prompt = build_update_prompt(notes, path, self.prompt_template)
        messages = conversation_messages(records, prompt, drop_thinking=self.drop_thinking)
        text = notes
        for _ in range(self.max_turns):
            response = self._request(MESSAGES, self._params(messages))
            report.turns += 1
            report.stop_reason = response.get("stop_reason")
            for key, value in (response.get("usage") or {}).items():
                if isinstance(value, int):
                    report.usage[key] = report.usage.get(key, 0) + value
            content = [b for b in response.get("content") or [] if isinstance(b, dict)]
            report.ignored_text += "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
            results: list[dict[str, Any]] = []
            failed = False
            for block in content:
                if block.get("type") != "tool_use":
                    continue
                use_id = str(block.get("id") or "")
                text, error = apply_edit(text, path, str(block.get("name")), block.get("input"))
                ok = error is None
                failed |= not ok
                message = f"The file {path} has been updated successfully." if ok else str(error)
                report.edits.append(EditOutcome(use_id, ok, message))
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use_id, "content": message}
                if not ok:
                    result["is_error"] = True
                results.append(result)
            if not results or not failed:
                break
            echoed = [_echo(b) for b in content]
            messages = [*messages, {"role": "assistant", "content": echoed}, {"role": "user", "content": results}]
        problem = structure_error(text, before)
        if problem is not None:
            report.structure_error = problem
            report.fell_back = True
            return before
        return SessionMemory.parse(text)

    def report_json(self) -> str:
        """The last report as JSON (for result files)."""
        r = self.last_report
        if r is None:
            return "null"
        return json.dumps(
            {
                "notes_path": r.notes_path,
                "turns": r.turns,
                "applied": r.applied,
                "errors": r.errors,
                "fell_back": r.fell_back,
                "stop_reason": r.stop_reason,
                "usage": r.usage,
            }
        )
