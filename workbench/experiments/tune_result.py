"""`TuneResult`: what a tuning run found, and its three views: plain text (`render`, the CLI's output),
a JSON-ready dict (`as_dict`, ``--json``) and the front plot (`plot`).

Separate from the search (`workbench.experiments.tune`) so the presentation of a result can change
without touching how the front and the recommendation are computed; the search only fills the fields.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .tune_spec import TuneSpec

__all__ = ["TuneResult"]


@dataclass
class TuneResult:
    """What `run_tune` found. ``table``: every config (the sweep's per-config columns plus ``feasible``,
    ``violated`` and ``on_front``); ``front``: the feasible Pareto front, by savings; ``recommended``:
    the chosen row; ``intervals``: value and bootstrap interval per axis and objective for the
    recommendation, plus ``objective vs reference`` (paired); ``reference``: the base config's row;
    ``runs``: the replays as `workbench.Runs` (set by ``wb.tune``) for plots and tables."""

    spec: TuneSpec
    table: pd.DataFrame
    front: pd.DataFrame
    recommended: pd.Series | None
    reference: pd.Series | None
    intervals: pd.DataFrame
    sessions: int
    skipped: int
    notes: list[str] = field(default_factory=list)
    #: The sweep behind it (`SweepResult`, `SweepPlan`): ``wb.tune`` turns them into `Runs` (``.runs``).
    sweep: Any = None
    plan: Any = None
    #: One row per (config, session) of the tuned strategy, with the ``added_*`` columns: per-session and
    #: median views beside the pooled ``table``.
    per_session: pd.DataFrame | None = None
    #: The baseline's per-session rows (``spec.baseline``, replayed over the same sessions).
    baseline: pd.DataFrame | None = None
    #: What builds `runs` (set by ``wb.tune``): the replays' rows are read from the store on first use, so a
    #: tune itself never holds every config's rows of every session.
    runs_factory: Callable[[], Any] | None = field(default=None, repr=False)
    _runs: Any = field(default=None, init=False, repr=False)

    @property
    def runs(self) -> Any:
        """The replays as `workbench.Runs` (``wb.tune``; read from the store when first asked for), else None."""
        if self._runs is None and self.runs_factory is not None:
            self._runs = self.runs_factory()
        return self._runs

    @property
    def config(self) -> dict[str, Any] | None:
        """The recommended config (resolved), or None when no config is feasible."""
        import json

        return None if self.recommended is None else json.loads(self.recommended["config_json"])

    def as_dict(self) -> dict[str, Any]:

        def rows(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
            cols = [c for c in columns if c in frame.columns]
            return [{k: _plain(v) for k, v in row.items()} for row in frame[cols].to_dict("records")]

        axes = [self.spec.axes.savings, self.spec.axes.fidelity, self.spec.axes.cost]
        keys = ["label", "config_hash", *dict.fromkeys([*axes, self.spec.objective.lstrip("-")])]
        return {
            "name": self.spec.name,
            "strategy": self.spec.strategy,
            "sessions": self.sessions,
            "configs": len(self.table),
            "skipped_grid_points": self.skipped,
            "feasible": int(self.table["feasible"].sum()) if len(self.table) else 0,
            "objective": self.spec.objective,
            "axes": {
                "savings": self.spec.axes.savings,
                "fidelity": self.spec.axes.fidelity,
                "fidelity_goal": self.spec.goal,
                "cost": self.spec.axes.cost,
            },
            "constraints": {k: str(v) for k, v in self.spec.constraints.items()},
            "front": rows(self.front, [*keys, "same_results"]),
            "recommended": None
            if self.recommended is None
            else {**{k: _plain(self.recommended.get(k)) for k in keys}, "config": self.config},
            "intervals": rows(self.intervals, list(self.intervals.columns)),
            "notes": list(self.notes),
        }

    def render(self) -> str:
        """Plain text: the front and the recommendation with its intervals."""
        spec = self.spec
        lines = [
            f"tune {spec.name}: {spec.strategy}, {len(self.table)} configs over {self.sessions} sessions "
            f"({int(self.table['feasible'].sum()) if len(self.table) else 0} feasible; "
            f"constraints {', '.join(f'{k} {v}' for k, v in spec.constraints.items())})",
            "",
            f"Pareto front (feasible; {spec.axes.savings} up, {spec.axes.fidelity} "
            f"{'up' if spec.goal == 'max' else 'down'}, {spec.axes.cost} down):",
        ]
        axes = [spec.axes.savings, spec.axes.fidelity, spec.axes.cost]
        for _, row in self.front.iterrows():
            values = "  ".join(f"{a}={_fmt(row.get(a))}" for a in axes)
            lines.append(f"  {row['label']:<56} {values}")
        if self.recommended is None:
            lines.append("\nno feasible config: relax the constraints or widen the space")
        else:
            lines.append(f"\nrecommended: {self.recommended['label']}  (config_hash {self.recommended['config_hash']})")
            level = f"{spec.confidence:.0%}"
            for _, row in self.intervals.iterrows():
                lines.append(
                    f"  {row['metric']:<28} {_fmt(row['value'])}  [{level} CI {_fmt(row['low'])}, {_fmt(row['high'])}]"
                )
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.render()

    def plot(self) -> Any:
        """Savings vs fidelity of every config, coloured by cost: infeasible grey, the front joined and
        labelled, the defaults and the recommendation marked."""
        import matplotlib.pyplot as plt

        from ..reporting.plots import tune_front

        fig = tune_front(
            self.table,
            self.spec.axes.savings,
            self.spec.axes.fidelity,
            self.recommended,
            cost=self.spec.axes.cost,
            reference=self.reference,
        )
        plt.close(fig)  # detached: a notebook shows it once, as the cell's value
        return fig


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)
