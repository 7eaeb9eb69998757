"""Replay over a pool of worker processes, one session group per task (``workbench replay --workers N``).

A replay is CPU-bound Python, and sessions are independent: a strategy's state is per session (per
process of a main session and its sub-agents with ``--process``), so session groups can be replayed
apart. The driver plans the groups from the file list (`workbench.transcript.groups.plan_groups`:
nothing is parsed), each worker loads its group **by path** (through the parsed-session cache, as a sweep's
workers do), replays it and sends back the rows (`ReplayResult`), what loading it reported and the
sessions that failed. The driver hands the results on **in group order**, which is the serial replay's
order, so the output is the same as without workers (``replay --json`` byte-identical, a test checks it).

Memory: a worker holds one group at a time; the driver holds no session, only the rows of at most
``2 × workers`` groups waiting for their turn (`workbench.util.pool.ordered_map`, which also says how workers
start and stop). Token counts are shared through the token cache's SQLite file, which tolerates
concurrent writers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..transcript.groups import PlannedFile, load_planned_group, plan_groups
from ..transcript.isolation import SessionFailure, each_session, stream_groups
from ..transcript.model import Session
from ..transcript.registry import LoadReport
from ..util.pool import check_workers, ordered_map
from .engine import ReplayResult, replay_process, replay_session

__all__ = [
    "GroupOutcome",
    "ParallelReplay",
    "replay_group_as_process",
    "replay_loaded_group",
    "replay_planned_group",
]


def replay_group_as_process(group: Sequence[Session], strategy: Any, *, estimator: str) -> list[ReplayResult]:
    """A main session and its sub-agents replayed as one process (`replay_process`); the sessions of a
    group without exactly one main session, or of one session, each alone. Raises what the replay raises."""
    mains = [s for s in group if not s.is_subagent]
    if len(mains) == 1 and len(group) > 1:
        return list(replay_process(list(group), strategy, estimator=estimator))
    return [replay_session(s, strategy, estimator=estimator) for s in group]


def replay_loaded_group(
    group: Sequence[Session], strategy: Any, *, estimator: str, process: bool, failures: list[SessionFailure]
) -> list[ReplayResult]:
    """The results of one loaded session group, failures appended to ``failures``, isolated as the serial
    ``workbench replay`` isolates them (`workbench.transcript.isolation`): each session alone, or with ``process``
    the group as a whole (`replay_group_as_process`), a failing group reported under its main session."""
    if process:
        run = stream_groups(
            lambda g: replay_group_as_process(g, strategy, estimator=estimator), [list(group)], failures
        )
        return [result for _, results in run for result in results]
    return [
        result
        for _, result in each_session(lambda s: replay_session(s, strategy, estimator=estimator), group, failures)
    ]


@dataclass
class GroupOutcome:
    """What a worker sends back for one group: its results, its failures and its part of the load report."""

    results: list[ReplayResult] = field(default_factory=list)
    failures: list[SessionFailure] = field(default_factory=list)
    report: LoadReport = field(default_factory=LoadReport)
    records: int = 0


def replay_planned_group(
    group: Sequence[PlannedFile], strategy: Any, *, estimator: str, fmt: str | None, process: bool
) -> GroupOutcome:
    """Load one planned group by path and replay it (the body of a worker's task)."""
    outcome = GroupOutcome()
    sessions = [session for _, session in load_planned_group(group, fmt, outcome.report)]
    outcome.records = sum(len(s.records) for s in sessions)
    if sessions:
        outcome.results = replay_loaded_group(
            sessions, strategy, estimator=estimator, process=process, failures=outcome.failures
        )
    return outcome


_WORKER: dict[str, Any] = {}


def _init_worker(strategy: Any, estimator: str, fmt: str | None, process: bool) -> None:
    _WORKER.update(strategy=strategy, estimator=estimator, fmt=fmt, process=process)


def _task(group: list[PlannedFile]) -> GroupOutcome:
    return replay_planned_group(
        group, _WORKER["strategy"], estimator=_WORKER["estimator"], fmt=_WORKER["fmt"], process=_WORKER["process"]
    )


class ParallelReplay:
    """The replay of ``paths`` through ``strategy`` by ``workers`` processes (`workbench.util.pool.ordered_map`).

    Iterate `results` once; afterwards ``report`` (a new one, or the one given) holds the load report
    (files, ignored files and errors in the serial order), ``records`` the number of records read and
    ``failures`` the failed sessions, as the serial replay leaves them. ``fmt`` must be a loader name or
    None (checked before any worker starts: a bad name is a `TranscriptError`, as `load_paths` raises)."""

    def __init__(
        self,
        paths: Iterable[Path | str],
        strategy: Any,
        *,
        workers: int,
        estimator: str = "claude-rough",
        fmt: str | None = None,
        process: bool = False,
        report: LoadReport | None = None,
    ) -> None:
        self.workers = check_workers(workers)
        self.paths, self.strategy, self.estimator = list(paths), strategy, estimator
        self.fmt, self.process = fmt, process
        self.report = report if report is not None else LoadReport()
        self.records = 0
        self.failures: list[SessionFailure] = []
        if fmt:
            from ..transcript.registry import get_loader

            get_loader(fmt)

    def results(self, progress: str | None = None) -> Iterator[ReplayResult]:
        """The results in the serial replay's order, as the workers finish them. ``progress``: a tqdm bar
        over the groups (their number is known from the plan)."""
        groups = plan_groups(self.paths, self.report)
        if not groups:
            return
        bar = None
        if progress is not None:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(groups), desc=progress, unit="group")
        try:
            outcomes = ordered_map(
                _task,
                groups,
                min(self.workers, len(groups)),
                initializer=_init_worker,
                initargs=(self.strategy, self.estimator, self.fmt, self.process),
            )
            for outcome in outcomes:
                self._merge(outcome)
                if bar is not None:
                    bar.update(1)
                yield from outcome.results
                del outcome
        finally:
            if bar is not None:
                bar.close()

    def _merge(self, outcome: GroupOutcome) -> None:
        self.report.files += outcome.report.files
        self.report.ignored += outcome.report.ignored
        self.report.errors += outcome.report.errors
        self.records += outcome.records
        self.failures += outcome.failures
