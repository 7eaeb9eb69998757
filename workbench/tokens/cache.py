"""Per-record token counts cached on disk, keyed by (record content hash, estimator and its code).

**What a row is keyed by.** The estimator's name *and* `estimator_fingerprint`: the package version, the
sources of ``workbench/tokens`` (where the built-in estimators count), the estimator class's own source
(or, for a class without one, such as a notebook's, its methods' bytecode) and the tiktoken version. An
upgrade, an edited estimator or another tokenizer release counts afresh instead of reading the counts the
old code wrote under the same name.

A SQLite file under the workbench cache folder (``WORKBENCH_CACHE_DIR``). Lookups are batched, so a
second run over the same corpus tokenizes nothing: every count is one indexed read, and a whole session's
counts one row (below). ``stats`` counts hits and misses so callers (and tests) can check that.

The cache only saves time, so it never fails a count: when SQLite cannot open, read or write the file
("database or disk is full", a read-only or corrupt file, a lock that never clears), the estimator
warns once per cache file and process (`CacheDegradedWarning`, naming the file and the error) and
counts without the cache from then on; counts are identical, only slower (the error never aborts the
replay).

**A second level, per sequence**. A warm replay asks for a whole session's counts at once
(``replay/engine.py``: every record, per estimator), and one indexed read per record cost ~6 µs, ~0.43 s
of a ~4.7 s warm replay of 71,360 records. So a request of at least `_SEQUENCE_MIN` records that
the in-process memo cannot answer is first looked up as a whole: its *sequence key* (BLAKE2b over the
ordered records' ``content_key``) names one row of the ``sequences`` table holding the counts in order.
A hit returns them (each record counts as a hit in ``stats``); a miss (a new session, one record
different) does exactly the per-record lookups above and then stores the row, so the next process reads
one row per session. Counts are the same either way: a row is only written from the per-record counts.

Growth: a row costs ~10 bytes per record (8 packed), next to ~59 per distinct record in ``counts``. A row
is stored for every distinct long list that misses: once per session and estimator for the engine's
whole-session requests, again each time a session still being appended to is counted after changing (its
old rows are never read again), and for the records a strategy reads claude-padded counts of when it
first compacts (``replay/sizes.py``'s ``LazyCounts``), which depend on where the config compacts. Nine
replays of the real Claude Code corpus with different strategies and configs left 72 rows (246 KB, next
to 913 KB of ``counts``). Lists shorter than `_SEQUENCE_MIN` are never stored, and the table is bounded:
storing a row deletes those stored more than `_SEQUENCES_MAX` rows before it (first in, first out; a row
evicted while still in use is stored again at its next miss). Deleting the file reclaims all of it.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sqlite3
import sys
import threading
import time
import warnings
import weakref
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..transcript.model import Record
from ..util.cache import CacheDirError, cache_root
from .estimators import Estimator, get_estimator

__all__ = ["CacheDegradedWarning", "CacheStats", "CachedEstimator", "cached_estimator", "estimator_fingerprint"]


class CacheDegradedWarning(RuntimeWarning):
    """The token-count cache file cannot be used; counting goes on without it."""


_WARNED: set[Path] = set()


def _warn_once(path: Path, exc: BaseException) -> None:
    if path in _WARNED:
        return
    _WARNED.add(path)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    warnings.warn(
        f"token cache {path}: {reason}: counting without the cache from here on (same counts, only slower)",
        CacheDegradedWarning,
        stacklevel=4,
    )


_BATCH = 500
#: The shortest request looked up (and stored) as one sequence row. A whole session is hundreds to
#: thousands of records (a warm replay's requests); below this the per-record reads cost under ~0.4 ms
#: anyway, and short lists are mostly what a compaction drops or adds, which change with the strategy's
#: decisions: rows for them would rarely be read again.
_SEQUENCE_MIN = 64
#: The sequence rows kept: storing one deletes those stored more than this many rows before it (first in,
#: first out). Far above what one run asks for (the 8× corpus: 136 rows per estimator), so a warm run
#: never evicts its own rows, while rows nobody reads again (see the module docstring) cannot pile up.
_SEQUENCES_MAX = 20_000
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
    """Records answered from the memo or the file (``hits``) or counted (``misses``); requests answered
    by one sequence row (``sequence_hits``) or looked up record by record after a sequence miss."""

    hits: int = 0
    misses: int = 0
    sequence_hits: int = 0
    sequence_misses: int = 0


#: Sequence rows hold 8-byte signed integers (the range of SQLite's INTEGER: any count the ``counts`` table
#: holds fits), packed and unpacked at C speed (~1 ms for 30,000 counts), little-endian in the file whatever the
#: host (a cache folder may be shared between machines).
_PACKED = array("q")
_SWAP = sys.byteorder != "little"


def _sequence_key(keys: list[str]) -> str:
    """One key for an ordered list of records: BLAKE2b over their content keys joined by newlines
    (which no content key holds), as long as a content key."""
    return hashlib.blake2b("\n".join(keys).encode("utf-8"), digest_size=16).hexdigest()


def _pack(counts: list[int]) -> bytes:
    packed = array("q", counts)
    if _SWAP:
        packed.byteswap()
    return packed.tobytes()


def _unpack(blob: bytes) -> list[int]:
    packed = array("q")
    packed.frombytes(blob)
    if _SWAP:
        packed.byteswap()
    return packed.tolist()


class CachedEstimator:
    """Wraps a per-record estimator with the on-disk cache; same interface (``count``, ``count_many``)."""

    def __init__(self, inner: Estimator, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.row_key = f"{inner.name}@{estimator_fingerprint(inner)}"  # what rows are stored under (docstring)
        self.path = path or _default_path()
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._memo: dict[str, int] = {}  # what this process has already read or computed
        self._db: sqlite3.Connection | None = None
        #: Why the cache file is no longer used (None while it is).
        self.degraded: str | None = None
        if self.path in _UNUSABLE:
            self._degrade(_UNUSABLE[self.path])
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
            # A cache file of an earlier release has no `sequences` yet: created here, next to `counts`. A
            # rowid table: its rows are large (SQLite advises WITHOUT ROWID only for rows under ~1/20 of a
            # page; a lookup measured ~3× faster this way) and the rowid orders them for `_SEQUENCES_MAX`.
            _retry_locked(
                lambda: db.execute(
                    "CREATE TABLE IF NOT EXISTS sequences (estimator TEXT NOT NULL, key TEXT NOT NULL,"
                    " counts BLOB NOT NULL, UNIQUE (estimator, key))"
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

    def count_fresh(self, records: Sequence[Record]) -> list[int]:
        """`count_many` of records made for this count (a tool result on its own, say): counted directly when
        the estimator is a character rule (`cheap`: its count costs less than the content key the cache
        looks up by), through the cache otherwise. The same numbers either way."""
        if getattr(self.inner, "cheap", False):
            return self.inner.count_many(records)
        return self.count_many(records)

    def count_many(self, records: Iterable[Record]) -> list[int]:
        items: Sequence[Record] = records if isinstance(records, Sequence) else list(records)
        keys = [record.content_key for record in items]
        memo = self._memo
        try:  # every key already read or computed in this process (a replay asks for its sessions again
            # and again): one C loop over them, where a generator test and then a lookup were two Python ones
            known = list(map(memo.__getitem__, keys))
        except KeyError:
            pass
        else:
            self.stats.hits += len(keys)
            return known
        with self._lock:
            db = self._db or self._connect()
            sequence = _sequence_key(keys) if db is not None and len(keys) >= _SEQUENCE_MIN else None
            if sequence is not None and db is not None:
                stored = self._read_sequence(db, sequence, len(keys))
                if stored is not None:
                    self.stats.sequence_hits += 1
                    self.stats.hits += len(keys)
                    self._remember(dict(zip(keys, stored, strict=True)))
                    return stored
                self.stats.sequence_misses += 1
                db = self._db  # None if the read degraded the cache
            found: dict[str, int] = {key: memo[key] for key in keys if key in memo}
            unique = [key for key in dict.fromkeys(keys) if key not in memo]
            try:
                for start in range(0, len(unique), _BATCH):
                    if db is None:
                        break
                    chunk = unique[start : start + _BATCH]
                    marks = ",".join("?" * len(chunk))
                    rows = db.execute(
                        f"SELECT key, n FROM counts WHERE estimator = ? AND key IN ({marks})", (self.row_key, *chunk)
                    )
                    found.update(rows)
            except sqlite3.Error as exc:
                self._degrade(exc)
                db = None
            missing = {key: record for key, record in zip(keys, items, strict=True) if key not in found}
            fresh = dict(zip(missing, self.inner.count_many(list(missing.values())), strict=True)) if missing else {}
            found.update(fresh)
            counts = [found[key] for key in keys]
            if db is not None and (fresh or sequence is not None):
                self._store(db, fresh, sequence, counts)
            self.stats.misses += len(missing)
            self.stats.hits += len(keys) - len(missing)
            self._remember(found)
        return counts

    def _read_sequence(self, db: sqlite3.Connection, sequence: str, length: int) -> list[int] | None:
        """The counts stored for a sequence key; None on a miss (also for a row that is not ``length``
        packed counts, which the miss then overwrites)."""
        try:
            row = db.execute(
                "SELECT counts FROM sequences WHERE estimator = ? AND key = ?", (self.row_key, sequence)
            ).fetchone()
        except sqlite3.Error as exc:
            self._degrade(exc)
            return None
        if row is None or not isinstance(row[0], bytes) or len(row[0]) != length * _PACKED.itemsize:
            return None
        return _unpack(row[0])

    def _store(self, db: sqlite3.Connection, fresh: dict[str, int], sequence: str | None, counts: list[int]) -> None:
        """Write the new per-record counts and the sequence row (if any) in one transaction."""
        try:
            db.execute("BEGIN")
            if fresh:
                db.executemany(
                    "INSERT OR REPLACE INTO counts (estimator, key, n) VALUES (?, ?, ?)",
                    [(self.row_key, key, n) for key, n in fresh.items()],
                )
            if sequence is not None:
                newest = db.execute(
                    "INSERT OR REPLACE INTO sequences (estimator, key, counts) VALUES (?, ?, ?)",
                    (self.row_key, sequence, _pack(counts)),
                ).lastrowid
                if newest is not None and newest > _SEQUENCES_MAX:  # rowids grow by one per row stored
                    db.execute("DELETE FROM sequences WHERE rowid <= ?", (newest - _SEQUENCES_MAX,))
            db.execute("COMMIT")
        except sqlite3.Error as exc:  # e.g. "database or disk is full"
            self._degrade(exc)

    def _remember(self, found: dict[str, int]) -> None:
        memo = self._memo
        if len(memo) + len(found) > _MEMO_MAX:  # bounded: a whole history's records would not fit
            memo.clear()
        memo.update(found)

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
#: Default cache files whose folder cannot be made, with why (`CacheDirError`): never opened.
_UNUSABLE: dict[Path, BaseException] = {}


_TOKENS_DIGEST: list[str] = []  # the digest of workbench/tokens' sources, computed once per process


def _code_of(cls: type) -> str:
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):  # defined in a notebook or with exec: its methods' bytecode instead
        parts = []
        for name in ("count", "count_many"):
            code = getattr(getattr(cls, name, None), "__code__", None)
            if code is not None:
                parts.append(code.co_code.hex() + repr(code.co_consts))
        return f"{cls.__module__}.{cls.__qualname__}:" + "|".join(parts)


def estimator_fingerprint(estimator: Estimator) -> str:
    """16 hex digits that change when what ``estimator`` counts can change (module docstring)."""
    from importlib.metadata import PackageNotFoundError, version

    from ..util.version import __version__

    if not _TOKENS_DIGEST:
        digest = hashlib.blake2b(digest_size=16)
        for source in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
        _TOKENS_DIGEST.append(digest.hexdigest())
        try:
            _TOKENS_DIGEST.append(version("tiktoken"))
        except PackageNotFoundError:  # pragma: no cover (a hard dependency)
            _TOKENS_DIGEST.append("")
    text = "\n".join([__version__, *_TOKENS_DIGEST, _code_of(type(estimator))])
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _default_path() -> Path:
    """The default cache file for the current environment, resolved (and its folder created) once."""
    env = tuple(os.environ.get(v) for v in ("WORKBENCH_CACHE_DIR", "XDG_CACHE_HOME", "HOME"))  # cache_root's inputs
    if env not in _DEFAULT_PATHS:
        try:
            _DEFAULT_PATHS[env] = cache_root() / "token-counts.sqlite"
        except CacheDirError as exc:  # the folder cannot be made: counted without the cache (`CachedEstimator`)
            _DEFAULT_PATHS[env] = (exc.root or Path(os.devnull)) / "token-counts.sqlite"
            _UNUSABLE[_DEFAULT_PATHS[env]] = exc
    return _DEFAULT_PATHS[env]


def cached_estimator(name: str, path: Path | None = None) -> CachedEstimator:
    """The cached estimator for ``name``; one shared instance per (name, cache file) in a process."""
    key = (name, path or _default_path())
    if key not in _SHARED:
        _SHARED[key] = CachedEstimator(get_estimator(name), key[1])
    return _SHARED[key]
