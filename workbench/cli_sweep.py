"""``workbench sweep``, ``workbench tune`` and ``workbench demo``: registered on the main app by `register`
(no import cycle)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register"]

REPO = Path(__file__).resolve().parent.parent


def _fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _warn(lines: list[str]) -> None:
    for line in lines:
        typer.echo(f"warning: {line}", err=True)


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
    spec: Annotated[Path, typer.Argument(help="Experiment spec (YAML, see experiments/).")],
    executor: Annotated[str, typer.Option(help="local | inline | dask-local | dask://HOST:PORT")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: CPU count).", min=1)] = None,
    store: Annotated[Path | None, typer.Option(help="Result store folder (default results/<spec name>/store).")] = None,
    report: Annotated[Path | None, typer.Option(help="Also write plots + summary.md/html into this folder.")] = None,
    papermill: Annotated[
        Path | None,
        typer.Option("--papermill", help="Run each (strategy, config) as an executed notebook into this folder."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Cells per task / per stored batch.", min=1)] = 64,
    max_grid_points: Annotated[
        int | None, typer.Option(help="Refuse grids larger than this (default: the spec's, 10,000).", min=1)
    ] = None,
    probes: Annotated[
        bool, typer.Option("--probes", help="With --report: run the online judge probes (needs a budget).")
    ] = False,
    probe_budget_usd: Annotated[
        float | None, typer.Option(help="Hard budget of the probe run in USD: refuse above it, stop at it.")
    ] = None,
    probe_model: Annotated[str, typer.Option(help="Model that writes, answers and judges the probes.")] = (
        "claude-sonnet-4-6"
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Run an experiment sweep: compute the missing cells of SPEC into an append-only parquet store."""
    from .experiments import SpecError, load_spec, plan_sweep, run_sweep
    from .experiments.executors import ExecutorError, executor_kind
    from .experiments.executors import probe as probe_executor

    try:
        executor_kind(executor)
        resolved = load_spec(spec, max_grid_points=max_grid_points)
        probe_executor(executor)
    except (SpecError, ValueError, ExecutorError) as exc:
        _fail(str(exc), 2)
    if probes and (report is None or probe_budget_usd is None or probe_budget_usd < 0):
        _fail("--probes needs --report DIR and --probe-budget-usd (a hard budget in USD, >= 0)", 2)
    store = store or Path("results") / resolved.name / "store"
    data: dict[str, Any]
    if papermill is not None:
        from .experiments.papermill_runner import run_papermill

        out = run_papermill(spec, papermill, store=store, workers=workers or 1, progress=not as_json)
        from .experiments.store import ResultStore

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
        from .experiments.run import SweepFailureWarning

        try:
            plan = plan_sweep(resolved)
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
            _fail(str(exc), 2)
        except ExecutorError as exc:
            _fail(str(exc), 2)
        data = result.as_dict()
        _warn(_sweep_warnings(data))
        human = (
            f"{result.cells_total} cells ({result.cells_computed} computed, {result.cells_cached} cached"
            + (f", {result.cells_by_others} by another sweep" if result.cells_by_others else "")
            + (f", {result.cells_failed} failed" if result.cells_failed else "")
            + f") over {result.sessions} sessions in {result.elapsed_s:.2f} s -> {result.store}"
        )
        if report is not None:
            from .experiments.report import write_report

            options = None
            if probes:
                from .online.client import MissingAPIKeyError
                from .online.probe_run import ProbeBudgetError

                def announce(estimate: dict[str, Any]) -> None:
                    typer.echo(
                        f"probe estimate: ${estimate['estimate_usd']:,.4f} (upper bound) for {estimate['jobs']} "
                        f"compactions, {estimate['requests']} requests to send, {estimate['cached']} cached; "
                        f"budget ${probe_budget_usd:,.2f}",
                        err=True,
                    )

                options = {"budget_usd": probe_budget_usd, "model": probe_model, "on_estimate": announce}
                try:
                    data["report"] = str(write_report(result, plan, report, probes=options))
                except (ProbeBudgetError, MissingAPIKeyError) as exc:
                    _fail(str(exc), 2)
            else:
                data["report"] = str(write_report(result, plan, report))
            human += f"\nreport: {data['report']}/summary.md"
    typer.echo(json.dumps(data, indent=2, default=str) if as_json else human)
    if data.get("cells_failed"):
        _fail(_failed(data), 1)


def demo(
    out: Annotated[Path, typer.Option(help="Report folder.")] = Path("results/demo"),
    executor: Annotated[str, typer.Option(help="local | inline | dask-local | dask://HOST:PORT")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """The demo: sweep experiments/smoke.yaml over the embedded synthetic corpus and write a report."""
    from .experiments import load_spec, plan_sweep, run_sweep
    from .experiments.report import write_report

    spec_path = REPO / "experiments" / "smoke.yaml"
    if not spec_path.is_file():  # installed without the repository: generate the corpus and a spec
        from .synthetic import write_corpus

        write_corpus(out / "data")
        spec_path = out / "smoke.yaml"
        spec_path.write_text(
            "name: smoke\ncorpus: [data]\nstrategies:\n  - {name: none}\n  - {name: full-compact}\n"
            "  - name: sm-compact\n    grid: {min_tokens: [5000, 10000], max_tokens: [20000, 40000]}\n",
            encoding="utf-8",
        )
    resolved = load_spec(spec_path)
    plan = plan_sweep(resolved)
    result = run_sweep(
        resolved, store=out / "store", executor=executor, workers=workers, progress=not as_json, plan=plan
    )
    folder = write_report(result, plan, out)
    data = {**result.as_dict(), "report": str(folder.resolve())}
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(f"{result.cells_total} cells ({result.cells_computed} computed) in {result.elapsed_s:.1f} s")
        typer.echo(f"report: {folder.resolve()}")
        typer.echo(f"summary: {(folder / 'summary.md').resolve()}")


def tune(
    spec: Annotated[Path, typer.Argument(help="Tune spec (YAML, see experiments/tune-*.yaml).")],
    executor: Annotated[str, typer.Option(help="local | inline | dask-local | dask://HOST:PORT")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: CPU count).")] = None,
    store: Annotated[Path | None, typer.Option(help="Result store folder (default results/<spec name>/store).")] = None,
    plot: Annotated[Path | None, typer.Option(help="Also save the front as a PNG here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Tune a strategy: sweep its parameter space, print the Pareto front and the recommended config."""
    from .experiments import SpecError
    from .experiments.executors import executor_kind
    from .experiments.tune import load_tune_spec, run_tune

    try:
        executor_kind(executor)
        resolved = load_tune_spec(spec)
        result = run_tune(resolved, spec, store=store, executor=executor, workers=workers, progress=not as_json)
    except (SpecError, ValueError) as exc:
        _fail(str(exc), 2)
    data = result.as_dict()
    if plot is not None:
        from . import plots

        data["plot"] = plots.save(result.plot(), str(plot))
    typer.echo(json.dumps(data, indent=2, default=str) if as_json else result.render())


def register(app: typer.Typer) -> None:
    """Add ``sweep``, ``tune`` and ``demo`` to the ``workbench`` app (once: calling it again changes nothing)."""
    present = {c.name for c in app.registered_commands}
    if "sweep" not in present:
        app.command("sweep")(sweep)
    if "tune" not in present:
        app.command("tune")(tune)
    if "demo" not in present:
        app.command("demo")(demo)


if __name__ == "__main__":  # ``python -m workbench.cli_sweep demo`` (the Makefile's demo target)
    import sys

    from .cli import app as _app

    register(_app)
    sys.argv[0] = "workbench"
    _app()
