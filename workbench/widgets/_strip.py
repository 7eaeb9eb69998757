"""SVG drawings of a message list: the whole list to scale, and a zoom on the cut.

Pure string building (no widget import), so the drawing is tested and benchmarked without a browser.
Colours say what a record is (`record_class`); the overview's widths are proportional to
``claude-padded`` tokens, the zoom's to their square root (with a minimum, so small records stay
visible). The zoom brackets records sharing a ``message.id`` (one streamed response, docs §7.4) and
links each tool_use to its tool_result with an arc.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from math import sqrt

from ..transcript.model import Record
from ._keep_window import KeepWindowState, SessionIndex

__all__ = ["COLOURS", "LEGEND", "record_class", "render_legend", "render_overview", "render_zoom"]

#: Record class → fill colour.
COLOURS: dict[str, str] = {
    "user-text": "#4e79a7",
    "user-tool_result": "#a0cbe8",
    "assistant-text": "#f28e2b",
    "assistant-thinking": "#b07aa1",
    "assistant-tool_use": "#ffbe7d",
    "compact-boundary": "#000000",
    "system": "#bab0ac",
    "other": "#e5e5e5",
}

LEGEND: dict[str, str] = {
    "user-text": "user text",
    "user-tool_result": "tool_result",
    "assistant-text": "assistant text",
    "assistant-thinking": "thinking",
    "assistant-tool_use": "tool_use",
    "compact-boundary": "compact boundary",
    "system": "system",
    "other": "other (progress, meta…)",
}

MARKERS = {"naive": "#d62728", "pair": "#ff7f0e", "start": "#2ca02c", "summarized": "#7f7f7f"}


def record_class(record: Record) -> str:
    """The colour class of a record (what the strip's legend names)."""
    if record.is_compact_boundary:
        return "compact-boundary"
    kinds = {b.kind for b in record.blocks}
    if record.kind == "user":
        return "user-tool_result" if "tool_result" in kinds and "text" not in kinds else "user-text"
    if record.kind == "assistant":
        if "tool_use" in kinds:
            return "assistant-tool_use"
        if kinds & {"thinking", "redacted_thinking"} and "text" not in kinds:
            return "assistant-thinking"
        return "assistant-text"
    return "system" if record.kind == "system" else "other"


def _title(index: SessionIndex, i: int) -> str:
    r = index.records[i]
    parts = [f"#{i} {r.kind}", record_class(r), f"{index.counts[i]:,} tokens"]
    if r.message_id:
        parts.append(f"message.id {r.message_id}")
    if r.tool_use_ids():
        parts.append("tool_use " + ", ".join(r.tool_use_ids()))
    if r.tool_result_ids():
        parts.append("tool_result " + ", ".join(r.tool_result_ids()))
    parts.append(f"uuid {r.uuid}")
    return escape(" · ".join(parts))


def render_legend() -> str:
    items = "".join(
        f'<span style="margin-right:10px;white-space:nowrap"><span style="display:inline-block;width:10px;'
        f'height:10px;background:{COLOURS[k]};border:1px solid #888;margin-right:3px"></span>{escape(v)}</span>'
        for k, v in LEGEND.items()
    )
    marks = "".join(
        f'<span style="margin-right:10px;white-space:nowrap"><span style="display:inline-block;width:3px;'
        f'height:12px;background:{c};margin-right:3px;vertical-align:middle"></span>{escape(n)}</span>'
        for n, c in (
            ("naive start", MARKERS["naive"]),
            ("after tool pairs (step 1)", MARKERS["pair"]),
            ("adjusted start", MARKERS["start"]),
            ("last summarized", MARKERS["summarized"]),
        )
    )
    return f'<div class="wb-legend" style="font-size:11px;line-height:18px">{items}<br>{marks}</div>'


def _marker(x: float, colour: str, height: int, label: str, dash: str = "") -> str:
    style = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height}" stroke="{colour}" stroke-width="2"{style}>'
        f"<title>{escape(label)}</title></line>"
    )


def render_overview(index: SessionIndex, state: KeepWindowState, *, width: int = 960, height: int = 26) -> str:
    """The whole message list of the step, widths proportional to tokens; the kept part shaded."""
    lo, hi = state.offset, state.end
    total = max(index.tokens(lo, hi), 1)
    scale = (width - 2) / total

    def x(i: int) -> float:
        return 1 + (index.prefix_tokens[i] - index.prefix_tokens[lo]) * scale

    rects = []
    for i in range(lo, hi):
        w = index.counts[i] * scale
        if w <= 0 and not index.records[i].is_compact_boundary:
            continue
        fill = COLOURS[record_class(index.records[i])]
        rects.append(
            f'<rect x="{x(i):.2f}" y="6" width="{max(w, 0.6):.2f}" height="{height - 12}" fill="{fill}">'
            f"<title>{_title(index, i)}</title></rect>"
        )
    marks = []
    if state.start >= 0:
        marks.append(
            f'<rect x="{x(state.start):.1f}" y="1" width="{max(x(hi) - x(state.start), 1):.1f}" '
            f'height="{height - 2}" fill="none" stroke="{MARKERS["start"]}" stroke-width="2"/>'
        )
        marks.append(
            _marker(x(state.naive_start), MARKERS["naive"], height, f"naive start #{state.naive_start}", "4,2")
        )
        marks.append(_marker(x(state.start), MARKERS["start"], height, f"adjusted start #{state.start}"))
    if state.last_summarized is not None and state.last_summarized >= 0:
        ls = x(state.last_summarized + 1)
        marks.append(_marker(ls, MARKERS["summarized"], height, f"last summarized #{state.last_summarized}", "1,2"))
    return (
        f'<svg class="wb-overview" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" style="background:#fafafa;{_FIT}">{"".join(rects)}{"".join(marks)}</svg>'
    )


def _zoom_range(state: KeepWindowState, *, context: int = 6, limit: int = 60) -> list[tuple[int, int]]:
    """Segments of record indices to draw: around the adjusted and the naive start (one if they are close)."""
    lo_bound, hi_bound = state.floor, state.end
    a, n = state.start, state.naive_start
    first = (max(lo_bound, a - context), min(hi_bound, a + context))
    second = (max(lo_bound, n - context), min(hi_bound, n + 2 * context))
    if second[0] - first[1] <= context:
        lo, hi = first[0], second[1]
        if hi - lo <= limit:
            return [(lo, hi)]
        return [(lo, lo + limit // 2), (hi - limit // 2, hi)]
    return [first, second]


def render_zoom(index: SessionIndex, state: KeepWindowState, *, width: int = 960) -> str:
    """Records around the cut: brackets for ``message.id`` groups, arcs for tool_use → tool_result."""
    if state.start < 0 or state.end <= state.floor:
        return '<div class="wb-zoom">(no window)</div>'
    segments = _zoom_range(state)
    indices: list[int | None] = []
    for k, (lo, hi) in enumerate(segments):
        if k:
            indices.append(None)  # a gap
        indices.extend(range(lo, hi))
    weights = [8.0 if i is None else max(sqrt(index.counts[i]), 3.0) for i in indices]
    gap = 2.0
    scale = (width - 20 - gap * len(indices)) / max(sum(weights), 1.0)
    xs: dict[int, tuple[float, float]] = {}
    x = 10.0
    body_top, body_h = 46, 30
    parts: list[str] = []
    label_end = 0.0  # right edge of the last record number drawn: the numbers are thinned to fit
    for i, w in zip(indices, weights, strict=True):
        w_px = w * scale
        if i is None:
            parts.append(
                f'<text x="{x + w_px / 2:.1f}" y="{body_top + 20}" font-size="12" text-anchor="middle">…</text>'
            )
        else:
            xs[i] = (x, w_px)
            fill = COLOURS[record_class(index.records[i])]
            kept = i >= state.start
            parts.append(
                f'<rect x="{x:.1f}" y="{body_top}" width="{w_px:.1f}" height="{body_h}" fill="{fill}" '
                f'stroke="{"#2ca02c" if kept else "#999"}" stroke-width="{1.5 if kept else 0.5}" '
                f'opacity="{1.0 if kept else 0.55}"><title>{_title(index, i)}</title></rect>'
            )
            centre = x + w_px / 2
            half = _text_width(str(i), 9) / 2
            if centre - half >= label_end + 3 and centre + half <= width:
                parts.append(
                    f'<text class="wb-record-number" x="{centre:.1f}" y="{body_top + body_h + 12}" font-size="9" '
                    f'text-anchor="middle" fill="#555">{i}</text>'
                )
                label_end = centre + half
        x += w_px + gap
    parts.extend(_brackets(index, indices, xs, body_top + body_h + 16))
    parts.extend(_arcs(index, state, xs, body_top))
    for name, at, dash in (
        ("naive", state.naive_start, "4,2"),
        ("pair", state.pair_start, "2,2"),
        ("start", state.start, ""),
    ):
        if name == "pair" and at in (state.naive_start, state.start):
            continue
        if at in xs:
            edge = xs[at][0] - gap / 2
        elif at == state.end and indices and indices[-1] is not None and indices[-1] in xs:
            edge = sum(xs[indices[-1]]) + gap / 2
        else:
            continue
        label = {"naive": "naive", "pair": "step 1", "start": "adjusted"}[name]
        parts.append(_marker(edge, MARKERS[name], body_top + body_h + 30, f"{label} start #{at}", dash))
        label_y = {"start": body_top + body_h + 40, "naive": 10, "pair": 22}[name]
        text = f"{label} #{at}"
        fits = edge + 2 + _text_width(text, 10) <= width
        anchor, at_x = ("start", edge + 2) if fits else ("end", edge - 2)
        parts.append(
            f'<text class="wb-start-label" x="{at_x:.1f}" y="{label_y}" font-size="10" text-anchor="{anchor}" '
            f'fill="{MARKERS[name]}">{text}</text>'
        )
    height = body_top + body_h + 46
    return (
        f'<svg class="wb-zoom" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" style="{_FIT}">{"".join(parts)}</svg>'
    )


#: SVGs shrink with a narrow output area (text scales with them) instead of overflowing it.
_FIT = "max-width:100%;height:auto"


def _text_width(text: str, font_size: float) -> float:
    """A generous estimate of ``text``'s width in SVG units (sans-serif digits are ~0.56 em wide)."""
    return len(text) * font_size * 0.62


def _brackets(
    index: SessionIndex, indices: Sequence[int | None], xs: dict[int, tuple[float, float]], y: float
) -> list[str]:
    """A bracket under every run of ≥ 2 drawn assistant records sharing a ``message.id``."""
    groups: dict[str, list[int]] = {}
    for i in indices:
        if i is None:
            continue
        r = index.records[i]
        if r.kind == "assistant" and r.message_id is not None:
            groups.setdefault(r.message_id, []).append(i)
    out = []
    for mid, members in groups.items():
        if len(members) < 2:
            continue
        x0 = xs[members[0]][0]
        x1 = sum(xs[members[-1]])
        out.append(
            f'<path d="M{x0:.1f},{y - 4} L{x0:.1f},{y} L{x1:.1f},{y} L{x1:.1f},{y - 4}" fill="none" '
            f'stroke="#b07aa1" stroke-width="1.5"><title>{escape("message.id " + mid)}</title></path>'
        )
        for m in members:
            cx = xs[m][0] + xs[m][1] / 2
            out.append(f'<circle cx="{cx:.1f}" cy="{y}" r="2" fill="#b07aa1"/>')
    return out


def _arcs(index: SessionIndex, state: KeepWindowState, xs: dict[int, tuple[float, float]], top: float) -> list[str]:
    """An arc from each drawn tool_use to its drawn tool_result; red when the cut separates them."""
    where_use: dict[str, int] = {}
    for i in sorted(xs):
        for tool_id in index.records[i].tool_use_ids():
            where_use[tool_id] = i
    out = []
    for i in sorted(xs):
        for tool_id in index.records[i].tool_result_ids():
            u = where_use.get(tool_id)
            if u is None or u >= i:
                continue
            x0 = xs[u][0] + xs[u][1] / 2
            x1 = xs[i][0] + xs[i][1] / 2
            broken = u < state.naive_start <= i
            lift = min(36.0, 8 + (x1 - x0) / 6)
            out.append(
                f'<path d="M{x0:.1f},{top} C{x0:.1f},{top - lift:.1f} {x1:.1f},{top - lift:.1f} {x1:.1f},{top}" '
                f'fill="none" stroke="{"#d62728" if broken else "#555"}" stroke-width="{2 if broken else 1}">'
                f"<title>{escape(tool_id)}: tool_use #{u} → tool_result #{i}</title></path>"
            )
    return out
