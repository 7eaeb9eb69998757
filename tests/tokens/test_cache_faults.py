"""The token cache never fails a count: "database or disk is full" from the SQLite cache does not abort
the replay."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from workbench.tokens import cache as cache_module
from workbench.tokens.cache import CacheDegradedWarning, CachedEstimator, cached_estimator
from workbench.tokens.estimators import get_estimator
from workbench.transcript import load_paths

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture()
def session():
    return next(s for s in load_paths([DATA / "long-autocompact-e3e70682.jsonl"]) if s.records)


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(cache_module, "_WARNED", set())


def _fill_up(estimator: CachedEstimator) -> None:
    """Make the cache file full: SQLite then answers every insert with "database or disk is full"."""
    pages = estimator._db.execute("PRAGMA page_count").fetchone()[0]
    estimator._db.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_degrades_to_uncached_counting_with_one_warning(tmp_path, session):
    estimator = CachedEstimator(get_estimator("claude-rough"), tmp_path / "counts.sqlite")
    _fill_up(estimator)
    records = session.conversation()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = estimator.count_many(records)
        again = estimator.count_many(list(reversed(records)))
        estimator.count(records[0])
    assert counts == get_estimator("claude-rough").count_many(records)
    assert again == list(reversed(counts))
    mine = [w for w in caught if issubclass(w.category, CacheDegradedWarning)]
    assert len(mine) == 1
    message = str(mine[0].message)
    assert "database or disk is full" in message and str(tmp_path / "counts.sqlite") in message
    assert estimator.degraded == "database or disk is full"


def test_a_replay_survives_a_full_cache_and_gives_the_same_result(tmp_path, monkeypatch, session):
    from workbench.replay import replay_session
    from workbench.strategies import create

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "ok"))
    reference = replay_session(session, create("sm-compact"))
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "full"))
    for name in ("claude-rough", "claude-padded"):
        _fill_up(cached_estimator(name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = replay_session(session, create("sm-compact"))
    assert result.steps == reference.steps and result.events == reference.events
    assert len([w for w in caught if issubclass(w.category, CacheDegradedWarning)]) == 1


def test_a_cache_file_that_is_not_a_database_is_not_fatal(tmp_path, session):
    path = tmp_path / "counts.sqlite"
    path.write_bytes(b"this is not a SQLite file" * 100)
    with pytest.warns(CacheDegradedWarning, match="not a database"):
        estimator = CachedEstimator(get_estimator("claude-padded"), path)
    records = session.conversation()
    assert estimator.count_many(records) == get_estimator("claude-padded").count_many(records)
