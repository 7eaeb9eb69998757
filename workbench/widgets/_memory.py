"""The session-memory notes file as sized sections, and what changed between two extractions.

`memory_snapshot` measures one memory the way Claude Code's reminders do (docs §1.1: rough tokens per
trimmed section body against ``MAX_SECTION_LENGTH`` = 2000, the whole file against
``MAX_TOTAL_SESSION_MEMORY_TOKENS`` = 12000) and shows what ``truncateSessionMemoryForCompact`` would
cut (the `TRUNCATION_MARKER` line); `memory_diff` compares two extractions section by section with
`difflib`; `replay_memory` replays a session through ``sm-compact`` and keeps the strategy's extraction
history (``SMState.history``), which `ReplayResult` alone does not carry. `MemorySectionsView` draws them.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ..memory.template import (
    MAX_SECTION_LENGTH,
    MAX_TOTAL_SESSION_MEMORY_TOKENS,
    TRUNCATION_MARKER,
    SessionMemory,
    parse_sections,
    section_token_sizes,
    truncate_session_memory_for_compact,
)
from ..replay import ReplayResult, replay_session
from ..strategies import Strategy, create
from ..tokens.js import rough_tokens
from ..transcript.model import Session
from ._compare import TABLE_SCROLL

__all__ = [
    "MemoryReplay",
    "MemorySectionsView",
    "MemorySnapshot",
    "SectionDiff",
    "SectionSize",
    "memory_diff",
    "memory_history",
    "memory_snapshot",
    "render_diff",
    "render_sections",
    "replay_memory",
]


@dataclass(frozen=True, slots=True)
class SectionSize:
    """One section: its rough-token size against the cap, its text, and its compact-time truncation."""

    heading: str
    tokens: int
    content: str
    truncated: bool
    truncated_content: str
    cap: int = MAX_SECTION_LENGTH

    @property
    def name(self) -> str:
        return self.heading[2:] if self.heading.startswith("# ") else self.heading

    @property
    def over_cap(self) -> bool:
        return self.tokens > self.cap


@dataclass(frozen=True)
class MemorySnapshot:
    """One memory, measured: sections in file order and the total against the file cap."""

    step: int | None
    sections: tuple[SectionSize, ...]
    total_tokens: int
    total_cap: int = MAX_TOTAL_SESSION_MEMORY_TOKENS

    @property
    def over_total(self) -> bool:
        return self.total_tokens > self.total_cap

    @property
    def truncated_sections(self) -> tuple[str, ...]:
        return tuple(s.heading for s in self.sections if s.truncated)


@dataclass(frozen=True, slots=True)
class SectionDiff:
    """A changed section between two extractions: the unified diff of its body, lines added/removed."""

    heading: str
    lines: tuple[str, ...]
    added: int
    removed: int


@dataclass
class MemoryReplay:
    """A replay plus the memory extractions the strategy made during it (``{"step", "memory"}`` rows)."""

    result: ReplayResult
    history: list[dict[str, Any]] = field(default_factory=list)


def _as_text(memory: SessionMemory | str) -> str:
    return memory.text if isinstance(memory, SessionMemory) else memory


def memory_snapshot(memory: SessionMemory | str, step: int | None = None) -> MemorySnapshot:
    """Sizes of ``memory``'s sections (rough tokens of each trimmed body) and their truncation (docs §1.1)."""
    text = _as_text(memory)
    sizes = section_token_sizes(text)
    bodies = parse_sections(text)
    truncated_bodies = parse_sections(truncate_session_memory_for_compact(text)[0])
    sections = []
    for heading, body in bodies.items():
        cut = truncated_bodies.get(heading, body)
        sections.append(
            SectionSize(
                heading=heading,
                tokens=sizes[heading],
                content=body.strip("\n"),
                truncated=TRUNCATION_MARKER.strip("\n") in cut and TRUNCATION_MARKER.strip("\n") not in body,
                truncated_content=cut.strip("\n"),
            )
        )
    return MemorySnapshot(step=step, sections=tuple(sections), total_tokens=rough_tokens(text))


def memory_diff(before: SessionMemory | str | None, after: SessionMemory | str) -> list[SectionDiff]:
    """Per-section unified diffs (``difflib``) from ``before`` to ``after``; unchanged sections omitted."""
    old = parse_sections(_as_text(before)) if before is not None else {}
    new = parse_sections(_as_text(after))
    out = []
    for heading in [*new, *(h for h in old if h not in new)]:
        a = old.get(heading, "").strip("\n").splitlines()
        b = new.get(heading, "").strip("\n").splitlines()
        if a == b:
            continue
        lines = tuple(difflib.unified_diff(a, b, fromfile="before", tofile="after", lineterm="", n=1))
        added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
        removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
        out.append(SectionDiff(heading, lines, added, removed))
    return out


def memory_history(source: Any) -> list[tuple[int | None, SessionMemory | str]]:
    """``[(step, memory)]`` from any of: a `SessionMemory` or text, a `MemoryReplay`, an ``SMState`` (its
    ``history``), a list of ``{"step", "memory"}`` rows, or a `ReplayResult` (the memory inlined in each
    ``sm-compact`` event's summary: what was sent, truncated as at compaction time)."""
    if isinstance(source, SessionMemory | str):
        return [(None, source)]
    if isinstance(source, MemoryReplay):
        source = source.history
    elif isinstance(source, ReplayResult):
        return [
            (e["step"], e["summary"])
            for e in source.events
            if str(e.get("kind", "")).startswith("sm-compact") and e.get("summary")
        ]
    elif hasattr(source, "history"):
        source = source.history
    if isinstance(source, Sequence):
        rows = []
        for row in source:
            if isinstance(row, Mapping):
                rows.append((row.get("step"), row["memory"]))
            else:
                rows.append((None, row))
        return rows
    raise TypeError(f"cannot read session memories from {type(source).__name__}")


class _Capturing:
    """Wraps a strategy so the per-session state it creates stays reachable after the replay."""

    def __init__(self, strategy: Strategy) -> None:
        base = type(strategy)
        states: list[Any] = []

        class Capturing(base):  # type: ignore[valid-type, misc]
            def new_state(self) -> Any:
                state = super().new_state()
                states.append(state)
                return state

        Capturing.__name__ = base.__name__
        self.strategy = Capturing(strategy.config)
        self.states = states


def replay_memory(
    session: Session, config: Mapping[str, Any] | None = None, *, strategy: str = "sm-compact"
) -> MemoryReplay:
    """Replay ``session`` through an SM-compact strategy and keep its extraction history."""
    capture = _Capturing(create(strategy, dict(config or {})))
    result = replay_session(session, capture.strategy)
    history = list(getattr(capture.states[-1], "history", [])) if capture.states else []
    return MemoryReplay(result, history)


# ---------------------------------------------------------------------------------------------- drawing
def _bar(value: int, cap: int, *, width: int = 220) -> str:
    share = value / cap if cap else 0.0
    fill = "#d62728" if share > 1 else "#f28e2b" if share > 0.8 else "#4e79a7"
    inner = min(share, 1.0) * width
    over = f' <span style="color:#d62728;white-space:nowrap">+{value - cap:,} over</span>' if value > cap else ""
    return (
        f'<span style="display:inline-block;width:{width}px;height:10px;background:#eee;border:1px solid #ccc;'
        f'vertical-align:middle"><span style="display:block;width:{inner:.0f}px;height:10px;background:{fill}">'
        f'</span></span> <span style="white-space:nowrap">{value:,} / {cap:,}</span>{over}'
    )


def render_sections(snapshot: MemorySnapshot) -> str:
    """Token bars per section (against 2000) and the total (against 12000), with the section texts."""
    step = "" if snapshot.step is None else f" · extraction at step {snapshot.step}"
    head = (
        f'<div class="wb-memory-total"><b>total</b> {_bar(snapshot.total_tokens, snapshot.total_cap, width=300)}'
        f"{step}</div>"
    )
    rows = []
    for s in snapshot.sections:
        marker = (
            ' <span class="wb-truncated" style="color:#d62728">[truncated at compaction]</span>' if s.truncated else ""
        )
        text = s.truncated_content if s.truncated else s.content
        marker_text = escape(TRUNCATION_MARKER.strip("\n"))
        shown = escape(text).replace(
            marker_text, f'<span class="wb-truncation-marker" style="background:#fdd">{marker_text}</span>'
        )
        rows.append(
            f'<tr><td style="white-space:nowrap;padding-right:8px">{escape(s.name)}</td>'
            f"<td>{_bar(s.tokens, s.cap)}{marker}</td></tr>"
            f'<tr><td colspan="2"><details><summary style="font-size:11px;color:#666">text</summary>'
            '<pre style="white-space:pre-wrap;overflow-wrap:anywhere;font-size:11px;max-height:240px;'
            f'overflow:auto">{shown}</pre>'
            "</details></td></tr>"
        )
    return (
        f'<div class="wb-memory-sections" style="max-width:100%">{head}<div class="wb-table-scroll" '
        f'style="{TABLE_SCROLL}"><table style="font-size:12px">{"".join(rows)}</table></div></div>'
    )


#: The diff's box never grows past this height (it scrolls); sections with more lines start collapsed.
DIFF_MAX_HEIGHT_PX = 480
DIFF_OPEN_LINES = 40


def render_diff(diffs: Sequence[SectionDiff], *, title: str = "") -> str:
    """Coloured unified diffs, one collapsible block per changed section, in a box of bounded height
    (``DIFF_MAX_HEIGHT_PX``, scrolling) whose long lines wrap."""
    box = (
        f"max-height:{DIFF_MAX_HEIGHT_PX}px;overflow-y:auto;overflow-x:hidden;max-width:100%;"
        "border:1px solid #ddd;padding:2px 4px;box-sizing:border-box"
    )
    if not diffs:
        return f'<div class="wb-memory-diff" style="{box}">{escape(title)} no change</div>'
    blocks = []
    for d in diffs:
        lines = []
        for line in d.lines:
            colour = ""
            if line.startswith("+") and not line.startswith("+++"):
                colour = "background:#e6ffed"
            elif line.startswith("-") and not line.startswith("---"):
                colour = "background:#ffeef0"
            elif line.startswith("@@"):
                colour = "color:#888"
            lines.append(f'<div style="{colour}">{escape(line) or "&nbsp;"}</div>')
        opened = " open" if len(d.lines) <= DIFF_OPEN_LINES else ""
        blocks.append(
            f"<details{opened}><summary><b>{escape(d.heading)}</b> <span style='color:#009E73'>+{d.added}</span> "
            f"<span style='color:#D55E00'>-{d.removed}</span>"
            + ("" if opened else f" <span style='color:#888'>({len(d.lines)} lines)</span>")
            + "</summary>"
            '<div style="font-family:monospace;font-size:11px;line-height:1.4;white-space:pre-wrap;'
            'overflow-wrap:anywhere">'
            f"{''.join(lines)}</div></details>"
        )
    return f'<div class="wb-memory-diff" style="{box}">{escape(title)}{"".join(blocks)}</div>'


class MemorySectionsView:
    """The session memory's 10 sections against their caps, and the diff from the previous extraction.

    Args:
        source: a `SessionMemory` or text, a `MemoryReplay` (see `replay_memory`), an ``SMState``, a list of
            ``{"step", "memory"}`` rows, or a `ReplayResult` (see `memory_history`).
    """

    def __init__(self, source: Any) -> None:
        import ipywidgets as w

        self.history = memory_history(source)
        if not self.history:
            raise ValueError("no session memory to show (the replay made no extraction)")
        self.snapshots = [memory_snapshot(m, step) for step, m in self.history]
        last = len(self.history) - 1
        self.pick = w.IntSlider(
            value=last,
            min=0,
            max=last,
            description="extraction",
            layout=w.Layout(width="420px"),
            disabled=last == 0,
        )
        half = w.Layout(flex="1 1 440px", min_width="0", max_width="100%")
        self.sections = w.HTML(layout=half)
        self.diff = w.HTML(layout=half)
        self.widget = w.VBox(
            [
                w.HTML(f"<b>Session memory</b> · {len(self.history)} extraction(s)"),
                self.pick,
                w.HBox([self.sections, self.diff], layout=w.Layout(flex_flow="row wrap", max_width="100%")),
            ],
            layout=w.Layout(max_width="100%"),
        )
        self.widget.add_class("wb-memory-view")
        self.update()
        self.pick.observe(lambda _c: self.update(), names="value")

    @property
    def snapshot(self) -> MemorySnapshot:
        index: int = self.pick.value
        return self.snapshots[index]

    def diffs(self) -> list[SectionDiff]:
        """The diff from the previous extraction to the selected one (all of it for the first)."""
        i = self.pick.value
        before = self.history[i - 1][1] if i > 0 else None
        return memory_diff(before, self.history[i][1])

    def update(self) -> None:
        i = self.pick.value
        self.sections.value = render_sections(self.snapshot)
        prev = self.history[i - 1][0] if i > 0 else None
        title = f"changes since the extraction at step {prev}:" if i > 0 else "first extraction (everything is new):"
        self.diff.value = render_diff(self.diffs(), title=title)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
