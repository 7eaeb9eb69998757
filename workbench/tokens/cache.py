"""Per-record token counts cached on disk, keyed by (record content hash, estimator name).

A SQLite file under the workbench cache folder (``WORKBENCH_CACHE_DIR``). Lookups are batched, so a
second run over the same corpus tokenizes nothing: every count is one indexed read. ``stats`` counts
hits and misses so callers (and tests) can check that.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..cache import cache_root
from ..transcript.model import Record
from .estimators import Estimator, get_estimator

__all__ = ["CachedEstimator", "CacheStats", "cached_estimator"]

_BATCH = 500


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class CachedEstimator:
    """Wraps a per-record estimator with the on-disk cache; same interface (``count``, ``count_many``)."""

    def __init__(self, inner: Estimator, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = path or cache_root() / "token-counts.sqlite"
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS counts (estimator TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL,"
            " PRIMARY KEY (estimator, key)) WITHOUT ROWID"
        )

    def count(self, record: Record) -> int:
        return self.count_many([record])[0]

    def count_many(self, records: Iterable[Record]) -> list[int]:
        items: Sequence[Record] = records if isinstance(records, Sequence) else list(records)
        keys = [record.content_key for record in items]
        found: dict[str, int] = {}
        with self._lock:
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), _BATCH):
                chunk = unique[start : start + _BATCH]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, n FROM counts WHERE estimator = ? AND key IN ({marks})", (self.name, *chunk)
                )
                found.update(rows)
            missing = {key: record for key, record in zip(keys, items, strict=True) if key not in found}
            if missing:
                fresh = dict(zip(missing, self.inner.count_many(list(missing.values())), strict=True))
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR REPLACE INTO counts (estimator, key, n) VALUES (?, ?, ?)",
                    [(self.name, key, n) for key, n in fresh.items()],
                )
                self._db.execute("COMMIT")
                found.update(fresh)
            self.stats.misses += len(missing)
            self.stats.hits += len(keys) - len(missing)
        return [found[key] for key in keys]

    def close(self) -> None:
        self._db.close()


def cached_estimator(name: str, path: Path | None = None) -> CachedEstimator:
    return CachedEstimator(get_estimator(name), path)
