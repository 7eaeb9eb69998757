"""Uncertainty of strategy comparisons: bootstrap intervals over sessions, paired differences.

The unit of resampling is the **session**: steps of one session are not independent (one long session
is one agent, one task), so a strategy's pooled figure is recomputed on sessions drawn with replacement.
Each metric is pooled as the report pools it (`METRICS`): a ratio of sums (``saved_share`` =
Σ tokens saved / Σ tokens without compaction; ``needed_recall`` = Σ needed facts kept / Σ needed facts,
1.0 when nothing needed was dropped) or a corpus total (``expected_recovery_tokens``, ``cost_usd``,
``total_cost_usd``: the sum over the sessions, so the interval is that of the corpus total).

* `bootstrap_intervals`: per group (strategy × config_hash) the percentile interval (default 95%,
  2,000 resamples, seed 0: reproducible) of each metric, as ``<metric>_ci_low``/``<metric>_ci_high``.
  Sessions where a metric is not available (NaN: an unpriced model, a format without tool calls) are
  left out of that metric; no session left gives null bounds.
* `paired_differences`: each group minus a baseline group on the sessions both have, resampling the
  *same* sessions for both (paired), so per-session variation common to both cancels. A difference
  whose interval contains 0 is not a ranking (``significant`` False).
* `few_sessions_note`: a plain warning when too few sessions carry the comparison (sessions where some
  strategy compacted): with the open corpus's 3-6 long sessions intervals are wide, and the output says
  so instead of ranking noise.

Percentile intervals on 3-6 sessions under-cover (the bootstrap cannot see variation it never sampled);
they are a lower bound on the uncertainty, which the note states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "CI_METRICS",
    "DOMINANCE_COLUMNS",
    "METRICS",
    "MIN_SESSIONS",
    "bootstrap_intervals",
    "canonical",
    "dominance_notes",
    "few_sessions_note",
    "paired_differences",
    "session_name",
]

#: metric -> (numerator column, denominator column or None for a total, value when the denominator is 0)
METRICS: dict[str, tuple[str, str | None, float | None]] = {
    "saved_share": ("tokens_saved", "input_tokens_without", None),
    "needed_recall": ("needed_facts_kept", "needed_facts", 1.0),
    "dropped_recall": ("dropped_facts_kept", "dropped_facts", 1.0),
    "expected_recovery_tokens": ("expected_recovery_tokens", None, None),
    "cost_usd": ("cost_usd", None, None),
    "total_cost_usd": ("total_cost_usd", None, None),
    "probe_score": ("probe_score_sum", "probes_scored", None),
}
#: The metrics that carry intervals in the report's ``strategies`` rows.
CI_METRICS = ("saved_share", "needed_recall", "expected_recovery_tokens", "cost_usd", "total_cost_usd")
#: Below this many sessions with a compaction, comparisons are flagged as resting on too few sessions.
MIN_SESSIONS = 10
GROUP = ["strategy", "config_hash"]


def _columns(metric: str) -> list[str]:
    num, den, _ = METRICS[metric]
    return [num] if den is None else [num, den]


def _statistic(num: np.ndarray, den: np.ndarray | None, empty: float | None) -> np.ndarray:
    """Pooled statistic per resample row: sums over axis 1."""
    total: np.ndarray = num.sum(axis=-1)
    if den is None:
        return total.astype(float)
    whole = den.sum(axis=-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(whole > 0, total / np.where(whole > 0, whole, 1), np.nan if empty is None else empty)
    return out


#: The columns that identify a session row, in the order `canonical` sorts by.
SESSION_ORDER = ("session_id", "file", "source")


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows sorted by session identity (`SESSION_ORDER`, the columns it has), stably."""
    keys = [c for c in SESSION_ORDER if c in frame.columns]
    return frame.sort_values(keys, kind="stable", na_position="last") if keys else frame


def _interval(draws: np.ndarray, level: float) -> tuple[float | None, float | None]:
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return None, None
    alpha = (1 - level) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return float(low), float(high)


def bootstrap_intervals(
    table: pd.DataFrame,
    metrics: Sequence[str] = CI_METRICS,
    *,
    group: Sequence[str] = GROUP,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per group: ``<metric>_ci_low``/``<metric>_ci_high`` from a bootstrap over the rows (sessions). The
    rows are resampled in a canonical order (`canonical`): the same sessions give the same interval whatever
    order a store's part files or a corpus walk gave them."""
    rows = []
    # every metric of every group of n sessions draws the same resamples (a generator seeded alike): drawn once
    drawn: dict[int, np.ndarray] = {}
    # the metrics' columns as one float array, in session order (a stable sort of the whole table orders
    # each group's rows as sorting the group would); each group's rows are positions into it
    ordered = canonical(table)
    present = [m for m in metrics if all(c in ordered.columns for c in _columns(m))]
    needed = list(dict.fromkeys(c for m in present for c in _columns(m)))
    values = ordered[needed].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float) if needed else None
    where = {c: n for n, c in enumerate(needed)}
    grouped = ordered.groupby(list(group), sort=True, dropna=False)
    codes = grouped.ngroup().to_numpy()
    for number, keys in enumerate(grouped.groups.keys() if len(ordered) else ()):
        positions = np.flatnonzero(codes == number)
        keys = keys if isinstance(keys, tuple) else (keys,)
        row: dict[str, Any] = dict(zip(group, keys, strict=True))
        for metric in metrics:
            low = high = None
            if metric in present and values is not None:
                block = values[positions][:, [where[c] for c in _columns(metric)]]
                block = block[~np.isnan(block).any(axis=1)]  # rows where the metric is available
                if len(block):
                    num, den = block[:, 0], (block[:, 1] if block.shape[1] > 1 else None)
                    index = drawn.get(len(num))
                    if index is None:
                        rng = np.random.default_rng(seed)
                        index = drawn[len(num)] = rng.integers(0, len(num), size=(resamples, len(num)))
                    draws = _statistic(num[index], den[index] if den is not None else None, METRICS[metric][2])
                    low, high = _interval(draws, level)
            row[f"{metric}_ci_low"] = low
            row[f"{metric}_ci_high"] = high
        rows.append(row)
    columns = [*group, *(f"{m}_ci_{side}" for m in metrics for side in ("low", "high"))]
    return pd.DataFrame(rows, columns=columns)


def paired_differences(
    table: pd.DataFrame,
    baseline: str | tuple[str, str],
    metrics: Sequence[str] = CI_METRICS,
    *,
    session: str = "session_id",
    group: Sequence[str] = GROUP,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Each group's pooled metric minus the baseline's, with a paired bootstrap interval over the sessions
    both have. ``baseline``: a strategy name (its first config) or a (strategy, config_hash) pair."""
    columns = [
        *group,
        "baseline_strategy",
        "baseline_config_hash",
        "metric",
        "sessions",
        "difference",
        "ci_low",
        "ci_high",
        "significant",
    ]
    if table.empty:
        return pd.DataFrame(columns=columns)
    if isinstance(baseline, str):
        mine = table[table["strategy"] == baseline]
        if mine.empty:
            return pd.DataFrame(columns=columns)
        baseline = (baseline, sorted(mine["config_hash"].astype(str))[0])
    base = table[(table["strategy"] == baseline[0]) & (table["config_hash"].astype(str) == baseline[1])]
    base = base.drop_duplicates(session).set_index(session)
    rows = []
    for keys, frame in table.groupby(list(group), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        if tuple(map(str, keys)) == tuple(map(str, baseline)):
            continue
        frame = frame.drop_duplicates(session).set_index(session)
        for metric in metrics:
            cols = _columns(metric)
            if any(c not in frame.columns or c not in base.columns for c in cols):
                continue
            other = base[cols].add_suffix("_base")
            both = frame[cols].join(other, how="inner").apply(pd.to_numeric, errors="coerce")
            both = both.dropna().sort_index(kind="stable")  # resampled in session order, not row order
            row = {
                **dict(zip(group, keys, strict=True)),
                "baseline_strategy": baseline[0],
                "baseline_config_hash": baseline[1],
                "metric": metric,
                "sessions": len(both),
                "difference": None,
                "ci_low": None,
                "ci_high": None,
                "significant": None,
            }
            if len(both):
                empty = METRICS[metric][2]
                a_num = both[cols[0]].to_numpy(float)
                b_num = both[f"{cols[0]}_base"].to_numpy(float)
                a_den = both[cols[1]].to_numpy(float) if len(cols) > 1 else None
                b_den = both[f"{cols[1]}_base"].to_numpy(float) if len(cols) > 1 else None
                point = _statistic(a_num, a_den, empty) - _statistic(b_num, b_den, empty)
                rng = np.random.default_rng(seed)
                index = rng.integers(0, len(both), size=(resamples, len(both)))
                draws = _statistic(a_num[index], a_den[index] if a_den is not None else None, empty) - _statistic(
                    b_num[index], b_den[index] if b_den is not None else None, empty
                )
                low, high = _interval(draws, level)
                row.update(
                    difference=None if np.isnan(point) else float(point),
                    ci_low=low,
                    ci_high=high,
                    significant=None if low is None or high is None else bool(low > 0 or high < 0),
                )
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def few_sessions_note(table: pd.DataFrame, *, minimum: int = MIN_SESSIONS) -> str | None:
    """A warning when fewer than ``minimum`` sessions had a compaction under any strategy (those are the
    sessions that separate strategies; the others contribute identical rows)."""
    if table.empty or "compactions" not in table.columns:
        return None
    compacted = table[pd.to_numeric(table["compactions"], errors="coerce").fillna(0) > 0]
    informative = compacted["session_id"].nunique()
    if informative >= minimum:
        return None
    return (
        f"only {informative} session(s) had a compaction under any strategy: the 95% intervals rest on "
        f"{informative} independent session(s) and understate the uncertainty; read differences whose "
        "interval contains 0 as ties, not as a ranking"
    )


#: Columns whose per-session share `dominance_notes` checks.
DOMINANCE_COLUMNS = ("tokens_saved", "cost_usd", "total_cost_usd", "violating_steps", "expected_recovery_tokens")


def session_name(row: Mapping[str, Any]) -> str:
    """A session's file name (its id when it has no file): what a note names a session by."""
    source = row.get("file") or row.get("source") or row["session_id"]
    return str(source).replace("\\", "/").rsplit("/", 1)[-1]


def dominance_notes(rows: pd.DataFrame, label: str, where: str) -> list[str]:
    """Sessions carrying more than half of a pooled column of one config (``rows``: its per-session rows):
    one session deciding a sum. Each note gives the per-session median beside it and ``where`` the
    per-session rows are."""
    notes = []
    for column in DOMINANCE_COLUMNS:
        if column not in rows.columns or len(rows) < 2:
            continue
        values = pd.to_numeric(rows[column], errors="coerce").fillna(0).clip(lower=0)
        total = float(values.sum())
        if total <= 0:
            continue
        top = values.idxmax()
        share = float(values[top]) / total
        if share > 0.5:
            notes.append(
                f"{label}: {session_name(rows.loc[top])} carries {share:.0%} of {column} "
                f"(per-session median {float(values.median()):.4g}; per-session rows: {where})"
            )
    return notes
