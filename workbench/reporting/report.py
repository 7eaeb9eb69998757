"""Summarise a replay output folder: savings, validity, fidelity and cost per session and strategy.

Three modules, one concern each: `workbench.reporting.runs` reads the run folders ``workbench replay --out``
writes (``steps.parquet``, ``events.parquet``, ``manifest.json``; `load_results`, `write_manifest`), this
module computes the summary (`report`), `workbench.reporting.render` prints it (`render_report`).

Fidelity and the recorded output tokens in the cost need the sessions:
`report` takes them from ``sessions=`` or loads the manifest ``inputs`` (relative paths resolve
against the run folder); without either, those columns are None and ``notes`` says so. The inputs are
read one session group at a time and each session's columns computed before the next group is read
(`workbench.reporting.sessions`): the report holds the steps and events tables, not the sessions.

A run folder that cannot be read (a damaged parquet or manifest, a steps table without its columns) is
left out and listed under ``failed_runs`` (``{"path", "reason"}``, also a note); the other runs are
summarised. Only when no run can be read does `report` raise.

A session is (session id, file) (`workbench.metrics.identity`): two files with one ``sessionId`` are
reported as two rows with their ``file``, and ``notes`` lists them; the same session replayed with the
same strategy and config into two run folders is reported once per run folder (its ``file`` names the
folder too). A run folder written before steps carried their ``file`` that holds copies of one session
cannot tell them apart: it is left out like a damaged one (named, with the reason), not merged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..metrics._common import KEYS, share
from ..metrics.calibration import dollar_weighted_error
from ..metrics.cost import load_pricing
from ..metrics.expected_recovery import SESSION_COLUMNS as RECOVERY_COLUMNS
from ..metrics.expected_recovery import expected_recovery_sessions
from ..metrics.fidelity import SESSION_COLUMNS as FIDELITY_COLUMNS
from ..metrics.fidelity import fidelity_sessions
from ..metrics.identity import SessionKeys
from ..metrics.savings import BLOCKING_LIMIT, WINDOW, savings_sessions
from ..metrics.uncertainty import (
    CI_METRICS,
    bootstrap_intervals,
    dominance_notes,
    few_sessions_note,
    paired_differences,
)
from ..metrics.validity import validity_sessions
from ..replay.facts import warning_summary
from ..replay.run_folder import write_manifest
from ..transcript.model import Session
from .render import render_report
from .runs import load_results, with_labels
from .sessions import SessionTables, held_sessions

__all__ = ["load_results", "render_report", "report", "write_manifest"]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _clean(v) for k, v in row.items()} for row in frame.to_dict("records")]


def report(
    results_dir: str | Path,
    *,
    sessions: Iterable[Session] | Mapping[str, Session] | None = None,
    window: int = WINDOW,
    blocking_limit: int = BLOCKING_LIMIT,
    pricing_path: str | None = None,
    summarizer_input: str = "cache_read",
    baseline: str | None = None,
    estimator: str = "claude-rough",
    probes: Mapping[str, Any] | None = None,
    references: bool = False,
) -> dict[str, Any]:
    """Summary of every run under ``results_dir`` as a JSON-serialisable dict.

    ``references`` adds the references kept (``needed_recall``, ``dropped_recall``, and Claude's recorded
    summaries scored the same way under ``reference``; `workbench.metrics.fidelity`): every record's text
    is read for facts, so they are computed on request. Without it those columns are null and a note says
    so; the fidelity the report leads with is the expected recovery.

    Keys: ``results_dir``; ``runs`` (one per run folder); ``sessions`` (one row per session × strategy ×
    config_hash with at least ``tokens_saved``, ``peak_context_tokens``, ``violations``,
    ``needed_recall``, ``dropped_recall``, ``cost_usd`` (simulated: requests + compaction calls) next to
    ``recorded_cost_usd`` (the bill of the recorded usage, = ccusage; the same for every strategy of a
    session), ``recorded_cost_output_estimated_usd``, ``recorded_output_tokens``, ``output_tokens_estimate``
    and ``output_tokens_estimated`` (responses whose final usage was not persisted, `workbench.metrics.bill`),
    ``compaction_agent``, ``expected_recovery_tokens``/``_calls``, ``recovery_cost_usd``, ``total_cost_usd``
    = ``cost_usd + recovery_cost_usd``, and for ``recorded`` runs the measured
    ``measured_recovery_tokens``/``_calls``); ``strategies`` (the same pooled per strategy × config_hash,
    with ``<metric>_ci_low``/``<metric>_ci_high`` 95% bootstrap intervals over sessions for the
    `CI_METRICS`); ``differences`` (paired differences against ``baseline``, default ``recorded`` when
    present, else ``none``); ``reference`` (Claude's recorded summaries scored like strategies);
    ``recovery`` (what the agent re-acquired after each recorded compaction, `workbench.metrics.recovery`);
    ``calibration`` (cost simulation vs recorded usage, for ``none``/``recorded`` runs); ``notes``.
    ``estimator`` counts re-acquired tokens.

    ``probes`` (online, optional) runs the judge probes on every compaction and on Claude's recorded
    ones (`workbench.probes.run.run_probes`; keys: ``budget_usd`` (required), ``model``,
    ``judge_model``, ``kinds``, ``n_per_kind``, ``against``, ``client``, ``on_estimate``) into
    ``probes``. Raises `ProbeBudgetError` when the estimate is above the budget (nothing sent).
    """
    failed: list[dict[str, str]] = []
    steps, events, runs = load_results(results_dir, failed=failed)
    notes: list[str] = [f"run folder {f['path']} left out: {f['reason']}" for f in failed]
    if steps.empty:
        return {
            "results_dir": str(results_dir),
            "runs": runs,
            "failed_runs": failed,
            "sessions": [],
            "strategies": [],
            "differences": [],
            "reference": [],
            "recovery": [],
            "calibration": [],
            "notes": [*notes, "no steps.parquet found"],
            "warnings": [],
        }
    keys = SessionKeys.of(steps, events)  # a session is (id, file): duplicated ids get per-file keys
    steps, events = keys.relabel(steps), keys.relabel(events)
    wanted = set(steps["session_id"])
    if sessions is not None and not isinstance(sessions, Mapping):
        sessions = list(sessions)  # the caller's own, held by them anyway; a generator is read once
    pricing = load_pricing(pricing_path)
    found = SessionTables(
        steps,
        events,
        keys,
        pricing=pricing,
        estimator=estimator,
        summarizer_input=summarizer_input,
        references=references,
    ).add_inputs(runs, sessions)  # one session group in memory at a time
    found_ids = found.available
    missing = wanted - set(found_ids)
    if missing:
        notes.append(
            f"{len(missing)} of {len(wanted)} sessions not available (pass sessions= or a manifest.json "
            "with inputs): their fidelity is None and their cost omits output tokens"
        )
    notes.extend(keys.notes())
    if not references:
        notes.append("references kept (needed_recall, dropped_recall) not computed: `--references` adds them")
    warnings = [found.warnings[k] for k in found_ids if k in found.warnings]
    notes.extend(warning_summary(warnings, len(found_ids)))
    if "none" not in set(steps["strategy"]) and not found_ids:
        notes.append(
            "no `none` run and no sessions: tokens saved by `recorded` are measured against its own compacted context"
        )

    uncompacted = found.uncompacted()
    saving = savings_sessions(steps, events, window=window, blocking_limit=blocking_limit, baseline=uncompacted)
    valid = validity_sessions(steps, events)
    per_step = found.cost_steps()
    money = found.money(per_step)
    stale = _without_extraction_columns(steps, events)
    if stale:
        notes.append(
            f"steps.parquet without the session-memory extraction columns (written before they existed) for "
            f"{', '.join(stale)}: their extractions are not priced (memory_cost_usd 0); replay again"
        )
    table = saving.merge(valid.drop(columns=["steps", "compactions"]), on=KEYS, how="left")
    table = table.merge(
        money[
            [
                *KEYS,
                "cost_usd",
                "cost_per_1k_steps",
                "summarizer_cost_usd",
                "summarizer_share",
                "memory_extractions",
                "memory_cost_usd",
                "memory_share",
                "compaction_agent",
            ]
        ],
        on=KEYS,
        how="left",
    )
    bill = found.bill().rename(
        columns={
            "estimated_cost_usd": "recorded_cost_output_estimated_usd",
            "output_tokens_recorded": "recorded_output_tokens",
        }
    )
    bill_columns = [
        "recorded_cost_usd",
        "recorded_cost_output_estimated_usd",
        "recorded_output_tokens",
        "output_tokens_estimate",
        "output_tokens_estimated",
    ]
    table = table.merge(bill[["session_id", *bill_columns]], on="session_id", how="left")
    if found_ids:
        available = steps[steps["session_id"].isin(found_ids)]
        if references:
            fid = fidelity_sessions(found.per_event_fidelity(), available)
            table = table.merge(fid[[*KEYS, *FIDELITY_COLUMNS]], on=KEYS, how="left")
        else:
            for column in FIDELITY_COLUMNS:
                table[column] = None
        table = table.merge(found.instruction_sessions(), on=KEYS, how="left")
    else:
        for column in (*FIDELITY_COLUMNS, "instructions", "instructions_lost"):
            table[column] = None
    table, measured = _with_recovery(table, steps, events, found, notes)
    table = with_labels(table, runs)
    strategies = _pooled(table.drop(columns=["label"]))
    strategies = strategies.merge(bootstrap_intervals(table, CI_METRICS), on=["strategy", "config_hash"], how="left")
    strategies = with_labels(strategies, runs)
    names = set(table["strategy"])
    baseline = baseline or next((b for b in ("recorded", "none") if b in names), None)
    if baseline is not None and baseline not in names:
        raise ValueError(f"baseline strategy {baseline!r} is not among the runs ({', '.join(sorted(names))})")
    differences = paired_differences(table, baseline, CI_METRICS) if baseline else pd.DataFrame()
    few = few_sessions_note(table)
    if few:
        notes.append(few)
    for (_, _), rows in table.groupby(["strategy", "config_hash"], sort=True):
        notes.extend(dominance_notes(rows, str(rows["label"].iloc[0]), "the sessions table"))
    reference = keys.restore(found.reference_frame()) if found_ids else pd.DataFrame()
    probed = None
    if probes is not None:  # the probes need every session at once (`workbench.reporting.sessions`)
        probed = _probes(probes, held_sessions(runs, sessions, keys, wanted), events, notes)
    table, measured = keys.restore(table), keys.restore(measured)
    calibration = pd.DataFrame()
    if found_ids and {"none", "recorded"} & set(steps["strategy"]):
        calibration = keys.restore(found.calibration_frame(per_step))
        if len(calibration):
            for name, group in calibration.groupby("strategy"):
                pooled = dollar_weighted_error(group, resamples=500)
                notes.append(
                    f"cost calibration ({name}): dollar-weighted error {pooled['absolute']:.1%} "
                    f"(signed {pooled['signed']:+.1%}, 95% CI {pooled['signed_low']:+.1%}.."
                    f"{pooled['signed_high']:+.1%}), "
                    f"median {group['cost_error'].median():.1%} per session, over {len(group)} sessions"
                )
    return {
        "results_dir": str(results_dir),
        "window": window,
        "blocking_limit": blocking_limit,
        "runs": runs,
        "failed_runs": failed,
        "sessions": _records(table),
        "strategies": _records(strategies),
        "baseline": baseline,
        "differences": _records(differences),
        "reference": _records(reference.drop(columns=["needed_by_kind"], errors="ignore")) if len(reference) else [],
        "recovery": _records(measured),
        "calibration": _records(calibration),
        **({"probes": probed} if probed is not None else {}),
        "notes": notes,
        "warnings": warnings,
    }


def _probes(
    options: Mapping[str, Any], by_id: Mapping[str, Session], events: pd.DataFrame, notes: list[str]
) -> dict[str, Any]:
    from ..probes.run import probe_report

    return probe_report(options, by_id, events, notes)


#: Strategies that extract session memory by default (their old run folders lack the extraction columns).
_MEMORY_STRATEGIES = frozenset({"sm-compact", "sm-compact-reference", "sm-compact-naive", "claude-code"})


def _without_extraction_columns(steps: pd.DataFrame, events: pd.DataFrame) -> list[str]:
    """Strategies with session memory whose steps were written before ``memory_extraction`` existed."""
    old = steps if "memory_extraction" not in steps.columns else steps[steps["memory_extraction"].isna()]
    if old.empty:
        return []
    names = set(old["strategy"]) & _MEMORY_STRATEGIES
    if len(events) and "summary_source" in events.columns:
        names |= set(events.loc[events["summary_source"] == "session-memory", "strategy"]) & set(old["strategy"])
    return sorted(names)


def _with_recovery(
    table: pd.DataFrame, steps: pd.DataFrame, events: pd.DataFrame, found: SessionTables, notes: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The expected recovery and its price per session row, ``total_cost_usd``, and for ``recorded``
    rows the measured recovery after the recorded compactions; also the measured rows themselves."""
    found_ids = found.available
    measured = found.measured_recovery() if found_ids else pd.DataFrame()
    if found_ids:
        available = steps[steps["session_id"].isin(found_ids)]
        rec = expected_recovery_sessions(found.per_event_recovery(), available, {}, tool_calls=found.tool_calls)
        table = table.merge(rec, on=KEYS, how="left")
        if len(events) and "added_text" not in events.columns and (events["kind"] == "full-compact").any():
            notes.append(
                "events.parquet without added_text (written before it existed): re-attached files are not "
                "credited in expected_recovery; replay again for the full estimate"
            )
    else:
        for column in RECOVERY_COLUMNS:
            table[column] = None
    table["total_cost_usd"] = pd.to_numeric(table["cost_usd"], errors="coerce") + pd.to_numeric(
        table["recovery_cost_usd"], errors="coerce"
    )
    table["measured_recovery_tokens"] = float("nan")
    table["measured_recovery_calls"] = float("nan")
    if len(measured):
        per_session = measured.groupby("session_id")[["recovery_tokens", "recovery_calls"]].sum()
        recorded = table["strategy"] == "recorded"
        for column in ("tokens", "calls"):
            recovered = table.loc[recorded, "session_id"].map(per_session[f"recovery_{column}"])
            table.loc[recorded, f"measured_recovery_{column}"] = recovered.fillna(0).astype(float)
    return table, measured


#: Columns summed over the sessions where they are available: null (never 0) where none is.
_AVAILABLE_SUMS = (
    "cost_usd",
    "memory_cost_usd",
    "expected_recovery_calls",
    "expected_recovery_tokens",
    "expected_recovery_files",
    "recovery_cost_usd",
    "total_cost_usd",
    "measured_recovery_tokens",
    "measured_recovery_calls",
    "instructions",
    "instructions_lost",
)


#: Columns summed over every session of a strategy × config.
_POOLED_SUMS = (
    "steps",
    "input_tokens",
    "input_tokens_without",
    "tokens_saved",
    "steps_blocked",
    "steps_blocked_without",
    "compactions",
    "violating_steps",
    "violations",
    "compaction_violations",
    "repairs",
    "fallbacks",
    "summarizer_cost_usd",
    "memory_extractions",
)


def _pooled(table: pd.DataFrame) -> pd.DataFrame:
    group = table.groupby(["strategy", "config_hash"], sort=True)
    # the sums in one grouped pass over the columns (a pass per column cost more than the sums)
    summed = group[list(_POOLED_SUMS)].sum()
    out = pd.concat([group["session_id"].nunique().rename("sessions"), summed], axis=1)
    out.insert(out.columns.get_loc("tokens_saved") + 1, "peak_context_tokens", group["peak_context_tokens"].max())
    # sums over the available sessions, all columns at once (a Python function per column and group copied
    # the table for each); the priced sessions' cost, and how many are not priced, beside it
    numeric = table[list(_AVAILABLE_SUMS)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    codes = group.ngroup().to_numpy()
    sums: dict[str, list[float | None]] = {column: [] for column in _AVAILABLE_SUMS}
    unpriced = []
    for number in range(group.ngroups):
        block = numeric[codes == number]  # the group's rows in table order, as the group's own Series
        missing = np.isnan(block)
        unpriced.append(int(missing[:, 0].sum()))
        filled = np.where(missing, 0.0, block)
        for position, column in enumerate(_AVAILABLE_SUMS):  # each a Series sum: NaN as 0, pairwise in order
            present = not missing[:, position].all()
            sums[column].append(float(np.ascontiguousarray(filled[:, position]).sum()) if present else None)
    available = pd.DataFrame(sums, index=out.index)
    for column in available.columns:  # as a column of Python sums: float with NaN, or nulls where none is
        if available[column].notna().any():
            available[column] = available[column].astype(float)
    out = out.join(available).assign(unpriced_sessions=unpriced)
    out = out[[*out.columns[:14], "cost_usd", "unpriced_sessions", *out.columns[14:16], *_AVAILABLE_SUMS[1:]]]
    out = out.reset_index()
    # the user's instructions the compacted contexts kept, pooled over every compaction event
    lost, given = (pd.to_numeric(out[c], errors="coerce") for c in ("instructions_lost", "instructions"))
    out["instructions_kept"] = 1 - lost / given.where(given > 0)
    out["saved_share"] = out["tokens_saved"] / out["input_tokens_without"].where(out["input_tokens_without"] > 0)
    out["violation_rate"] = out["violating_steps"] / out["steps"].where(out["steps"] > 0)
    out["compaction_violation_rate"] = out["compaction_violations"] / out["compactions"].where(out["compactions"] > 0)
    out["cost_per_1k_steps"] = out["cost_usd"] / out["steps"].where(out["steps"] > 0) * 1000
    if table["needed_facts"].notna().any():
        facts = group[["dropped_facts", "dropped_facts_kept", "needed_facts", "needed_facts_kept"]].sum().reset_index()
        facts["dropped_recall"] = share(facts["dropped_facts_kept"], facts["dropped_facts"], 1.0)
        facts["needed_recall"] = share(facts["needed_facts_kept"], facts["needed_facts"], 1.0)
        out = out.merge(facts, on=["strategy", "config_hash"], how="left")
    else:
        out["dropped_recall"] = None
        out["needed_recall"] = None
    return out
