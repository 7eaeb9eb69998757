"""Strategies side by side: context-size timelines and the savings/validity table per strategy.

Results are labelled runs: ``{label: [ReplayResult, …]}`` (a label is a strategy with one config, e.g.
``"sm-compact"`` or ``"sm-compact min_tokens=20k"``). `comparison_frames` turns them into the tidy
``steps``/``events`` frames of `workbench.metrics` (the label is the ``config_hash`` column, so two
configs of one strategy stay apart); `comparison_table` pools `savings_sessions` and `validity_sessions`
per label, and, given the sessions, the expected re-acquired tokens (`recovery_by_session`: the fidelity to
compare strategies on, lower is better); `plot_timelines` draws one session. `StrategyComparison` only
wires them to widgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

import pandas as pd

from ..metrics import savings_sessions, validity_sessions
from ..replay import ReplayResult, replay_session
from ..strategies import create
from ..transcript.model import Session
from ._names import session_html, session_text

__all__ = [
    "StrategyComparison",
    "comparison_frames",
    "comparison_table",
    "plot_timelines",
    "recovery_by_session",
    "run_comparison",
]

Results = Mapping[str, Sequence[ReplayResult] | ReplayResult] | Sequence[ReplayResult]


def run_comparison(
    sessions: Iterable[Session], specs: Mapping[str, tuple[str, Mapping[str, Any] | None] | str]
) -> dict[str, list[ReplayResult]]:
    """Replay every session through every ``label → (strategy, config)`` (or ``label → strategy``)."""
    sessions = list(sessions)
    out: dict[str, list[ReplayResult]] = {}
    for label, spec in specs.items():
        name, config = (spec, None) if isinstance(spec, str) else spec
        strategy = create(name, dict(config or {}))
        out[label] = [replay_session(s, strategy) for s in sessions]
    return out


def _labelled(results: Results) -> dict[str, list[ReplayResult]]:
    if isinstance(results, Mapping):
        return {k: [v] if isinstance(v, ReplayResult) else list(v) for k, v in results.items()}
    out: dict[str, list[ReplayResult]] = {}
    for r in results:
        out.setdefault(r.strategy, []).append(r)
    return out


def comparison_frames(results: Results | Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(steps, events)`` with a ``label`` column. A ``wb.replay`` result (`workbench.Runs`) brings its
    own frames (readable labels and real ``config_hash`` columns); for ``{label: results}`` the label is
    also used as ``config_hash``."""
    if isinstance(getattr(results, "steps", None), pd.DataFrame):
        return results.steps, results.events  # type: ignore[union-attr]
    steps: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for label, runs in _labelled(results).items():
        for r in runs:
            steps.extend({**row, "label": label, "config_hash": label} for row in r.steps)
            events.extend({**row, "label": label, "config_hash": label} for row in r.events)
    step_frame = pd.DataFrame(steps)
    event_frame = pd.DataFrame(events)
    return step_frame, event_frame


_TABLE_COLUMNS = [
    "label",
    "strategy",
    "config_hash",
    "sessions",
    "steps",
    "compactions",
    "tokens_saved",
    "saved_share",
    "peak_context_tokens",
    "steps_blocked",
    "violating_steps",
    "violation_rate",
    "compaction_violations",
    "fallbacks",
]


#: Where the expected recovery goes in the table when it is given: the fidelity next to the savings.
_RECOVERY = "expected_recovery_tokens"


def recovery_by_session(
    sessions: Iterable[Session] | Mapping[str, Session], steps: pd.DataFrame, events: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Expected re-acquired tokens per session × label (`workbench.metrics.expected_recovery`): the rows
    `comparison_table` pools; null for a session that records no tool calls or is not in ``sessions``."""
    from ..metrics._common import KEYS, session_map
    from ..metrics.expected_recovery import expected_recovery, expected_recovery_sessions

    by_id = session_map(sessions)
    mine = steps[steps["session_id"].isin(by_id)]
    if mine.empty:
        return pd.DataFrame(columns=[*KEYS, _RECOVERY])
    per_event = expected_recovery(by_id, events if events is not None and len(events) else pd.DataFrame(), mine)
    return expected_recovery_sessions(per_event, mine, by_id)[[*KEYS, _RECOVERY]]


def comparison_table(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    *,
    session_id: str | None = None,
    recovery: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per label: savings and validity pooled over sessions (or of one session), and with
    ``recovery`` (`recovery_by_session`) the expected re-acquired tokens summed over them, right after
    ``saved_share`` (null when no session of the label has an estimate)."""
    columns = _columns(recovery is not None)
    if session_id is not None:
        steps = steps[steps["session_id"] == session_id]
        if events is not None and len(events):
            events = events[events["session_id"] == session_id]
    if steps.empty:
        return pd.DataFrame(columns=columns)
    ev = events if events is not None and len(events) else None
    saving = savings_sessions(steps, ev)
    valid = validity_sessions(steps, ev)
    table = saving.merge(valid.drop(columns=["steps", "compactions"]), on=["session_id", "strategy", "config_hash"])
    names = steps.drop_duplicates("config_hash").set_index("config_hash")["label"]
    pooled = (
        table.groupby("config_hash", sort=False)
        .agg(
            strategy=("strategy", "first"),
            sessions=("session_id", "nunique"),
            steps=("steps", "sum"),
            compactions=("compactions", "sum"),
            tokens_saved=("tokens_saved", "sum"),
            input_tokens_without=("input_tokens_without", "sum"),
            peak_context_tokens=("peak_context_tokens", "max"),
            steps_blocked=("steps_blocked", "sum"),
            violating_steps=("violating_steps", "sum"),
            compaction_violations=("compaction_violations", "sum"),
            fallbacks=("fallbacks", "sum"),
        )
        .reset_index()
    )
    pooled["label"] = pooled["config_hash"].map(names)
    pooled["saved_share"] = pooled["tokens_saved"] / pooled["input_tokens_without"].where(
        pooled["input_tokens_without"] > 0
    )
    pooled["violation_rate"] = pooled["violating_steps"] / pooled["steps"].where(pooled["steps"] > 0)
    if recovery is not None:
        scope = recovery[recovery["session_id"].isin(set(steps["session_id"]))]
        values = pd.to_numeric(scope[_RECOVERY], errors="coerce").groupby(scope["config_hash"]).sum(min_count=1)
        pooled[_RECOVERY] = pooled["config_hash"].map(values)
    order = list(dict.fromkeys(steps["config_hash"]))
    pooled["_order"] = pooled["config_hash"].map({k: i for i, k in enumerate(order)})
    return pooled.sort_values("_order")[columns].reset_index(drop=True)


def _columns(with_recovery: bool) -> list[str]:
    if not with_recovery:
        return list(_TABLE_COLUMNS)
    at = _TABLE_COLUMNS.index("saved_share") + 1
    return [*_TABLE_COLUMNS[:at], _RECOVERY, *_TABLE_COLUMNS[at:]]


def plot_timelines(steps: pd.DataFrame, session_id: str, labels: Sequence[str] | None = None, *, ax: Any = None) -> Any:
    """Context tokens per step of ``session_id`` for each label; the Figure.

    One "no compaction" curve (the uncompacted size; the ``none`` strategy is that curve, so it is not
    drawn again), then each label in an Okabe-Ito colour with its own dash pattern and markers (a label
    keeps its style whichever labels are picked), ▼ at compactions, and each curve named at its end.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from ..reporting.plots import (
        NO_COMPACTION,
        label_line_ends,
        no_compaction_style,
        series_style,
        short_session,
    )

    frame = steps[steps["session_id"] == session_id]
    every_label = [label for label in dict.fromkeys(steps["label"]) if label not in _none_labels(steps)]
    labels = list(labels) if labels is not None else list(dict.fromkeys(frame["label"]))
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 3.8))
    else:
        fig = ax.figure
    if not frame.empty:
        baseline = frame.drop_duplicates("step").sort_values("step")
        ax.plot(baseline["step"], baseline["tokens_without_compaction"], label=NO_COMPACTION, **no_compaction_style())
    for label in labels:
        rows = frame[frame["label"] == label].sort_values("step")
        if rows.empty or label not in every_label:
            continue
        position = every_label.index(label)
        style = series_style(position, len(rows), len(every_label))
        line = ax.plot(rows["step"], rows["context_tokens"], label=label, **style)[0]
        compacted = rows[rows["compacted"].astype(bool)] if "compacted" in rows else rows.iloc[:0]
        if len(compacted):
            ax.scatter(
                compacted["step"], compacted["context_tokens"], s=22, marker="v", color=line.get_color(), zorder=4
            )
    ax.set_xlabel("step (API call)")
    ax.set_ylabel("context tokens")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    file = frame["file"].iloc[0] if "file" in frame and len(frame) else None
    ax.set_title(f"session {short_session(session_id, file)}", fontsize=10)
    ax.grid(alpha=0.3)
    if ax.get_lines():
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False)
    label_line_ends(ax, ax.get_lines())
    fig.tight_layout()
    return fig


def _none_labels(steps: pd.DataFrame) -> set[str]:
    """Labels of the ``none`` strategy (drawn as the "no compaction" curve)."""
    if "strategy" not in steps:
        return set()
    return set(steps.loc[steps["strategy"] == "none", "label"].astype(str))


def _fmt(value: Any, column: str) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if column in ("saved_share", "violation_rate"):
        return f"{value:.1%}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:,.0f}"
    return escape(str(value))


#: Columns `render_table` leaves out: the hash is the join key, the label names the config (its tooltip
#: carries the hash).
_HIDDEN = ("config_hash",)
_CELL = "padding:2px 8px;white-space:nowrap"
#: Header tooltips: what a column means where its name does not say it.
_TIPS = {_RECOVERY: "tokens the agent is expected to re-acquire after the compactions (lower is better)"}
#: A box as wide as the output area that scrolls sideways when its table is wider. ``width:0`` keeps the
#: table's width out of the widget's own size (ipywidgets' HTML widget is a flex row that would grow
#: to it and cut it at the output area's edge); ``min-width:100%`` then fills the area.
TABLE_SCROLL = "overflow-x:auto;width:0;min-width:100%;max-width:100%"


def render_table(table: pd.DataFrame) -> str:
    """The comparison table as HTML (class ``wb-compare-table``), in a box that scrolls sideways when the
    table is wider than the output area; headers and labels never wrap."""
    columns = [c for c in table.columns if c not in _HIDDEN]
    head = "".join(f"<th style='{_CELL};text-align:{_align(c)}'{_tip(c)}>{escape(c)}</th>" for c in columns)
    rows = []
    for _, row in table.iterrows():
        cells = []
        for c in columns:
            tip = f" title='{escape(str(row['config_hash']))}'" if c == "label" and "config_hash" in row else ""
            cells.append(f"<td style='{_CELL};text-align:{_align(c)}'{tip}>{_fmt(row[c], c)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="wb-table-scroll" style="{TABLE_SCROLL}">'
        f'<table class="wb-compare-table" style="font-size:12px;border-collapse:collapse"><tr>{head}</tr>'
        f"{''.join(rows)}</table></div>"
    )


def _tip(column: str) -> str:
    return f" title='{escape(_TIPS[column])}'" if column in _TIPS else ""


def _align(column: str) -> str:
    return "left" if column in ("label", "strategy") else "right"


class StrategyComparison:
    """Pick strategies/configs and a session; see the timelines and the metric table side by side.

    Args:
        results: ``{label: [ReplayResult, …]}`` (see `run_comparison`), a flat list of results (labelled
            by strategy name) or a ``wb.replay`` result.
        sessions: the replayed sessions, for the table's expected re-acquired tokens (a ``wb.replay``
            result brings its own); without them the table has no fidelity column.
    """

    def __init__(self, results: Results, sessions: Iterable[Session] | Mapping[str, Session] | None = None) -> None:
        import ipywidgets as w

        self.steps, self.events = comparison_frames(results)
        if self.steps.empty:
            raise ValueError("no replay steps to compare")
        if sessions is None:
            sessions = getattr(results, "sessions", None)
        self.recovery = recovery_by_session(sessions, self.steps, self.events) if sessions is not None else None
        labels = list(dict.fromkeys(self.steps["label"]))
        sizes = self.steps.groupby("session_id")["step"].max().sort_values(ascending=False)
        files = self._files()
        self.pick = w.SelectMultiple(
            options=labels, value=tuple(labels), description="strategies", rows=min(8, len(labels))
        )
        self.session = w.Dropdown(
            options=[(f"{session_text(sid, files.get(sid))} · {int(n) + 1} calls", sid) for sid, n in sizes.items()],
            value=sizes.index[0],
            description="session",
            layout=w.Layout(width="auto", max_width="100%"),
        )
        self.session.add_class("wb-session-pick")
        self.session_name = w.HTML()
        self.session_name.add_class("wb-session-name")
        self.scope = w.ToggleButtons(
            options=["this session", "all sessions"], value="all sessions", description="table"
        )
        self.output = w.Output(layout=w.Layout(max_width="100%", overflow="auto"))
        self.table = w.HTML(layout=w.Layout(max_width="100%"))
        controls = w.HBox(
            [self.pick, w.VBox([self.session, self.session_name, self.scope], layout=w.Layout(min_width="0"))],
            layout=w.Layout(flex_flow="row wrap", max_width="100%"),
        )
        self.widget = w.VBox([controls, self.output, self.table], layout=w.Layout(max_width="100%"))
        self.widget.add_class("wb-strategy-comparison")
        self.update()
        for control in (self.pick, self.session, self.scope):
            control.observe(lambda _c: self.update(), names="value")

    def _files(self) -> dict[str, str]:
        """``{session_id: file}`` where the frames know the file a session was read from."""
        if "file" not in self.steps:
            return {}
        known = self.steps.dropna(subset=["file"]).drop_duplicates("session_id")
        return {str(k): str(v) for k, v in zip(known["session_id"], known["file"], strict=True)}

    def current_table(self) -> pd.DataFrame:
        labels = list(self.pick.value)
        session = self.session.value if self.scope.value == "this session" else None
        table = comparison_table(self.steps, self.events, session_id=session, recovery=self.recovery)
        return table[table["label"].isin(labels)].reset_index(drop=True)

    def update(self) -> None:
        import matplotlib.pyplot as plt
        from IPython.display import display

        self.table.value = render_table(self.current_table())
        sid = str(self.session.value)
        self.session.tooltip = sid
        self.session_name.value = f"<span style='font-size:11px'>{session_html(sid, self._files().get(sid))}</span>"
        with self.output:
            self.output.clear_output(wait=True)
            fig = plot_timelines(self.steps, self.session.value, list(self.pick.value))
            display(fig)  # type: ignore[no-untyped-call]  # IPython's display has no annotations
            plt.close(fig)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
