"""Offline, deterministic session-memory extraction: the 10 notes sections from recorded records.

Claude Code fills the notes file with a forked model call (docs §1.3). Replays cannot call a model for
every extraction, so `OfflineMemoryExtractor` derives the sections from what the records plainly
contain: user requests, tool inputs (paths, patterns, shell commands), error results, user corrections,
documentation reads, the last tool-free assistant answers. It obeys the same budgets the update prompt
asks the model to respect (docs §1.1: ≤ ``MAX_SECTION_LENGTH`` rough tokens per section, ≤
``MAX_TOTAL_SESSION_MEMORY_TOKENS`` in all), condensing by dropping the oldest items first. The same
records always give the same bytes.

`collect_facts` is shared with the offline full-compact summariser (`workbench.summarize.offline`).
A model-backed extractor only has to satisfy `MemoryExtractor`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..tokens.js import rough_tokens
from ..transcript.model import Record
from .facts import (
    DEFAULT_MAX_RESULT_CHARS,
    DOC_FILE,
    SessionFacts,
    clip,
    collect_facts,
    error_calls,
    first_error_line,
    is_correction,
    is_real_request,
    one_line,
)
from .template import (
    MAX_SECTION_LENGTH,
    MAX_TOTAL_SESSION_MEMORY_TOKENS,
    SECTION_DESCRIPTIONS,
    SECTION_HEADINGS,
    SessionMemory,
)

__all__ = [
    "ExtractorConfig",
    "MemoryExtractor",
    "OfflineExtractor",
    "OfflineMemoryExtractor",
    "SessionFacts",
    "clip",
    "collect_facts",
    "extract",
    "is_correction",
    "is_real_request",
    "workflow_items",
]


class ExtractorConfig(BaseModel):
    """Budgets of the offline extractor; defaults are Claude Code's caps (docs §1.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    max_section_tokens: int = Field(MAX_SECTION_LENGTH, gt=0)
    max_total_tokens: int = Field(MAX_TOTAL_SESSION_MEMORY_TOKENS, gt=0)
    max_item_chars: int = Field(400, ge=40)
    max_result_chars: int = Field(DEFAULT_MAX_RESULT_CHARS, ge=200)

    @model_validator(mode="after")
    def _total_fits_a_section(self) -> ExtractorConfig:
        if self.max_total_tokens < self.max_section_tokens:
            raise ValueError("max_total_tokens must be >= max_section_tokens")
        return self


@runtime_checkable
class MemoryExtractor(Protocol):
    """Anything that turns records (plus the previous notes) into session memory."""

    name: str

    def extract(self, records: Sequence[Record], previous: SessionMemory | None = None) -> SessionMemory: ...


def _title(facts: SessionFacts) -> list[str]:
    requests = facts.requests
    if not requests:
        return []
    words = requests[0][1].split()  # a real request is never blank
    return [" ".join(words[:10]) + (" …" if len(words) > 10 else "")]


def _current_state(facts: SessionFacts, n: int) -> list[str]:
    items: list[str] = []
    requests = facts.requests
    if requests:
        items.append(f"Latest user request: {one_line(requests[-1][1], n * 2)}")
    open_todos = [f"{status}: {text}" for status, text in facts.todos if status != "completed"]
    items += [f"- Pending task ({one_line(t, n)})" for t in open_todos]
    if facts.calls:
        recent = facts.calls[-5:]
        items.append("Last actions: " + "; ".join(f"{c.name} {one_line(facts.rel(c.target), 80)}" for c in recent))
    if facts.last_assistant_text:
        items.append(f"Last assistant message: {one_line(facts.last_assistant_text, n * 2)}")
    return items


def _files(facts: SessionFacts, n: int) -> list[str]:
    items = []
    for path, calls in facts.files().items():
        counts: dict[str, int] = {}
        for call in calls:
            counts[call.name] = counts.get(call.name, 0) + 1
        actions = ", ".join(f"{name}×{k}" if k > 1 else name for name, k in counts.items())
        names = facts.definitions.get(path, ())
        defs = f"; defines {', '.join(names[:12])}" if names else ""
        items.append(clip(f"- `{facts.rel(path)}` ({actions}{defs})", n))
    for call in facts.calls:
        if call.name in ("Grep", "Glob") and isinstance(call.input.get("pattern"), str):
            where = facts.rel(str(call.input.get("path") or call.input.get("glob") or ""))
            items.append(
                clip(f"- searched {call.name} `{call.input['pattern']}`" + (f" in `{where}`" if where else ""), n)
            )
    return _dedupe(items)


def workflow_items(facts: SessionFacts, n: int) -> list[str]:
    """Distinct shell commands as bullets, ordered by their last run, with run counts and failures."""
    order: dict[str, tuple[int, int, bool]] = {}
    for call in facts.commands():
        cmd = one_line(call.input["command"], n - 20)
        _, count, failed = order.pop(cmd, (0, 0, False))
        order[cmd] = (call.index, count + 1, failed or call.is_error)
    return [
        f"- `{cmd}`" + (f" ×{count}" if count > 1 else "") + (" (failed at least once)" if failed else "")
        for cmd, (_, count, failed) in order.items()
    ]


def _errors(facts: SessionFacts, n: int) -> list[str]:
    items: list[tuple[int, str]] = []
    for call in error_calls(facts):
        items.append(
            (call.index, f"- {call.name} `{one_line(call.target, 120)}` → {first_error_line(call.result, n - 140)}")
        )
    for index, text in facts.hook_errors:
        items.append((index, f"- Hook reported: {first_error_line(text, n - 20)}"))
    for index, text in facts.user_messages:
        if is_real_request(text) and is_correction(text):
            items.append((index, f"- User correction: {one_line(text, n - 20)}"))
    return _dedupe([text for _, text in sorted(items, key=lambda it: it[0])])


def _docs(facts: SessionFacts, n: int) -> list[str]:
    items = []
    for path, calls in facts.files().items():
        if not DOC_FILE.search(path):
            continue
        text = next((c.result for c in calls if c.name == "Read" and c.result), "")
        headings = [
            one_line(re.sub(r"^\s*\d+[→\t]", "", ln).lstrip("# "), 60)
            for ln in text.splitlines()
            if re.sub(r"^\s*\d+[→\t]", "", ln).startswith("#")
        ][:8]
        items.append(clip(f"- `{facts.rel(path)}`" + (f": {'; '.join(headings)}" if headings else ""), n))
    return items


def _learnings(facts: SessionFacts, n: int) -> list[str]:
    items = []
    failed: dict[str, int] = {}
    for call in facts.commands():
        key = one_line(call.input["command"], 100)
        if call.is_error:
            failed.setdefault(key, call.index)
        elif key in failed:
            items.append((failed.pop(key), f"- `{key}` failed first and passed on a later run"))
    for key, index in failed.items():
        items.append((index, f"- `{key}` failed and was not re-run successfully"))
    for index, text in facts.user_messages:
        if is_real_request(text) and is_correction(text):
            items.append((index, f"- Follow the user's correction: {one_line(text, n - 40)}"))
    return _dedupe([t for _, t in sorted(items)])


def _worklog(facts: SessionFacts, n: int) -> list[str]:
    events: list[tuple[int, str]] = [(i, f"- User: {one_line(t, 100)}") for i, t in facts.requests]
    events += [
        (c.index, f"- {c.name} {one_line(facts.rel(c.target), 100)}" + (" (error)" if c.is_error else ""))
        for c in facts.calls
    ]
    events += [(i, f"- Answered: {one_line(t, 100)}") for i, t in facts.answers]
    lines: list[str] = []
    for _, line in sorted(events, key=lambda e: e[0]):
        if not lines or lines[-1] != line:
            lines.append(clip(line, n))
    return lines


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _merge(previous: list[str], new: list[str]) -> list[str]:
    """Previous items first (older), then new ones, without duplicates."""
    return _dedupe([*previous, *new])


def _fit(items: list[str], budget: int, description: str) -> list[str]:
    """Drop the oldest items until the section body (italic line included, as `section_token_sizes`
    measures it) fits ``budget`` rough tokens; a lone oversized item is clipped."""
    head = f"_{description}_\n"
    out = list(items)
    while len(out) > 1 and rough_tokens(head + "\n".join(out)) > budget:
        out.pop(0)
    if out and rough_tokens(head + out[0]) > budget:
        out[0] = clip(out[0], max(1, budget * 4 - len(head) - 4))
    return out


_LIST_SECTIONS = (
    "# Files and Functions",
    "# Workflow",
    "# Errors & Corrections",
    "# Codebase and System Documentation",
    "# Learnings",
    "# Worklog",
    "# Task specification",
)


def extract(
    records: Sequence[Record], previous: SessionMemory | None = None, config: ExtractorConfig | None = None
) -> SessionMemory:
    """Fill the 10 sections from ``records`` (merged after ``previous``), within the caps.

    ``Current State`` and ``Key results`` describe the latest turns and replace the previous content;
    the title is kept once set; every other section appends new items after the previous ones. When a
    section exceeds ``max_section_tokens`` its oldest items are dropped; while the whole file exceeds
    ``max_total_tokens`` the largest list section loses its oldest item.
    """
    cfg = config or ExtractorConfig()
    n = cfg.max_item_chars
    facts = collect_facts(records, cfg.max_result_chars)
    task = [f"- {one_line(t, n)}" for _, t in facts.requests]
    task += [
        f"- Earlier context (compact summary): {one_line(_summary_intent(t), n * 3)}"
        for _, t in facts.compact_summaries
    ]
    key = [clip(t, cfg.max_section_tokens * 4 - 200) for _, t in facts.answers[-3:]]
    fresh: dict[str, list[str]] = {
        "# Session Title": _title(facts),
        "# Current State": _current_state(facts, n),
        "# Task specification": _dedupe(task),
        "# Files and Functions": _files(facts, n),
        "# Workflow": workflow_items(facts, n),
        "# Errors & Corrections": _errors(facts, n),
        "# Codebase and System Documentation": _docs(facts, n),
        "# Learnings": _learnings(facts, n),
        "# Key results": key,
        "# Worklog": _worklog(facts, n),
    }
    old = {h: (c.split("\n") if c else []) for h, c in (previous.contents() if previous else {}).items()}
    merged: dict[str, list[str]] = {}
    for heading in SECTION_HEADINGS:
        prev = old.get(heading, [])
        if heading == "# Session Title":
            items = prev or fresh[heading]
        elif heading in ("# Current State", "# Key results"):
            items = fresh[heading] or prev
        else:
            items = _merge(prev, fresh[heading])
        merged[heading] = _fit(items, cfg.max_section_tokens, SECTION_DESCRIPTIONS[heading])
    memory = SessionMemory.from_contents({h: "\n".join(v) for h, v in merged.items()})
    while memory.tokens > cfg.max_total_tokens:
        candidates = [h for h in (*_LIST_SECTIONS, "# Key results") if len(merged[h]) > 1]
        if not candidates:
            break
        largest = max(candidates, key=lambda h: (rough_tokens("\n".join(merged[h])), -SECTION_HEADINGS.index(h)))
        merged[largest] = merged[largest][1:]
        memory = SessionMemory.from_contents({h: "\n".join(v) for h, v in merged.items()})
    return memory


def _summary_intent(summary: str) -> str:
    """The ``Primary Request and Intent`` part of a recorded compact summary (or its start)."""
    match = re.search(r"1\.\s*Primary Request and Intent:\s*(.*?)(?:\n\s*2\.\s|\Z)", summary, re.DOTALL)
    return match.group(1) if match else summary


@dataclass(frozen=True)
class OfflineMemoryExtractor:
    """`MemoryExtractor` backed by `extract`: deterministic, no model call."""

    config: ExtractorConfig = field(default_factory=ExtractorConfig)
    name: str = "offline"

    def extract(self, records: Sequence[Record], previous: SessionMemory | None = None) -> SessionMemory:
        return extract(records, previous, self.config)


#: Alias kept for callers written against the planned name (``workbench.strategies.sm_compact``).
OfflineExtractor = OfflineMemoryExtractor
