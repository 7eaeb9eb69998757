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
