"""An event names what it kept by ``kept_uuids`` or, when shorter, by ``not_kept_uuids`` (`workbench.replay.rows`).

Both read back (`kept_uuid_set`, `workbench.probes.generate.event_contexts`) to the records the engine kept:
checked on arbitrary histories (hypothesis), and on every real Claude Code session replayed by strategies that
compact in place (masking, clearing) and by cutting, through ``--out``'s parquet files read back with pandas.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import make_session

from workbench.probes.generate import event_contexts
from workbench.replay import replay_session
from workbench.replay.frames import FrameWriter
from workbench.replay.kept import KeptIndex
from workbench.replay.rows import kept_columns, kept_uuid_set
from workbench.strategies import create
from workbench.transcript import Record, load_paths

_RECORD = make_session(turns=1, tools=1).records[0]


def _records(uuids: list[str | None]) -> list[Record]:
    return [replace(_RECORD, uuid=u) for u in uuids]


_UUIDS = st.lists(st.one_of(st.none(), st.sampled_from([f"u{i}" for i in range(12)])), max_size=14)


@settings(max_examples=400, deadline=None)
@given(history=_UUIDS, kept=_UUIDS, cut=st.integers(0, 14), stripped=st.sets(st.integers(0, 13)))
def test_either_column_reads_back_to_the_kept_records(
    history: list[str | None], kept: list[str | None], cut: int, stripped: set[int]
) -> None:
    """The reader's history is a subset of the engine's (recorded compactions stripped from it, fewer
    records before the call): whichever column is listed, it reads back to the kept uuids in that history."""
    columns = kept_columns(_records(kept), history)
    listed, not_kept = columns["kept_uuids"], columns["not_kept_uuids"]
    assert (listed is None) != (not_kept is None)
    if not_kept is not None:
        assert len(not_kept) < len(kept)  # listed only when shorter, in the history's order
        assert not_kept == [u for u in dict.fromkeys(history) if u is not None and u not in set(kept)]
    else:
        assert listed == kept
    reader = _records([u for i, u in enumerate(history[:cut]) if i not in stripped])
    expected = {r.uuid for r in reader if r.uuid is not None and r.uuid in set(kept)}
    assert kept_uuid_set(columns, reader) == expected


def test_a_missing_or_empty_column_keeps_nothing_and_arrays_read_like_lists() -> None:
    history = _records(["a", "b", None, "c"])
    assert kept_uuid_set({}, history) == set()
    assert kept_uuid_set({"kept_uuids": float("nan"), "not_kept_uuids": None}, history) == set()
    assert kept_uuid_set({"kept_uuids": [], "not_kept_uuids": None}, history) == set()
    assert kept_uuid_set({"kept_uuids": None, "not_kept_uuids": pd.Series(["b"]).to_numpy()}, history) == {"a", "c"}
    assert kept_uuid_set({"kept_uuids": pd.Series(["c", "z"]).to_numpy()}, history) == {"c"}


@pytest.fixture(scope="module")
def claude_code_sessions(corpus: Path) -> list:
    sessions = [s for folder in ("claude-code", "claude-code-more") for s in load_paths([corpus / folder])]
    assert len(sessions) > 40
    return sessions


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["observation-masking", "clear-tool-uses", "claude-code", "sm-compact-naive"])
def test_real_events_read_back_from_parquet_keep_what_the_engine_kept(
    claude_code_sessions: list, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full: list[list[str | None]] = []  # every record each event kept, listed, in the order of the events

    def recording(index: KeptIndex, context: Any, compaction: Any, kept: Any, *args: Any) -> Any:
        full.append([r.uuid for r in kept()])
        return event(index, context, compaction, kept, *args)

    event = KeptIndex.event
    monkeypatch.setattr(KeptIndex, "event", recording)
    writer = FrameWriter(tmp_path / "out")
    by_key = {}
    for session in claude_code_sessions:
        by_key[(session.id, session.source)] = session
        writer.add(replay_session(session, create(name)))
    writer.close()
    events = pd.read_parquet(tmp_path / "out" / "events.parquet")
    events = events[events["kind"] != "recorded-compact"]
    assert len(events) == len(full) > 0

    complements = 0
    for (_, row), every in zip(events.iterrows(), full, strict=True):
        session = by_key[(row["session_id"], row["file"])]
        dropped, kept, history = event_contexts(session, row)
        listed = set(every) - {r.uuid for r in dropped}
        assert kept == [r for r in history if r.uuid is not None and r.uuid in listed], (session.id, row["step"])
        complements += row["kept_uuids"] is None
    if name in ("observation-masking", "clear-tool-uses"):
        assert complements == len(events)  # in place: the few records changed are listed, not the many kept
        assert events["not_kept_uuids"].map(len).sum() < len(events) * 20
    else:
        assert complements < len(events)
