from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from workbench import plots
from workbench.experiments import ResultStore, run_sweep
from workbench.experiments.tables import cell_table, config_table
from workbench.metrics import validity_rules

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
    assert [t.get_text() for t in heat.get_xticklabels()] == ["5000", "10000"]
