"""Bootstrap intervals over sessions and paired differences (`workbench.metrics.uncertainty`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.metrics.uncertainty import bootstrap_intervals, few_sessions_note, paired_differences


def _table() -> pd.DataFrame:
    rows = []
    for i in range(12):
        without = 1000.0 * (i + 1)
        for strategy, share, cost in (("a", 0.30, 2.0), ("b", 0.20, 1.0)):
            rows.append(
                {
                    "session_id": f"s{i}",
                    "strategy": strategy,
                    "config_hash": "c",
                    "tokens_saved": without * (share + 0.01 * (i % 3)),
                    "input_tokens_without": without,
                    "needed_facts_kept": i % 4,
                    "needed_facts": 4,
                    "expected_recovery_tokens": 10.0 * i if strategy == "a" else np.nan,
                    "cost_usd": cost + i,
                    "total_cost_usd": cost + i,
                    "compactions": 1,
                }
            )
    return pd.DataFrame(rows)


def test_intervals_contain_the_pooled_value_and_are_reproducible():
    table = _table()
    ci = bootstrap_intervals(table).set_index("strategy")
    a = table[table["strategy"] == "a"]
    pooled = a["tokens_saved"].sum() / a["input_tokens_without"].sum()
    assert ci.loc["a", "saved_share_ci_low"] < pooled < ci.loc["a", "saved_share_ci_high"]
    assert ci.loc["a", "cost_usd_ci_low"] < a["cost_usd"].sum() < ci.loc["a", "cost_usd_ci_high"]
    assert pd.isna(ci.loc["b", "expected_recovery_tokens_ci_low"])  # not available: no bounds, not 0
    pd.testing.assert_frame_equal(ci.reset_index(), bootstrap_intervals(table))  # fixed seed


def test_paired_differences():
    table = _table()
    diff = paired_differences(table, "b").set_index("metric")
    assert set(diff["strategy"]) == {"a"}
    # a saves 10 points more on every session: the paired interval is tight and excludes 0
    assert abs(diff.loc["saved_share", "difference"] - 0.10) < 1e-9
    assert diff.loc["saved_share", "significant"]
    assert diff.loc["cost_usd", "difference"] == 12.0 and diff.loc["cost_usd", "ci_low"] == 12.0
    assert "expected_recovery_tokens" not in diff.index or diff.loc["expected_recovery_tokens", "sessions"] == 0
    same = pd.concat([table[table["strategy"] == "a"], table[table["strategy"] == "a"].assign(strategy="a2")])
    zero = paired_differences(same, "a").set_index("metric")
    assert zero.loc["needed_recall", "difference"] == 0 and not zero.loc["needed_recall", "significant"]


def test_few_sessions_note():
    table = _table()
    assert few_sessions_note(table) is None
    few = table.assign(compactions=[1 if s in ("s0", "s1") else 0 for s in table["session_id"]])
    assert "only 2 session(s)" in few_sessions_note(few)


def test_intervals_do_not_depend_on_row_order() -> None:
    """The same sessions in another order (a store's part files, a corpus walk) give the same intervals and
    paired differences: rows are resampled in session order."""
    import numpy as np
    import pandas as pd

    from workbench.metrics.uncertainty import bootstrap_intervals, paired_differences

    rng = np.random.default_rng(3)
    rows = []
    for strategy in ("none", "sm"):
        for k in range(12):
            saved = float(rng.integers(0, 5_000))
            rows.append(
                {
                    "strategy": strategy,
                    "config_hash": strategy,
                    "session_id": f"s{k:02d}",
                    "file": f"/c/s{k:02d}.jsonl",
                    "tokens_saved": saved if strategy == "sm" else 0.0,
                    "input_tokens_without": 10_000.0,
                    "cost_usd": float(rng.uniform(1, 100)),
                }
            )
    table = pd.DataFrame(rows)
    shuffled = table.sample(frac=1.0, random_state=7).reset_index(drop=True)
    metrics = ["saved_share", "cost_usd"]
    pd.testing.assert_frame_equal(bootstrap_intervals(table, metrics), bootstrap_intervals(shuffled, metrics))
    pd.testing.assert_frame_equal(
        paired_differences(table, "none", metrics), paired_differences(shuffled, "none", metrics)
    )
