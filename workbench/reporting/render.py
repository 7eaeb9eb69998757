"""Plain-text rendering of a `workbench.report.report` dict (what `workbench report` prints)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..metrics.identity import FILE

__all__ = ["render_report"]


def _fmt(value: Any, kind: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "usd":
        return f"${value:,.2f}"
    if kind == "recall":
        return f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


_COLUMNS = {
    key: (title, key, kind)
    for title, key, kind in (
        ("strategy", "label", ""),
        ("config", "config_hash", ""),
        ("sessions", "sessions", ""),
        ("steps", "steps", ""),
        ("saved", "saved_share", "pct"),
        ("tokens saved", "tokens_saved", ""),
        ("peak ctx", "peak_context_tokens", ""),
        ("blocked w/o", "steps_blocked_without", ""),
        ("blocked", "steps_blocked", ""),
        ("compactions", "compactions", ""),
        ("viol. steps", "violating_steps", ""),
        ("viol. rate", "violation_rate", "pct"),
        ("recovery tok", "expected_recovery_tokens", ""),
        ("recovery calls", "expected_recovery_calls", ""),
        ("recovery $", "recovery_cost_usd", "usd"),
        ("cost", "cost_usd", "usd"),
        ("$/1k steps", "cost_per_1k_steps", "usd"),
        ("recorded $", "recorded_cost_usd", "usd"),
        ("total cost", "total_cost_usd", "usd"),
        ("needed recall", "needed_recall", "recall"),
        ("dropped recall", "dropped_recall", "recall"),
    )
}


def _pick(*keys: str) -> tuple[tuple[str, str, str], ...]:
    return tuple(_COLUMNS[key] for key in keys)


#: The by-strategy table: the headline metrics with their 95% intervals over sessions; the fidelity it
#: leads with is the expected recovery, references kept (when computed) come last.
_STRATEGY_COLUMNS = (
    *_pick("label", "config_hash", "sessions", "steps"),
    ("saved [95% CI]", "saved_share", "pct_ci"),
    *_pick("peak_context_tokens", "steps_blocked_without", "steps_blocked", "compactions", "violating_steps"),
    _COLUMNS["violation_rate"],
    ("recovery tok [95% CI]", "expected_recovery_tokens", "tok_ci"),
    ("measured", "measured_recovery_tokens", ""),
    ("cost [95% CI]", "cost_usd", "usd_ci"),
    ("total cost [95% CI]", "total_cost_usd", "usd_ci"),
    ("needed recall [95% CI]", "needed_recall", "recall_ci"),
    _COLUMNS["dropped_recall"],
)
#: Columns left out of a table when no row has a value (references kept, computed on request).
_OPTIONAL = frozenset({"needed_recall", "dropped_recall"})
_DIFF_KINDS = {
    "saved_share": "pct",
    "needed_recall": "recall",
    "expected_recovery_tokens": "",
    "cost_usd": "usd",
    "total_cost_usd": "usd",
}


def _cell(row: Mapping[str, Any], key: str, kind: str) -> str:
    """A value, or for ``*_ci`` kinds the value with its interval: ``36.1% [30.2%, 41.0%]``."""
    if not kind.endswith("_ci"):
        return _fmt(row.get(key), kind)
    base = {"pct_ci": "pct", "recall_ci": "recall", "usd_ci": "usd", "tok_ci": ""}[kind]
    value, low, high = row.get(key), row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
    if low is None or high is None or _fmt(value, base) == "-":
        return _fmt(value, base)
    return f"{_fmt(value, base)} [{_fmt(low, base)}, {_fmt(high, base)}]"


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str]]) -> str:
    columns = [c for c in columns if c[1] not in _OPTIONAL or any(r.get(c[1]) is not None for r in rows)]
    cells = [[title for title, _, _ in columns]]
    cells += [[_cell(row, key, kind) for _, key, kind in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = [
        "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _section(
    title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str]], width: int
) -> list[str]:
    """A titled table whose session ids are cut to ``width`` characters."""
    cut = [{**r, "session_id": str(r["session_id"])[:width]} for r in rows]
    return [title, _table(cut, columns), ""]


def _differences(data: Mapping[str, Any]) -> list[str]:
    """Paired differences against the baseline, one row per strategy × config, one column per metric."""
    by_group: dict[tuple[str, str], dict[str, Any]] = {}
    for row in data["differences"]:
        item = by_group.setdefault(
            (row["strategy"], row["config_hash"]), {"strategy": row["strategy"], "config_hash": row["config_hash"]}
        )
        kind = _DIFF_KINDS.get(row["metric"], "")
        if row["difference"] is None:
            item[row["metric"]] = "-"
            continue
        sign = "+" if row["difference"] > 0 else ""
        mark = " *" if row["significant"] else ""
        item[row["metric"]] = (
            f"{sign}{_fmt(row['difference'], kind)} [{_fmt(row['ci_low'], kind)}, {_fmt(row['ci_high'], kind)}]{mark}"
        )
        item["sessions"] = row["sessions"]
    metrics = [m for m in _DIFF_KINDS if any(m in item for item in by_group.values())]
    columns = [("strategy", "strategy", ""), ("config", "config_hash", ""), ("sessions", "sessions", "")]
    columns += [(m, m, "text") for m in metrics]
    return [
        f"Paired differences vs `{data.get('baseline')}` (same sessions resampled; * = 95% interval excludes 0)",
        _table(list(by_group.values()), columns),
        "",
    ]


def render_report(data: Mapping[str, Any], *, per_session: bool = True) -> str:
    """Plain-text rendering of a `report` dict."""
    out = [
        f"Replay report: {data['results_dir']}  ({len(data['runs'])} runs; window {data.get('window'):,}, "
        f"blocking limit {data.get('blocking_limit'):,})",
        "",
    ]
    out += ["By strategy (95% bootstrap intervals over sessions)", _table(data["strategies"], _STRATEGY_COLUMNS), ""]
    if data.get("differences"):
        out += _differences(data)
    rows = data["sessions"]
    copies = len({(r["session_id"], r.get(FILE)) for r in rows}) > len({r["session_id"] for r in rows})
    if per_session and rows:
        columns = (
            ("session", "session_id", ""),
            *((("file", FILE, ""),) if copies else ()),
            *_pick("label", "config_hash", "steps", "saved_share", "tokens_saved", "peak_context_tokens"),
            *_pick("compactions", "violating_steps", "expected_recovery_tokens", "cost_usd", "recorded_cost_usd"),
            *_pick("total_cost_usd", "needed_recall", "dropped_recall"),
        )
        out += _section("By session", data["sessions"], columns, 44)
    if data.get("reference"):
        cols: tuple[tuple[str, str, str], ...] = (
            ("session", "session_id", ""),
            ("source", "source", ""),
            ("step", "step", ""),
            ("dropped facts", "dropped_facts", ""),
            ("needed facts", "needed_facts", ""),
            ("needed recall", "needed_recall", "recall"),
            ("dropped recall", "dropped_recall", "recall"),
            ("summary tok", "summary_tokens", ""),
            ("sections", "section_coverage", "pct"),
        )
        out += _section("Claude's recorded compactions (reference)", data["reference"], cols, 36)
    if data.get("recovery"):
        cols = (
            ("file", "file", ""),
            ("line", "line", ""),
            ("trigger", "trigger", ""),
            ("preTokens", "pre_tokens", ""),
            ("re-reads", "rereads", ""),
            ("files", "reread_files", ""),
            ("re-read tok", "reread_tokens", ""),
            ("re-runs", "rerun_commands", ""),
            ("recovery tok", "recovery_tokens", ""),
        )
        rows = [{**r, "file": Path(str(r["file"])).name[:12]} for r in data["recovery"]]
        out += ["What the agent re-acquired after Claude's recorded compactions (measured)", _table(rows, cols), ""]
    probes = data.get("probes") or {}
    if probes.get("run"):
        run = probes["run"]
        cols = (
            ("strategy", "strategy", ""),
            ("config", "config_hash", ""),
            ("sessions", "sessions", ""),
            ("probes", "probes", ""),
            ("score [95% CI]", "probe_score", "recall_ci"),
        )
        out += [
            f"Judge probes (estimate ${run['estimate_usd']:,.4f} upper bound, spent ${run['spent_usd']:,.4f} of "
            f"${run['budget_usd']:,.2f}; {run['events_probed']}/{run['events']} compactions probed, "
            f"{run['requests']} requests)",
            _table(probes["strategies"], cols),
            "",
        ]
    if data.get("calibration"):
        cols = (
            ("session", "session_id", ""),
            *((("file", FILE, ""),) if copies else ()),
            ("strategy", "strategy", ""),
            ("steps", "steps", ""),
            ("recorded", "recorded_cost_usd", "usd"),
            ("simulated", "simulated_cost_usd", "usd"),
            ("error", "signed_error", "pct"),
            ("misses", "misses", ""),
            ("explanation", "explanation", ""),
        )
        out += _section("Cost simulation vs recorded usage", data["calibration"], cols, 44)
    out += [f"note: {n}" for n in data.get("notes", [])]
    return "\n".join(out).rstrip() + "\n"
