"""Per-record token counts cached on disk, keyed by (record content hash, estimator name).

A SQLite file under the workbench cache folder (``WORKBENCH_CACHE_DIR``). Lookups are batched, so a
second run over the same corpus tokenizes nothing: every count is one indexed read. ``stats`` counts
hits and misses so callers (and tests) can check that.

The cache only saves time, so it never fails a count: when SQLite cannot open, read or write the file
("database or disk is full", a read-only or corrupt file, a lock that never clears), the estimator
warns once per cache file and process (`CacheDegradedWarning`, naming the file and the error) and
counts without the cache from then on; counts are identical, only slower (issue #13 item 11: the
error used to abort the replay).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..cache import cache_root
from ..transcript.model import Record
from .estimators import Estimator, get_estimator

__all__ = ["CacheDegradedWarning", "CacheStats", "CachedEstimator", "cached_estimator"]


class CacheDegradedWarning(RuntimeWarning):
    """The token-count cache file cannot be used; counting goes on without it."""


_WARNED: set[Path] = set()


def _warn_once(path: Path, exc: BaseException) -> None:
    if path in _WARNED:
        return
    _WARNED.add(path)
    warnings.warn(
        f"token cache {path}: {exc}: counting without the cache from here on (same counts, only slower)",
        CacheDegradedWarning,
        stacklevel=4,
    )


_BATCH = 500
#: Counts a process keeps in memory besides the file (~150 bytes each): beyond this the memo starts over,
#: so memory stays bounded when a whole history streams through one process (the file keeps them all).
_MEMO_MAX = 200_000
#: How long a connection waits for another process's lock (sweep workers and notebook kernels share the
#: cache file) before SQLite reports "database is locked".
_BUSY_S = 60.0


def _retry_locked(action: Callable[[], object], attempts: int = 20) -> None:
    """Run ``action``, retrying while another process holds the database. Switching the journal mode to
    WAL takes an exclusive lock that SQLite's busy timeout does not cover, so several processes opening
    a fresh cache file at once can see "database is locked" immediately."""
    for attempt in range(attempts):
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class CachedEstimator:
    """Wraps a per-record estimator with the on-disk cache; same interface (``count``, ``count_many``)."""

    def __init__(self, inner: Estimator, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = path or _default_path()
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._memo: dict[str, int] = {}  # what this process has already read or computed
        self._db: sqlite3.Connection | None = None
        #: Why the cache file is no longer used (None while it is).
        self.degraded: str | None = None
        self._connect()
        _OPEN.add(self)

    def _connect(self) -> sqlite3.Connection | None:
        """Open the cache file (again: `_close_before_fork` closes every connection before a fork);
        None once the file cannot be used."""
        if self.degraded is not None:
            return None
        db = None
        try:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=_BUSY_S)
            _retry_locked(lambda: db.execute("PRAGMA journal_mode=WAL"))
            _retry_locked(
                lambda: db.execute(
                    "CREATE TABLE IF NOT EXISTS counts (estimator TEXT NOT NULL, key TEXT NOT NULL,"
                    " n INTEGER NOT NULL, PRIMARY KEY (estimator, key)) WITHOUT ROWID"
                )
            )
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            self._degrade(exc)
            return None
        self._db = db
        return db

    def _degrade(self, exc: BaseException) -> None:
        """Stop using the cache file (see the module docstring)."""
        self.degraded = str(exc)
        if self._db is not None:
            try:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None
        _warn_once(self.path, exc)

    def count(self, record: Record) -> int:
        return self.count_many([record])[0]

    def count_many(self, records: Iterable[Record]) -> list[int]:
        items: Sequence[Record] = records if isinstance(records, Sequence) else list(records)
        keys = [record.content_key for record in items]
        memo = self._memo
        if all(key in memo for key in keys):
            self.stats.hits += len(keys)
            return [memo[key] for key in keys]
        found: dict[str, int] = {}
        with self._lock:
            db = self._db or self._connect()
            unique = [key for key in dict.fromkeys(keys) if key not in memo]
            found.update((key, memo[key]) for key in keys if key in memo)
            try:
                for start in range(0, len(unique), _BATCH) if db is not None else ():
                    chunk = unique[start : start + _BATCH]
                    marks = ",".join("?" * len(chunk))
                    rows = db.execute(
                        f"SELECT key, n FROM counts WHERE estimator = ? AND key IN ({marks})", (self.name, *chunk)
                    )
                    found.update(rows)
            except sqlite3.Error as exc:
                self._degrade(exc)
                db = None
            missing = {key: record for key, record in zip(keys, items, strict=True) if key not in found}
            if missing:
                fresh = dict(zip(missing, self.inner.count_many(list(missing.values())), strict=True))
                if db is not None:
                    try:
                        db.execute("BEGIN")
                        db.executemany(
                            "INSERT OR REPLACE INTO counts (estimator, key, n) VALUES (?, ?, ?)",
                            [(self.name, key, n) for key, n in fresh.items()],
                        )
                        db.execute("COMMIT")
                    except sqlite3.Error as exc:  # e.g. "database or disk is full"
                        self._degrade(exc)
                found.update(fresh)
            self.stats.misses += len(missing)
            self.stats.hits += len(keys) - len(missing)
            if len(memo) + len(found) > _MEMO_MAX:  # bounded: a whole history's records would not fit
                memo.clear()
            memo.update(found)
        return [found[key] for key in keys]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


#: Every cache with a connection, so that none is carried across ``fork`` (SQLite forbids using a
#: connection opened before a fork in the child): the sweep's local executor forks its workers, which
#: then inherit the parsed sessions and the in-memory counts and reopen the file on first use.
_OPEN: weakref.WeakSet[CachedEstimator] = weakref.WeakSet()


def _close_before_fork() -> None:
    for cache in list(_OPEN):
        cache.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_close_before_fork)


_SHARED: dict[tuple[str, Path], CachedEstimator] = {}
_DEFAULT_PATHS: dict[tuple[str | None, ...], Path] = {}


def _default_path() -> Path:
    """The default cache file for the current environment, resolved (and its folder created) once."""
    env = tuple(os.environ.get(v) for v in ("WORKBENCH_CACHE_DIR", "XDG_CACHE_HOME", "HOME"))  # cache_root's inputs
    if env not in _DEFAULT_PATHS:
        _DEFAULT_PATHS[env] = cache_root() / "token-counts.sqlite"
    return _DEFAULT_PATHS[env]


def cached_estimator(name: str, path: Path | None = None) -> CachedEstimator:
    """The cached estimator for ``name``; one shared instance per (name, cache file) in a process."""
    key = (name, path or _default_path())
    if key not in _SHARED:
        _SHARED[key] = CachedEstimator(get_estimator(name), key[1])
    return _SHARED[key]
