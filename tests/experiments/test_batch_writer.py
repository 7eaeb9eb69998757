"""`BatchWriter`: finished tasks stored in batches of up to ``batch_size`` cells, bounded in rows and in
time, and written when the block ends, also on an error."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from workbench.experiments import ResultStore, run_sweep
from workbench.experiments.store import BatchWriter

from .conftest import TINY, write_spec


def _task(n: int, start: int = 0, steps: int = 1) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    cells = [{"cell_id": f"c{start + i}", "steps": steps, "compactions": 0} for i in range(n)]
    rows = [{"cell_id": c["cell_id"], "step": k} for c in cells for k in range(steps)]
    return cells, rows


def _sizes(store: ResultStore) -> list[int]:
    cells = store.cells()
    return cells.groupby("batch", sort=True).size().tolist() if len(cells) else []


def test_tasks_are_gathered_into_batches_of_at_most_the_batch_size(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    with BatchWriter(store, cells=5, wait_s=3600) as writer:
        for k in range(6):  # six tasks of two cells
            writer.add(*_task(2, 2 * k))
        assert writer.stored == 8  # 2+2 (a third task would make 6 > 5), twice; the last two cells wait
    assert writer.stored == 12
    assert _sizes(store) == [4, 4, 4]
    assert set(store.cells()["cell_id"]) == {f"c{i}" for i in range(12)}
    assert len(store.steps()) == 12


def test_a_batch_is_written_when_its_rows_reach_the_bound(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    with BatchWriter(store, cells=100, rows=10, wait_s=3600) as writer:
        writer.add(*_task(1, 0, steps=6))
        assert writer.stored == 0
        writer.add(*_task(1, 1, steps=6))  # 12 step rows >= 10
        assert writer.stored == 2
    assert _sizes(store) == [2]


def test_a_batch_is_written_when_its_oldest_cell_has_waited(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    writer = BatchWriter(store, cells=100, wait_s=0.2)
    assert writer.due_in() is None
    writer.add(*_task(1))
    due = writer.due_in()
    assert due is not None and 0 < due <= 0.2
    writer.flush_due()
    assert writer.stored == 0  # not yet due
    time.sleep(0.25)
    assert writer.due_in() == 0
    writer.flush_due()
    assert writer.stored == 1 and writer.due_in() is None


def test_finished_cells_are_written_when_the_block_ends_on_an_error(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    with pytest.raises(KeyboardInterrupt), BatchWriter(store, cells=100, wait_s=3600) as writer:
        writer.add(*_task(3))
        raise KeyboardInterrupt
    assert sorted(store.cells()["cell_id"]) == ["c0", "c1", "c2"]


def test_a_failed_write_on_the_way_out_does_not_hide_the_first_error(tmp_path: Path) -> None:
    class Full(ResultStore):
        def write_tables(self, *args: object, **kwargs: object) -> str:
            raise OSError("disk full")

    with pytest.raises(ValueError, match="the first"), BatchWriter(Full(tmp_path / "s"), cells=9) as writer:
        writer.add(*_task(1))
        raise ValueError("the first")
    with pytest.raises(OSError, match="disk full"), BatchWriter(Full(tmp_path / "s"), cells=9) as writer:
        writer.add(*_task(1))


def test_a_sweep_stores_fewer_batches_than_tasks(tmp_path: Path) -> None:
    """Six sessions of five cells (TINY's grid), a task each: batch size 64 gathers every task into one
    batch; batch size 1 makes tasks of one cell, stored `BATCH_TASKS` (8) at a time; batch size 2 makes
    tasks of 2, 2 and 1 cells per session, and a batch stops before a task would take it past 16 cells."""
    from workbench.experiments.run import BATCH_TASKS

    assert BATCH_TASKS == 8
    spec = write_spec(tmp_path, TINY)
    one = run_sweep(spec, store=tmp_path / "one", executor="inline", progress=False)
    assert one.cells_computed == 30 and _sizes(ResultStore(tmp_path / "one")) == [30]
    single = run_sweep(spec, store=tmp_path / "single", executor="inline", progress=False, batch_size=1)
    assert single.cells_computed == 30 and _sizes(ResultStore(tmp_path / "single")) == [8, 8, 8, 6]
    run_sweep(spec, store=tmp_path / "two", executor="inline", progress=False, batch_size=2)
    assert _sizes(ResultStore(tmp_path / "two")) == [15, 15]


def test_bounds_must_be_positive(tmp_path: Path) -> None:
    for bad in ({"cells": 0}, {"cells": 1, "rows": 0}, {"cells": 1, "wait_s": -1}):
        with pytest.raises(ValueError, match="at least one cell"):
            BatchWriter(ResultStore(tmp_path / "s"), **bad)  # type: ignore[arg-type]


def test_a_sweep_writes_a_due_batch_while_later_tasks_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver wakes up when a pending batch is due, not only when a task finishes: the first task's
    cells are committed while every other task is still held back (they finish only once a watcher has
    seen that batch in the store)."""
    import threading
    from collections.abc import Iterator
    from concurrent.futures import Executor, Future
    from contextlib import contextmanager

    from workbench.experiments import run as run_module

    gate = threading.Event()

    class Held(Executor):
        submitted = 0

        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def,override]
            future: Future[object] = Future()
            result = fn(*args, **kwargs)  # computed now; the first task's result is handed back at once
            Held.submitted += 1
            if Held.submitted == 1:
                future.set_result(result)
            else:
                threading.Thread(target=lambda: (gate.wait(30), future.set_result(result)), daemon=True).start()
            return future

    @contextmanager
    def held(name: str, workers: int | None) -> Iterator[Executor]:
        yield Held()

    monkeypatch.setattr(run_module, "make_executor", held)
    store = tmp_path / "store"
    seen: list[int] = []

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not seen:
            if (store / "cells").is_dir() and ResultStore(store).batches():
                seen.append(len(ResultStore(store).cells()))
            time.sleep(0.05)
        gate.set()

    threading.Thread(target=watch, daemon=True).start()
    result = run_sweep(write_spec(tmp_path, TINY), store=store, executor="local", progress=False)
    assert seen == [5]  # one session's five cells, stored about a second after they finished
    assert result.cells_computed == 30 and len(ResultStore(store).cells()) == 30
