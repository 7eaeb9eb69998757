"""The report pools estimates over the sessions where they are available: each group's sum is the sum its
own column gives (NaN left out, the same float), null where no session has one."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.reporting.report import _AVAILABLE_SUMS, _POOLED_SUMS, _pooled

COUNTS = [*_POOLED_SUMS, "peak_context_tokens"]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.3, 1.0]))
def test_available_sums_are_each_groups_own_sum(rows: int, seed: int, missing: float) -> None:
    rng = np.random.default_rng(seed)
    table = pd.DataFrame(
        {
            "strategy": rng.choice(["none", "sm-compact", "full-compact"], rows),
            "config_hash": rng.choice(["a", "b"], rows),
            "session_id": [f"s{n}" for n in rng.integers(0, 9, rows)],
            **{column: rng.integers(0, 1000, rows) for column in COUNTS},
            "needed_facts": [None] * rows,
        }
    )
    for column in _AVAILABLE_SUMS:
        values = rng.random(rows) * 10.0 ** rng.integers(-3, 6)
        values[rng.random(rows) < missing] = np.nan
        table[column] = values if column != "instructions" else [None if np.isnan(v) else str(v) for v in values]
    pooled = _pooled(table).set_index(["strategy", "config_hash"])
    for keys, group in table.groupby(["strategy", "config_hash"], sort=True):
        for column in _AVAILABLE_SUMS:
            numbers = pd.to_numeric(group[column], errors="coerce")
            expected = float(numbers.sum()) if numbers.notna().any() else None
            got = pooled.at[keys, column]
            assert (got is None or pd.isna(got)) if expected is None else got == expected, (keys, column)
        assert pooled.at[keys, "unpriced_sessions"] == int(pd.to_numeric(group["cost_usd"]).isna().sum())
        assert pooled.at[keys, "steps"] == group["steps"].sum()
    assert list(pooled.index) == sorted(set(zip(table["strategy"], table["config_hash"], strict=True)))
