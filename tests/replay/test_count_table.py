"""Per-record counts by record identity hold their records (`sizes.CountTable`): CPython reuses a freed
object's address, and a table that did not keep its records handed a record made later the count of one
that had died at that address. Seen as an ``aider`` replay of a real session that compacted once less when
its records came from the parsed-session cache (other objects alive, other addresses reused)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from workbench.replay import replay_session
from workbench.replay.sizes import CountTable, LazyCounts
from workbench.strategies.registry import create
from workbench.tokens.cache import cached_estimator
from workbench.transcript import load_paths
from workbench.transcript.model import Block, Record


def _note(text: str) -> Record:
    return Record(kind="user", role="user", blocks=(Block.text_block(text),), has_content=True, modified=True)


def test_a_record_made_later_never_gets_the_count_of_a_dead_one() -> None:
    table = CountTable()
    long = _note("a long tool output line\n" * 400)
    assert LazyCounts([long], table, "claude-rough")[0] > 1000
    address = id(long)
    del long
    gc.collect()
    made, same_address = [], []
    for _ in range(5000):  # CPython hands a freed block to the next object of its size: find one
        record = _note("ok")
        (same_address if id(record) == address else made).append(record)
    short = [*same_address, *made[:3]]
    assert list(LazyCounts(short, table, "claude-rough")) == cached_estimator("claude-rough").count_many(short)
    assert not same_address  # the table still holds the long record: its address is not free


def test_a_replay_is_the_same_whether_its_sessions_came_from_the_cache_or_a_parse(
    corpus: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    path = corpus / "claude-code-more" / "obra-episodic-memory" / "large-conversation.jsonl"
    monkeypatch.setenv("WORKBENCH_SESSION_CACHE", "0")
    parsed = list(load_paths([path]))
    monkeypatch.delenv("WORKBENCH_SESSION_CACHE")
    list(load_paths([path]))  # writes the entry
    cached = list(load_paths([path]))
    assert os.listdir(tmp_path / "sessions")
    for name in ("aider", "claude-code", "sm-compact"):
        a = replay_session(parsed[0], create(name))
        b = replay_session(cached[0], create(name))
        assert a.steps == b.steps and a.events == b.events, name
