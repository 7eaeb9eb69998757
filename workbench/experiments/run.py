"""Run a sweep: plan the cells of a spec, compute the missing ones on an executor, append them to the store.

Shared work is done once: the driver parses the corpus once (for fingerprints and cell ids) and warms
the on-disk token-count cache for every session that has missing cells; forked workers inherit both
(`workbench.experiments.executors`), other workers parse a source file once per process. Cells are
grouped per session into tasks of ``batch_size`` cells; every finished task is written to the store as
one atomic batch before the next result is awaited, so a killed sweep loses only the tasks that were
still running, and a re-run computes exactly the missing cells.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .cells import Cell, CellTask, corpus_fingerprint, git_revision, make_cells, remember_sessions, run_task
from .executors import executor_kind, make_executor
from .spec import GridPoint, ResolvedSpec, load_spec, sample_sessions
from .store import ResultStore

__all__ = ["SweepPlan", "SweepResult", "plan_for_sessions", "plan_sweep", "run_sweep"]


@dataclass
class SweepPlan:
    spec: ResolvedSpec
    sessions: list[Any]
    cells: list[Cell]
    corpus_fingerprint: str


@dataclass
class SweepResult:
    spec: str
    store: str
    cells_total: int
    cells_computed: int
    cells_cached: int
    grid_points: int
    grid_points_skipped: int
    sessions: int
    corpus: list[str]
    corpus_used_fallback: bool
    executor: str
    elapsed_s: float
    cell_ids: list[str] = field(default_factory=list, repr=False)

    def as_dict(self, *, ids: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not ids:
            data.pop("cell_ids")
        return data


def plan_sweep(spec: ResolvedSpec | str | Path, points: Sequence[GridPoint] | None = None) -> SweepPlan:
    """Load the spec's corpus and list its cells (``points`` narrows the grid, e.g. to one config)."""
    from ..transcript import load_paths

    resolved = spec if isinstance(spec, ResolvedSpec) else load_spec(spec)
    sessions = [s for s in load_paths(resolved.corpus, format=resolved.spec.format) if s.records]
    return plan_for_sessions(resolved, sessions, points)


def plan_for_sessions(
    spec: ResolvedSpec, sessions: Sequence[Any], points: Sequence[GridPoint] | None = None
) -> SweepPlan:
    """The plan of ``spec`` over sessions already loaded (a notebook's corpus): not parsed again.

    Each session needs a ``source`` file: workers that did not inherit the driver's sessions parse it.
    """
    unsourced = [s.id for s in sessions if s.source is None]
    if unsourced:
        raise ValueError(f"sessions without a source file cannot be swept: {', '.join(unsourced[:3])}")
    chosen_sessions = sample_sessions([s for s in sessions if s.records], spec.spec)
    chosen = list(spec.points if points is None else points)
    cells = make_cells(chosen, chosen_sessions, spec.estimator)
    remember_sessions(chosen_sessions)
    return SweepPlan(spec, chosen_sessions, cells, corpus_fingerprint([s.fingerprint for s in chosen_sessions]))


def _warm_token_cache(sessions: Sequence[Any], estimator: str) -> None:
    """Count every record once, in the driver, so workers only read the shared cache."""
    from ..tokens.cache import cached_estimator

    for name in dict.fromkeys(("claude-rough", "claude-padded", estimator)):
        counter = cached_estimator(name)
        for session in sessions:
            counter.count_many(session.conversation())


def _tasks(cells: Sequence[Cell], sessions: Sequence[Any], batch_size: int) -> list[CellTask]:
    from ..strategies.portable import pack

    shipped = dict(pack({cell.strategy for cell in cells}))
    by_session: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        by_session[cell.session_fingerprint].append(cell)
    size = {s.fingerprint: len(s.records) for s in sessions}
    tasks = []
    for fingerprint in sorted(by_session, key=lambda fp: -size.get(fp, 0)):  # long sessions first
        group = by_session[fingerprint]
        for start in range(0, len(group), batch_size):
            chunk = tuple(group[start : start + batch_size])
            code = tuple((name, shipped[name]) for name in sorted({c.strategy for c in chunk}) if name in shipped)
            tasks.append(CellTask(str(chunk[0].source), chunk[0].session_id, fingerprint, chunk, code))
    return tasks


def run_sweep(
    spec: ResolvedSpec | str | Path,
    *,
    store: str | Path,
    executor: str = "local",
    workers: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
    points: Sequence[GridPoint] | None = None,
    plan: SweepPlan | None = None,
) -> SweepResult:
    """Compute the spec's missing cells into ``store``; see the module docstring."""
    from .. import __version__

    started = time.time()
    executor_kind(executor)
    plan = plan or plan_sweep(spec, points)
    results = ResultStore(store)
    done = results.done_ids()
    unique = list({cell.id: cell for cell in plan.cells}.values())
    missing = [cell for cell in unique if cell.id not in done]
    provenance = {
        "spec_name": plan.spec.name,
        "spec_path": str(plan.spec.path),
        "corpus": json.dumps([str(p) for p in plan.spec.corpus]),
        "corpus_fingerprint": plan.corpus_fingerprint,
        "package_version": __version__,
        "git_revision": git_revision(),
        "executor": executor,
    }
    errors: list[str] = []
    if missing:
        wanted = {cell.session_fingerprint for cell in missing}
        _warm_token_cache([s for s in plan.sessions if s.fingerprint in wanted], plan.spec.estimator)
        tasks = _tasks(missing, plan.sessions, max(1, batch_size))
        bar = tqdm(total=len(missing), desc=f"sweep {plan.spec.name}", unit="cell", disable=not progress)
        with make_executor(executor, workers) as pool:
            futures = {pool.submit(run_task, task): task for task in tasks}
            for future in as_completed(futures):
                task = futures[future]
                try:
                    out = future.result()
                except Exception as exc:
                    errors.append(f"{task.source} ({task.session_id}): {type(exc).__name__}: {exc}")
                    continue
                finished = time.time()
                rows = [{**row, **provenance, "finished_at": finished} for row in out.cells]
                results.write_batch(rows, out.steps, out.events)
                bar.update(len(task.cells))
        bar.close()
    if errors:
        raise RuntimeError(f"{len(errors)} tasks failed (finished cells were stored):\n" + "\n".join(errors))
    return SweepResult(
        spec=plan.spec.name,
        store=str(results.root),
        cells_total=len(unique),
        cells_computed=len(missing),
        cells_cached=len(unique) - len(missing),
        grid_points=len(points if points is not None else plan.spec.points),
        grid_points_skipped=len(plan.spec.skipped),
        sessions=len(plan.sessions),
        corpus=[str(p) for p in plan.spec.corpus],
        corpus_used_fallback=plan.spec.corpus_used_fallback,
        executor=executor,
        elapsed_s=round(time.time() - started, 3),
        cell_ids=[cell.id for cell in unique],
    )
