"""``workbench sweep``, ``workbench tune`` and ``workbench demo``: rows of `COMMANDS`, the table
`workbench.cli` builds its parser from. The sweep engine (pandas, pyarrow, pydantic, yaml) is imported
when a command runs, not when the command line is parsed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import FORMAT, JSON, PATHS, PROBE_BUDGET, Command, arg, at_least_one, echo, fail, probe_announcer

__all__ = ["COMMANDS"]

_EXECUTORS = "local | inline | dask-local | dask://HOST:PORT"


def _warn(lines: list[str]) -> None:
    for line in lines:
        echo(f"warning: {line}", err=True)


def _folders(*options: tuple[str, Path | None]) -> None:
    """A folder option naming a file (or a path under one) is a usage error, before any work is done."""
    for name, value in options:
        if value is None:
            continue
        for part in (value, *value.parents):
            if part.exists():
                if not part.is_dir():
                    where = "" if part == value else f" ({part} is a file)"
                    fail(f"{name} {value}: not a folder{where}", 2)
                break


def _sweep_warnings(data: dict[str, Any]) -> list[str]:
    out = list(data.get("store_problems") or [])
    for dup in data.get("duplicate_sessions") or []:
        same = "identical copies" if dup["identical"] else "different content"
        out.append(
            f"session {dup['session_id']} is in {len(dup['files'])} files ({same}): each file is its own "
            f"session with its own cells: {', '.join(dup['files'])}"
        )
    return out


def _failed(data: dict[str, Any]) -> str:
    failures = data["failures"]
    first = failures[0]
    return (
        f"{data['cells_failed']} of {data['cells_total']} cells failed (recorded in {data['store']}/failed; "
        f"the other cells are stored; a re-run retries them). First: {first['file']} session "
        f"{first['session_id']} strategy {first['strategy']}: {first['error_type']}: {first['error']}"
    )


def sweep(
    spec: Path,
    executor: str = "local",
    workers: int | None = None,
    store: Path | None = None,
    report: Path | None = None,
    papermill: Path | None = None,
    batch_size: int = 64,
    max_grid_points: int | None = None,
    probes: bool = False,
    probe_budget_usd: float | None = None,
    probe_model: str = "claude-sonnet-4-6",
    as_json: bool = False,
) -> None:
    """Run an experiment sweep: compute the missing cells of SPEC into an append-only parquet store."""
    import warnings

    from ..experiments import SpecError, load_spec, plan_sweep, run_sweep
    from ..experiments.executors import ExecutorError, executor_kind
    from ..experiments.executors import probe as probe_executor
    from ..experiments.run import planning_workers

    try:
        executor_kind(executor)
        resolved = load_spec(spec, max_grid_points=max_grid_points)
        probe_executor(executor)
    except (SpecError, ValueError, ExecutorError) as exc:
        fail(str(exc), 2)
    if probes and (report is None or probe_budget_usd is None or probe_budget_usd < 0):
        fail("--probes needs --report DIR and --probe-budget-usd (a hard budget in USD, >= 0)", 2)
    _folders(("--store", store), ("--report", report))
    store = store or Path("results") / resolved.name / "store"
    data: dict[str, Any]
    if papermill is not None:
        from ..experiments.papermill_runner import run_papermill

        out = run_papermill(spec, papermill, store=store, workers=workers or 1, progress=not as_json)
        from ..experiments.store import ResultStore

        data = {
            "cells_total": out["cells"],
            "cells_computed": None,
            "cells_cached": None,
            "store": str(store),
            "papermill": out,
            "stored_cells": len(ResultStore(store).done_ids()),
        }
        human = f"{out['groups']} notebooks in {papermill}; aggregated table {out['aggregated']}"
    else:
        from ..experiments.run import SweepFailureWarning

        try:
            plan = plan_sweep(resolved, workers=planning_workers(executor, workers))
            with warnings.catch_warnings():  # failed cells end the command with one error line instead
                warnings.simplefilter("ignore", SweepFailureWarning)
                result = run_sweep(
                    resolved,
                    store=store,
                    executor=executor,
                    workers=workers,
                    batch_size=batch_size,
                    progress=not as_json,
                    plan=plan,
                )
        except SpecError as exc:
            fail(str(exc), 2)
        except ExecutorError as exc:
            fail(str(exc), 2)
        data = result.as_dict()
        _warn(_sweep_warnings(data))
        human = (
            f"{result.cells_total} cells ({result.cells_computed} computed, {result.cells_cached} cached"
            + (f", {result.cells_by_others} by another sweep" if result.cells_by_others else "")
            + (f", {result.cells_failed} failed" if result.cells_failed else "")
            + f") over {result.sessions} sessions in {result.elapsed_s:.2f} s -> {result.store}"
        )
        if report is not None:
            from ..experiments.report import write_report

            options = None
            if probes and probe_budget_usd is not None:  # both checked on entry
                from ..online.client import MissingAPIKeyError
                from ..probes.run import ProbeBudgetError

                options = {
                    "budget_usd": probe_budget_usd,
                    "model": probe_model,
                    "on_estimate": probe_announcer(probe_budget_usd),
                }
                try:
                    data["report"] = str(write_report(result, plan, report, probes=options))
                except (ProbeBudgetError, MissingAPIKeyError) as exc:
                    fail(str(exc), 2)
            else:
                data["report"] = str(write_report(result, plan, report))
            human += f"\nreport: {data['report']}/summary.md"
    echo(json.dumps(data, indent=2, default=str) if as_json else human)
    if data.get("cells_failed"):
        fail(_failed(data), 1)


def demo(
    out: Path = Path("results/demo"), executor: str = "local", workers: int | None = None, as_json: bool = False
) -> None:
    """The demo: sweep experiments/smoke.yaml over the embedded synthetic corpus and write a report."""
    from ..experiments import load_spec, plan_sweep, run_sweep
    from ..experiments.report import write_report
    from ..experiments.run import planning_workers
    from ..util.resources import embedded

    spec_path = embedded("experiments") / "smoke.yaml"  # its corpus is the embedded data/ beside it
    resolved = load_spec(spec_path)
    plan = plan_sweep(resolved, workers=planning_workers(executor, workers))
    result = run_sweep(
        resolved, store=out / "store", executor=executor, workers=workers, progress=not as_json, plan=plan
    )
    folder = write_report(result, plan, out)
    data = {**result.as_dict(), "report": str(folder.resolve())}
    if as_json:
        echo(json.dumps(data, indent=2))
    else:
        echo(f"{result.cells_total} cells ({result.cells_computed} computed) in {result.elapsed_s:.1f} s")
        echo(f"report: {folder.resolve()}")
        echo(f"summary: {(folder / 'summary.md').resolve()}")


def notebooks(out: Path, force: bool = False, as_json: bool = False) -> None:
    """Copy the workbench's notebooks (and the embedded sessions they fall back to) into OUT, to open in
    JupyterLab wherever the package is installed."""
    import shutil

    from ..util.resources import embedded

    source = embedded("notebooks")
    names = sorted(p.name for p in source.glob("*.ipynb"))
    taken = [name for name in names if (out / name).exists()]
    if taken and not force:
        fail(f"{out}: already holds {', '.join(taken)} (--force replaces them)", 2)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(source / name, out / name)
    data = {"notebooks": [str((out / name).resolve()) for name in names], "data": str(embedded("data"))}
    echo(json.dumps(data, indent=2) if as_json else "\n".join(data["notebooks"]))


def tune(
    spec: Path,
    executor: str = "local",
    workers: int | None = None,
    store: Path | None = None,
    plot: Path | None = None,
    as_json: bool = False,
) -> None:
    """Tune a strategy: sweep its parameter space, print the Pareto front and the recommended config."""
    from ..experiments import SpecError
    from ..experiments.executors import executor_kind
    from ..experiments.tune import load_tune_spec, run_tune

    _folders(("--store", store))
    try:
        executor_kind(executor)
        resolved = load_tune_spec(spec)
        result = run_tune(resolved, spec, store=store, executor=executor, workers=workers, progress=not as_json)
    except (SpecError, ValueError) as exc:
        fail(str(exc), 2)
    data = result.as_dict()
    if plot is not None:
        from ..reporting import plots

        data["plot"] = plots.save(result.plot(), str(plot))
    echo(json.dumps(data, indent=2, default=str) if as_json else result.render())


def advise(
    paths: list[Path],
    executor: str = "local",
    workers: int | None = None,
    store: Path | None = None,
    as_json: bool = False,
    fmt: str | None = None,
    html: Path | None = None,
) -> None:
    """Weigh Claude Code's compaction settings on these histories: what happened, each setting (thresholds,
    /compact by hand, session-memory compaction) paired against it in dollars and expected re-acquisition with
    95% intervals, and a verdict; ``--html`` also writes the report with its plot."""
    from .. import _public
    from ..experiments.executors import executor_kind

    _folders(("--store", store))
    try:
        executor_kind(executor)
    except ValueError as exc:
        fail(str(exc), 2)
    corpus = _public.load(*paths, format=fmt, progress=not as_json)
    if not len(corpus):
        fail("no transcript records could be read", 1)
    try:
        advice = _public.advise(corpus, store=store, executor=executor, workers=workers, progress=not as_json)
    except ValueError as exc:
        fail(str(exc), 2)
    data = advice.as_dict()
    if html is not None:
        data["html"] = str(advice.write_html(html))
    echo(json.dumps(data, indent=2, default=str) if as_json else advice.render())
    if html is not None and not as_json:
        echo(f"report: {html}")


_STORE = arg("--store", type=Path, metavar="DIR", help="Result store folder (default results/<spec name>/store).")

COMMANDS: tuple[Command, ...] = (
    Command(
        "sweep",
        sweep,
        (
            arg("spec", type=Path, metavar="SPEC", help="Experiment spec (YAML, see experiments/)."),
            arg("--executor", default="local", metavar="EXECUTOR", help=_EXECUTORS),
            arg("--workers", type=at_least_one, metavar="N", help="Worker processes (default: CPU count)."),
            _STORE,
            arg("--report", type=Path, metavar="DIR", help="Also write plots + summary.md/html into this folder."),
            arg(
                "--papermill",
                type=Path,
                metavar="DIR",
                help="Run each (strategy, config) as an executed notebook into this folder.",
            ),
            arg(
                "--batch-size",
                type=at_least_one,
                default=64,
                metavar="N",
                help="Cells per task (a stored batch holds up to eight tasks).",
            ),
            arg(
                "--max-grid-points",
                type=at_least_one,
                metavar="N",
                help="Refuse grids larger than this (default: the spec's, 10,000).",
            ),
            arg("--probes", action="store_true", help="With --report: run the online judge probes (needs a budget)."),
            PROBE_BUDGET,
            arg(
                "--probe-model",
                default="claude-sonnet-4-6",
                metavar="MODEL",
                help="Model that writes, answers and judges the probes.",
            ),
            JSON,
        ),
    ),
    Command(
        "tune",
        tune,
        (
            arg("spec", type=Path, metavar="SPEC", help="Tune spec (YAML, see experiments/tune-*.yaml)."),
            arg("--executor", default="local", metavar="EXECUTOR", help=_EXECUTORS),
            arg("--workers", type=at_least_one, metavar="N", help="Worker processes (default: CPU count)."),
            _STORE,
            arg("--plot", type=Path, metavar="PNG", help="Also save the front as a PNG here."),
            JSON,
        ),
    ),
    Command(
        "advise",
        advise,
        (
            PATHS,
            arg("--executor", default="local", metavar="EXECUTOR", help=_EXECUTORS),
            arg("--workers", type=at_least_one, metavar="N", help="Worker processes (default: CPU count)."),
            arg("--store", type=Path, metavar="DIR", help="Result store folder (default: the workbench cache)."),
            arg("--html", type=Path, metavar="FILE", help="Also write the report with its plot as one HTML page."),
            JSON,
            FORMAT,
        ),
    ),
    Command(
        "demo",
        demo,
        (
            arg("--out", type=Path, default=Path("results/demo"), metavar="DIR", help="Report folder."),
            arg("--executor", default="local", metavar="EXECUTOR", help=_EXECUTORS),
            arg("--workers", type=at_least_one, metavar="N", help="Worker processes."),
            JSON,
        ),
    ),
    Command(
        "notebooks",
        notebooks,
        (
            arg("out", type=Path, metavar="DIR", help="Folder to copy the notebooks into."),
            arg("--force", action="store_true", help="Replace notebooks of the same name."),
            JSON,
        ),
    ),
)


if __name__ == "__main__":  # ``python -m workbench.cli.sweep demo``: the same as ``workbench demo``
    from . import main

    main()
