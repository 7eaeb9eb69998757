"""``wb.sweep``, ``wb.report`` and ``wb.strategies``: the CLI's engines, returning frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..experiments.run import SweepPlan, SweepResult
from ..experiments.spec import ResolvedSpec
from .corpus import Sessions, as_sessions
from .runs import Runs

__all__ = ["Report", "report", "resolve", "runs_from_store", "strategies", "sweep"]


def resolve(spec: str | Path | Mapping[str, Any] | ResolvedSpec) -> ResolvedSpec:
    """A validated spec from a YAML path, a dict (relative corpus paths: from the working directory) or
    an already resolved one. Errors are `workbench.experiments.SpecError` naming the file and key."""
    from ..experiments.spec import load_spec, resolve_spec

    if isinstance(spec, ResolvedSpec):
        return spec
    if isinstance(spec, Mapping):
        return resolve_spec(spec, Path.cwd() / f"{spec.get('name', 'spec')}.yaml")
    return load_spec(Path(spec).expanduser())


def runs_from_store(
    result: SweepResult,
    plan: SweepPlan,
    sessions: Sessions,
    frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None = None,
) -> Runs:
    """`Runs` over the stored cells of one sweep (their frames labelled, in the spec's order); ``frames``:
    its ``(cells, steps, events)`` when the caller already read them from the store."""
    from ..experiments.store import ResultStore
    from ..experiments.tables import sweep_frames, with_labels

    cells, steps, events = frames if frames is not None else sweep_frames(ResultStore(result.store), result.cell_ids)
    if cells.empty and result.cell_ids and result.cells_failed < len(result.cell_ids):
        raise FileNotFoundError(
            f"{result.store}: the store no longer holds the sweep's cells (deleted or moved since); run it again"
        )
    cells = with_labels(cells)
    order = {cell.id: i for i, cell in enumerate(plan.cells)}
    ordered = cells.assign(_o=cells["cell_id"].map(order)).sort_values("_o", kind="stable")
    configs = ordered.drop_duplicates("config_hash")[["label", "strategy", "config_hash", "config_json"]]
    names = configs.set_index("config_hash")["label"]
    steps = steps.assign(label=steps["config_hash"].map(names)) if len(steps) else steps
    events = events.assign(label=events["config_hash"].map(names)) if len(events) else events
    return Runs(
        sessions,
        configs,
        ordered.drop(columns="_o").reset_index(drop=True),
        steps,
        events,
        estimator=plan.spec.estimator,
        sweep=result,
        plan=plan,
    )


def sweep(
    spec: str | Path | Mapping[str, Any],
    *,
    corpus: Sessions | Sequence[Any] | None = None,
    store: str | Path | None = None,
    executor: str = "local",
    workers: int | None = None,
    report: str | Path | None = None,
    progress: bool = True,
) -> Runs:
    """Run an experiment spec on the sweep engine (``workbench sweep``): resumable, cells cached by content.

    Args:
        spec: a YAML spec (``experiments/*.yaml``) or the same as a dict.
        corpus: sessions to sweep instead of the spec's corpus (e.g. ``wb.load(...)``; each needs its file).
        store: the append-only result store (default ``results/<spec name>/store``, as the CLI).
        executor: ``local`` (processes), ``inline``, ``dask-local`` or ``dask://HOST:PORT``. Strategies
            defined in the notebook are shipped to the workers.
        workers: worker processes.
        report: also write the report folder (plots, ``summary.md``) here.
        progress: a progress bar over cells.

    Example::

        runs = wb.sweep("experiments/smoke.yaml", store="results/smoke")
        runs.summary()[["label", "saved_share", "expected_recovery_tokens"]]
    """
    from ..experiments.run import plan_for_sessions, plan_sessions, plan_sweep, run_sweep

    resolved = resolve(spec)
    paths: Sequence[Path]
    if corpus is not None:
        sessions = as_sessions(corpus)
        plan = plan_for_sessions(resolved, list(sessions))
        paths = sessions.paths
    else:
        plan = plan_sweep(resolved)  # from per-file metadata: the sessions are read after the sweep
        paths = resolved.corpus
    target = Path(store) if store is not None else Path("results") / resolved.name / "store"
    result = run_sweep(resolved, store=target, executor=executor, workers=workers, progress=progress, plan=plan)
    if report is not None:
        from ..experiments.report import write_report

        write_report(result, plan, report)
    return runs_from_store(result, plan, Sessions(plan_sessions(plan), paths=paths))


class Report:
    """What ``workbench report DIR`` prints, as frames: ``strategies`` (pooled per config), ``sessions``
    (per session × config), ``reference`` (Claude's recorded summaries), ``calibration`` (simulated vs
    recorded cost), ``notes``; ``text`` is the CLI's rendering, ``data`` the ``--json`` dict."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.strategies = pd.DataFrame(self.data.get("strategies", []))
        self.sessions = pd.DataFrame(self.data.get("sessions", []))
        self.reference = pd.DataFrame(self.data.get("reference", []))
        self.calibration = pd.DataFrame(self.data.get("calibration", []))
        self.notes: list[str] = list(self.data.get("notes", []))

    @property
    def text(self) -> str:
        from ..reporting.report import render_report

        return render_report(self.data)

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        cols = [
            c
            for c in (
                "label",
                "config_hash",
                "sessions",
                "steps",
                "saved_share",
                "steps_blocked",
                "violating_steps",
                "needed_recall",
                "dropped_recall",
                "cost_usd",
            )
            if c in self.strategies
        ]
        notes = "".join(f"<p>note: {n}</p>" for n in self.notes)
        table = str(self.strategies[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-"))
        return table + notes


def report(path: str | Path, *, sessions: Sessions | Sequence[Any] | None = None) -> Report:
    """Summarise replay output folders (``workbench replay --out``, or ``runs.save(folder)``): savings,
    violations, recall and cost per session and config (the engine of ``workbench report``).

    Example::

        runs.save("results/mine"); wb.report("results/mine").strategies
    """
    from ..reporting.report import report as build

    given = list(as_sessions(sessions)) if sessions is not None else None
    return Report(build(Path(path).expanduser(), sessions=given))


def strategies() -> pd.DataFrame:
    """Every registered strategy (built in, from ``workbench.strategies`` entry points, or registered in
    this process): ``name``, ``description``, ``unsafe``, ``origin``, ``defaults``; entry points that
    failed to load are rows with their ``error`` (``workbench strategies`` lists the same)."""
    from ..strategies.registry import broken_strategies, describe_strategies

    rows: list[dict[str, Any]] = [{**row, "error": None} for row in describe_strategies()]
    rows += [
        {
            "name": b.name,
            "description": "",
            "unsafe": None,
            "origin": f"entry point {b.entry_point}",
            "defaults": None,
            "error": b.error,
        }
        for b in broken_strategies()
    ]
    return pd.DataFrame(rows, columns=["name", "description", "unsafe", "origin", "defaults", "error"])
