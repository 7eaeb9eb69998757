"""Run a sweep: plan the cells of a spec, compute the missing ones on an executor, append them to the store.

Shared work is done once: the driver parses the corpus once (for fingerprints and cell ids) and warms
the on-disk token-count cache for every session that has missing cells; forked workers inherit both
(`workbench.experiments.executors`), other workers parse a source file once per process. Cells are
grouped per session into tasks of ``batch_size`` cells; finished tasks are written to the store in atomic
batches of up to `BATCH_TASKS` tasks' cells or 20,000 step rows, at the latest a second after the oldest of
them finished
(`workbench.experiments.store.BatchWriter`), and whatever finished is written when the sweep stops on an
error or an interrupt, so a sweep killed outright (``SIGKILL``) loses only the tasks that were still running
and what finished in its last second, and a re-run computes exactly the missing cells.

Failures and faults:

* A cell that raises (an online API error, a strategy bug) is stored in ``failed/`` with its error
  and counted in `SweepResult.failures`; the session's other cells are stored, the sweep goes on and
  the next run retries it. A worker process that dies fails only the cells it was running.
* Before planning, `ResultStore.tidy` cleans the store: stale temporary files, unreadable parts and
  the leftovers of killed writers (`workbench.experiments.store`); what it did is in
  ``store_problems``.
* Concurrent sweeps on one store share the work through claims (`workbench.experiments.claims`): a
  sweep computes only the missing cells nobody else is computing, then waits for the others' cells
  (taking over those of a sweep that died), so every cell is computed once.
* Sessions are (session id, file): two files with one ``sessionId`` are two sessions, each with its own
  cells, listed in ``duplicate_sessions``.
"""

from __future__ import annotations

import json
import os
import queue
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..transcript.files import printable_path
from ..transcript.model import Session
from .cells import (
    Cell,
    CellTask,
    corpus_fingerprint,
    failure_row,
    git_revision,
    make_cells,
    remember_sessions,
    run_task,
)
from .claims import live_claims, store_lock
from .executors import check_workers, executor_kind, make_executor
from .spec import GridPoint, ResolvedSpec, SpecError, load_spec, sample_sessions
from .store import BatchWriter, ResultStore

__all__ = [
    "SweepFailureWarning",
    "SweepPlan",
    "SweepResult",
    "plan_for_sessions",
    "plan_sessions",
    "plan_sweep",
    "planning_workers",
    "run_sweep",
]


class SweepFailureWarning(UserWarning):
    """Some cells of a sweep failed (`SweepResult.failures`); the others were stored."""


@dataclass
class SweepPlan:
    spec: ResolvedSpec
    sessions: list[Any]
    cells: list[Cell]
    corpus_fingerprint: str
    duplicate_sessions: list[dict[str, Any]] = field(default_factory=list)


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
    cells_failed: int = 0
    cells_by_others: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    store_problems: list[str] = field(default_factory=list)
    duplicate_sessions: list[dict[str, Any]] = field(default_factory=list)
    cell_ids: list[str] = field(default_factory=list, repr=False)

    def as_dict(self, *, ids: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not ids:
            data.pop("cell_ids")
        return data


def plan_sweep(
    spec: ResolvedSpec | str | Path, points: Sequence[GridPoint] | None = None, *, workers: int = 1
) -> SweepPlan:
    """List the cells of the spec's corpus (``points`` narrows the grid, e.g. to one config).

    Planned from per-session metadata (`workbench.transcript.summary.SessionInfo`: id, file,
    fingerprint, record count), read file by file from the parsed-session cache: an unchanged corpus is
    not parsed at all, a new or changed file is parsed once, alone (its sessions are cached for the
    workers, then dropped), so planning holds no session in memory. The workers read the sessions by path.
    ``workers`` > 1: the files are read by that many processes (`file_summaries`; the plan is the same).
    """
    from ..transcript.registry import file_summaries

    resolved = spec if isinstance(spec, ResolvedSpec) else load_spec(spec)
    summaries = file_summaries(resolved.corpus, format=resolved.spec.format, keep_sessions=True, workers=workers)
    sessions = [info for _, summary in summaries for info in summary.sessions if info.n_records]
    if not sessions:
        where = ", ".join(str(p) for p in resolved.corpus)
        raise SpecError(f"{resolved.path}: corpus: no transcripts with records in {where}")
    return plan_for_sessions(resolved, sessions, points)


def planning_workers(executor: str, workers: int | None) -> int:
    """How many processes plan a sweep (`plan_sweep`): a local sweep's workers (default: the CPU count),
    which parse a new corpus file by file; one for the other executors (their workers are elsewhere)."""
    return (workers or os.cpu_count() or 1) if executor_kind(executor) == "local" else 1


def plan_for_sessions(
    spec: ResolvedSpec, sessions: Sequence[Any], points: Sequence[GridPoint] | None = None
) -> SweepPlan:
    """The plan of ``spec`` over sessions already loaded (a notebook's corpus): not parsed again.

    Each session needs a ``source`` file: workers that did not inherit the driver's sessions parse it.
    """
    unsourced = [s.id for s in sessions if s.source is None]
    if unsourced:
        raise ValueError(f"sessions without a source file cannot be swept: {', '.join(unsourced[:3])}")
    chosen_sessions = sample_sessions([s for s in sessions if _n_records(s)], spec.spec)
    chosen = list(spec.points if points is None else points)
    cells = make_cells(chosen, chosen_sessions, spec.estimator, spec.corpus)
    remember_sessions([s for s in chosen_sessions if isinstance(s, Session)])
    fingerprint = corpus_fingerprint([s.fingerprint for s in chosen_sessions])
    return SweepPlan(spec, chosen_sessions, cells, fingerprint, duplicate_sessions(chosen_sessions))


def duplicate_sessions(sessions: Sequence[Any]) -> list[dict[str, Any]]:
    """Session ids that occur in more than one file: ``[{"session_id", "files", "identical"}]``."""
    by_id: dict[str, list[Any]] = defaultdict(list)
    for session in sessions:
        by_id[session.id].append(session)
    return [
        {
            "session_id": sid,
            "files": [printable_path(str(s.source)) for s in group],
            "identical": len({s.fingerprint for s in group}) == 1,
        }
        for sid, group in sorted(by_id.items())
        if len(group) > 1
    ]


def plan_sessions(plan: SweepPlan) -> list[Session]:
    """The plan's sessions with their records, for what needs them after the sweep (the cost and fidelity
    columns of a report): sessions the plan holds, else read by (id, file) through the parsed-session
    cache, one file at a time."""
    from ..transcript import load_paths

    if all(isinstance(s, Session) for s in plan.sessions):
        return list(plan.sessions)
    wanted: dict[str, set[str]] = defaultdict(set)
    for info in plan.sessions:
        wanted[str(info.source)].add(info.id)
    found: dict[tuple[str, str], Session] = {}
    for source, ids in wanted.items():
        for session in load_paths([source], format=plan.spec.spec.format):
            if session.id in ids:
                found[(source, session.id)] = session
    return [found.get((str(s.source), s.id), s) for s in plan.sessions]


def _n_records(session: Any) -> int:
    """Records of a `Session`, or of a `SessionInfo` (planning from metadata)."""
    count = getattr(session, "n_records", None)
    return count if isinstance(count, int) else len(session.records)


def _warm_token_cache(sessions: Sequence[Any], estimator: str) -> None:
    """Count every record once, in the driver, so workers only read the shared cache. Only sessions the
    driver holds anyway (a notebook's): a plan from metadata leaves the counting to the workers, which
    share the on-disk cache."""
    from ..tokens.cache import cached_estimator

    held = [s for s in sessions if isinstance(s, Session)]
    for name in dict.fromkeys(("claude-rough", "claude-padded", estimator)):
        counter = cached_estimator(name)
        for session in held:
            counter.count_many(session.conversation())


#: A stored batch holds the cells of up to this many tasks (and at most 20,000 step rows, `BatchWriter`): a
#: tune's task is one session's configs, and writing each as a batch of its own made the store's file
#: handling a tenth of a tune (91 part files for 42 sessions, against 10).
BATCH_TASKS = 8


def _tasks(cells: Sequence[Cell], sessions: Sequence[Any], batch_size: int) -> list[CellTask]:
    from ..strategies.portable import pack

    shipped = dict(pack({cell.strategy for cell in cells}))
    by_session: dict[tuple[str, str], list[Cell]] = defaultdict(list)
    for cell in cells:
        by_session[(cell.session_fingerprint, str(cell.source))].append(cell)
    size = {s.fingerprint: _n_records(s) for s in sessions}
    tasks = []
    for key in sorted(by_session, key=lambda k: (-size.get(k[0], 0), k[1])):  # long sessions first
        group = by_session[key]
        for start in range(0, len(group), batch_size):
            chunk = tuple(group[start : start + batch_size])
            code = tuple((name, shipped[name]) for name in sorted({c.strategy for c in chunk}) if name in shipped)
            tasks.append(CellTask(str(chunk[0].source), chunk[0].session_id, key[0], chunk, code))
    return tasks


def _claim(store: ResultStore, wanted: dict[str, Cell], skip: set[str]) -> tuple[list[Cell], set[str]]:
    """Under the store lock: the wanted cells that are neither stored nor claimed by a live sweep (now
    claimed by ``store``'s writer), and the ids live sweeps hold."""
    with store_lock(store.root):
        done = store.done_ids()
        held = set().union(*(set(c.get("cells", ())) for c in live_claims(store.root, exclude=store.owner).values()))
        free = [c for cid, c in wanted.items() if cid not in done and cid not in held and cid not in skip]
        store.claimant.claim(c.id for c in free)
        return free, {cid for cid in wanted if cid in held and cid not in done}


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
    poll_s: float = 0.5,
) -> SweepResult:
    """Compute the spec's missing cells into ``store``; see the module docstring."""
    from ..util.version import __version__

    started = time.time()
    executor_kind(executor)
    check_workers(workers)
    plan = plan or plan_sweep(spec, points, workers=planning_workers(executor, workers))
    results = ResultStore(store)
    problems = results.tidy()
    unique = {cell.id: cell for cell in plan.cells}
    done = results.done_ids()
    missing = {cid: cell for cid, cell in unique.items() if cid not in done}
    provenance = {
        "spec_name": plan.spec.name,
        "spec_path": str(plan.spec.path),
        "corpus": json.dumps([str(p) for p in plan.spec.corpus]),
        "corpus_fingerprint": plan.corpus_fingerprint,
        "package_version": __version__,
        "git_revision": git_revision(),
        "executor": executor,
    }
    failures: list[dict[str, Any]] = []
    computed = 0
    wanted = dict(missing)
    bar = tqdm(total=len(missing), desc=f"sweep {plan.spec.name}", unit="cell", disable=not progress or not missing)
    try:
        warmed: set[str] = set()
        while missing:
            mine, held = _claim(results, missing, {f["cell_id"] for f in failures})
            if mine:
                fresh = {c.session_fingerprint for c in mine} - warmed
                _warm_token_cache([s for s in plan.sessions if s.fingerprint in fresh], plan.spec.estimator)
                warmed |= fresh
                computed += _compute(mine, plan, results, executor, workers, batch_size, provenance, failures, bar)
            elif held:  # everything left is being computed by another sweep: wait for it
                bar.set_postfix_str(f"waiting for {len(held)} cells another sweep is computing")
                time.sleep(poll_s)
            now = results.done_ids()
            ours = {c.id for c in mine}
            others = [cid for cid in missing if cid in now and cid not in ours]
            bar.update(len(others))
            failed = {f["cell_id"] for f in failures}
            missing = {cid: c for cid, c in missing.items() if cid not in now and cid not in failed}
            if not mine and not held:
                break
    finally:
        bar.close()
        results.close()
    final = results.done_ids()
    by_others = sum(1 for cid in wanted if cid in final) - computed
    if failures:
        first = failures[0]
        warnings.warn(
            f"{len(failures)} of {len(unique)} cells failed (recorded in {results.root / 'failed'}; the other "
            f"cells are stored; a re-run retries them). First: {first['file']} session {first['session_id']} "
            f"strategy {first['strategy']}: {first['error_type']}: {first['error']}",
            SweepFailureWarning,
            stacklevel=2,
        )
    return SweepResult(
        spec=plan.spec.name,
        store=str(results.root),
        cells_total=len(unique),
        cells_computed=computed,
        cells_cached=len(done & set(unique)),
        grid_points=len(points if points is not None else plan.spec.points),
        grid_points_skipped=len(plan.spec.skipped),
        sessions=len(plan.sessions),
        corpus=[str(p) for p in plan.spec.corpus],
        corpus_used_fallback=plan.spec.corpus_used_fallback,
        executor=executor,
        elapsed_s=round(time.time() - started, 3),
        cells_failed=len(failures),
        cells_by_others=max(0, by_others),
        failures=[{k: f[k] for k in _FAILURE_KEYS} for f in failures],
        store_problems=problems,
        duplicate_sessions=plan.duplicate_sessions,
        cell_ids=list(unique),
    )


_FAILURE_KEYS = ("cell_id", "strategy", "config_hash", "session_id", "file", "error_type", "error")


def _compute(
    cells: Sequence[Cell],
    plan: SweepPlan,
    results: ResultStore,
    executor: str,
    workers: int | None,
    batch_size: int,
    provenance: dict[str, Any],
    failures: list[dict[str, Any]],
    bar: Any,
) -> int:
    """Run ``cells`` on the executor, storing finished tasks in batches of up to `BATCH_TASKS` tasks' cells
    (`BatchWriter`); returns how many cells were stored."""
    tasks = _tasks(cells, plan.sessions, max(1, batch_size))
    finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()  # each future once, as it completes
    writer = BatchWriter(results, cells=BATCH_TASKS * max(1, batch_size))
    with make_executor(executor, workers) as pool, writer:
        futures: dict[Future[Any], CellTask] = {}
        for task in tasks:
            future = pool.submit(run_task, task)
            futures[future] = task
            future.add_done_callback(finished.put)  # O(1) per result (`wait` over every pending future is not)
        while futures:
            try:
                future = finished.get(timeout=writer.due_in())  # wake up when a pending batch is due
            except queue.Empty:
                writer.flush_due()
                continue
            task = futures.pop(future)  # the result is freed once stored: memory stays bounded
            done_at = time.time()
            try:
                out = future.result()
            except Exception as exc:  # the worker died, or the executor could not return the result
                rows = [{**failure_row(cell, exc), **provenance, "finished_at": done_at} for cell in task.cells]
                results.write_failures(rows)
                failures.extend(rows)
                bar.update(len(task.cells))
                continue
            if out.cells:
                rows = [{**row, **provenance, "finished_at": done_at} for row in out.cells]
                writer.add(rows, out.steps, out.events)
            if out.failed:
                rows = [{**row, **provenance, "finished_at": done_at} for row in out.failed]
                results.write_failures(rows)
                failures.extend(rows)
            bar.update(len(task.cells))
            writer.flush_due()
    return writer.stored
