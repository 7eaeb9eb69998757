"""A sweep's report folder: PNG plots, the aggregated tables (CSV + parquet) and a markdown/HTML summary."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .run import SweepPlan, SweepResult, plan_sessions
from .store import ResultStore
from .tables import cell_table, config_table, sweep_frames, write_parquet

__all__ = ["write_report"]

_SUMMARY_COLUMNS = (
    "label",
    "config_hash",
    "sessions",
    "steps",
    "compactions",
    "saved_share",
    "peak_context_tokens",
    "violation_rate",
    "compaction_violation_rate",
    "expected_recovery_tokens",
    "needed_recall",
    "dropped_recall",
    "cost_usd",
    "total_cost_usd",
)
_PROBE_COLUMNS = ("strategy", "config_hash", "sessions", "probes", "probe_score")
#: The reference counts: shown after the expected recovery, the fidelity strategies are compared on.
_REFERENCES = ("needed_recall", "dropped_recall")
#: Shown with their 95% bootstrap interval over sessions: ``value [low, high]``.
_WITH_CI = ("saved_share", "needed_recall", "expected_recovery_tokens", "cost_usd", "total_cost_usd", "probe_score")


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _with_ci(row: Any, column: str) -> str:
    low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    if column not in _WITH_CI or _fmt(low) == "-" or _fmt(row[column]) == "-":
        return _fmt(row[column])
    return f"{_fmt(row[column])} [{_fmt(low)}, {_fmt(high)}]"


def _markdown(frame: pd.DataFrame, columns: Sequence[str]) -> str:
    cols = [c for c in columns if c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_with_ci(row, c) for c in cols) + " |" for _, row in frame.iterrows()]
    return "\n".join(lines)


def _config_labels(table: pd.DataFrame) -> dict[tuple[str, str], str]:
    """``{(strategy, config_hash): label}``: the readable names the paired differences are listed by
    (the ``label`` column, else `workbench.strategies.labels.config_label` of ``config_json``)."""
    from ..strategies.labels import config_label

    if table.empty:
        return {}
    rows = table.drop_duplicates(["strategy", "config_hash"])
    out: dict[tuple[str, str], str] = {}
    for _, row in rows.iterrows():
        key = (str(row["strategy"]), str(row["config_hash"]))
        if "label" in rows.columns and pd.notna(row["label"]):
            out[key] = str(row["label"])
        elif "config_json" in rows.columns:
            out[key] = config_label(key[0], row["config_json"])
    return out


def _differences(table: pd.DataFrame, baseline: str | None) -> list[str]:
    """The paired-differences section against ``baseline`` (default ``none``, else ``recorded``)."""
    from ..metrics.uncertainty import CI_METRICS, few_sessions_note, paired_differences

    names = set(table["strategy"]) if len(table) else set()
    baseline = baseline or next((b for b in ("none", "recorded") if b in names), None)
    lines: list[str] = []
    note = few_sessions_note(table)
    if note:
        lines += [f"**Note:** {note}.", ""]
    if baseline is None or baseline not in names:
        return lines
    metrics = sorted((m for m in CI_METRICS if m in table.columns), key=lambda m: m in _REFERENCES)
    diffs = paired_differences(table, baseline, metrics)
    if diffs.empty:
        return lines
    lines += [
        f"## Paired differences vs `{baseline}`",
        "",
        "Same sessions resampled for both (2,000 bootstrap resamples, seed 0); * = the 95% interval excludes 0.",
        "",
        "| config | metric | sessions | difference [95% CI] |",
        "|---|---|---|---|",
    ]
    labels = _config_labels(table)
    for _, row in diffs.iterrows():
        mark = " *" if row["significant"] else ""
        value = f"{_fmt(row['difference'])} [{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]{mark}"
        name = labels.get((str(row["strategy"]), str(row["config_hash"])), str(row["strategy"]))
        lines.append(f"| {name} | {row['metric']} | {row['sessions']} | {value} |")
    return [*lines, ""]


def _probe_section(options: dict[str, Any], plan: SweepPlan, events: pd.DataFrame, out: Path) -> list[str]:
    from ..metrics._common import session_map
    from ..probes.run import probe_report

    notes: list[str] = []
    data = probe_report(options, session_map(plan_sessions(plan)), events, notes)
    pd.DataFrame(data["rows"]).to_csv(out / "probes.csv", index=False)
    run = data["run"] or {}
    lines = ["## Judge probes", ""]
    if run:
        lines += [
            f"Estimate ${run['estimate_usd']:.4f} (upper bound), spent ${run['spent_usd']:.4f} of "
            f"${run['budget_usd']:.2f}; {run['events_probed']} of {run['events']} compactions probed "
            f"(`claude-recorded` = Claude's own compactions, the reference). Rows: `probes.csv`.",
            "",
            _markdown(pd.DataFrame(data["strategies"]), _PROBE_COLUMNS),
            "",
        ]
    return [*lines, *(f"- {n}" for n in notes), ""]


def write_report(
    result: SweepResult,
    plan: SweepPlan,
    out: str | Path,
    *,
    baseline: str | None = None,
    probes: dict[str, Any] | None = None,
) -> Path:
    """Write ``summary.md``, ``summary.html``, ``cells.csv``, ``configs.csv`` and PNG plots into ``out``.

    The summary carries 95% bootstrap intervals over sessions and paired differences against
    ``baseline`` (default ``none``, else ``recorded``, when the sweep has it). ``probes`` (online) runs
    the judge probes on every compaction of the sweep and on Claude's recorded ones
    (`workbench.probes.run.probe_report`: ``budget_usd`` and its options) into ``probes.csv`` and a
    summary section; `ProbeBudgetError` when the estimate is above the budget (nothing sent)."""
    from ..metrics import validity_rules
    from ..reporting import plots

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = ResultStore(result.store)
    cells, steps, events = sweep_frames(store, result.cell_ids)
    table = cell_table(cells, steps, events, plan_sessions(plan), plan.spec.spec.metrics)
    # rows in a canonical order, not the store's part-file order: identical inputs, identical files
    order = [c for c in ("strategy", "config_hash", "session_id", "file", "cell_id") if c in table.columns]
    table = table.sort_values(order, kind="stable").reset_index(drop=True)
    configs = config_table(table)
    table.to_csv(out / "cells.csv", index=False)
    configs.to_csv(out / "configs.csv", index=False)
    write_parquet(configs, out / "configs.parquet")
    figures: list[tuple[str, str]] = []

    def keep(name: str, fig: Any, caption: str) -> None:
        plots.save(fig, str(out / name))
        figures.append((name, caption))

    if "expected_recovery_tokens" in configs.columns:
        keep(
            "pareto.png",
            plots.pareto_front(configs),
            "Savings vs expected re-acquired tokens (lower is better), Pareto front per strategy",
        )
    rules = validity_rules(steps, events if len(events) else None) if len(steps) else pd.DataFrame()
    rules = rules[rules["scope"] == "step"] if len(rules) else rules
    keep(
        "violations.png",
        plots.violation_rates(rules, configs.groupby("strategy")["steps"].sum()),
        "API-invariant violations per step, by strategy and rule",
    )
    if "cost_usd" in configs.columns:
        keep("cost_vs_savings.png", plots.cost_vs_savings(configs), "Simulated cost vs share of input tokens saved")
    if len(table):
        top = table.sort_values(["peak_without_compaction", "session_id"], ascending=[False, True]).iloc[0]
        session = top["session_id"]
        # a session is (id, source file): the cells of this one file, not of every copy of its id
        ids = set(table[(table["session_id"] == session) & (table["source"] == top["source"])]["cell_id"])
        chosen = configs.drop_duplicates("strategy")["config_hash"]
        names = configs[["config_hash", "label"]]
        mine = steps[steps["cell_id"].isin(ids) & steps["config_hash"].isin(chosen)].merge(names, on="config_hash")
        mine_events = events[events["cell_id"].isin(ids) & events["config_hash"].isin(chosen)] if len(events) else None
        keep(
            "timeline.png",
            plots.context_timeline(mine, mine_events),
            f"Context size over session {session} (the first config of each strategy, by label); ▼ = compaction",
        )
    for item in plan.spec.spec.strategies:
        keys = [k for k in item.grid if len(item.grid[k]) > 1]
        if len(keys) >= 2:
            grid = configs[configs["strategy"] == item.name]
            for value in ("saved_share", "expected_recovery_tokens"):
                if value in grid.columns:
                    name = f"heatmap-{item.name}-{value}.png"
                    keep(
                        name,
                        plots.grid_heatmap(
                            grid,
                            f"cfg.{keys[0]}",
                            f"cfg.{keys[1]}",
                            value,
                            title=f"{item.name}: {value} over {keys[0]} × {keys[1]}",
                        ),
                        f"{item.name}: {value} over {keys[0]} × {keys[1]} (other parameters averaged)",
                    )
    lines = [
        f"# Sweep `{plan.spec.name}`",
        "",
        plan.spec.spec.description,
        "",
        f"- corpus: {', '.join(result.corpus)}" + (" (fallback)" if result.corpus_used_fallback else ""),
        f"- sessions: {result.sessions}; grid points: {result.grid_points}; cells: {result.cells_total} "
        f"({result.cells_computed} computed, {result.cells_cached} from the store"
        + (f", {result.cells_by_others} by another sweep" if result.cells_by_others else "")
        + (f", **{result.cells_failed} failed**" if result.cells_failed else "")
        + ")",
        *(
            f"- session `{d['session_id']}` is in {len(d['files'])} files, each reported as its own session"
            for d in result.duplicate_sessions
        ),
        f"- estimator: {plan.spec.estimator}; store: `{result.store}`; executor: {result.executor}; "
        f"{result.elapsed_s:.1f} s",
        "",
        "## By strategy and config",
        "",
        _markdown(configs.sort_values(["strategy", "label"], kind="stable"), _SUMMARY_COLUMNS),
        "",
        "`label` = the strategy and the parameters that differ from its defaults; `config_hash` joins with "
        "`configs.csv` (`config_json` and one `cfg.*` column per parameter). "
        "`expected_recovery_tokens` = tokens the agent is expected to re-acquire after the compactions, the "
        "fidelity to compare strategies on (lower is better); `needed_recall`/`dropped_recall` = references "
        "kept (the files, commands, errors and instructions the compacted context still names, not their "
        "content). Brackets: 95% bootstrap intervals over sessions.",
        "",
        *_differences(table, baseline),
        "## Plots",
        "",
    ]
    lines += [f"![{caption}]({name})\n\n{caption}\n" for name, caption in figures]
    if probes is not None:
        lines += _probe_section(probes, plan, events, out)
    (out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cols = [c for c in _SUMMARY_COLUMNS if c in configs.columns]
    body = configs[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
    images = "".join(f"<figure><img src='{n}'><figcaption>{html.escape(c)}</figcaption></figure>" for n, c in figures)
    (out / "summary.html").write_text(
        f"<!doctype html><meta charset='utf-8'><title>Sweep {html.escape(plan.spec.name)}</title>"
        f"<h1>Sweep {html.escape(plan.spec.name)}</h1><pre>{html.escape(json.dumps(result.as_dict(), indent=2))}</pre>"
        f"{body}{images}\n",
        encoding="utf-8",
    )
    return out
