"""A tune measures its cells a few whole sessions at a time (`ResultStore.session_parts`).

The parts give every cell once with exactly the rows the store holds for it, whole sessions only (also a
session whose cells two sweeps stored in different batches); a part holds at most the part size plus one
batch; and the tune's per-session table measured in parts of one session equals one `cell_table` of every
cell, value for value and in the same order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import workbench as wb
from workbench.experiments import tables, tune
from workbench.experiments.store import ResultStore
from workbench.experiments.tables import cell_table, sweep_frames

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus() -> Any:
    return wb.load(ROOT / "data", progress=False)


def _tune(corpus: Any, store: Path, space: dict[str, list[Any]]) -> Any:
    return wb.tune(corpus, "sm-compact", space=space, store=store, executor="inline", progress=False)


@pytest.fixture(scope="module")
def two_runs(corpus: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A store two tunes filled: the second grid adds cells of every session in new batches."""
    store = tmp_path_factory.mktemp("parts") / "store"
    _tune(corpus, store, {"min_tokens": [5_000]})
    result = _tune(corpus, store, {"min_tokens": [5_000, 20_000], "trigger.pct_of_window": [40, 80]})
    return store, result


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The smoke tune: 36 configs × 6 sessions, several sessions per stored batch."""
    store = tmp_path_factory.mktemp("smoke") / "store"
    spec = ROOT / "experiments" / "tune-smoke.yaml"
    return store, wb.tune(str(spec), store=store, executor="inline", progress=False)


def _key(frame: pd.DataFrame) -> pd.Series:
    return frame["session_id"].astype(str) + "|" + frame["file"].astype(str)


@pytest.mark.parametrize("rows", [1, 200, 10**9])
def test_parts_give_each_cell_once_with_its_rows_whole_sessions_only(two_runs: tuple[Path, Any], rows: int) -> None:
    store = ResultStore(two_runs[0])
    cells = store.cells(two_runs[1].sweep.cell_ids)
    spans = cells.groupby(_key(cells))["batch"].nunique()
    assert (spans > 1).any(), "no session spans two batches: the fixture does not test the wait"
    batch_rows = store.steps(cells).groupby("batch").size().max()
    seen: list[str] = []
    sessions: list[set[str]] = []
    for part_cells, steps, events in store.session_parts(cells, rows=rows):
        seen.extend(part_cells["cell_id"])
        sessions.append(set(_key(part_cells)))
        assert sorted(steps["cell_id"]) == sorted(store.steps(part_cells)["cell_id"])
        pd.testing.assert_frame_equal(
            steps.sort_values(["cell_id", "step"]).reset_index(drop=True),
            store.steps(part_cells).sort_values(["cell_id", "step"]).reset_index(drop=True),
        )
        assert len(events) == len(store.events(part_cells))
        assert len(steps) <= max(rows, 1) + 2 * batch_rows  # what was gathered, and one batch over
    assert sorted(seen) == sorted(cells["cell_id"])
    assert sum(len(s) for s in sessions) == len(set().union(*sessions))  # a session comes in one part
    if rows == 1:  # the sessions of one batch too come one part each
        assert all(len(s) == 1 for s in sessions)


def test_a_tune_measured_in_parts_equals_one_table_of_every_cell(
    smoke: tuple[Path, Any], corpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, result = smoke
    cells, steps, events = sweep_frames(ResultStore(store), result.sweep.cell_ids)
    families = ("savings", "validity", "cost", "fidelity")
    whole = tune.with_added_columns(cell_table(cells, steps, events, list(corpus), families), steps, "none")
    calls: list[int] = []
    measured = tables.cell_table

    def counted(cells: pd.DataFrame, steps: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.DataFrame:
        calls.append(len(steps))
        return measured(cells, steps, *args, **kwargs)

    monkeypatch.setattr(tables, "cell_table", counted)
    monkeypatch.setattr(tune, "PART_ROWS", 1)  # one session per part
    parts, _ = tune._measured(ResultStore(store), result.plan, result.sweep.cell_ids, families, "none")
    assert len(calls) == len(corpus) and max(calls) < len(steps)
    pd.testing.assert_frame_equal(parts, whole.reset_index(drop=True), check_exact=True, check_dtype=False)


def test_the_tune_holds_one_session_at_a_time_when_asked(
    corpus: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With parts of one row, no `cell_table` call sees more than one session's rows (the sessions of a tune
    over files are read for their part, the plan holds only their metadata)."""
    calls: list[int] = []
    measured = tables.cell_table

    def counted(cells: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.DataFrame:
        calls.append(cells["session_id"].nunique())
        return measured(cells, *args, **kwargs)

    monkeypatch.setattr(tables, "cell_table", counted)
    monkeypatch.setattr(tune, "PART_ROWS", 1)
    result = wb.tune(
        str(ROOT / "experiments" / "tune-smoke.yaml"), store=tmp_path / "s", executor="inline", progress=False
    )
    assert result.recommended is not None
    assert calls and max(calls) == 1 and len(calls) == result.sessions
