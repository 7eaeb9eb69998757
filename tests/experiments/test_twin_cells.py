"""Cells whose replays came out the same are measured once: the tables equal those measured cell by cell."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.experiments import tables
from workbench.experiments.store import ResultStore
from workbench.experiments.tables import cell_table, sweep_frames


@pytest.mark.corpus
def test_twin_cells_get_the_metrics_each_would_get_alone(corpus, tmp_path, monkeypatch) -> None:
    import workbench as wb

    sessions = wb.load([corpus / "claude-code"], progress=False)
    space = {"min_tokens": [5_000, 10_000], "max_tokens": [40_000, 80_000], "trigger.pct_of_window": [60]}
    store = tmp_path / "store"
    wb.tune(sessions, "sm-compact", space=space, store=store, executor="inline", progress=False)
    cells, steps, events = sweep_frames(ResultStore(store))
    twins = tables._twins(steps, events)
    assert len(twins) > 0  # max_tokens does not bind everywhere: some cells are twins, so this can fail
    shared = cell_table(cells, steps, events, sessions)
    found = tables._twins
    monkeypatch.setattr(tables, "_twins", lambda s, e: found(s.iloc[:0], e))  # every cell measured alone
    alone = cell_table(cells, steps, events, sessions)
    order = ["session_id", "strategy", "config_hash"]
    shared = shared.sort_values(order).reset_index(drop=True)
    alone = alone.sort_values(order).reset_index(drop=True)
    pd.testing.assert_frame_equal(shared[alone.columns], alone, check_dtype=False)


def test_cells_that_differ_in_any_row_are_not_twins() -> None:
    base = {"session_id": "s", "strategy": "sm-compact", "step": 0, "context_tokens": 10}
    steps = pd.DataFrame(
        [
            {**base, "cell_id": "a", "config_hash": "A"},
            {**base, "cell_id": "b", "config_hash": "B"},
            {**base, "cell_id": "c", "config_hash": "C", "context_tokens": 11},
        ]
    )
    events = pd.DataFrame(
        [
            {
                "session_id": "s",
                "strategy": "sm-compact",
                "step": 0,
                "cell_id": c,
                "config_hash": c.upper(),
                "dropped_uuids": d,
            }
            for c, d in (("a", ["u1"]), ("b", ["u2"]), ("c", ["u1"]))
        ]
    )
    assert tables._twins(steps, events).empty  # b drops another record, c has another size
    events.loc[1, "dropped_uuids"] = ["u1"]
    twins = tables._twins(steps, events)
    assert list(zip(twins["config_hash"], twins["twin_of"], strict=True)) == [("B", "A")]
