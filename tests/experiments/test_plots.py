from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from workbench.experiments import ResultStore, run_sweep
from workbench.experiments.tables import cell_table, config_table
from workbench.metrics import validity_rules
from workbench.reporting import plots

from .conftest import TINY, write_spec


def test_every_plot_returns_a_figure(tmp_path):
    result = run_sweep(write_spec(tmp_path, TINY), store=tmp_path / "s", executor="inline", progress=False)
    store = ResultStore(result.store)
    cells = store.cells()
    steps, events = store.steps(cells), store.events(cells)
    table = cell_table(cells, steps, events, metrics=("savings", "validity", "cost"))
    configs = config_table(table)
    # no sessions passed: stand-in values for the fidelity axis
    configs["expected_recovery_tokens"] = 1_000 * configs["saved_share"]
    one = cells.sort_values("peak_without_compaction").iloc[-1]["session_id"]
    figures = [
        plots.pareto_front(configs),
        plots.violation_rates(validity_rules(steps, events), configs.groupby("strategy")["steps"].sum()),
        plots.violation_rates(pd.DataFrame(columns=["strategy", "rule", "count"])),
        plots.context_timeline(steps[steps["session_id"] == one], events[events["session_id"] == one]),
        plots.cost_vs_savings(configs),
        plots.grid_heatmap(configs[configs["strategy"] == "sm-compact"], "cfg.min_tokens", "cfg.trigger.pct_of_window"),
    ]
    for fig in figures:
        assert isinstance(fig, Figure)
        fig.savefig(tmp_path / "x.png")
    heat = figures[-1].axes[0]
    assert [t.get_text() for t in heat.get_xticklabels()] == ["5k", "10k"]
    assert [t.get_text() for t in heat.get_yticklabels()] == ["40%", "80%"]


def test_legends_name_configs_by_label_not_by_hash(tmp_path):
    """Legends name the strategy plus its non-default parameters, never a truncated config hash."""
    result = run_sweep(write_spec(tmp_path, TINY), store=tmp_path / "s", executor="inline", progress=False)
    store = ResultStore(result.store)
    cells = store.cells()
    steps, events = store.steps(cells), store.events(cells)
    configs = config_table(cell_table(cells, steps, events, metrics=("savings", "validity")))
    configs["expected_recovery_tokens"] = 1_000 * configs["saved_share"]
    legend = [t.get_text() for t in plots.pareto_front(configs).axes[0].get_legend().get_texts()]
    assert "sm-compact min_tokens=5k trigger=40%" in legend and "none" in legend
    one = cells.sort_values("peak_without_compaction").iloc[-1]["session_id"]
    mine = steps[steps["session_id"] == one].merge(configs[["config_hash", "label"]], on="config_hash")
    timeline = [t.get_text() for t in plots.context_timeline(mine).axes[0].get_legend().get_texts()]
    assert "sm-compact trigger=80%" in timeline
    for text in legend + timeline:
        assert not any(h[:6] in text for h in configs["config_hash"]), text


def test_plots_draw_the_intervals():
    """Where the frame has ``<metric>_ci_low``/``_ci_high``, the points carry error bars."""
    configs = pd.DataFrame(
        {
            "strategy": ["a", "b"],
            "config_hash": ["x", "y"],
            "saved_share": [0.3, 0.4],
            "saved_share_ci_low": [0.2, 0.35],
            "saved_share_ci_high": [0.35, 0.5],
            "expected_recovery_tokens": [800.0, 700.0],
            "expected_recovery_tokens_ci_low": [700.0, 600.0],
            "expected_recovery_tokens_ci_high": [900.0, 750.0],
            "cost_usd": [10.0, 12.0],
        }
    )
    with_bars = plots.pareto_front(configs).axes[0]
    without = plots.pareto_front(configs.drop(columns=[c for c in configs if "_ci_" in c])).axes[0]
    assert len(with_bars.containers) == 2 and len(without.containers) == 0
    assert len(plots.cost_vs_savings(configs).axes[0].containers) == 2  # x intervals only


def test_pareto_front_leads_with_expected_recovery_lower_is_better():
    """The default fidelity axis is the expected re-acquisition; its front joins the configs no other
    config beats on savings and on fewer re-acquired tokens. ``needed_recall`` reads as references kept."""
    configs = pd.DataFrame(
        {
            "strategy": ["s"] * 4,
            "config_hash": ["a", "b", "c", "d"],
            "label": ["s a", "s b", "s c", "s d"],
            "saved_share": [0.2, 0.4, 0.6, 0.5],
            "expected_recovery_tokens": [100.0, 300.0, 900.0, 950.0],
            "needed_recall": [0.9, 0.8, 0.7, 0.95],
        }
    )
    axes = plots.pareto_front(configs).axes[0]
    assert axes.get_ylabel() == "expected re-acquired tokens (lower is better)"
    front = [line for line in axes.get_lines() if len(line.get_xdata()) > 1]
    assert [list(line.get_xdata()) for line in front] == [[0.2, 0.4, 0.6]]  # d: less saved, more to re-acquire
    recall = plots.pareto_front(configs, y="needed_recall").axes[0]
    assert recall.get_ylabel().startswith("references kept")
    front = [line for line in recall.get_lines() if len(line.get_xdata()) > 1]
    assert [list(line.get_xdata()) for line in front] == [[0.5, 0.6]]
