"""`workbench.util.pool.ordered_map`: results in order, bounded look-ahead, failures raised at their turn and
no worker left behind."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from workbench.util.pool import check_workers, ordered_map


def _slow_first(item: int) -> tuple[int, int]:
    time.sleep(0.3 if item == 0 else 0.0)
    return item, os.getpid()


def _marks(item: tuple[Path, int]) -> int:
    folder, n = item
    (folder / f"started-{n}").touch()
    return n


def _fails_on_three(item: int) -> int:
    if item == 3:
        raise RuntimeError(f"item {item} failed")
    return item


def test_results_come_in_the_order_of_the_items_from_the_workers() -> None:
    got = list(ordered_map(_slow_first, range(12), 2))
    assert [item for item, _ in got] == list(range(12))  # item 0 finishes last but is handed on first
    pids = {pid for _, pid in got}
    assert os.getpid() not in pids and len(pids) == 2
    assert multiprocessing.active_children() == []


def test_no_more_than_twice_the_workers_are_started_ahead_of_the_consumer(tmp_path: Path) -> None:
    results = ordered_map(_marks, ((tmp_path, n) for n in range(50)), 2)
    assert next(results) == 0
    time.sleep(0.5)  # every submitted item has had the time to start
    started = len(list(tmp_path.glob("started-*")))
    assert 2 <= started <= 5  # four in flight, plus the one submitted when the first was handed on
    assert list(results) == list(range(1, 50))
    assert len(list(tmp_path.glob("started-*"))) == 50


def test_a_failure_is_raised_at_its_turn_and_stops_the_workers() -> None:
    seen = []
    with pytest.raises(RuntimeError, match="item 3 failed"):
        for value in ordered_map(_fails_on_three, range(40), 2):
            seen.append(value)
    assert seen == [0, 1, 2]
    assert multiprocessing.active_children() == []


def test_workers_must_be_a_positive_int() -> None:
    assert check_workers(3) == 3
    for bad in (0, -2, True, 2.0, "2", None):
        with pytest.raises(ValueError, match="positive number of worker processes"):
            check_workers(bad)


def _one_never_ends(item: int) -> int:
    if item == 1:
        time.sleep(120)
    return item


def test_a_consumer_that_stops_early_does_not_wait_for_a_running_task() -> None:
    results = ordered_map(_one_never_ends, range(6), 2)
    assert next(results) == 0
    started = time.monotonic()
    results.close()  # item 1 is being computed for two minutes: its worker is ended, not waited for
    assert time.monotonic() - started < 20
    assert multiprocessing.active_children() == []
