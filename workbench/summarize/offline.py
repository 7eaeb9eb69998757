"""Offline, deterministic full-compact summariser (the shape of docs §5.2 without a model call).

Claude Code asks the model for ``<analysis>…</analysis>`` then ``<summary>`` with 9 numbered sections
(docs §5.2). `OfflineSummarizer` writes the same shape from what the records plainly say (the facts
`workbench.memory.extractor.collect_facts` collects), so a replay can measure what a full compaction
costs and keeps without an API call. Following the prompt's rules:

* ``All user messages`` lists every non-tool-result user message, verbatim, each clipped;
* ``Current Work`` and ``Optional Next Step`` quote the most recent user request and assistant text
  verbatim (clipped).

Feed the output to `workbench.summarize.prompt.compact_user_summary_message` to get the summary message.
A model-backed summariser only has to satisfy `Summarizer`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..memory.extractor import workflow_items
from ..memory.facts import (
    SessionFacts,
    clip,
    collect_facts,
    error_calls,
    first_error_line,
    is_correction,
    one_line,
)
from ..transcript.model import Record
from .prompt import SUMMARY_SECTIONS

__all__ = ["OfflineSummarizer", "Summarizer", "SummarizerConfig", "summarize"]


class SummarizerConfig(BaseModel):
    """Clipping budgets (characters) of the offline summary."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    max_user_message_chars: int = Field(1000, ge=80)
    max_quote_chars: int = Field(1500, ge=80)
    max_snippet_chars: int = Field(600, ge=0)
    max_files: int = Field(40, ge=1)
    max_snippets: int = Field(8, ge=0)
    max_items: int = Field(30, ge=1)


@runtime_checkable
class Summarizer(Protocol):
    """Anything that writes a full-compact summary (raw model-style output) for ``records``."""

    name: str

    def summarize(self, records: Sequence[Record], *, custom_instructions: str | None = None) -> str: ...


def _indent(text: str, prefix: str = "   ") -> str:
    """Indent every line so no content line can be read as a ``N. Section:`` heading."""
    return "\n".join(prefix + line if line.strip() else "" for line in text.split("\n"))


def _quote(text: str, limit: int) -> str:
    return '"' + clip(text.strip(), limit) + '"'


def _bullets(items: Sequence[str], empty: str) -> str:
    return "\n".join(f"   - {item}" for item in items) if items else f"   {empty}"


def _language(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lstrip(".")
    return suffix or PurePosixPath(path).name


def _primary(facts: SessionFacts, cfg: SummarizerConfig) -> str:
    requests = facts.requests
    parts = []
    if facts.compact_summaries:
        match = re.search(
            r"1\.\s*Primary Request and Intent:\s*(.*?)(?:\n\s*2\.\s|\Z)", facts.compact_summaries[-1][1], re.S
        )
        earlier = match.group(1) if match else facts.compact_summaries[-1][1]
        parts.append("Earlier (from the previous compaction summary): " + one_line(earlier, cfg.max_quote_chars))
    if requests:
        parts.append("The user's first request: " + _quote(requests[0][1], cfg.max_quote_chars))
        later = [one_line(t, 200) for _, t in requests[1:]][-cfg.max_items :]
        if later:
            parts.append("Later requests, in order:\n" + "\n".join(f"- {x}" for x in later))
    return _indent("\n".join(parts) if parts else "No explicit user request was recorded.")


def _concepts(facts: SessionFacts, cfg: SummarizerConfig) -> str:
    tools = Counter(c.name for c in facts.calls)
    langs = Counter(_language(p) for p in facts.files())
    items = []
    if langs:
        items.append(
            "File types touched: "
            + ", ".join(f"{k} ({v})" for k, v in sorted(langs.items(), key=lambda kv: (-kv[1], kv[0])))
        )
    if tools:
        items.append(
            "Tools used: " + ", ".join(f"{k} ×{v}" for k, v in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0])))
        )
    names = sorted({n for names in facts.definitions.values() for n in names if "." in n or n[:1].isupper()})
    if names:
        items.append("Modules/classes defined or edited: " + ", ".join(names[: cfg.max_items]))
    return _bullets(items, "None recorded.")


def _files(facts: SessionFacts, cfg: SummarizerConfig) -> str:
    files = list(facts.files().items())[-cfg.max_files :]
    lines: list[str] = []
    for rank, (path, calls) in enumerate(reversed(files)):
        actions = Counter(c.name for c in calls)
        names = facts.definitions.get(path, ())
        head = f"- `{facts.rel(path)}` ({', '.join(f'{k}×{v}' if v > 1 else k for k, v in actions.items())})"
        if names:
            head += f"\n   - Defines: {', '.join(names[:12])}"
        last_change = next((c for c in reversed(calls) if c.name in ("Edit", "Write", "MultiEdit")), None)
        if last_change is not None and rank < cfg.max_snippets and cfg.max_snippet_chars:
            code = last_change.input.get("new_string") or last_change.input.get("content") or ""
            if isinstance(code, str) and code.strip():
                head += f"\n   - Last {last_change.name}:\n```\n{clip(code.strip(), cfg.max_snippet_chars)}\n```"
        lines.append(head)
    lines.reverse()
    return _indent("\n".join(lines)) if lines else "   No files were read or changed."


def _errors(facts: SessionFacts, cfg: SummarizerConfig) -> str:
    items = []
    ok_after: set[str] = set()
    for call in reversed(facts.calls):
        if call.name == "Bash" and not call.is_error:
            ok_after.add(one_line(call.target, 100))
    for call in error_calls(facts)[-cfg.max_items :]:
        fix = (
            " (a later run of the same command succeeded)"
            if one_line(call.target, 100) in ok_after and call.is_error
            else ""
        )
        items.append(
            f"{call.name} `{one_line(facts.rel(call.target), 160)}`: {first_error_line(call.result, 240)}{fix}"
        )
    items += [f"Hook reported: {first_error_line(t, 240)}" for _, t in facts.hook_errors[-cfg.max_items :]]
    items += [f"User feedback: {_quote(t, 400)}" for _, t in facts.requests if is_correction(t)]
    return _bullets(items, "No errors recorded.")


def _problem_solving(facts: SessionFacts, cfg: SummarizerConfig) -> str:
    answers = [f"- Answered: {one_line(t, 400)}" for _, t in facts.answers][-max(1, cfg.max_items // 3) :]
    commands = workflow_items(facts, 300)[-cfg.max_items :]
    parts = answers + (["Shell commands run (by last run, most recent last):", *commands] if commands else [])
    return _indent("\n".join(parts)) if parts else "   No concluded answers or commands recorded yet."


def _user_messages(facts: SessionFacts, cfg: SummarizerConfig) -> str:
    items = [clip(t.strip(), cfg.max_user_message_chars) for _, t in facts.user_messages]
    return _indent("\n".join(f"- {item}" for item in items)) if items else "   None."


def _pending(facts: SessionFacts) -> str:
    todos = [f"{text} ({status})" for status, text in facts.todos if status != "completed"]
    return _bullets(todos, "No pending tasks were recorded beyond the current work.")


def _ended_with_tools(records: Sequence[Record]) -> bool:
    last = next((r for r in reversed(records) if r.kind == "assistant"), None)
    return bool(last and last.tool_uses())


def _current(facts: SessionFacts, records: Sequence[Record], cfg: SummarizerConfig) -> str:
    parts = []
    if facts.requests:
        parts.append("Most recent user message: " + _quote(facts.requests[-1][1], cfg.max_quote_chars))
    if facts.last_assistant_text:
        parts.append("Most recent assistant message: " + _quote(facts.last_assistant_text, cfg.max_quote_chars))
    recent = facts.calls[-5:]
    if recent:
        state = "in progress" if _ended_with_tools(records) else "completed"
        parts.append(
            f"Last tool calls ({state}):\n"
            + "\n".join(f"- {c.name} {one_line(facts.rel(c.target), 200)}" for c in recent)
        )
    return _indent("\n".join(parts) if parts else "Nothing recorded.")


def _next_step(facts: SessionFacts, records: Sequence[Record], cfg: SummarizerConfig) -> str:
    if not facts.requests:
        return "   None."
    request = _quote(facts.requests[-1][1], cfg.max_quote_chars // 2)
    if _ended_with_tools(records) and facts.calls:
        last = facts.calls[-1]
        text = (
            f"Continue the work in progress (last action: {last.name} {one_line(facts.rel(last.target), 200)}). "
            f"The user's most recent request was: {request}"
        )
        if facts.last_assistant_text:
            text += f"\nWhere it left off: {_quote(facts.last_assistant_text, cfg.max_quote_chars // 2)}"
    else:
        text = f"The most recent request ({request}) was answered; wait for the user's next instruction."
    return _indent(text)


def summarize(
    records: Sequence[Record], *, custom_instructions: str | None = None, config: SummarizerConfig | None = None
) -> str:
    """The offline summary: ``<analysis>`` outline then ``<summary>`` with the 9 sections, in order."""
    cfg = config or SummarizerConfig()
    facts = collect_facts(records)
    bodies = (
        _primary(facts, cfg),
        _concepts(facts, cfg),
        _files(facts, cfg),
        _errors(facts, cfg),
        _problem_solving(facts, cfg),
        _user_messages(facts, cfg),
        _pending(facts),
        _current(facts, records, cfg),
        _next_step(facts, records, cfg),
    )
    sections = "\n\n".join(
        f"{i}. {name}:\n{body}" for i, (name, body) in enumerate(zip(SUMMARY_SECTIONS, bodies, strict=True), 1)
    )
    analysis = [
        f"The conversation has {len(facts.user_messages)} user messages, {len(facts.calls)} tool calls "
        f"over {len(facts.files())} files, {len(error_calls(facts))} error results and {len(facts.answers)} "
        "tool-free assistant answers.",
    ]
    if facts.compact_summaries:
        analysis.append("It continues from an earlier compaction summary.")
    if custom_instructions and custom_instructions.strip():
        analysis.append("Additional instructions were given: " + one_line(custom_instructions, 300))
    return f"<analysis>\n{' '.join(analysis)}\n</analysis>\n\n<summary>\n{sections}\n</summary>"


@dataclass(frozen=True)
class OfflineSummarizer:
    """`Summarizer` backed by `summarize`: deterministic, no model call."""

    config: SummarizerConfig = field(default_factory=SummarizerConfig)
    name: str = "offline"

    def summarize(self, records: Sequence[Record], *, custom_instructions: str | None = None) -> str:
        return summarize(records, custom_instructions=custom_instructions, config=self.config)
