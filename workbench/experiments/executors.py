"""Executors: one ``concurrent.futures``-style interface for local processes and ``dask.distributed``.

``executor`` names:

* ``local`` (default): a `ProcessPoolExecutor` with ``workers`` processes (default: CPU count). On Linux
  they are started with ``fork``, so each worker inherits what the driver already has: imported modules,
  the sessions it parsed while planning (`workbench.experiments.cells.remember_sessions`) and the token
  counts it read (the token cache closes its SQLite connections before any fork and reopens them on
  first use, `workbench.tokens.cache`). Elsewhere (macOS, Windows: ``fork`` is unsafe or missing) they
  are started with ``spawn`` and parse their sessions themselves.
* ``inline``: no pool, cells run in the calling process (debugging, profiling, tiny sweeps).
* ``dask-local``: a `distributed.LocalCluster` on 127.0.0.1 (no dashboard), started and closed here.
* ``dask://HOST:PORT`` (or ``tcp://HOST:PORT``): an existing scheduler. Its workers need workbench
  installed and the corpus at the same paths as the driver. A scheduler that does not answer within
  `CONNECT_TIMEOUT_S` fails with `ExecutorError` naming the address (dask's own default waits 30 s
  and retries, and its error does not say where it tried).

``workers`` must be a positive number (or None: the CPU count); anything else is a `ValueError`.

The sweep only uses ``submit`` and ``Future.add_done_callback``, so every backend runs through the
same code path (`distributed.Client.get_executor` returns standard futures).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from ..util import pool
from ..util.pool import die_with_parent

__all__ = [
    "CONNECT_TIMEOUT_S",
    "ExecutorError",
    "InlineExecutor",
    "check_workers",
    "executor_kind",
    "local_start_method",
    "make_executor",
    "probe",
]

#: How long to wait for a ``dask://`` scheduler before giving up.
CONNECT_TIMEOUT_S = 8


class ExecutorError(RuntimeError):
    """The executor could not be started (e.g. the dask scheduler is unreachable)."""


def check_workers(workers: int | None) -> int | None:
    """``workers`` unchanged when None or a positive int, else a `ValueError` saying what is allowed."""
    return None if workers is None else pool.check_workers(workers)


class InlineExecutor(Executor):
    """Runs each submitted call immediately in the calling process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def local_start_method() -> str:
    """``fork`` on Linux (workers inherit the driver's parsed sessions and counts), else ``spawn``."""
    return pool.start_method()


def executor_kind(name: str) -> str:
    if name in ("local", "inline", "dask-local"):
        return name
    if name.startswith(("dask://", "tcp://")):
        from urllib.parse import urlsplit

        try:
            parts = urlsplit("tcp://" + name.split("://", 1)[1])
            valid = bool(parts.hostname) and parts.port is not None
        except ValueError:  # a port that is not a number or out of range
            valid = False
        if not valid:
            raise ValueError(f"executor {name!r}: a dask scheduler address is dask://HOST:PORT")
        return "dask"
    raise ValueError(f"unknown executor {name!r}: use local, inline, dask-local or dask://HOST:PORT")


def probe(name: str) -> None:
    """For a ``dask://`` executor: raise `ExecutorError` at once when nothing listens at its address
    (the CLI checks this before planning). Other executors need no check."""
    if executor_kind(name) == "dask":
        _probe(name, "tcp://" + name.split("://", 1)[1])


def _probe(name: str, address: str) -> None:
    """Fail at once when nothing listens at ``address`` (dask would retry until its timeout)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address)
    assert parts.hostname is not None and parts.port is not None  # checked by executor_kind
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ExecutorError(
            f"{name}: cannot connect to a dask scheduler at {address} ({exc.strerror or exc})"
        ) from None


@contextmanager
def make_executor(name: str = "local", workers: int | None = None) -> Iterator[Executor]:
    """Yield an executor for ``name`` and shut it (and any cluster it started) down afterwards."""
    kind = executor_kind(name)
    count = check_workers(workers) or os.cpu_count() or 1
    if kind == "inline":
        yield InlineExecutor()
    elif kind == "local":
        with ProcessPoolExecutor(
            max_workers=count,
            mp_context=multiprocessing.get_context(local_start_method()),
            initializer=die_with_parent,  # a driver killed by any signal leaves no worker behind
        ) as pool:
            yield pool
    else:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - dask is a declared dependency
            raise RuntimeError("the dask executors need `pip install 'dask[distributed]'`") from exc
        # distributed's LocalCluster, Client and Client.get_executor have no annotations
        if kind == "dask-local":
            with (
                LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=count, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
                ) as cluster,
                Client(cluster) as client,  # type: ignore[no-untyped-call]
            ):
                yield client.get_executor(pure=False)
        else:
            address = "tcp://" + name.split("://", 1)[1]
            _probe(name, address)
            try:
                client = Client(address, timeout=CONNECT_TIMEOUT_S)  # type: ignore[no-untyped-call]
            except (OSError, TimeoutError) as exc:
                raise ExecutorError(
                    f"{name}: no dask scheduler answered at {address} within {CONNECT_TIMEOUT_S} s "
                    f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
                ) from None
            with client:
                yield client.get_executor(pure=False)  # type: ignore[no-untyped-call]
