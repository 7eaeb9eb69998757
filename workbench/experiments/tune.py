"""Tuning: search one strategy's parameters over a corpus on the sweep engine, return the Pareto front of
savings vs fidelity vs cost and a recommended config with bootstrap intervals over sessions.

A tune spec (``experiments/tune-*.yaml``, ``workbench tune SPEC``)::

    name: tune-sm-compact
    corpus: ["${WORKBENCH_CORPUS}/claude-code"]
    corpus_fallback: ["../data"]
    strategy: sm-compact
    config: {}                                  # base config; the grid is merged over it
    space:                                      # the grid (cartesian product), dotted keys nest
      min_tokens: [5000, 10000, 20000]
      max_tokens: [20000, 40000, 80000]
      trigger.pct_of_window: [null, 60, 80]     # null = Claude Code's own threshold
    objective: saved_share                      # what the recommendation maximises ("-cost_usd": minimise)
    axes: {savings: saved_share, fidelity: expected_recovery_tokens, cost: cost_usd}   # the defaults
    fidelity_goal: min                          # default: min for a re-acquisition measure, else max
    constraints: {added_violating_steps: "== 0", added_blocked_steps: "== 0"}          # the default
    bootstrap: 2000
    confidence: 0.95

What happens, in order: the grid (plus the base config itself, the reference) becomes an experiment
spec and runs on the sweep engine (`workbench.experiments.run`: cached, resumable, any executor; grid
points the strategy's config rejects, e.g. ``min_tokens > max_tokens``, are skipped and counted). The
per-config table is the sweep's (`workbench.experiments.tables.config_table`). A config is *feasible*
when every constraint holds on its pooled value. The *front* is the feasible configs no other feasible
config dominates on the three axes (savings and fidelity up, cost down; a cost that is not available,
an unpriced model, drops that axis). The *recommendation* is the front config with the best objective
(ties: better fidelity, then lower cost, then fewer parameters changed from the defaults). Its
intervals are percentile bootstraps over sessions (the sessions resampled with replacement, each
resample pooled as the tables pool: ratios of sums for ``saved_share``, ``needed_recall``,
``dropped_recall`` and ``violation_rate``, sums otherwise), and the same resamples give a paired
interval for its objective minus the reference's.

Why a grid and not an optimiser (optuna): the spaces are small and discrete (a few keep-window sizes
and thresholds), a cell costs about a millisecond, the sweep store caches every cell, and configs that
differ only in what a compaction keeps share their replay prefix (`workbench.replay.replay_group`),
which a sequential sampler would forfeit; the full grid also gives the whole front, not one optimum.
The fidelity axis defaults to ``expected_recovery_tokens`` (what the agent is expected to re-acquire after
the compactions; lower is better), the fidelity score validated against real re-acquisitions;
``axes: {fidelity: needed_recall}`` (references kept, higher is better) is the older alternative.

Where things live: the spec, its loader and the constraints (parsed, and checked on the per-config
table) in `workbench.experiments.tune_spec`; the result and its views (text, JSON, plot) in
`workbench.experiments.tune_result`; here, the search (the front, the recommendation and its bootstrap
intervals). Every public name is still importable from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..metrics.uncertainty import dominance_notes, session_name
from .spec import METRIC_FAMILIES, REFERENCE_COLUMNS, resolve_spec
from .tune_result import TuneResult
from .tune_spec import _OPS, DEFAULT_CONSTRAINTS, TuneSpec, _feasible, load_tune_spec
from .tune_spec import Axes as Axes  # re-exported: importable from here as before the split
from .tune_spec import parse_bound as parse_bound  # re-exported (tests/public/test_tune.py imports it)

__all__ = ["DEFAULT_CONSTRAINTS", "TuneResult", "TuneSpec", "load_tune_spec", "run_tune"]

#: Pooled columns that are ratios of sums: (numerator, denominator, value when the denominator is 0).
RATIOS: dict[str, tuple[str, str, float]] = {
    "saved_share": ("tokens_saved", "input_tokens_without", 0.0),
    "needed_recall": ("needed_facts_kept", "needed_facts", 1.0),
    "dropped_recall": ("dropped_facts_kept", "dropped_facts", 1.0),
    "violation_rate": ("violating_steps", "steps", 0.0),
}


#: Per-session columns the ``added_*`` constraints read (`with_added_columns`).
ADDED_COLUMNS = ("added_violating_steps", "added_blocked_steps")


def with_added_columns(per_session: pd.DataFrame, steps: pd.DataFrame, baseline: str | None) -> pd.DataFrame:
    """``per_session`` with ``added_violating_steps`` (calls whose request breaks a rule where the baseline's
    request at the same call of the same session does not; `workbench.metrics.guarantees`) and
    ``added_blocked_steps`` (calls at the blocking limit beyond those without compaction)."""
    keys = ["session_id", "file", "step"]
    violating = steps[steps["violations"] > 0]
    if baseline is not None:
        clean = steps.loc[(steps["strategy"] == baseline) & (steps["violations"] == 0), keys].drop_duplicates()
        violating = violating.merge(clean, on=keys, how="inner")
    counts = violating.groupby(["config_hash", "session_id", "file"]).size().rename("added_violating_steps")
    out = per_session.merge(counts.reset_index(), on=["config_hash", "session_id", "file"], how="left")
    out["added_violating_steps"] = out["added_violating_steps"].fillna(0).astype(int)
    blocked = pd.to_numeric(out["steps_blocked"], errors="coerce").fillna(0)
    without = pd.to_numeric(out["steps_blocked_without"], errors="coerce").fillna(0)
    out["added_blocked_steps"] = (blocked - without).clip(lower=0).astype(int)
    return out


def _with_pooled_added(table: pd.DataFrame, per_session: pd.DataFrame) -> pd.DataFrame:
    pooled = per_session.groupby("config_hash")[list(ADDED_COLUMNS)].sum().reset_index()
    return table.merge(pooled, on="config_hash", how="left")


def infeasibility_notes(per_session: pd.DataFrame, constraints: Mapping[str, str | float | int]) -> list[str]:
    """Why no config is feasible: each constraint no config meets, and the sessions that fail it under every
    config on their own (a per-session value outside the bound; ratios per session as the tables pool them)."""
    notes = []
    configs = per_session["config_hash"].nunique()
    for column, bound in constraints.items():
        op, limit = parse_bound(column, bound)
        if column in RATIOS:
            num, den, empty = RATIOS[column]
            top, bottom = per_session[num].astype(float), per_session[den].astype(float)
            values = (top / bottom.where(bottom > 0)).fillna(empty)
        elif column in per_session.columns:
            values = pd.to_numeric(per_session[column], errors="coerce")
        else:
            continue
        holds = values.map(lambda v, op=op, limit=limit: not pd.isna(v) and _OPS[op](v, limit))
        failing = per_session.assign(_fails=~holds.astype(bool)).groupby(["session_id", "file"])["_fails"].sum()
        always = failing[failing == configs]
        if not len(always):
            continue
        names = [session_name(pd.Series({"session_id": s, "file": f})) for s, f in always.index[:5]]
        more = f" and {len(always) - 5} more" if len(always) > 5 else ""
        notes.append(
            f"no config meets {column} {op} {limit:g}: {len(always)} session(s) fail it under every config: "
            f"{', '.join(names)}{more}"
        )
    return notes


#: About how many step rows a tune measures at once (`ResultStore.session_parts`): whole sessions are
#: gathered until they reach it. A part costs about 0.1 s of pandas overhead (42 real sessions × 34 configs
#: measured in four parts instead of one: 1.7 s against 1.4 s); 50,000 rows of a 40-column table are a few
#: tens of MB.
PART_ROWS = 50_000


def _measured(
    store: Any, plan: Any, cell_ids: Sequence[str], families: Sequence[str], baseline: str | None
) -> tuple[pd.DataFrame, list[str]]:
    """``(per-session table, warning lines)`` of the sweep's cells: `cell_table` with the ``added_*`` columns,
    measured a few whole sessions at a time (`ResultStore.session_parts`), each session loaded only while its
    cells are measured, so a tune holds one part's step rows and sessions, not every config's rows of every
    session. The rows come in the store's cell order, as one `cell_table` of every cell gives them."""
    from .tables import cell_table

    cells = store.cells(cell_ids)
    sessions = _PartSessions(plan)
    parts: list[pd.DataFrame] = []
    ranked: list[tuple[int, str]] = []
    for part_cells, part_steps, part_events in store.session_parts(cells, rows=PART_ROWS):
        found = sessions.of(part_cells)
        ranked.extend(_warning_lines(found, sessions.rank))
        table = cell_table(part_cells, part_steps, part_events, found, families)
        if len(part_steps):
            parts.append(with_added_columns(table, part_steps, baseline))
        else:  # sessions without a call: nothing added (what one table of every cell gives them)
            parts.append(table.assign(**dict.fromkeys(ADDED_COLUMNS, 0)))
        del found, part_steps, part_events
    lines = [line for _, line in sorted(ranked, key=lambda item: item[0])]  # in the plan's session order
    if not parts:
        return cells, lines
    order = {cell: n for n, cell in enumerate(cells["cell_id"])}
    table = pd.concat(parts, ignore_index=True)
    table = table.iloc[table["cell_id"].map(order).argsort(kind="stable")].reset_index(drop=True)
    return table, lines


class _PartSessions:
    """The sessions of a part's cells: the plan's own when it holds them (``wb.tune`` of a loaded corpus),
    else read by file (the parsed-session cache), the last file read kept for the next part."""

    def __init__(self, plan: Any) -> None:
        from ..transcript.model import Session

        self.format = plan.spec.spec.format
        self.given = {(s.id, str(s.source), s.fingerprint): s for s in plan.sessions if isinstance(s, Session)}
        self._file: tuple[str, dict[str, Any]] | None = None
        #: each session's position in the plan, ``{(id, source): n}``
        self.rank = {(s.id, str(s.source)): n for n, s in reversed(list(enumerate(plan.sessions)))}

    def of(self, cells: pd.DataFrame) -> list[Any]:
        wanted = cells[["session_id", "source", "session_fingerprint"]].drop_duplicates()
        found = []
        for sid, source, fingerprint in wanted.itertuples(index=False):
            session = self.given.get((sid, str(source), fingerprint))
            if session is None:
                session = self._read(str(source)).get(sid)
            if session is not None and session.fingerprint == fingerprint:
                found.append(session)
        return found

    def _read(self, source: str) -> dict[str, Any]:
        from ..transcript import load_paths

        if self._file is None or self._file[0] != source:
            self._file = None  # released before the next file is read
            self._file = (source, {s.id: s for s in load_paths([source], format=self.format)})
        return self._file[1]


def _warning_lines(sessions: Sequence[Any], rank: Mapping[tuple[str, str], int]) -> list[tuple[int, str]]:
    """``(rank in the plan, line)`` of each session whose results rest on what a replay cannot fully model."""
    from ..replay.engine import session_facts

    lines = []
    for session in sessions:
        notes = session_facts(session).notes()
        if notes:
            name = session_name(pd.Series({"session_id": session.id, "file": session.source}))
            lines.append((rank.get((session.id, str(session.source)), len(rank)), f"{name}: {'; '.join(notes)}"))
    return lines


def _money(value: float) -> str:
    return "-" if pd.isna(value) else f"${value:,.2f}"


def pareto_mask(values: np.ndarray, senses: Sequence[int]) -> np.ndarray:
    """Rows of ``values`` (configs × axes) no other row dominates; ``senses`` +1 = higher is better."""
    oriented = values * np.asarray(senses, dtype=float)
    keep = np.ones(len(values), dtype=bool)
    for i in range(len(values)):
        others = np.delete(oriented, i, axis=0)
        dominated = np.all(others >= oriented[i], axis=1) & np.any(others > oriented[i], axis=1)
        keep[i] = not dominated.any()
    return keep


def _pooled(frame: pd.DataFrame, column: str, weights: np.ndarray) -> np.ndarray:
    """``column`` pooled over resampled sessions: ``weights`` (resamples × sessions) counts each session."""
    if column in RATIOS:
        num, den, empty = RATIOS[column]
        top = weights @ frame[num].to_numpy(dtype=float)
        bottom = weights @ frame[den].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), empty)
    pooled: np.ndarray = weights @ frame[column].astype(float).fillna(0.0).to_numpy()
    return pooled


def _intervals(
    per_session: pd.DataFrame, chosen: str, reference: str | None, spec: TuneSpec, metrics: Sequence[str]
) -> pd.DataFrame:
    sessions = sorted(set(per_session["session_id"]))
    rng = np.random.default_rng(spec.seed)
    draws = rng.integers(0, len(sessions), size=(spec.bootstrap, len(sessions)))
    weights = np.stack([np.bincount(row, minlength=len(sessions)) for row in draws]).astype(float)
    alpha = (1 - spec.confidence) / 2

    def frame_of(config: str) -> pd.DataFrame:
        rows = per_session[per_session["config_hash"] == config].set_index("session_id")
        return rows.reindex(sessions)

    mine = frame_of(chosen)
    out = []
    for metric in metrics:
        if metric not in mine.columns and metric not in RATIOS:
            continue
        values = _pooled(mine, metric, weights)
        point = _pooled(mine, metric, np.ones((1, len(sessions))))[0]
        low, high = np.quantile(values, [alpha, 1 - alpha])
        out.append({"metric": metric, "value": point, "low": low, "high": high})
    objective = spec.objective.lstrip("-")
    if reference is not None and reference != chosen:
        ref = frame_of(reference)
        diff = _pooled(mine, objective, weights) - _pooled(ref, objective, weights)
        point = (
            _pooled(mine, objective, np.ones((1, len(sessions))))[0]
            - _pooled(ref, objective, np.ones((1, len(sessions))))[0]
        )
        low, high = np.quantile(diff, [alpha, 1 - alpha])
        out.append({"metric": f"{objective} vs reference", "value": point, "low": low, "high": high})
    return pd.DataFrame(out, columns=["metric", "value", "low", "high"])


def _value_at(config: Mapping[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _merge_identical(
    front: pd.DataFrame, per_session: pd.DataFrame, columns: Sequence[str], spec: TuneSpec
) -> tuple[pd.DataFrame, list[str]]:
    """The front with configs whose results are identical on every session (on ``columns``) merged into one
    row: the config closest to the defaults stands for them, ``same_results`` lists the others, and a note
    names the parameters that did not bind."""
    if front.empty:
        return front.assign(same_results=pd.Series(dtype=object)), []
    keys = [c for c in ("session_id", "file") if c in per_session.columns]
    mine = per_session[per_session["config_hash"].isin(front["config_hash"])]
    signature: dict[str, tuple[Any, ...]] = {}
    for chash, rows in mine.groupby("config_hash", sort=False):
        values = rows.sort_values(keys, kind="stable")[[*keys, *columns]].copy()
        for column in columns:
            values[column] = pd.to_numeric(values[column], errors="coerce").round(9)
        signature[str(chash)] = tuple(map(tuple, values.astype(object).where(values.notna(), None).to_numpy()))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, chash in zip(front.index, front["config_hash"].astype(str), strict=True):
        groups.setdefault(signature.get(chash, (chash,)), []).append(index)
    keep, same, notes = [], {}, []
    for members in groups.values():
        ordered = sorted(members, key=lambda i: (front.at[i, "label"].count("="), front.at[i, "label"]))
        lead, others = ordered[0], ordered[1:]
        keep.append(lead)
        same[lead] = "; ".join(front.at[i, "label"] for i in others)
        if others:
            configs = [
                json.loads(front.at[i, "config_json"]) for i in ordered if isinstance(front.at[i, "config_json"], str)
            ]
            loose = [k for k in spec.space if len({json.dumps(_value_at(c, k)) for c in configs}) > 1]
            notes.append(
                f"{front.at[lead, 'label']} and {len(others)} other config(s) give identical results on every session"
                + (f": {', '.join(loose)} did not bind" if loose else "")
                + " (one front row; `same_results` lists them)"
            )
    merged = front.loc[[i for i in front.index if i in keep]].copy()
    merged["same_results"] = [same[i] for i in merged.index]
    return merged, notes


def _uses_references(spec: TuneSpec) -> bool:
    """Whether the tune reads a references column (axes, objective or a constraint): that family reads
    every record's text for facts, so a tune that does not read it does not compute it."""
    named = [spec.axes.savings, spec.axes.fidelity, spec.axes.cost, spec.objective.lstrip("-"), *spec.constraints]
    return any(name in REFERENCE_COLUMNS for name in named)


def run_tune(
    spec: TuneSpec,
    path: str | Path,
    *,
    sessions: Sequence[Any] | None = None,
    store: str | Path | None = None,
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
) -> TuneResult:
    """Run the tuning ``spec`` (``path``: where relative corpus paths resolve and errors point).

    ``sessions`` (already loaded, e.g. ``wb.load(...)``) replace the spec's corpus; ``store`` defaults to
    ``results/<name>/store`` as for sweeps.
    """
    from ..metrics._common import config_hash
    from ..replay.facts import warning_summary
    from ..strategies import get_strategy
    from .run import plan_for_sessions, plan_sweep, run_sweep
    from .store import ResultStore
    from .tables import config_table

    resolved = resolve_spec(spec.experiment(), path)
    plan = plan_for_sessions(resolved, sessions) if sessions is not None else plan_sweep(resolved)
    target = Path(store) if store is not None else Path("results") / spec.name / "store"
    result = run_sweep(resolved, store=target, executor=executor, workers=workers, progress=progress, plan=plan)
    families = tuple(f for f in METRIC_FAMILIES if f != "references" or _uses_references(spec))
    per_session, warned = _measured(ResultStore(result.store), plan, result.cell_ids, families, spec.baseline)
    baseline_rows = per_session[per_session["strategy"] != spec.strategy]
    per_session = per_session[per_session["strategy"] == spec.strategy]
    table = _with_pooled_added(config_table(per_session), per_session)
    axes = [spec.axes.savings, spec.axes.fidelity, spec.axes.cost]
    objective = spec.objective.lstrip("-")
    for column in dict.fromkeys([*axes, objective]):
        if column not in table.columns:
            raise ValueError(f"{column!r} is not a column of the sweep's table: {', '.join(sorted(table.columns))}")
    notes: list[str] = []
    feasible, violated = _feasible(table, spec.constraints)
    table = table.assign(feasible=feasible, violated=violated)
    senses = [1, 1 if spec.goal == "max" else -1, -1]
    used = [i for i, a in enumerate(axes) if table.loc[feasible, a].notna().all()]
    if len(used) < 3:
        notes.append(
            f"{', '.join(axes[i] for i in range(3) if i not in used)}: not available for every config; "
            "left out of the front"
        )
    on_front = pd.Series(False, index=table.index)
    candidates = table[feasible]
    if len(candidates):
        mask = pareto_mask(candidates[[axes[i] for i in used]].to_numpy(dtype=float), [senses[i] for i in used])
        on_front.loc[candidates.index[mask]] = True
    table = table.assign(on_front=on_front)
    front = table[table["on_front"]].sort_values(spec.axes.savings, ascending=False, kind="stable")
    front, merged = _merge_identical(front, per_session, list(dict.fromkeys([*axes, objective])), spec)
    notes.extend(merged)
    reference_hash = config_hash(
        spec.strategy, get_strategy(spec.strategy).Config(**spec.config).model_dump(mode="json")
    )
    reference = table[table["config_hash"] == reference_hash]
    recommended = None
    intervals = pd.DataFrame(columns=["metric", "value", "low", "high"])
    if len(front):
        sign = -1 if spec.objective.startswith("-") else 1
        keys = [front[objective] * sign, front[spec.axes.fidelity] * senses[1]]
        if 2 in used:
            keys.append(-front[spec.axes.cost])
        keys.append(-front["label"].str.count("="))  # equal results: the config closest to the defaults
        order = pd.concat(keys, axis=1).apply(tuple, axis=1).sort_values(ascending=False, kind="stable")
        recommended = front.loc[order.index[0]]
        intervals = _intervals(
            per_session,
            str(recommended["config_hash"]),
            reference_hash if len(reference) else None,
            spec,
            list(dict.fromkeys([*axes, objective])),
        )
        paired = intervals[intervals["metric"] == f"{objective} vs reference"]
        if len(paired) and paired.iloc[0]["low"] is not None and paired.iloc[0]["low"] <= 0 <= paired.iloc[0]["high"]:
            notes.append(
                f"a tie: {recommended['label']} against the base config, {objective} "
                f"{paired.iloc[0]['value']:+.4g} [95% CI {paired.iloc[0]['low']:+.4g}, {paired.iloc[0]['high']:+.4g}] "
                "contains 0: no config beats the defaults beyond noise"
            )
    n = len(plan.sessions)
    notes.extend(warning_summary(warned, n))
    if not feasible.any():
        notes.extend(infeasibility_notes(per_session, spec.constraints))
    chosen = recommended if recommended is not None else (reference.iloc[0] if len(reference) else None)
    if chosen is not None:
        rows = per_session[per_session["config_hash"] == chosen["config_hash"]]
        notes.extend(dominance_notes(rows, chosen["label"], "result.per_session"))
    if len(baseline_rows):
        base = baseline_rows[["cost_usd", "total_cost_usd"]].apply(pd.to_numeric, errors="coerce").sum(min_count=1)
        notes.append(
            f"baseline {spec.baseline}: cost_usd {_money(base['cost_usd'])}, "
            f"total_cost_usd {_money(base['total_cost_usd'])} over the same sessions"
        )
    if recommended is not None:
        mine = per_session[per_session["config_hash"] == recommended["config_hash"]]
        acting = int((mine["compactions"] > 0).sum())
        if acting < n:
            notes.append(f"{acting} of {n} sessions compact under the recommendation: its savings rest on them")
    if n < 10:
        notes.append(f"{n} sessions: bootstrap intervals over so few sessions are wide and approximate")
    if result.grid_points_skipped:
        notes.append(f"{result.grid_points_skipped} grid points rejected by {spec.strategy}'s config (skipped)")
    notes = list(dict.fromkeys(notes))  # a note reached by two paths is said once
    return TuneResult(
        spec,
        table.reset_index(drop=True),
        front.reset_index(drop=True),
        recommended,
        reference.iloc[0] if len(reference) else None,
        intervals,
        n,
        result.grid_points_skipped,
        notes,
        sweep=result,
        plan=plan,
        per_session=per_session.reset_index(drop=True),
        baseline=baseline_rows.reset_index(drop=True),
    )
