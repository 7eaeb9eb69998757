"""`KeepWindowView`: sliders over `keep_window_model`, the strip and a readout. No logic of its own."""

from __future__ import annotations

from html import escape
from typing import Any

from ..transcript.model import Session
from ._keep_window import KeepWindowState, SessionIndex, Summarized, keep_window_model
from ._names import session_html
from ._strip import render_legend, render_overview, render_zoom

__all__ = ["KeepWindowView", "config_error", "readout_lines", "render_readout", "render_refusal", "state_label"]


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
        '<div class="wb-keep-readout" style="font-family:monospace;font-size:12px;line-height:1.45;'
        'white-space:pre-wrap;overflow-wrap:anywhere;max-width:100%">' + "".join(rows) + "</div>"
    )


def config_error(min_tokens: int, max_tokens: int, min_text_block_messages: int) -> str | None:
    """Why ``sm-compact``'s config refuses these values (its own validation message), or None."""
    from pydantic import ValidationError

    from ..strategies.registry import get_strategy

    try:
        get_strategy("sm-compact").Config.model_validate(
            {"min_tokens": min_tokens, "max_tokens": max_tokens, "min_text_block_messages": min_text_block_messages}
        )
    except ValidationError as exc:
        return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
    return None


def render_refusal(message: str) -> str:
    """The refusal shown under the sliders (class ``wb-keep-refusal``)."""
    return (
        '<div class="wb-keep-refusal" style="color:#b00;font-size:12px;overflow-wrap:anywhere">'
        f"refused: {escape(message)} (sm-compact's config refuses it); the window shown is unchanged</div>"
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

    Slider values ``sm-compact``'s config refuses (``min_tokens`` above ``max_tokens``) are not applied: the
    slider moves back and the config's message is shown; `set` raises ValueError with that message.
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

        error = config_error(min_tokens, max_tokens, min_text_block_messages)
        if error:
            raise ValueError(error)
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
            f"<b>Keep window</b> · session {session_html(self.index.session_id, self.index.source)} · "
            f"{len(self.index.records):,} records · {self.index.steps} API calls"
        )
        fit = w.Layout(max_width="100%")
        self.overview = w.HTML(layout=fit)
        self.zoom = w.HTML(layout=fit)
        self.readout = w.HTML(layout=fit)
        self.readout.add_class("wb-readout")
        self.refusal = w.HTML(layout=fit)
        self.widget = w.VBox(
            [
                self.title,
                w.HBox(
                    [w.VBox([self.step, self.min_tokens]), w.VBox([self.max_tokens, self.min_text])],
                    layout=w.Layout(flex_flow="row wrap", max_width="100%"),
                ),
                self.summarized,
                self.refusal,
                w.HTML(render_legend(), layout=fit),
                self.overview,
                self.zoom,
                self.readout,
            ],
            layout=fit,
        )
        self.widget.add_class("wb-keep-window-view")
        self._holding = False
        self.state: KeepWindowState = self.update()
        for control in (self.step, self.min_tokens, self.max_tokens, self.min_text, self.summarized):
            control.observe(self._changed, names="value")

    def _error(self) -> str | None:
        return config_error(self.min_tokens.value, self.max_tokens.value, self.min_text.value)

    def _changed(self, change: Any) -> None:
        if self._holding:
            return
        error = self._error()
        if error:  # refuse: put the slider back, say why, keep the last valid window
            self._holding = True
            try:
                change["owner"].value = change["old"]
            finally:
                self._holding = False
            self.refusal.value = render_refusal(error)
            return
        self.refusal.value = ""
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
        """Move sliders by name (``step``, ``min_tokens``, ``max_tokens``, ``min_text``, ``summarized``),
        all at once; ValueError (the config's message, nothing moved) for values the config refuses."""
        controls = {name: getattr(self, name) for name in values}
        target = {"min_tokens": self.min_tokens.value, "max_tokens": self.max_tokens.value}
        target["min_text"] = self.min_text.value
        target.update({k: v for k, v in values.items() if k in target})
        error = config_error(int(target["min_tokens"]), int(target["max_tokens"]), int(target["min_text"]))
        if error:
            raise ValueError(error)
        self._holding = True
        try:
            for name, value in values.items():
                controls[name].value = value
        finally:
            self._holding = False
        self.refusal.value = ""
        return self.update()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
