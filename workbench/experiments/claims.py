"""Who is writing a result store, and which cells each writer is computing: lock and claim files.

So that two sweeps on one store never compute a cell twice, every writer of a store is a *claimant* with a
claim file ``_claims/<owner>.json`` that it holds an exclusive ``flock`` on for as long as it lives; the file
lists the cell ids it took. The kernel drops the lock when the process ends in any way (also SIGKILL), so "the
file is locked" is exactly "its writer is alive", with no pid or clock guessing. Claim files are read and
changed only under the store lock (``_claims/.lock``, held for milliseconds), so a sweep sees a consistent
picture:

* a sweep takes the missing cells no live claimant has taken, and computes only those;
* when it is done it waits for the cells live claimants still hold (they are being computed), and
  takes over the cells of claimants that died;
* claim files whose lock can be taken belong to dead writers and are removed.

The owner id is also in the names of the batches and temporary files a writer makes
(`workbench.experiments.store`), so a sweep can tell a dead writer's leftovers (stale ``.part-*.tmp``,
steps written before a kill) from a live writer's files in flight.

``flock`` is advisory and local: sweeps on one machine (or on a file system with working ``flock``)
coordinate; where ``fcntl`` is missing (Windows) claims are recorded but not locked.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["CLAIMS", "Claimant", "live_claims", "store_lock"]

CLAIMS = "_claims"


def _try_lock(fd: int) -> bool:
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextmanager
def store_lock(root: Path) -> Iterator[None]:
    """The store lock: held while claim files are read or changed (and while leftovers are cleaned)."""
    folder = root / CLAIMS
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def live_claims(root: Path, *, exclude: str | None = None) -> dict[str, dict[str, Any]]:
    """``{owner: claim}`` of the live claimants (call under `store_lock`); removes dead ones' files."""
    folder = root / CLAIMS
    out: dict[str, dict[str, Any]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        owner = path.stem
        if owner == exclude:
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            if _try_lock(fd):  # nobody holds it: its writer is gone
                path.unlink(missing_ok=True)
                continue
            with os.fdopen(os.dup(fd), encoding="utf-8") as handle:
                text = handle.read()
        finally:
            os.close(fd)
        try:
            claim = json.loads(text) if text else {}
        except json.JSONDecodeError:
            claim = {}
        out[owner] = claim
    return out


class Claimant:
    """One writer of a store (see the module docstring). Create it, `open` it under the store lock,
    `claim` cells, `close` it when done (or just exit: the lock goes with the process)."""

    def __init__(self, root: str | Path, owner: str | None = None) -> None:
        self.root = Path(root)
        self.owner = owner or uuid.uuid4().hex[:12]
        self.cells: set[str] = set()
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self.root / CLAIMS / f"{self.owner}.json"

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self) -> Claimant:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(fd):  # pragma: no cover - owner ids are random
                os.close(fd)
                raise RuntimeError(f"{self.path}: claim file held by another writer")
            self._fd = fd
            self._save()
        return self

    def claim(self, cell_ids: Iterable[str]) -> None:
        """Add ``cell_ids`` to this claimant's claim (call under `store_lock`)."""
        self.open()
        self.cells.update(cell_ids)
        self._save()

    def _save(self) -> None:
        assert self._fd is not None
        data = {
            "owner": self.owner,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.time(),
            "cells": sorted(self.cells),
        }
        payload = json.dumps(data).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, payload, 0)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None
            self.cells.clear()

    def __enter__(self) -> Claimant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
