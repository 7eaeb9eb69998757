"""`FrameWriter` (``replay --out``): the two parquet files are what one frame over every row writes, however
the rows are cut into parts (a part per session, parts across sessions, one part)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from workbench.replay import replay_frames, replay_sessions
from workbench.replay.frames import FrameWriter
from workbench.strategies import create
from workbench.transcript import load_paths

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def results() -> dict[str, list]:  # type: ignore[type-arg]
    sessions = [s for s in load_paths([DATA]) if s.records]
    assert len(sessions) >= 5
    return {name: list(replay_sessions(sessions, create(name), progress=False)) for name in ("none", "claude-code")}


@pytest.mark.parametrize("strategy", ["none", "claude-code"])
@pytest.mark.parametrize("rows", [1, 7, 10_000])
def test_parts_of_any_size_write_what_one_frame_writes(tmp_path: Path, results: dict, strategy: str, rows: int) -> None:  # type: ignore[type-arg]
    reference = tmp_path / "reference"
    reference.mkdir()
    steps, events = replay_frames(results[strategy])
    steps.to_parquet(reference / "steps.parquet", index=False)
    events.to_parquet(reference / "events.parquet", index=False)
    writer = FrameWriter(tmp_path / "out", rows=rows)
    for result in results[strategy]:
        writer.add(result)
    writer.close()
    for table in ("steps", "events"):
        ours, theirs = tmp_path / "out" / f"{table}.parquet", reference / f"{table}.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(ours), pd.read_parquet(theirs), check_exact=True)
        assert pq.read_schema(ours).remove_metadata() == pq.read_schema(theirs).remove_metadata()
    assert not list((tmp_path / "out").glob(".parts-*")), "the parts are removed"
    assert len(pd.read_parquet(tmp_path / "out" / "steps.parquet")) == sum(len(r.steps) for r in results[strategy])


def test_rows_wait_until_the_bound(tmp_path: Path, results: dict) -> None:  # type: ignore[type-arg]
    writer = FrameWriter(tmp_path / "out", rows=10_000)
    for result in results["none"]:
        writer.add(result)
    assert writer._parts is not None and not list(writer._parts.iterdir())  # nothing written yet
    writer.close()
    one = FrameWriter(tmp_path / "one", rows=1)
    one.add(results["none"][0])
    assert one._parts is not None and len(list(one._parts.iterdir())) == 1  # written at once
    one.discard()


@pytest.mark.parametrize("rows", [1, 2, 10_000])
def test_an_integer_column_null_in_some_part_is_float_as_in_one_frame(tmp_path: Path, rows: int) -> None:
    from workbench.replay.engine import ReplayResult

    results = []
    for index, values in enumerate(([1, 2], [None], [3], [None, None])):
        result = ReplayResult(f"s{index}", f"f{index}.jsonl", "none")
        result.steps = [{"session_id": f"s{index}", "n": v, "flag": v is None, "note": None} for v in values]
        results.append(result)
    writer = FrameWriter(tmp_path / "out", rows=rows)
    for result in results:
        writer.add(result)
    writer.close()
    steps = pd.read_parquet(tmp_path / "out" / "steps.parquet")
    expected = pd.DataFrame([row for r in results for row in r.steps])
    reference = _written(expected, tmp_path / "ref.parquet")
    assert str(steps["n"].dtype) == "float64"
    pd.testing.assert_frame_equal(steps, pd.read_parquet(reference), check_exact=True)
    ours = pq.read_schema(tmp_path / "out" / "steps.parquet").remove_metadata()
    assert ours == pq.read_schema(reference).remove_metadata() and str(ours.field("n").type) == "double"


def _written(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("entries", [1, 5, 12, 10_000])
def test_long_list_columns_cut_a_session_into_parts_that_join_as_one_frame(tmp_path: Path, entries: int) -> None:
    """An in-place compaction's event lists every kept record: the entries bound cuts one session's events
    into several parts (also between its steps and its events), and the files are still one frame's."""
    from workbench.replay.engine import ReplayResult

    results = []
    for index in range(3):
        result = ReplayResult(f"s{index}", f"f{index}.jsonl", "masking")
        result.steps = [{"session_id": f"s{index}", "step": n} for n in range(4)]
        result.events = [
            {
                "session_id": f"s{index}",
                "step": n,
                "kept_uuids": [f"u{k}" for k in range(n + index)],
                "dropped": [],
                "note": None,
            }
            for n in range(5)
        ]
        results.append(result)
    writer = FrameWriter(tmp_path / "out", entries=entries)
    cuts, pending = 0, 0  # the bound's rule: a part whenever the pending events reach `entries` entries
    for result in results:
        writer.add(result)
        for row in result.events:
            pending += len(row["kept_uuids"])
            if pending >= entries:
                cuts, pending = cuts + 1, 0
        assert writer._parts is not None and len(list(writer._parts.glob("events-*"))) == cuts
    if entries <= 5:
        assert cuts > len(results)  # more parts than sessions: cut inside them
    writer.close()
    expected = {
        "steps": pd.DataFrame([row for r in results for row in r.steps]),
        "events": pd.DataFrame([row for r in results for row in r.events]),
    }
    for table, frame in expected.items():
        reference = _written(frame, tmp_path / f"{table}-ref.parquet")
        ours = tmp_path / "out" / f"{table}.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(ours), pd.read_parquet(reference), check_exact=True)
        assert pq.read_schema(ours).remove_metadata() == pq.read_schema(reference).remove_metadata()
