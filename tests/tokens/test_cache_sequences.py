"""The token cache's per-sequence level: a request for a whole session's counts that the
in-process memo cannot answer reads one row of ``sequences`` instead of one ``counts`` row per record.
A lookup per record costs ~6 µs each, ~0.43 s of a 4.7 s warm replay."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from workbench.tokens import cache as cache_module
from workbench.tokens.cache import CacheDegradedWarning, CachedEstimator
from workbench.tokens.estimators import get_estimator
from workbench.transcript import Block, Record, load_paths

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def records() -> list[Record]:
    """474 records of a session, then 80 of them again in reverse order: order and repeats must survive."""
    session = next(s for s in load_paths([DATA / "long-autocompact-e3e70682.jsonl"]) if s.records)
    conversation = session.conversation()
    assert len(conversation) > 2 * cache_module._SEQUENCE_MIN
    return [*conversation, *reversed(conversation[:80])]


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "_WARNED", set())


class _Queries:
    """The SELECTs one estimator's connection runs from now on (SQLite's own trace, nothing timed)."""

    def __init__(self, estimator: CachedEstimator) -> None:
        assert estimator._db is not None
        self.statements: list[str] = []
        estimator._db.set_trace_callback(self.statements.append)

    def lookups(self, table: str) -> int:
        return sum(1 for s in self.statements if s.lstrip().upper().startswith("SELECT") and f"FROM {table}" in s)


def _row_key(name: str) -> str:
    """What the cache stores an estimator's rows under: its name and code fingerprint."""
    from workbench.tokens.cache import estimator_fingerprint

    return f"{name}@{estimator_fingerprint(get_estimator(name))}"


def _fresh(path: Path, name: str = "claude-rough") -> CachedEstimator:
    """A new estimator on the same file: the state of a new process (empty memo, new connection)."""
    return CachedEstimator(get_estimator(name), path)


def _rows(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT estimator, length(counts) FROM sequences ORDER BY rowid").fetchall()


def _user(text: str) -> Record:
    return Record("user", role="user", blocks=(Block.text_block(text),), string_content=True, has_content=True)


def test_a_warm_request_reads_one_sequence_row_and_no_record(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "counts.sqlite"
    cold = _fresh(path)
    counts = cold.count_many(records)
    assert cold.stats.sequence_misses == 1 and cold.stats.misses == len(set(r.content_key for r in records))
    cold.close()

    warm = _fresh(path)
    queries = _Queries(warm)
    assert warm.count_many(records) == counts == get_estimator("claude-rough").count_many(records)
    assert queries.lookups("sequences") == 1 and queries.lookups("counts") == 0
    assert (warm.stats.hits, warm.stats.misses, warm.stats.sequence_hits) == (len(records), 0, 1)
    # the hit filled the memo: later requests for some of these records read nothing
    assert warm.count_many(records[100:110]) == counts[100:110]
    assert warm.count_many(records[:300]) == counts[:300]
    assert queries.lookups("sequences") == 1 and queries.lookups("counts") == 0
    assert warm.stats.hits == len(records) + 310


@pytest.mark.parametrize("name", ["claude-rough", "claude-padded", "tiktoken:o200k_base"])
def test_counts_are_identical_with_and_without_the_sequence_row(
    tmp_path: Path, records: list[Record], name: str
) -> None:
    path = tmp_path / "counts.sqlite"
    plain = get_estimator(name).count_many(records)
    assert _fresh(path, name).count_many(records) == plain  # counted, stored with its sequence row
    assert _rows(path) == [(_row_key(name), 8 * len(records))]
    from_row = _fresh(path, name)
    assert from_row.count_many(records) == plain and from_row.stats.sequence_hits == 1
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM sequences")
    from_counts = _fresh(path, name)
    assert from_counts.count_many(records) == plain
    assert from_counts.stats.sequence_misses == 1 and from_counts.stats.misses == 0
    assert _rows(path) == [(_row_key(name), 8 * len(records))]  # stored again


def test_one_record_different_misses_the_row_and_still_counts_right(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "counts.sqlite"
    _fresh(path).count_many(records)
    changed = [*records[:200], _user("a line Claude Code appended " * 40), *records[201:]]

    first = _fresh(path)
    queries = _Queries(first)
    assert first.count_many(changed) == get_estimator("claude-rough").count_many(changed)
    assert queries.lookups("sequences") == 1 and queries.lookups("counts") >= 1
    assert (first.stats.sequence_misses, first.stats.misses) == (1, 1)  # only the new record is tokenized
    assert len(_rows(path)) == 2

    again = _fresh(path)
    queries = _Queries(again)
    assert again.count_many(changed) == first.count_many(changed)
    assert queries.lookups("sequences") == 1 and queries.lookups("counts") == 0


def test_short_requests_are_looked_up_record_by_record(tmp_path: Path, records: list[Record]) -> None:
    """Below `_SEQUENCE_MIN` records (what a compaction drops or adds) nothing is stored or looked up."""
    path = tmp_path / "counts.sqlite"
    short = records[: cache_module._SEQUENCE_MIN - 1]
    _fresh(path).count_many(short)
    estimator = _fresh(path)
    queries = _Queries(estimator)
    assert estimator.count_many(short) == get_estimator("claude-rough").count_many(short)
    assert queries.lookups("sequences") == 0 and _rows(path) == []


def test_the_table_keeps_the_newest_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "_SEQUENCES_MAX", 3)
    path = tmp_path / "counts.sqlite"
    lists = [[_user(f"list {i} record {j} " * (j + 1)) for j in range(70)] for i in range(5)]
    estimator = _fresh(path)
    for items in lists:
        estimator.count_many(items)
    assert _stored(path) == {_key(items) for items in lists[2:]}
    evicted = _fresh(path)
    assert evicted.count_many(lists[0]) == get_estimator("claude-rough").count_many(lists[0])
    assert (evicted.stats.sequence_misses, evicted.stats.misses) == (1, 0)  # its counts rows are still there
    assert _stored(path) == {_key(items) for items in (lists[3], lists[4], lists[0])}  # stored again


def _key(items: list[Record]) -> str:
    return cache_module._sequence_key([r.content_key for r in items])


def _stored(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {key for (key,) in db.execute("SELECT key FROM sequences")}


def test_a_cache_file_of_an_earlier_release_gets_the_table(tmp_path: Path, records: list[Record]) -> None:
    """An old file has only ``counts``: it keeps answering, and ``sequences`` is created next to it."""
    path = tmp_path / "counts.sqlite"
    plain = get_estimator("claude-rough").count_many(records)
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE counts (estimator TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL,"
            " PRIMARY KEY (estimator, key)) WITHOUT ROWID"
        )
        db.executemany(
            f"INSERT OR REPLACE INTO counts VALUES ('{_row_key('claude-rough')}', ?, ?)",
            [(r.content_key, n) for r, n in zip(records, plain, strict=True)],
        )
    old = _fresh(path)
    assert old.count_many(records) == plain and old.stats.misses == 0
    assert _rows(path) == [(_row_key("claude-rough"), 8 * len(records))]


def test_a_sequence_row_of_the_wrong_length_is_a_miss_and_is_rewritten(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "counts.sqlite"
    _fresh(path).count_many(records)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sequences SET counts = ?", (b"\x00" * 8,))
    estimator = _fresh(path)
    assert estimator.count_many(records) == get_estimator("claude-rough").count_many(records)
    assert estimator.stats.sequence_misses == 1 and estimator.degraded is None
    assert _rows(path) == [(_row_key("claude-rough"), 8 * len(records))]


def test_a_sequences_table_sqlite_cannot_read_degrades_with_one_warning(tmp_path: Path, records: list[Record]) -> None:
    """A corrupt or foreign ``sequences`` table (here: another shape) is a cache SQLite cannot use."""
    path = tmp_path / "counts.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sequences (something_else TEXT)")
    estimator = _fresh(path, "claude-padded")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert estimator.count_many(records) == get_estimator("claude-padded").count_many(records)
        assert estimator.count_many(list(reversed(records))) == get_estimator("claude-padded").count_many(
            list(reversed(records))
        )
    mine = [w for w in caught if issubclass(w.category, CacheDegradedWarning)]
    assert len(mine) == 1 and str(path) in str(mine[0].message) and "no such column" in str(mine[0].message)
    assert estimator.degraded is not None and estimator._db is None


def test_a_sequence_row_sqlite_cannot_write_degrades_with_one_warning(tmp_path: Path, records: list[Record]) -> None:
    """Every count is already in the file, only the sequence row is new: a read-only file fails that write."""
    path = tmp_path / "counts.sqlite"
    _fresh(path).count_many(records)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM sequences")
    estimator = _fresh(path)
    assert estimator._db is not None
    estimator._db.execute("PRAGMA query_only = 1")  # as a read-only file answers writes (we run as root here)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert estimator.count_many(records) == get_estimator("claude-rough").count_many(records)
    mine = [w for w in caught if issubclass(w.category, CacheDegradedWarning)]
    assert len(mine) == 1 and "readonly" in str(mine[0].message)
    assert estimator.stats.misses == 0 and estimator.degraded is not None
    assert _rows(path) == []


def test_processes_storing_the_same_sequence_at_once_agree(tmp_path: Path) -> None:
    """Sweep workers count the same session concurrently on one file: one row, the same counts everywhere."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from workbench.tokens.cache import CachedEstimator\n"
        "from workbench.tokens.estimators import get_estimator\n"
        "from workbench.transcript import Block, Record\n"
        "rs = [Record('user', role='user', blocks=(Block.text_block('x' * (4 * i + 4)),), string_content=True,\n"
        "             has_content=True) for i in range(200)]\n"
        "e = CachedEstimator(get_estimator('claude-rough'), Path(sys.argv[1]))\n"
        "print(sum(e.count_many(rs)), e.degraded)\n"
    )
    path = tmp_path / "shared.sqlite"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4
    assert outputs == [f"{sum(range(1, 201))} None"] * 4
    assert _rows(path) == [(_row_key("claude-rough"), 8 * 200)]
    warm = _fresh(path)
    queries = _Queries(warm)
    warm.count_many([_user("x" * (4 * i + 4)) for i in range(200)])
    assert queries.lookups("sequences") == 1 and queries.lookups("counts") == 0
