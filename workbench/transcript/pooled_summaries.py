"""`registry.file_summaries` with ``workers`` > 1: the files read by worker processes
(`workbench.util.pool.ordered_map`), each file alone, the summaries and the report as one process gives them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..util import pool  # `pool.ordered_map` looked up when called (tests replace it)
from .registry import LoadReport, _load_file, _prepare, custom_loaders, iter_files
from .session_cache import cached_summary_if_unchanged, remembered_loader

if TYPE_CHECKING:
    from .summary import FileSummary

__all__ = ["pooled_summaries"]


def pooled_summaries(
    paths: Iterable[Path | str], format: str | None, report: LoadReport, keep_sessions: bool, workers: int
) -> Iterator[tuple[Path, FileSummary]]:
    """`file_summaries` by worker processes. An unchanged file whose summary is cached is answered here
    (a worker's round trip costs more than the cache read: 2,000 cached files took twice as long through
    two workers); the others go to the pool. The walk's errors are put back where one process reports
    them: before the first file found after them."""
    pool.check_workers(workers)
    walk = LoadReport()
    files: list[tuple[Path, bool, int, int]] = []  # with the walk's error and ignored counts before it
    for path, named in iter_files(list(paths), walk):
        files.append((path, named, len(walk.errors), len(walk.ignored)))
    known: list[FileSummary | None] = []
    for path, _, _, _ in files:
        name = format or (None if custom_loaders() else remembered_loader(path))
        known.append(cached_summary_if_unchanged(path, name) if name else None)
    tasks = [
        (path, named, format, keep_sessions)
        for (path, named, _, _), hit in zip(files, known, strict=True)
        if hit is None
    ]
    computed = pool.ordered_map(_summary_task, tasks, min(workers, len(tasks))) if tasks else iter(())
    done_errors = done_ignored = 0
    for (path, _, errors, ignored), hit in zip(files, known, strict=True):
        found: FileSummary | None
        if hit is not None:
            found, part = hit, LoadReport(files=[str(path)])
        else:
            found, part = next(computed)
        report.errors += walk.errors[done_errors:errors] + part.errors
        report.ignored += walk.ignored[done_ignored:ignored] + part.ignored
        report.files += part.files
        done_errors, done_ignored = errors, ignored
        if found is not None:
            yield path, found
    report.errors += walk.errors[done_errors:]
    report.ignored += walk.ignored[done_ignored:]


def _summary_task(task: tuple[Path, bool, str | None, bool]) -> tuple[FileSummary | None, LoadReport]:
    path, named, format, keep_sessions = task
    part = LoadReport()
    found = _load_file(path, named, _prepare(format), part, summary="keep" if keep_sessions else True)
    return found, part
