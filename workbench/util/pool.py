"""An ordered map over worker processes, for the commands that read a corpus unit by unit (``replay
--workers``, ``ingest --workers``): `ordered_map` yields ``fn(item)`` in the items' order as the workers
finish them.

* **Bounded**: at most ``2 × workers`` items are in flight or finished and waiting for their turn, so a
  slow item does not let the results of the others pile up in the driver.
* **Fork on Linux, spawn elsewhere** (`start_method`, which the sweep's local executor uses too): with
  fork the workers inherit the imported modules and the ``initargs`` without pickling them.
* **Ctrl-C reaches the driver only**: workers ignore SIGINT; when the consumer stops early, a task fails
  or the driver is interrupted, what has not started is cancelled and the workers are ended at once (a
  task being computed is not waited for), so no worker outlives the call and none prints a traceback.
* **Workers end with their driver**: on Linux each worker asks the kernel for SIGTERM when the process
  that started it dies (`die_with_parent`, ``PR_SET_PDEATHSIG``), so a driver killed by any signal, even
  SIGKILL, leaves no worker blocked forever; the command line turns SIGTERM into an orderly stop
  (`workbench.cli`, exit 143).
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

__all__ = ["check_workers", "die_with_parent", "ordered_map", "start_method"]

T = TypeVar("T")
R = TypeVar("R")


def check_workers(workers: object) -> int:
    """``workers`` when it is a positive int, else a `ValueError` saying what is allowed."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers must be a positive number of worker processes, got {workers!r}")
    return workers


def start_method() -> str:
    """``fork`` on Linux (workers inherit the parent's modules and data), else ``spawn`` (``fork`` is unsafe
    or missing on macOS and Windows)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


#: ``prctl`` option: the signal this process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to send this process SIGTERM when its parent dies (Linux; elsewhere nothing), and
    let SIGTERM end it (a forked worker inherits the command line's handler, which would turn it into an
    exception the pool's worker loop catches and survives).

    Called first in every worker process; a worker whose parent is already gone ends at once."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import os

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl (an unusual libc): the driver's own handler still applies
        return
    if os.getppid() == 1:  # the parent died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)


def _start(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    *,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[R]:
    """``fn(item)`` for each item, in order, computed by ``workers`` processes (``fn`` must be a module
    level function; with spawn, it and the items are pickled). An exception of ``fn`` is raised here,
    at its item's turn, after the workers are stopped."""
    check_workers(workers)
    todo = iter(items)
    context = multiprocessing.get_context(start_method())
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start, initargs=(initializer, initargs)
    )
    pending: deque[Future[R]] = deque()
    finished = False
    try:
        for item in todo:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                break
        while pending:
            result = pending.popleft().result()
            for item in todo:  # keep the pool fed: one new item for each one handed on
                pending.append(pool.submit(fn, item))
                break
            yield result
            del result
        finished = True
    finally:
        if not finished:
            _stop(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 10
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        # the executor's own thread may reap the same process at the same moment: then join returns early
        # (its waitpid failed) and the exit code shows a moment later
        while process.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.005)
