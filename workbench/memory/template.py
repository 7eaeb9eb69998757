"""The session-memory file: template, caps, truncation and size reminders (docs §1.1).

Claude Code keeps one markdown notes file per session (``session-memory/summary.md``) made of 10
``# Heading`` sections, each followed by one italic ``_description_`` line that the update prompt
forbids editing. `SessionMemory` is that file as an immutable value; `truncate_session_memory_for_compact`
is what SM-compact does before inlining it in the summary message (docs §2.6).

Reproduced on purpose (docs §1.1):

* the headings, their order, the leading newline of the template and one italic line per heading
  (the descriptions are paraphrased, as the docs paraphrase them);
* ``MAX_SECTION_LENGTH = 2000`` and ``MAX_TOTAL_SESSION_MEMORY_TOKENS = 12000``, both in
  ``roughTokenCountEstimation`` units (UTF-16 length / 4, rounded half up);
* truncation at ``2000 * 4`` UTF-16 code units per section body with the line
  ``\\n[... section truncated for length ...]``, text before the first heading passed through;
* ``isSessionMemoryEmpty`` as ``content.trim() == template.trim()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..tokens.js import js_len, rough_tokens

__all__ = [
    "DEFAULT_SESSION_MEMORY_TEMPLATE",
    "MAX_SECTION_LENGTH",
    "MAX_TOTAL_SESSION_MEMORY_TOKENS",
    "SECTION_CHAR_BUDGET",
    "SECTION_DESCRIPTIONS",
    "SECTION_HEADINGS",
    "TRUNCATION_MARKER",
    "MemorySection",
    "SessionMemory",
    "generate_section_reminders",
    "is_session_memory_empty",
    "parse_sections",
    "section_token_sizes",
    "truncate_session_memory_for_compact",
]

#: Per-section cap in rough tokens (docs §1.1 ``MAX_SECTION_LENGTH``).
MAX_SECTION_LENGTH = 2000
#: Whole-file cap in rough tokens (docs §1.1 ``MAX_TOTAL_SESSION_MEMORY_TOKENS``).
MAX_TOTAL_SESSION_MEMORY_TOKENS = 12000
#: Body budget of one section when truncating for a compact summary: ``MAX_SECTION_LENGTH * 4`` chars.
SECTION_CHAR_BUDGET = MAX_SECTION_LENGTH * 4
#: The line appended to a truncated section (docs §1.1), a leading newline included.
TRUNCATION_MARKER = "\n[... section truncated for length ...]"

#: The 10 headings, exact and in order (docs §1.1).
SECTION_HEADINGS: tuple[str, ...] = (
    "# Session Title",
    "# Current State",
    "# Task specification",
    "# Files and Functions",
    "# Workflow",
    "# Errors & Corrections",
    "# Codebase and System Documentation",
    "# Learnings",
    "# Key results",
    "# Worklog",
)

#: The italic description under each heading, paraphrased from docs §1.1 (the docs do not quote them).
SECTION_DESCRIPTIONS: Mapping[str, str] = {
    "# Session Title": (
        "A short and distinctive 5-10 word descriptive title for the session. Super info dense, no filler"
    ),
    "# Current State": (
        "What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps."
    ),
    "# Task specification": ("What did the user ask to build? Any design decisions or other explanatory context"),
    "# Files and Functions": (
        "What are the important files? In short, what do they contain and why are they relevant?"
    ),
    "# Workflow": (
        "What bash commands are usually run and in what order? How to interpret their output if not obvious?"
    ),
    "# Errors & Corrections": (
        "Errors encountered and how they were fixed. What did the user correct? What approaches failed and "
        "should not be tried again?"
    ),
    "# Codebase and System Documentation": ("What are the important system components? How do they work/fit together?"),
    "# Learnings": "What has worked well? What has not? What to avoid? Do not duplicate items from other sections",
    "# Key results": (
        "If the user asked a specific output such as an answer to a question, a table, or other document, "
        "repeat the exact result here"
    ),
    "# Worklog": "Step by step, what was attempted, done? Very terse summary for each step",
}


@dataclass(frozen=True, slots=True)
class MemorySection:
    """One ``# Heading`` of the notes file: its italic description and the content written below it.

    ``content`` never starts or ends with a newline (`SessionMemory.render` adds the separators).
    """

    heading: str
    description: str
    content: str = ""

    @property
    def name(self) -> str:
        """The heading without its ``# `` prefix (``"Current State"``)."""
        return self.heading[2:]

    def render(self) -> str:
        head = f"{self.heading}\n_{self.description}_"
        return f"{head}\n{self.content}" if self.content else head

    def __deepcopy__(self, memo: dict[int, Any]) -> MemorySection:
        return self  # immutable: a replay fork shares it


@dataclass(frozen=True, slots=True)
class SessionMemory:
    """The notes file as a value: sections in order. ``text`` is the file content.

    ``render``/``parse`` round-trip: ``SessionMemory.parse(m.text) == m`` and, for any text in the
    canonical layout (the template, anything `render` produced), ``SessionMemory.parse(t).text == t``.
    """

    sections: tuple[MemorySection, ...]
    #: `render`'s text, memoised (immutable: an extraction reads the notes' text three or four times)
    _text: str | None = field(default=None, init=False, compare=False, repr=False)
    #: `tokens` and `section_tokens`, memoised: an extraction's notes are measured when they are written
    #: (the file cap, the step row) and again as the next extraction's prompt
    _tokens: int | None = field(default=None, init=False, compare=False, repr=False)
    _sizes: dict[str, int] | None = field(default=None, init=False, compare=False, repr=False)

    def __deepcopy__(self, memo: dict[int, Any]) -> SessionMemory:
        return self  # immutable: a replay fork shares it

    @classmethod
    def empty(cls) -> SessionMemory:
        """The template itself (docs §1.1: what a freshly created memory file holds)."""
        return cls(tuple(MemorySection(h, SECTION_DESCRIPTIONS[h]) for h in SECTION_HEADINGS))

    @classmethod
    def from_contents(cls, contents: Mapping[str, str]) -> SessionMemory:
        """The template filled with ``contents`` (keyed by heading, with or without ``# ``)."""
        by_heading = {(k if k.startswith("# ") else f"# {k}"): v for k, v in contents.items()}
        unknown = set(by_heading) - set(SECTION_HEADINGS)
        if unknown:
            raise ValueError(f"unknown session-memory sections: {sorted(unknown)}")
        return cls(
            tuple(
                MemorySection(h, SECTION_DESCRIPTIONS[h], by_heading.get(h, "").strip("\n")) for h in SECTION_HEADINGS
            )
        )

    @classmethod
    def parse(cls, text: str) -> SessionMemory:
        """Parse a notes file in the template's layout (text before the first heading is ignored)."""
        sections = []
        for heading, body in parse_sections(text).items():
            lines = body.split("\n")
            description = ""
            if lines and len(lines[0]) >= 2 and lines[0].startswith("_") and lines[0].endswith("_"):
                description, lines = lines[0][1:-1], lines[1:]
            sections.append(MemorySection(heading, description, "\n".join(lines).strip("\n")))
        return cls(tuple(sections))

    def render(self) -> str:
        """The file content: a leading newline, sections separated by one blank line, final newline."""
        text = self._text
        if text is None:
            text = "\n" + "\n\n".join(s.render() for s in self.sections) + "\n"
            object.__setattr__(self, "_text", text)
        return text

    @property
    def text(self) -> str:
        return self.render()

    def section(self, heading: str) -> MemorySection:
        key = heading if heading.startswith("# ") else f"# {heading}"
        for s in self.sections:
            if s.heading == key:
                return s
        raise KeyError(heading)

    def contents(self) -> dict[str, str]:
        """``{heading: content}`` in order."""
        return {s.heading: s.content for s in self.sections}

    @property
    def is_empty(self) -> bool:
        return is_session_memory_empty(self.text)

    @property
    def tokens(self) -> int:
        """``roughTokenCountEstimation`` of the whole file (the total the reminders measure)."""
        tokens = self._tokens
        if tokens is None:
            tokens = rough_tokens(self.text)
            object.__setattr__(self, "_tokens", tokens)
        return tokens

    def section_tokens(self) -> dict[str, int]:
        """`section_token_sizes` of `text` (a new dict each call), without parsing the text back when it can:
        a section's body as the parse finds it is its italic line and its content (the blank line after it
        is stripped), unless a line of the section other than its heading starts with ``# `` (the parse
        would take it for a heading) or the heading is not one line starting with ``# ``."""
        sizes = self._sizes
        if sizes is None:
            if not all(_canonical(s) for s in self.sections):
                sizes = section_token_sizes(self.text)
            else:
                sizes = {}
                for s in self.sections:  # a repeated heading: its first place, its last body (as the parse)
                    sizes[s.heading] = rough_tokens(f"_{s.description}_\n{s.content}".strip())
            object.__setattr__(self, "_sizes", sizes)
        return dict(sizes)


def _canonical(section: MemorySection) -> bool:
    """Whether `parse_sections` of a rendered section finds exactly its heading, with the section as body."""
    heading, content = section.heading, section.content
    return (
        heading.startswith("# ")
        and "\n" not in heading
        and "\n# " not in section.description
        and not content.startswith("# ")
        and "\n# " not in content
    )


DEFAULT_SESSION_MEMORY_TEMPLATE: str = SessionMemory.empty().render()
"""The template (docs §1.1): starts with a newline, ``# Heading`` + one italic line per section."""


def parse_sections(content: str) -> dict[str, str]:
    """``{heading line: body}`` for each line starting with ``# ``; body = following lines joined by ``\\n``.

    A repeated heading keeps its last body (Claude Code's ``analyzeSectionSizes`` builds a map too).
    """
    sections: dict[str, str] = {}
    heading: str | None = None
    body: list[str] = []
    for line in content.split("\n"):
        if line.startswith("# "):
            if heading is not None:
                sections[heading] = "\n".join(body)
            heading, body = line, []
        else:
            body.append(line)
    if heading is not None:
        sections[heading] = "\n".join(body)
    return sections


def section_token_sizes(content: str) -> dict[str, int]:
    """Rough tokens of each section's *trimmed* body, by heading (docs §1.1 reminders)."""
    return {heading: rough_tokens(body.strip()) for heading, body in parse_sections(content).items()}


def truncate_session_memory_for_compact(content: str) -> tuple[str, bool]:
    """``truncateSessionMemoryForCompact`` (docs §1.1): returns ``(truncated_content, was_truncated)``.

    Lengths are JavaScript ``string.length`` (UTF-16 code units). A section whose body fits in
    `SECTION_CHAR_BUDGET` is kept whole; otherwise lines are kept while ``count + len(line) + 1 <= 8000``
    and the `TRUNCATION_MARKER` line is appended (so the output shows a blank line before the marker).
    """
    out: list[str] = []
    truncated = False
    heading: str | None = None
    body: list[str] = []

    def flush() -> None:
        nonlocal truncated
        if heading is None:
            out.extend(body)
            return
        out.append(heading)
        if js_len("\n".join(body)) <= SECTION_CHAR_BUDGET:
            out.extend(body)
            return
        count = 0
        for line in body:
            size = js_len(line) + 1
            if count + size > SECTION_CHAR_BUDGET:
                break
            out.append(line)
            count += size
        out.append(TRUNCATION_MARKER)
        truncated = True

    for line in content.split("\n"):
        if line.startswith("# "):
            flush()
            heading, body = line, []
        else:
            body.append(line)
    flush()
    return "\n".join(out), truncated


def is_session_memory_empty(content: str, template: str = DEFAULT_SESSION_MEMORY_TEMPLATE) -> bool:
    """``isSessionMemoryEmpty`` (docs §1.1): the file is still the bare template."""
    return content.strip() == template.strip()


def generate_section_reminders(section_sizes: Mapping[str, int] | Iterable[tuple[str, int]], total_tokens: int) -> str:
    """``generateSectionReminders`` (docs §1.1): the size warnings appended to the update prompt.

    Args:
        section_sizes: rough tokens per ``# Heading`` (see `section_token_sizes`).
        total_tokens: rough tokens of the whole file.

    Returns:
        ``""`` when nothing is over budget. Otherwise, when the total exceeds 12000, the ``CRITICAL``
        paragraph (its first sentence quoted by the docs, the rest paraphrased) followed by the
        ``Oversized sections to condense:`` list; else the ``IMPORTANT: The following sections exceed
        the per-section limit and MUST be condensed:`` list. Items are
        ``- "<# Heading>" is ~N tokens (limit: 2000)``, largest first (ties keep file order).
    """
    items = list(section_sizes.items()) if isinstance(section_sizes, Mapping) else list(section_sizes)
    oversized = sorted((kv for kv in items if kv[1] > MAX_SECTION_LENGTH), key=lambda kv: -kv[1])
    over_total = total_tokens > MAX_TOTAL_SESSION_MEMORY_TOKENS
    if not oversized and not over_total:
        return ""
    lines = "\n".join(f'- "{h}" is ~{n} tokens (limit: {MAX_SECTION_LENGTH})' for h, n in oversized)
    parts: list[str] = []
    if over_total:
        parts.append(
            f"\n\nCRITICAL: The session memory file is currently ~{total_tokens} tokens, which exceeds the "
            f"maximum of {MAX_TOTAL_SESSION_MEMORY_TOKENS} tokens. You MUST condense the file to fit within "
            "this budget. Aggressively shorten oversized sections by removing less important details, merging "
            'related items, and summarizing older entries. Prioritize keeping "Current State" and '
            '"Errors & Corrections" accurate and detailed.'
        )
        if oversized:
            parts.append(f"\n\nOversized sections to condense:\n{lines}")
    else:
        parts.append(
            f"\n\nIMPORTANT: The following sections exceed the per-section limit and MUST be condensed:\n{lines}"
        )
    return "".join(parts)
