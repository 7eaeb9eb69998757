"""Frames derived from a sweep's store records: one row per cell, and one per (strategy, config).

The store keeps raw replay rows; these views apply the metric families (`workbench.metrics`) once per
sweep over all cells together, so a cell's result never depends on which metrics were asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..metrics.identity import SessionKeys
from .spec import METRIC_FAMILIES, REFERENCE_COLUMNS
from .store import ResultStore

__all__ = ["cell_table", "config_table", "flatten_config", "sweep_frames", "with_labels", "write_parquet"]

#: Savings columns a cell's summary lacks (steps at the blocking limit / over the window).
_SAVINGS_EXTRA = ("steps_blocked", "steps_blocked_without", "steps_over_window", "steps_over_window_without")


def write_parquet(frame: pd.DataFrame, path: Any) -> None:
    """Parquet of a table whose ``cfg.*`` columns may mix types across strategies (stored as JSON text then)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            kinds = {type(v) for v in out[column] if v is not None and not (isinstance(v, float) and pd.isna(v))}
            if len(kinds) > 1 or kinds & {list, dict}:
                out[column] = [
                    None if v is None or (isinstance(v, float) and pd.isna(v)) else json.dumps(v) for v in out[column]
                ]
    out.to_parquet(path, index=False)


def sweep_frames(
    store: ResultStore, cell_ids: Iterable[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(cells, steps, events)`` of the given cells (default: the whole store)."""
    cells = store.cells(cell_ids)
    return cells, store.steps(cells), store.events(cells)


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config to dotted keys (``trigger.pct_of_window``)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_config(value, name + "."))
        else:
            out[name] = value
    return out


def cell_table(
    cells: pd.DataFrame,
    steps: pd.DataFrame,
    events: pd.DataFrame,
    sessions: Iterable[Any] | Mapping[str, Any] | None = None,
    metrics: Sequence[str] = METRIC_FAMILIES,
) -> pd.DataFrame:
    """One row per cell: the cell's summary columns plus the requested metric families."""
    from ..metrics import (
        KEYS,
        cost_sessions,
        fidelity,
        fidelity_sessions,
        load_pricing,
        savings_sessions,
        validity_sessions,
    )
    from ..metrics._common import session_map

    table = cells.copy()
    if table.empty:
        return table
    # a session is (id, source file): ids in several files get per-file keys while the metrics run
    column = next((c for c in ("source", "file") if c in table.columns), None)
    sources = list(table[column]) if column else [None] * len(table)
    keys = SessionKeys(zip(table["session_id"], sources, strict=True))
    if keys.duplicates and "cell_id" in table.columns:
        rows = zip(table["cell_id"], table["session_id"], sources, strict=True)
        by_cell = {cid: keys.key(sid, src) for cid, sid, src in rows}
        table["session_id"] = table["cell_id"].map(by_cell)
        steps = steps.assign(session_id=steps["cell_id"].map(by_cell)) if len(steps) else steps
        events = events.assign(session_id=events["cell_id"].map(by_cell)) if len(events) else events
    items = sessions.values() if isinstance(sessions, Mapping) else sessions
    by_id = keys.sessions(items) if items is not None else session_map(None)
    # cells whose replays came out the same (configs that compacted alike) are measured once
    twins = _twins(steps, events)
    if len(twins):
        steps = steps[~steps["cell_id"].isin(twins["cell_id"])]
        events = events[~events["cell_id"].isin(twins["cell_id"])] if len(events) else events
    no_events = events if len(events) else None
    if "savings" in metrics and len(steps):
        saving = _with_twins(savings_sessions(steps, no_events), twins)
        keep = [c for c in _SAVINGS_EXTRA if c in saving.columns and c not in table.columns]
        table = table.merge(saving[[*KEYS, *keep]], on=KEYS, how="left")
    if "validity" in metrics and len(steps):
        valid = _with_twins(validity_sessions(steps, no_events), twins)
        keep = [
            c
            for c in (
                "violation_rate",
                "compaction_violation_rate",
                "adjusted_compactions",
                "fallback_reasons",
                "repaired_steps",
            )
            if c in valid.columns
        ]
        table = table.merge(valid[[*KEYS, *keep]], on=KEYS, how="left")
    if "cost" in metrics and len(steps):
        money = _with_twins(cost_sessions(steps, no_events, by_id or None, pricing=load_pricing()), twins)
        keep = [
            c
            for c in ("cost_usd", "cost_per_1k_steps", "summarizer_cost_usd", "memory_cost_usd", "memory_extractions")
            if c in money.columns
        ]
        table = table.merge(money[[*KEYS, *keep]], on=KEYS, how="left")
    if "references" in metrics and by_id and len(steps):
        per_event = fidelity(by_id, events) if len(events) else pd.DataFrame()
        fid = _with_twins(fidelity_sessions(per_event, steps), twins)
        keep = [c for c in REFERENCE_COLUMNS if c in fid.columns]
        table = table.merge(fid[[*KEYS, *keep]], on=KEYS, how="left")
    if "fidelity" in metrics and by_id and len(steps):
        from ..metrics.expected_recovery import SESSION_COLUMNS as RECOVERY_COLUMNS
        from ..metrics.expected_recovery import expected_recovery, expected_recovery_sessions

        available = steps[steps["session_id"].isin(by_id)]
        rec = _with_twins(
            expected_recovery_sessions(expected_recovery(by_id, events, available), available, by_id), twins
        )
        table = table.merge(rec[[*KEYS, *RECOVERY_COLUMNS]], on=KEYS, how="left")
        if "cost_usd" in table.columns:
            table["total_cost_usd"] = pd.to_numeric(table["cost_usd"], errors="coerce") + pd.to_numeric(
                table["recovery_cost_usd"], errors="coerce"
            )
    return with_labels(keys.restore(table))


#: Columns that name a cell rather than say what its replay did.
_IDENTITY = frozenset({"cell_id", "config_hash", "batch", "written_at", "label"})


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a row value (list columns, as lists or the arrays parquet reads back)."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        items = tuple(value)
        try:
            hash(items)
        except TypeError:  # nested lists
            return tuple(_frozen(v) for v in items)
        return items
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def _twins(steps: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """``(session_id, strategy, config_hash, cell_id, twin_of)`` of every cell whose steps and events rows,
    but for the columns naming the cell, equal an earlier cell's of the same session and strategy
    (``twin_of``: that cell's ``config_hash``). Steps rows compare by a 64-bit hash per row, events rows
    by value."""
    columns = ["session_id", "strategy", "config_hash", "cell_id", "twin_of"]
    if not len(steps) or "cell_id" not in steps.columns:
        return pd.DataFrame(columns=columns)
    content = steps[[c for c in steps.columns if c not in _IDENTITY]]
    try:
        hashed = pd.util.hash_pandas_object(content, index=False).to_numpy()
    except TypeError:  # a column holding unhashable values (lists): hashed by their representation
        hashed = pd.util.hash_pandas_object(content.astype(str), index=False).to_numpy()
    # each cell's row hashes in row order, as one bytes value (a numpy split, not a loop over rows)
    codes, ids = pd.factorize(steps["cell_id"])
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(ids)))[:-1]
    rows: dict[Any, list[Any]] = {
        cell: [chunk.tobytes()] for cell, chunk in zip(ids, np.split(hashed[order], bounds), strict=True)
    }
    if len(events) and "cell_id" in events.columns:
        fields = [c for c in events.columns if c not in _IDENTITY]
        for cell, *values in zip(events["cell_id"], *(events[c] for c in fields), strict=True):
            rows.setdefault(cell, []).append(tuple(_frozen(v) for v in values))
    cells = steps.drop_duplicates("cell_id")[["session_id", "strategy", "config_hash", "cell_id"]]
    first: dict[tuple[Any, ...], Any] = {}
    out = []
    for session, strategy, config, cell in cells.itertuples(index=False):
        key = (session, strategy, tuple(rows.get(cell, ())))
        if key in first:
            out.append((session, strategy, config, cell, first[key]))
        else:
            first[key] = config
    return pd.DataFrame(out, columns=columns)


def _with_twins(frame: pd.DataFrame, twins: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per session × strategy × config_hash) with a copy of its row for each twin."""
    if not len(twins) or frame.empty:
        return frame
    mapping = twins[["session_id", "strategy", "twin_of", "config_hash"]].rename(
        columns={"config_hash": "_twin", "twin_of": "config_hash"}
    )
    copies = frame.merge(mapping, on=["session_id", "strategy", "config_hash"], how="inner")
    copies = copies.assign(config_hash=copies["_twin"]).drop(columns="_twin")
    return pd.concat([frame, copies], ignore_index=True)


def with_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a readable ``label`` column (strategy + non-default parameters,
    `workbench.strategies.labels`) computed from ``strategy`` and ``config_json``, right after ``strategy``.
    The ``config_hash`` stays the join key."""
    from ..strategies.labels import config_label, unique_labels

    if frame.empty or "config_json" not in frame.columns or "label" in frame.columns:
        return frame
    keys = frame[["config_hash", "strategy", "config_json"]].drop_duplicates("config_hash")
    labels = unique_labels(
        (row.config_hash, config_label(row.strategy, row.config_json)) for row in keys.itertuples(index=False)
    )
    out = frame.copy()
    out.insert(list(out.columns).index("strategy") + 1, "label", out["config_hash"].map(labels))
    return out


def config_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Pooled per (strategy, config_hash), with the resolved config flattened into columns and 95%
    bootstrap intervals over sessions (``<metric>_ci_low``/``_ci_high``, `workbench.metrics.uncertainty`)."""
    from ..metrics.uncertainty import CI_METRICS, bootstrap_intervals

    if cells.empty:
        return cells
    sums = {
        c: "sum"
        for c in (
            "steps",
            "compactions",
            "input_tokens",
            "input_tokens_without",
            "tokens_saved",
            "violating_steps",
            "violations",
            "compaction_violations",
            "repairs",
            "fallbacks",
            "steps_blocked",
            "steps_blocked_without",
            "steps_over_window",
            "steps_over_window_without",
            "cost_usd",
            "summarizer_cost_usd",
            "memory_cost_usd",
            "memory_extractions",
            "needed_facts",
            "needed_facts_kept",
            "dropped_facts",
            "dropped_facts_kept",
        )
        if c in cells.columns
    }
    grouped = cells.groupby(["strategy", "config_hash"], sort=True)
    for column in ("cost_usd", "summarizer_cost_usd", "memory_cost_usd"):  # the priced sessions' sum
        if column in sums:
            sums[column] = lambda c: c.sum(min_count=1)  # type: ignore[assignment]
    out = grouped.agg({**sums, "peak_context_tokens": "max", "config_json": "first"})
    if "cost_usd" in cells.columns:  # how many sessions the cost sums leave out (no price for their model)
        from ..metrics.cost import unpriced_count

        out["unpriced_sessions"] = grouped["cost_usd"].agg(unpriced_count)
    # sessions are (id, source file): copies of one session id count once each
    identity = cells.assign(
        _session=list(zip(cells["session_id"], cells.get("source", cells["session_id"]), strict=True))
    )
    out["sessions"] = identity.groupby(["strategy", "config_hash"], sort=True)["_session"].nunique()
    out = out.reset_index()
    for column in ("expected_recovery_tokens", "expected_recovery_calls", "recovery_cost_usd", "total_cost_usd"):
        if column in cells.columns:  # summed where available; null (never 0) where no session has it
            values = pd.to_numeric(cells[column], errors="coerce")
            pooled = values.groupby([cells["strategy"], cells["config_hash"]]).sum(min_count=1)
            out = out.merge(pooled.rename(column).reset_index(), on=["strategy", "config_hash"], how="left")
    out["saved_share"] = out["tokens_saved"] / out["input_tokens_without"].where(out["input_tokens_without"] > 0)
    out["violation_rate"] = out["violating_steps"] / out["steps"].where(out["steps"] > 0)
    out["compaction_violation_rate"] = out["compaction_violations"] / out["compactions"].where(out["compactions"] > 0)
    if "needed_facts" in out.columns:
        out["needed_recall"] = (out["needed_facts_kept"] / out["needed_facts"].where(out["needed_facts"] > 0)).fillna(
            1.0
        )
        out["dropped_recall"] = (
            out["dropped_facts_kept"] / out["dropped_facts"].where(out["dropped_facts"] > 0)
        ).fillna(1.0)
    metrics = [m for m in CI_METRICS if m in out.columns]
    if metrics:
        out = out.merge(bootstrap_intervals(cells, metrics), on=["strategy", "config_hash"], how="left")
    params = pd.DataFrame([flatten_config(json.loads(text)) for text in out["config_json"]], index=out.index)
    params.columns = [f"cfg.{c}" for c in params.columns]
    return with_labels(pd.concat([out, params], axis=1))
