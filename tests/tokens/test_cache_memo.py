"""The token cache's in-process memo is bounded: a whole history streaming through one process does not
keep every record's count in memory (the SQLite file keeps them all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.tokens import cache as token_cache
from workbench.tokens.estimators import get_estimator
from workbench.transcript.model import Block, Record


def test_the_memo_starts_over_past_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_cache, "_MEMO_MAX", 50)
    counter = token_cache.CachedEstimator(get_estimator("claude-rough"), tmp_path / "counts.sqlite")
    records = [
        Record(kind="user", role="user", blocks=(Block.text_block("x" * n),), has_content=True) for n in range(400)
    ]
    first = [counter.count_many(records[i : i + 10]) for i in range(0, 400, 10)]
    assert len(counter._memo) <= 50
    again = [counter.count_many(records[i : i + 10]) for i in range(0, 400, 10)]  # from the file: same counts
    plain = get_estimator("claude-rough")
    assert again == first == [plain.count_many(records[i : i + 10]) for i in range(0, 400, 10)]
    counter.close()


def test_an_estimator_that_counts_differently_does_not_read_the_old_counts(tmp_path: Path) -> None:
    """Two estimators of one name whose code differs (an upgrade, a user editing their own) keep their
    counts apart in one cache file; the same code reads what it wrote."""
    from workbench.tokens.cache import CachedEstimator, estimator_fingerprint

    records = [
        Record("user", uuid=f"u{i}", blocks=(Block.text_block("x" * (40 + i)),), has_content=True) for i in range(40)
    ]

    class Old:
        name = "mine"

        def count(self, record: Record) -> int:
            return 1

        def count_many(self, records: list[Record]) -> list[int]:
            return [self.count(r) for r in records]

    class New(Old):
        def count(self, record: Record) -> int:
            return 2

    path = tmp_path / "counts.sqlite"
    assert estimator_fingerprint(Old()) != estimator_fingerprint(New())
    assert CachedEstimator(Old(), path).count_many(records) == [1] * 40
    fresh = CachedEstimator(New(), path)
    assert fresh.count_many(records) == [2] * 40 and fresh.stats.hits == 0
    again = CachedEstimator(Old(), path)
    assert again.count_many(records) == [1] * 40 and again.stats.misses == 0


@pytest.mark.parametrize("name", ["claude-rough", "claude-padded", "tiktoken:o200k_base"])
def test_records_made_for_one_count_are_counted_as_the_cache_counts_them(tmp_path: Path, name: str) -> None:
    """`count_fresh`: a character rule counts directly (no cache key, no lookup), a tokenizer through the
    cache; either way the numbers are the cache's."""
    counter = token_cache.CachedEstimator(get_estimator(name), tmp_path / "counts.sqlite")
    records = [
        Record(kind="user", role="user", blocks=(Block.text_block("word " * n + "é" * (n % 7)),), has_content=True)
        for n in range(60)
    ]
    before = counter.stats.hits + counter.stats.misses
    fresh = counter.count_fresh(records)
    looked_up = counter.stats.hits + counter.stats.misses - before
    assert looked_up == (0 if get_estimator(name).cheap else len(records))
    assert fresh == counter.count_many(records) == get_estimator(name).count_many(records)
    counter.close()
