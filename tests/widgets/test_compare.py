"""Strategy comparison: frames, pooled table, timelines, the widget."""

from __future__ import annotations

import matplotlib
import pytest

from workbench.transcript.model import Session
from workbench.widgets import StrategyComparison, comparison_frames, comparison_table, plot_timelines, run_comparison

matplotlib.use("Agg")
pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def chosen(main_sessions: list[Session]) -> list[Session]:
    return sorted(main_sessions, key=lambda s: len(s.conversation()), reverse=True)[:2]


@pytest.fixture(scope="module")
def results(chosen: list[Session]):
    specs = {
        "none": "none",
        "sm-compact": "sm-compact",
        "sm-compact 60%": ("sm-compact", {"trigger": {"pct_of_window": 60}}),
    }
    return run_comparison(chosen, specs)


def test_table_pools_per_label(results) -> None:
    steps, events = comparison_frames(results)
    table = comparison_table(steps, events)
    assert list(table["label"]) == ["none", "sm-compact", "sm-compact 60%"]
    assert list(table["strategy"]) == ["none", "sm-compact", "sm-compact"]
    row = table.set_index("label")
    assert row.loc["none", "compactions"] == 0 and row.loc["none", "tokens_saved"] == 0
    assert row.loc["sm-compact 60%", "compactions"] > row.loc["sm-compact", "compactions"] >= 1
    assert row.loc["sm-compact", "tokens_saved"] > 0 and (table["sessions"] == 2).all()
    one = comparison_table(steps, events, session_id=steps["session_id"].iloc[0])
    assert (one["sessions"] == 1).all()


def test_timelines_and_widget(results) -> None:
    steps, _ = comparison_frames(results)
    sid = steps["session_id"].iloc[0]
    fig = plot_timelines(steps, sid, ["none", "sm-compact"])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["no compaction", "sm-compact"]  # `none` is the no-compaction curve, drawn once
    view = StrategyComparison(results)
    assert "wb-compare-table" in view.table.value and "sm-compact 60%" in view.table.value
    view.pick.value = ("sm-compact",)
    assert "sm-compact 60%" not in view.table.value
    view.scope.value = "this session"
    assert view.current_table()["sessions"].tolist() == [1]


def test_the_table_leads_with_expected_recovery_given_the_sessions(results, chosen) -> None:
    """With the sessions, the table's fidelity is the expected re-acquired tokens (lower is better), next to
    the savings and summed over the sessions in scope; `none` drops nothing, so it re-acquires nothing."""
    from workbench.widgets._compare import recovery_by_session

    steps, events = comparison_frames(results)
    assert "expected_recovery_tokens" not in comparison_table(steps, events).columns
    recovery = recovery_by_session(chosen, steps, events)
    table = comparison_table(steps, events, recovery=recovery)
    columns = list(table.columns)
    assert columns[columns.index("saved_share") + 1] == "expected_recovery_tokens"
    pooled = table.set_index("label")["expected_recovery_tokens"]
    assert (
        pooled["none"] == 0
        and pooled.to_dict() == recovery.groupby("config_hash")["expected_recovery_tokens"].sum().to_dict()
    )
    one = steps["session_id"].iloc[0]
    mine = comparison_table(steps, events, session_id=one, recovery=recovery).set_index("label")
    assert mine["expected_recovery_tokens"].to_dict() == (
        recovery[recovery["session_id"] == one].set_index("config_hash")["expected_recovery_tokens"].to_dict()
    )
    view = StrategyComparison(results, sessions=chosen)
    assert "expected_recovery_tokens" in view.table.value and "lower is better" in view.table.value
