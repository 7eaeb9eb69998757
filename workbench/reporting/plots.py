"""Plots over sweep and replay frames (matplotlib). Each function returns a `Figure`.

The Agg backend is chosen unless a backend was already chosen (``MPLBACKEND``, as ipykernel sets it, or
pyplot imported): scripts never open windows, notebooks keep their inline display.

Thin views: they draw columns the metric and sweep tables already hold and compute nothing but
layout (the Pareto front is a sort and a running maximum).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import matplotlib

if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
    matplotlib.use("Agg")  # scripts and the CLI never open a window; a notebook keeps its inline backend

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["context_timeline", "cost_vs_savings", "grid_heatmap", "pareto_front", "tune_front", "violation_rates"]


def _label(frame: pd.DataFrame) -> pd.Series:
    """Readable names of the rows' configs: the ``label`` column when present, else computed from
    ``strategy`` and ``config_json`` (`workbench.strategies.labels`), else the strategy name."""
    if "label" in frame.columns:
        return frame["label"].astype(str)
    if "config_json" in frame.columns:
        from ..strategies.labels import config_label

        return pd.Series(
            [config_label(str(s), c) for s, c in zip(frame["strategy"], frame["config_json"], strict=True)],
            index=frame.index,
        )
    return frame["strategy"].astype(str)


#: Okabe & Ito's colour-blind-safe palette, black left out (it draws the uncompacted reference) and
#: yellow last (faint on white).
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442")
#: Dash patterns and markers cycled with the colours, so curves that coincide stay apart.
LINE_STYLES: tuple[Any, ...] = ("-", (0, (6, 2)), (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (8, 2, 2, 2)), (0, (4, 3)))
MARKERS = ("o", "s", "^", "D", "P", "X", "*")
#: The context size without compaction: one curve, whether or not the ``none`` strategy was replayed
#: (``none``'s context is that size, so it is not drawn twice).
NO_COMPACTION = "no compaction"


def series_style(position: int, points: int, count: int = 1) -> dict[str, Any]:
    """Keyword arguments of `Axes.plot` for the ``position``-th of ``count`` curves of ``points`` points:
    an Okabe-Ito colour, a dash pattern, a marker placed at staggered steps, and a width that decreases
    with the drawing order, so a curve drawn over an identical one leaves the lower one visible."""
    every = max(1, points // 8)
    return {
        "color": PALETTE[position % len(PALETTE)],
        "linestyle": LINE_STYLES[position % len(LINE_STYLES)],
        "marker": MARKERS[position % len(MARKERS)],
        "markersize": 5,
        "markevery": (min(points - 1, (position * every) // max(count, 1)) if points else 0, every),
        "linewidth": max(1.2, 3.0 - 0.35 * position),
        "zorder": 2 + 0.01 * position,
    }


def no_compaction_style() -> dict[str, Any]:
    """The uncompacted reference: a wide, light black band under every strategy's curve."""
    return {"color": "#000000", "linestyle": "-", "linewidth": 3.6, "alpha": 0.3, "zorder": 1.5}


def label_line_ends(ax: Any, lines: Any, *, fontsize: float = 8) -> None:
    """Name each curve at its right end, in a column beside the axes; labels that would overlap are pushed
    apart vertically, with a thin leader line back to the curve's last point."""
    ends = []
    for line in lines:
        xs, ys = line.get_xdata(), line.get_ydata()
        if len(xs) and not str(line.get_label()).startswith("_"):
            ends.append((float(ys[-1]), float(xs[-1]), line))
    if not ends:
        return
    ax.figure.canvas.draw()  # settle the limits and the axes size before measuring
    low, high = ax.get_ylim()
    height_pt = ax.get_window_extent().height * 72 / ax.figure.dpi
    gap = (fontsize * 1.35) / max(height_pt, 1.0)
    ends.sort(key=lambda e: e[0])
    placed: list[float] = []
    for y, _, _ in ends:
        at = (y - low) / (high - low) if high > low else 0.5
        placed.append(max(at, placed[-1] + gap) if placed else at)
    overflow = placed[-1] - 1.0
    if overflow > 0:  # shift the column down, but not below the axes
        placed = [max(p - overflow, i * gap) for i, p in enumerate(placed)]
    for (y, x, line), at in zip(ends, placed, strict=True):
        ax.annotate(
            str(line.get_label()),
            xy=(x, y),
            xycoords="data",
            xytext=(1.01, at),
            textcoords="axes fraction",
            va="center",
            fontsize=fontsize,
            color=line.get_color(),
            arrowprops={"arrowstyle": "-", "color": line.get_color(), "linewidth": 0.6, "alpha": 0.7},
            annotation_clip=False,
        )


def short_session(session_id: str, file: object = None) -> str:
    """A session as titles name it: the first 8 characters of its id, and the file it was read from when
    known (its folder and name, the id in the name shortened the same way)."""
    if file is None or (isinstance(file, float) and pd.isna(file)) or not str(file):
        return session_id[:8]
    parts = str(file).replace("\\", "/").rstrip("/").split("/")
    name = "/".join(parts[-2:]).replace(session_id, session_id[:8] + "…") if session_id else "/".join(parts[-2:])
    return f"{session_id[:8]} · {name}"


#: Up to this many configs in one plot, each gets its own legend entry (its label); beyond, a legend
#: entry per strategy, and the points on a strategy's front are annotated with their parameters.
MAX_LEGEND_CONFIGS = 12


def _points(ax: Any, group: pd.DataFrame, x: str, y: str, strategy: str, *, per_config: bool) -> None:
    """One strategy's configs, named by label (see `MAX_LEGEND_CONFIGS`)."""
    if per_config:
        for (_, row), label in zip(group.iterrows(), _label(group), strict=True):
            ax.scatter([row[x]], [row[y]], label=label, alpha=0.75)
    else:
        ax.scatter(group[x], group[y], label=strategy, alpha=0.7)


def _annotate(ax: Any, rows: pd.DataFrame, x: str, y: str, strategy: str) -> None:
    for xv, yv, text in zip(rows[x], rows[y], _label(rows), strict=True):
        short = text.removeprefix(strategy).strip()
        if short:
            ax.annotate(short, (xv, yv), fontsize="xx-small", xytext=(3, 3), textcoords="offset points")


def _intervals(ax: Any, group: pd.DataFrame, x: str, y: str, color: object) -> None:
    """Error bars from ``<x>_ci_low``/``<x>_ci_high`` and ``<y>_ci_*`` columns, where present (the 95%
    bootstrap intervals of `workbench.metrics.uncertainty`)."""

    def spread(column: str) -> np.ndarray | None:
        low, high = f"{column}_ci_low", f"{column}_ci_high"
        if low not in group.columns or high not in group.columns:
            return None
        values = group[column].astype(float).to_numpy()
        lows = group[low].astype(float).to_numpy()
        highs = group[high].astype(float).to_numpy()
        bars: np.ndarray = np.clip(np.vstack([values - lows, highs - values]), 0, None)
        return bars

    xerr, yerr = spread(x), spread(y)
    if xerr is not None or yerr is not None:
        ax.errorbar(
            group[x], group[y], xerr=xerr, yerr=yerr, fmt="none", ecolor=color, alpha=0.4, linewidth=1, capsize=2
        )


def pareto_front(configs: pd.DataFrame, *, x: str = "saved_share", y: str = "expected_recovery_tokens") -> Figure:
    """Savings vs fidelity (by default the expected re-acquired tokens, lower is better), one colour per
    strategy; the line is each strategy's Pareto front (configs no other config of the strategy beats on
    both axes); bars are 95% intervals over sessions when the frame has them."""
    fig, ax = plt.subplots(figsize=(7, 5))
    data = configs.dropna(subset=[x, y]) if {x, y} <= set(configs.columns) else configs.iloc[0:0]
    per_config = len(data) <= MAX_LEGEND_CONFIGS
    lower = y in LOWER_IS_BETTER
    for strategy, group in data.groupby("strategy", sort=True):
        _points(ax, group, x, y, str(strategy), per_config=per_config)
        _intervals(ax, group, x, y, "0.5" if per_config else ax.collections[-1].get_facecolor()[0])
        ordered = group.sort_values([x, y], ascending=[False, lower])
        front, best, members = [], np.inf if lower else -np.inf, []
        for index, row in ordered.iterrows():
            if (row[y] < best) if lower else (row[y] > best):
                front.append((row[x], row[y]))
                members.append(index)
                best = row[y]
        if len(front) > 1:
            xs, ys = zip(*sorted(front), strict=True)
            ax.plot(xs, ys, linewidth=1, color="grey" if per_config else None)
        if not per_config:
            _annotate(ax, group.loc[members], x, y, str(strategy))
    ax.set_xlabel(_AXIS_LABELS.get(x, x))
    ax.set_ylabel(_AXIS_LABELS.get(y, y))
    ax.set_title("Savings vs fidelity (Pareto front per strategy)")
    if len(data):
        ax.legend(fontsize="x-small")
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return fig


def violation_rates(rules: pd.DataFrame, steps_per_strategy: pd.Series | None = None) -> Figure:
    """Violation rate by strategy and rule: ``rules`` has ``strategy``, ``rule``, ``count`` (e.g.
    `workbench.metrics.validity_rules`, step scope); rates divide by ``steps_per_strategy``."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if rules.empty:
        ax.text(0.5, 0.5, "no violations", ha="center", va="center", transform=ax.transAxes)
        ax.set_title("API-invariant violations by strategy and rule")
        return fig
    table = rules.groupby(["strategy", "rule"])["count"].sum().unstack(fill_value=0)
    if steps_per_strategy is not None:
        table = table.div(steps_per_strategy.reindex(table.index).replace(0, np.nan), axis=0).fillna(0)
    table.plot.bar(stacked=True, ax=ax)
    ax.set_ylabel("violations per step" if steps_per_strategy is not None else "violations")
    ax.set_title("API-invariant violations by strategy and rule")
    fig.tight_layout()
    return fig


def context_timeline(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    *,
    window: int = 200_000,
    threshold: int | None = 167_000,
    title: str | None = None,
) -> Figure:
    """Context size per step of one session (one line per strategy/config, plus the uncompacted size,
    which stands for the ``none`` strategy), compaction markers, the window / auto-compact threshold
    lines, and each curve named at its end."""
    fig, ax = plt.subplots(figsize=(9, 4.5))
    if steps.empty:
        ax.text(0.5, 0.5, "no steps", ha="center", va="center", transform=ax.transAxes)
        return fig
    first = steps.sort_values("step")
    baseline = first.drop_duplicates("step")
    ax.plot(baseline["step"], baseline["tokens_without_compaction"], label=NO_COMPACTION, **no_compaction_style())
    keys = ["strategy", "config_hash"] if "config_hash" in steps.columns else ["strategy"]
    groups = [(k, g) for k, g in first.groupby(keys, sort=True) if str(g["strategy"].iloc[0]) != "none"]
    for position, (key, group) in enumerate(groups):
        style = series_style(position, len(group), len(groups))
        line = ax.plot(group["step"], group["context_tokens"], label=_label(group.iloc[:1]).iloc[0], **style)[0]
        if events is not None and len(events):
            mask = np.ones(len(events), dtype=bool)
            for column, value in zip(keys, key if isinstance(key, tuple) else (key,), strict=True):
                mask &= (events[column] == value).to_numpy()
            mine = events[mask]
            ax.scatter(mine["step"], mine["tokens_after"].astype(float), marker="v", color=line.get_color(), zorder=3)
    curves = list(ax.get_lines())
    ax.axhline(window, color="black", linewidth=0.8, label=f"window {window:,}")
    if threshold:
        ax.axhline(threshold, color="#D55E00", linewidth=0.8, linestyle="--", label=f"auto-compact {threshold:,}")
    ax.set_xlabel("API call (step)")
    ax.set_ylabel("context tokens")
    first_row = steps.iloc[0]
    where = short_session(str(first_row["session_id"]), first_row.get("file"))
    ax.set_title(title or f"Context size over session {where}")
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4, frameon=False)
    label_line_ends(ax, curves)
    fig.tight_layout()
    return fig


def cost_vs_savings(configs: pd.DataFrame, *, x: str = "saved_share", y: str = "cost_usd") -> Figure:
    """Simulated cost against the share of input tokens saved, one point per (strategy, config), with
    95% intervals over sessions when the frame has them."""
    fig, ax = plt.subplots(figsize=(7, 5))
    data = configs.dropna(subset=[x, y]) if {x, y} <= set(configs.columns) else configs.iloc[0:0]
    per_config = len(data) <= MAX_LEGEND_CONFIGS
    for strategy, group in data.groupby("strategy", sort=True):
        _points(ax, group, x, y, str(strategy), per_config=per_config)
        _intervals(ax, group, x, y, "0.5" if per_config else ax.collections[-1].get_facecolor()[0])
    ax.set_xlabel("share of input tokens saved" if x == "saved_share" else x)
    ax.set_ylabel({"cost_usd": "simulated cost (USD)", "total_cost_usd": "cost incl. recovery (USD)"}.get(y, y))
    ax.set_title("Cost vs savings")
    if len(data):
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def _tick(key: str, value: object) -> str:
    """A grid value as labels show it (``20k``, ``60%``)."""
    from ..strategies.labels import format_value

    if isinstance(value, np.generic):
        value = value.item()
    return format_value(key.removeprefix("cfg."), value)


def grid_heatmap(
    configs: pd.DataFrame, x: str, y: str, value: str = "saved_share", *, title: str | None = None, fmt: str = ".3f"
) -> Figure:
    """A metric over a 2-D parameter grid (columns ``x``, ``y``; other parameters averaged)."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    table = configs.pivot_table(index=y, columns=x, values=value, aggfunc="mean").sort_index().sort_index(axis=1)
    if table.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return fig
    image = ax.imshow(table.to_numpy(dtype=float), origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(table.columns)), [_tick(x, c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [_tick(y, i) for i in table.index])
    for (i, j), v in np.ndenumerate(table.to_numpy(dtype=float)):
        if not np.isnan(v):
            ax.text(j, i, format(v, fmt), ha="center", va="center", color="white", fontsize="small")
    ax.set_xlabel(x.removeprefix("cfg."))
    ax.set_ylabel(y.removeprefix("cfg."))
    ax.set_title(title or f"{value} over {x.removeprefix('cfg.')} × {y.removeprefix('cfg.')}")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return fig


def save(fig: Figure, path: str, *, dpi: int = 110) -> str:
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def save_svg(fig: Figure) -> str:
    """``fig`` as SVG text (for a page that holds its plots), closed afterwards."""
    import io

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    return buffer.getvalue()


def tune_front(
    table: pd.DataFrame,
    x: str = "saved_share",
    y: str = "expected_recovery_tokens",
    recommended: pd.Series | None = None,
    *,
    cost: str | None = "cost_usd",
    reference: pd.Series | None = None,
) -> Figure:
    """A tuning result (`workbench.experiments.tune`): every config of the grid, infeasible ones grey, the
    feasible ones coloured by ``cost`` (the third axis, with its colour bar), the Pareto front joined in
    order and each of its points labelled, the base config (the reference) and the recommendation marked."""
    fig, ax = plt.subplots(figsize=(8, 5.5))
    data = table.dropna(subset=[x, y]) if {x, y} <= set(table.columns) else table.iloc[0:0]
    if data.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return fig
    feasible = data["feasible"].astype(bool) if "feasible" in data else pd.Series(True, index=data.index)
    ax.scatter(data.loc[~feasible, x], data.loc[~feasible, y], color="lightgrey", label="infeasible (constraints)")
    shown = data.loc[feasible]
    costs = pd.to_numeric(shown[cost], errors="coerce") if cost and cost in shown else None
    if costs is not None and costs.notna().any():
        points = ax.scatter(shown[x], shown[y], c=costs, cmap="viridis", alpha=0.8, label="feasible")
        fig.colorbar(points, ax=ax, label=_AXIS_LABELS.get(cost, cost) if cost else "")
    else:
        ax.scatter(shown[x], shown[y], color="tab:blue", alpha=0.6, label="feasible")
    if "on_front" in data:
        front = data[data["on_front"].astype(bool)].sort_values(x)
        ax.plot(front[x], front[y], color="tab:blue", linewidth=1, label="Pareto front")
        for _, row in front.iterrows():
            ax.annotate(
                _short(str(row.get("label", ""))),
                (row[x], row[y]),
                fontsize="x-small",
                xytext=(4, 4),
                textcoords="offset points",
            )
    if reference is not None and pd.notna(reference.get(x)) and pd.notna(reference.get(y)):
        ax.scatter([reference[x]], [reference[y]], marker="D", s=70, color="black", zorder=3, label="defaults")
    if recommended is not None:
        ax.scatter(
            [recommended[x]],
            [recommended[y]],
            marker="*",
            s=220,
            color="tab:red",
            zorder=3,
            label=f"recommended: {recommended.get('label', '')}",
        )
    ax.set_xlabel(_AXIS_LABELS.get(x, x))
    ax.set_ylabel(_AXIS_LABELS.get(y, y))
    ax.set_title("Tuning: savings vs fidelity, coloured by cost")
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


#: Fidelity and cost columns where less is better (the direction of a Pareto front along them).
LOWER_IS_BETTER = frozenset({"expected_recovery_tokens", "expected_recovery_calls", "cost_usd", "total_cost_usd"})

#: Axis titles of the columns the tuning and Pareto plots use.
_AXIS_LABELS = {
    "saved_share": "share of input tokens saved",
    "needed_recall": "references kept, needed_recall (higher is better)",
    "expected_recovery_tokens": "expected re-acquired tokens (lower is better)",
    "cost_usd": "cost, USD",
    "total_cost_usd": "total cost incl. expected re-acquisition, USD",
}


def _short(label: str) -> str:
    """A config label without its strategy name (the plot is of one strategy)."""
    head, _, rest = label.partition(" ")
    return rest or head


def advice_plot(settings: pd.DataFrame) -> Figure:
    """`workbench advise`'s settings against what happened (the origin, drawn as a cross): each setting's
    paired difference in dollars (x, ``d_total_cost_usd``) and in expected re-acquired tokens (y,
    ``d_expected_recovery_tokens``), with their 95% intervals, one colour and marker per family, every point
    labelled. Lower left of the origin is better on both."""
    fig, ax = plt.subplots(figsize=(9, 6))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.scatter([0], [0], marker="X", s=90, color="black", zorder=4, label="what happened")
    families = list(dict.fromkeys(settings["family"])) if len(settings) and "family" in settings else []
    for position, family in enumerate(families):
        rows = settings[settings["family"] == family]
        x = pd.to_numeric(rows["d_total_cost_usd"], errors="coerce")
        y = pd.to_numeric(rows["d_expected_recovery_tokens"], errors="coerce")
        color = PALETTE[position % len(PALETTE)]
        xerr = np.vstack(
            [x - pd.to_numeric(rows["d_total_cost_usd_low"]), pd.to_numeric(rows["d_total_cost_usd_high"]) - x]
        )
        yerr = np.vstack(
            [
                y - pd.to_numeric(rows["d_expected_recovery_tokens_low"]),
                pd.to_numeric(rows["d_expected_recovery_tokens_high"]) - y,
            ]
        )
        ax.errorbar(x, y, xerr=np.abs(xerr), yerr=np.abs(yerr), fmt="none", ecolor=color, alpha=0.35, linewidth=1)
        ax.scatter(x, y, color=color, marker=MARKERS[position % len(MARKERS)], s=40, zorder=3, label=family)
        labels: dict[tuple[float, float], list[str]] = {}  # settings with the same result share one label
        for xv, yv, text in zip(x, y, rows["setting"], strict=True):
            if pd.notna(xv) and pd.notna(yv):
                labels.setdefault((round(float(xv), 2), round(float(yv))), []).append(_setting_label(str(text)))
        for (xv, yv), texts in labels.items():
            ax.annotate(" = ".join(texts), (xv, yv), fontsize=7, xytext=(4, 3), textcoords="offset points")
    ax.set_xlabel("cost vs what happened, USD (requests + summaries + expected re-acquisition; lower is better)")
    ax.set_ylabel("expected re-acquired tokens vs what happened (lower is better)")
    ax.set_title("Your settings against what happened (95% intervals over sessions)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def _setting_label(setting: str) -> str:
    """A short point label for an advise setting (``PCT=60``, ``WINDOW=150000``, ``SM 20,000-80,000``)."""
    import re

    out = setting.replace("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "PCT").replace("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "WINDOW")
    out = out.replace("ENABLE_CLAUDE_CODE_SM_COMPACT=1, keep window ", "SM ").replace(
        "ENABLE_CLAUDE_CODE_SM_COMPACT=1", "SM"
    )
    out = out.replace(" (remote config)", "")
    return re.sub(r"/compact by hand at the next turn past (\S+) of the window", r"/compact \1", out)
