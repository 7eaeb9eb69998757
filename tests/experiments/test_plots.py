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
    configs["needed_recall"] = 1 - configs["saved_share"]  # no sessions passed: stand-in values for the axis
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
    configs["needed_recall"] = 1 - configs["saved_share"]
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
            "needed_recall": [0.8, 0.7],
            "needed_recall_ci_low": [0.7, 0.6],
            "needed_recall_ci_high": [0.9, 0.75],
            "cost_usd": [10.0, 12.0],
        }
    )
    with_bars = plots.pareto_front(configs).axes[0]
    without = plots.pareto_front(configs.drop(columns=[c for c in configs if "_ci_" in c])).axes[0]
    assert len(with_bars.containers) == 2 and len(without.containers) == 0
    assert len(plots.cost_vs_savings(configs).axes[0].containers) == 2  # x intervals only
