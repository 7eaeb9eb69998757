"""`KeepWindowView`: sliders over `keep_window_model`, the strip and a readout. No logic of its own."""

from __future__ import annotations

from html import escape
from typing import Any

from ..transcript.model import Session
from ._keep_window import KeepWindowState, SessionIndex, Summarized, keep_window_model
from ._strip import render_legend, render_overview, render_zoom

__all__ = ["KeepWindowView", "readout_lines", "render_readout", "state_label"]


def _check(ok: bool) -> str:
    return "✓" if ok else "✗"


def readout_lines(state: KeepWindowState) -> list[str]:
    """The readout as plain lines (the view prints them; tests read them)."""
    summarized = "unset (window from the end)" if state.last_summarized is None else f"#{state.last_summarized}"
    lines = [
        f"step {state.step} of {state.steps - 1} · message list #{state.offset}–#{state.end - 1} · "
        f"last summarized {summarized}",
    ]
    if state.fallback:
        lines.append(state.reason)
        return lines
    moved = state.naive_start - state.start
    lines.append(
        f"naive start #{state.naive_start} → adjusted start #{state.start}"
        + (f" (moved {moved} record{'s' if moved != 1 else ''} earlier)" if moved else " (not moved)")
    )
    lines.append(f"why: {state.reason}")
    if state.split_message_ids:
        lines.append("the naive start splits streamed response message.id " + ", ".join(state.split_message_ids))
    limit = "max reached" if state.hit_max else f"max {state.max_tokens:,} not reached"
    lines.append(
        f"naive window: {state.tokens:,} tokens vs min {state.min_tokens:,} {_check(state.meets_min_tokens)} · "
        f"{state.text_messages} text-block messages vs min {state.min_text_block_messages} "
        f"{_check(state.meets_min_text)} · {limit}"
    )
    lines.append(f"kept after adjustment: {state.kept_tokens:,} tokens, {state.kept_text_messages} text-block messages")
    thinking = "thinking on" if state.thinking else "thinking off"
    if state.naive_violations:
        lines.append(f"naive cut would be rejected by the API ({thinking}):")
        lines.extend(f"  [{v.rule}] {v.message}" for v in state.naive_violations)
    else:
        lines.append(f"naive cut: the API would accept it ({thinking})")
    if state.moved:
        if state.adjusted_violations:
            lines.append("adjusted cut would still be rejected:")
            lines.extend(f"  [{v.rule}] {v.message}" for v in state.adjusted_violations)
        else:
            lines.append("adjusted cut: the API would accept it")
    lines.append(f"as a config: {state_label(state)}")
    return lines


def state_label(state: KeepWindowState) -> str:
    """The SM-compact config these sliders stand for, as tables and legends name it
    (`workbench.strategies.labels`): what ``wb.replay`` / a sweep would replay."""
    from ..strategies.labels import config_label

    config = {
        "min_tokens": state.min_tokens,
        "max_tokens": state.max_tokens,
        "min_text_block_messages": state.min_text_block_messages,
    }
    try:
        return config_label("sm-compact", config)
    except ValueError as exc:  # min_tokens > max_tokens: the model explains it, the config is invalid
        return f"(not a valid sm-compact config: {exc})"


def render_readout(state: KeepWindowState) -> str:
    """The readout as HTML (class ``wb-keep-readout``; violations in red)."""
    rows = []
    for line in readout_lines(state):
        style = ""
        if line.startswith("  [") or "rejected" in line:
            style = "color:#b00"
        elif line.startswith("why:"):
            style = "font-weight:bold"
        rows.append(f'<div style="{style}">{escape(line)}</div>')
    return (
        '<div class="wb-keep-readout" style="font-family:monospace;font-size:12px;white-space:pre-wrap">'
        + "".join(rows)
        + "</div>"
    )


class KeepWindowView:
    """SM-compact's keep window on one session, with sliders (docs §2.4, §2.5).

    Display it in a notebook (``view`` as the last expression, or ``display(view)``). ``state`` is the
    current `KeepWindowState`; `set` moves sliders programmatically (what tests and notebooks use).

    Args:
        session: the session to show.
        step: initial compaction point (API call index; default: the last call).
        min_tokens, max_tokens, min_text_block_messages: initial keep-window config (docs §2.1).
        summarized: ``"trigger"`` or ``"unset"`` (see `keep_window_model`).
    """

    def __init__(
        self,
        session: Session | SessionIndex,
        *,
        step: int | None = None,
        min_tokens: int = 10_000,
        max_tokens: int = 40_000,
        min_text_block_messages: int = 5,
        summarized: Summarized = "trigger",
    ) -> None:
        import ipywidgets as w

        self.index = session if isinstance(session, SessionIndex) else SessionIndex.build(session)
        if not self.index.calls:
            raise ValueError(f"session {self.index.session_id} has no API calls")
        last = self.index.steps - 1
        layout = w.Layout(width="480px")
        style = {"description_width": "170px"}
        self.step = w.IntSlider(
            value=last if step is None else step,
            min=0,
            max=last,
            description="compaction before step",
            layout=layout,
            style=style,
        )
        self.min_tokens = w.IntSlider(
            value=min_tokens, min=0, max=100_000, step=1_000, description="min_tokens", layout=layout, style=style
        )
        self.max_tokens = w.IntSlider(
            value=max_tokens,
            min=1_000,
            max=200_000,
            step=1_000,
            description="max_tokens",
            layout=layout,
            style=style,
        )
        self.min_text = w.IntSlider(
            value=min_text_block_messages,
            min=0,
            max=50,
            description="min_text_block_messages",
            layout=layout,
            style=style,
        )
        self.summarized = w.Dropdown(
            options=[("from the extraction trigger", "trigger"), ("unset (window from the end)", "unset")],
            value=summarized,
            description="summarized",
            layout=layout,
            style=style,
        )
        for slider, name in (
            (self.step, "wb-step"),
            (self.min_tokens, "wb-min-tokens"),
            (self.max_tokens, "wb-max-tokens"),
            (self.min_text, "wb-min-text"),
            (self.summarized, "wb-summarized"),
        ):
            slider.add_class(name)
        self.title = w.HTML(
            f"<b>Keep window</b> · session <code>{escape(self.index.session_id)}</code> · "
            f"{len(self.index.records):,} records · {self.index.steps} API calls"
        )
        self.overview = w.HTML()
        self.zoom = w.HTML()
        self.readout = w.HTML()
        self.readout.add_class("wb-readout")
        self.widget = w.VBox(
            [
                self.title,
                w.HBox([w.VBox([self.step, self.min_tokens]), w.VBox([self.max_tokens, self.min_text])]),
                self.summarized,
                w.HTML(render_legend()),
                self.overview,
                self.zoom,
                self.readout,
            ]
        )
        self.widget.add_class("wb-keep-window-view")
        self.state: KeepWindowState = self.update()
        for control in (self.step, self.min_tokens, self.max_tokens, self.min_text, self.summarized):
            control.observe(self._changed, names="value")

    def _changed(self, _change: Any) -> None:
        self.update()

    def compute(self) -> KeepWindowState:
        """The model at the current slider values (no drawing)."""
        return keep_window_model(
            self.index,
            self.step.value,
            min_tokens=self.min_tokens.value,
            max_tokens=self.max_tokens.value,
            min_text_block_messages=self.min_text.value,
            summarized=self.summarized.value,
        )

    def update(self) -> KeepWindowState:
        """Recompute and redraw (called on every slider move)."""
        self.state = self.compute()
        self.overview.value = render_overview(self.index, self.state)
        self.zoom.value = render_zoom(self.index, self.state)
        self.readout.value = render_readout(self.state)
        return self.state

    def set(self, **values: int | str) -> KeepWindowState:
        """Move sliders by name (``step``, ``min_tokens``, ``max_tokens``, ``min_text``, ``summarized``)."""
        for name, value in values.items():
            getattr(self, name).value = value
        return self.update()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
