"""Summarise a replay output folder: savings, validity, fidelity and cost per session and strategy.

A *results folder* holds one or more *run folders* (the folder itself, or any sub-folder), each written
by ``workbench replay PATHS --strategy NAME --out DIR``: ``steps.parquet``, ``events.parquet`` and,
optionally, ``manifest.json``::

    {"strategy": "sm-compact", "config": {...}, "config_hash": "…",   # config_hash optional
     "estimator": "claude-rough", "format": null,
     "inputs": ["/path/to/corpus", ...]}                           # the PATHS given to `replay`

`write_manifest` writes it. Fidelity and the recorded output tokens in the cost need the sessions:
`report` takes them from ``sessions=`` or loads the manifest ``inputs`` (relative paths resolve
against the run folder); without either, those columns are None and ``notes`` says so.

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

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .metrics._common import KEYS, UNKNOWN_CONFIG, config_hash, share
from .metrics.bill import bill_sessions
from .metrics.cost import calibrate_cost, cost_sessions, dollar_weighted_error, load_pricing
from .metrics.expected_recovery import SESSION_COLUMNS as RECOVERY_COLUMNS
from .metrics.expected_recovery import expected_recovery, expected_recovery_sessions
from .metrics.fidelity import SESSION_COLUMNS as FIDELITY_COLUMNS
from .metrics.fidelity import fidelity, fidelity_sessions, reference_fidelity
from .metrics.identity import FILE, SessionKeys
from .metrics.recovery import recovery
from .metrics.savings import BLOCKING_LIMIT, WINDOW, savings_sessions
from .metrics.uncertainty import CI_METRICS, bootstrap_intervals, few_sessions_note, paired_differences
from .metrics.validity import validity_sessions
from .transcript.model import Session

__all__ = ["load_results", "render_report", "report", "write_manifest"]


def write_manifest(
    out: str | Path,
    strategy: str,
    config: Mapping[str, Any],
    inputs: Sequence[str | Path],
    *,
    estimator: str = "claude-rough",
    fmt: str | None = None,
) -> Path:
    """Write ``manifest.json`` next to a run's parquet files (what `report` reads)."""
    path = Path(out) / "manifest.json"
    data = {
        "strategy": strategy,
        "config": dict(config),
        "config_hash": config_hash(strategy, config),
        "estimator": estimator,
        "format": fmt,
        "inputs": [str(Path(p).resolve()) for p in inputs],
    }
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


#: Columns every steps.parquet has (the metrics group by them).
_STEP_COLUMNS = ("session_id", "strategy", "step")


def _read_run(folder: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """``(manifest, steps, events)`` of one run folder; ValueError/OSError naming what is wrong."""
    manifest: dict[str, Any] = {}
    if (folder / "manifest.json").is_file():
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"manifest.json: {exc}") from None
        if not isinstance(manifest, dict):
            raise ValueError("manifest.json is not a JSON object")
    tables = []
    for name in ("steps.parquet", "events.parquet"):
        path = folder / name
        if name == "events.parquet" and not path.is_file():
            tables.append(pd.DataFrame())
            continue
        try:
            tables.append(pd.read_parquet(path))
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise ValueError(f"{name}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    steps, events = tables
    missing = [c for c in _STEP_COLUMNS if len(steps) and c not in steps.columns]
    if missing:
        raise ValueError(f"steps.parquet has no {', '.join(missing)} column")
    return manifest, steps, events


def load_results(
    results_dir: str | Path, *, failed: list[dict[str, str]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    """All runs under ``results_dir``: concatenated ``(steps, events)`` with ``config_hash``, and the runs.

    A run folder that cannot be read is appended to ``failed`` as ``{"path", "reason"}`` and left out
    (without ``failed``, the first such folder raises ValueError); no readable run raises too.
    """
    root = Path(results_dir)
    if not any(root.rglob("steps.parquet")):
        raise FileNotFoundError(f"{root}: no replay results (steps.parquet) below this folder")
    steps_frames, event_frames, runs = [], [], []
    for steps_path in sorted(root.rglob("steps.parquet")):
        folder = steps_path.parent
        try:
            manifest, steps, events = _read_run(folder)
            _check_copies(steps_path, steps)
        except (OSError, ValueError) as exc:
            if failed is None:
                raise ValueError(f"{folder}: {exc}") from None
            failed.append({"path": str(folder), "reason": str(exc)})
            continue
        chash = manifest.get("config_hash") or (
            config_hash(manifest["strategy"], manifest.get("config")) if "strategy" in manifest else UNKNOWN_CONFIG
        )
        for frame in (steps, events):
            if len(frame) and "config_hash" not in frame.columns:
                frame["config_hash"] = chash
            if len(frame) and FILE not in frame.columns:
                frame[FILE] = None
        steps_frames.append(steps)
        event_frames.append(events)
        inputs = [str(p if Path(p).is_absolute() else (folder / p).resolve()) for p in manifest.get("inputs", [])]
        strategy = manifest.get("strategy") or (steps["strategy"].iloc[0] if len(steps) else None)
        runs.append(
            {
                "path": str(folder),
                "strategy": strategy,
                "label": _run_label(strategy, manifest, chash),
                "config_hash": chash,
                "config": manifest.get("config"),
                "inputs": inputs,
                "sessions": int(steps["session_id"].nunique()) if len(steps) else 0,
                "steps": len(steps),
            }
        )
    if not runs:
        first = failed[0] if failed else {"path": str(root), "reason": "unknown"}
        raise ValueError(f"{root}: no run folder could be read ({first['path']}: {first['reason']})")
    _tag_reruns(steps_frames, event_frames, [str(run["path"]) for run in runs])
    event_frames = [frame for frame in event_frames if len(frame)]
    steps = pd.concat(steps_frames, ignore_index=True) if steps_frames else pd.DataFrame()
    events = pd.concat(event_frames, ignore_index=True) if event_frames else pd.DataFrame()
    return steps, events, runs


def _run_label(strategy: str | None, manifest: Mapping[str, Any], chash: str) -> str:
    """The run's readable name (`workbench.strategies.labels`); without a manifest config, the strategy
    and the hash (there is nothing else to tell two such runs apart)."""
    from .strategies.labels import config_label

    if strategy is None:
        return chash
    if "config" in manifest:
        return config_label(strategy, manifest.get("config") or {})
    return f"{strategy} #{chash[:6]}" if chash != UNKNOWN_CONFIG else strategy


def _with_labels(frame: pd.DataFrame, runs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """``frame`` with a ``label`` column after ``strategy`` (from the runs' manifests, made unique)."""
    from .strategies.labels import unique_labels

    if frame.empty or "label" in frame.columns:
        return frame
    names = unique_labels((run["config_hash"], run["label"]) for run in runs)
    out = frame.copy()
    fallback = out["strategy"].astype(str)
    out.insert(list(out.columns).index("strategy") + 1, "label", out["config_hash"].map(names).fillna(fallback))
    return out


def _check_copies(path: Path, steps: pd.DataFrame) -> None:
    """A run folder whose rows repeat (session, strategy, config, step) without a ``file`` to tell the
    copies apart cannot be reported honestly."""
    if steps.empty or "step" not in steps.columns or (FILE in steps.columns and steps[FILE].notna().all()):
        return
    keys = [c for c in ("session_id", FILE, "strategy", "config_hash", "step") if c in steps.columns]
    repeated = steps[steps.duplicated(keys, keep=False)]
    if len(repeated):
        sid = repeated["session_id"].iloc[0]
        raise ValueError(
            f"{path}: session {sid} appears more than once (copies of one session id, written before steps "
            "recorded their file): re-run `workbench replay` into this folder to report them separately"
        )


def _tag_reruns(steps_frames: list[pd.DataFrame], event_frames: list[pd.DataFrame], folders: list[str]) -> None:
    """Rows of one (session, file, strategy, config) found in several run folders: each folder's rows
    get ``<file> [run <folder>]`` in ``file``, so they stay separate sessions (not summed into one)."""
    columns = ["session_id", FILE, "strategy", "config_hash"]
    where: dict[tuple[Any, ...], set[int]] = {}
    for index, frame in enumerate(steps_frames):
        if len(frame):
            for key in frame[columns].astype(object).drop_duplicates().itertuples(index=False):
                where.setdefault(tuple(_none(v) for v in key), set()).add(index)
    repeated = {key for key, found in where.items() if len(found) > 1}
    if not repeated:
        return
    for index, (steps, events) in enumerate(zip(steps_frames, event_frames, strict=True)):
        for frame in (steps, events):
            if frame.empty or not set(columns) <= set(frame.columns):
                continue
            keys = frame[columns].astype(object).itertuples(index=False)
            mask = [tuple(_none(v) for v in key) in repeated for key in keys]
            if any(mask):
                frame[FILE] = frame[FILE].astype(object)
                frame.loc[mask, FILE] = [f"{_none(f) or ''} [run {folders[index]}]" for f in frame.loc[mask, FILE]]


def _none(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _load_sessions(runs: Sequence[Mapping[str, Any]], wanted: set[str]) -> list[Session]:
    from .transcript import load_paths

    paths = sorted({p for run in runs for p in run.get("inputs", [])})
    if not paths:
        return []
    return [s for s in load_paths([Path(p) for p in paths]) if s.id in wanted]


def _baseline(steps: pd.DataFrame, sessions: Mapping[str, Session]) -> pd.DataFrame | None:
    """Uncompacted sizes per (session, step): a ``none`` run when present, else a ``none`` replay."""
    none = steps[steps["strategy"] == "none"] if len(steps) else steps
    have = set(none["session_id"]) if len(none) else set()
    extra = [s for sid, s in sessions.items() if sid not in have]
    frames = [none[["session_id", "step", "tokens_without_compaction"]]] if len(none) else []
    if extra:
        from .replay import replay_session
        from .strategies import create

        strategy = create("none")
        rows = [row for s in extra for row in replay_session(s, strategy).steps]
        frames.append(pd.DataFrame(rows)[["session_id", "step", "tokens_without_compaction"]])
    return pd.concat(frames, ignore_index=True) if frames else None


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
) -> dict[str, Any]:
    """Summary of every run under ``results_dir`` as a JSON-serialisable dict.

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
    ones (`workbench.online.probe_run.run_probes`; keys: ``budget_usd`` (required), ``model``,
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
        }
    recorded_ids = set(steps["session_id"])
    keys = SessionKeys.of(steps, events)  # a session is (id, file): duplicated ids get per-file keys
    steps, events = keys.relabel(steps), keys.relabel(events)
    wanted = set(steps["session_id"])
    given = sessions.values() if isinstance(sessions, Mapping) else sessions
    loaded = list(given) if given is not None else _load_sessions(runs, recorded_ids)
    by_id = {k: v for k, v in keys.sessions(loaded).items() if k in wanted}
    missing = wanted - set(by_id)
    if missing:
        notes.append(
            f"{len(missing)} of {len(wanted)} sessions not available (pass sessions= or a manifest.json "
            "with inputs): their fidelity is None and their cost omits output tokens"
        )
    notes.extend(keys.notes())
    if "none" not in set(steps["strategy"]) and not by_id:
        notes.append(
            "no `none` run and no sessions: tokens saved by `recorded` are measured against its own compacted context"
        )

    uncompacted = _baseline(steps, by_id)
    pricing = load_pricing(pricing_path)
    saving = savings_sessions(steps, events, window=window, blocking_limit=blocking_limit, baseline=uncompacted)
    valid = validity_sessions(steps, events)
    money = cost_sessions(steps, events, by_id, pricing=pricing, summarizer_input=summarizer_input)  # type: ignore[arg-type]
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
    bill = bill_sessions(by_id, pricing=pricing).rename(
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
    if by_id:
        available = steps[steps["session_id"].isin(by_id)]
        per_event = fidelity(by_id, events) if len(events) else pd.DataFrame()
        fid = fidelity_sessions(per_event, available)
        table = table.merge(
            fid[[*KEYS, *FIDELITY_COLUMNS]],
            on=KEYS,
            how="left",
        )
    else:
        for column in FIDELITY_COLUMNS:
            table[column] = None
    table, measured = _with_recovery(table, steps, events, by_id, pricing, estimator, notes)
    table = _with_labels(table, runs)
    strategies = _pooled(table.drop(columns=["label"]))
    strategies = strategies.merge(bootstrap_intervals(table, CI_METRICS), on=["strategy", "config_hash"], how="left")
    strategies = _with_labels(strategies, runs)
    names = set(table["strategy"])
    baseline = baseline or next((b for b in ("recorded", "none") if b in names), None)
    if baseline is not None and baseline not in names:
        raise ValueError(f"baseline strategy {baseline!r} is not among the runs ({', '.join(sorted(names))})")
    differences = paired_differences(table, baseline, CI_METRICS) if baseline else pd.DataFrame()
    few = few_sessions_note(table)
    if few:
        notes.append(few)
    reference = keys.restore(reference_fidelity(by_id.values())) if by_id else pd.DataFrame()
    probed = _probes(probes, by_id, events, notes) if probes is not None else None
    table, measured = keys.restore(table), keys.restore(measured)
    calibration = pd.DataFrame()
    if by_id and {"none", "recorded"} & set(steps["strategy"]):
        calibration = keys.restore(calibrate_cost(steps, events, by_id, pricing=pricing))
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
    }


def _probes(
    options: Mapping[str, Any], by_id: Mapping[str, Session], events: pd.DataFrame, notes: list[str]
) -> dict[str, Any]:
    from .online.probe_run import probe_report

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
    table: pd.DataFrame,
    steps: pd.DataFrame,
    events: pd.DataFrame,
    by_id: Mapping[str, Session],
    pricing: Any,
    estimator: str,
    notes: list[str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The expected recovery and its price per session row, ``total_cost_usd``, and for ``recorded``
    rows the measured recovery after the recorded compactions; also the measured rows themselves."""
    measured = recovery(by_id.values(), estimator=estimator) if by_id else pd.DataFrame()
    if by_id:
        available = steps[steps["session_id"].isin(by_id)]
        per_event = expected_recovery(by_id, events, available, estimator=estimator, pricing=pricing)
        rec = expected_recovery_sessions(per_event, available, by_id)
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
            found = table.loc[recorded, "session_id"].map(per_session[f"recovery_{column}"])
            table.loc[recorded, f"measured_recovery_{column}"] = found.fillna(0).astype(float)
    return table, measured


def _pooled(table: pd.DataFrame) -> pd.DataFrame:
    group = table.groupby(["strategy", "config_hash"], sort=True)
    out = group.agg(
        sessions=("session_id", "nunique"),
        steps=("steps", "sum"),
        input_tokens=("input_tokens", "sum"),
        input_tokens_without=("input_tokens_without", "sum"),
        tokens_saved=("tokens_saved", "sum"),
        peak_context_tokens=("peak_context_tokens", "max"),
        steps_blocked=("steps_blocked", "sum"),
        steps_blocked_without=("steps_blocked_without", "sum"),
        compactions=("compactions", "sum"),
        violating_steps=("violating_steps", "sum"),
        violations=("violations", "sum"),
        compaction_violations=("compaction_violations", "sum"),
        repairs=("repairs", "sum"),
        fallbacks=("fallbacks", "sum"),
        cost_usd=("cost_usd", lambda c: c.sum(min_count=len(c))),  # unpriced sessions stay NaN
        summarizer_cost_usd=("summarizer_cost_usd", "sum"),
        memory_extractions=("memory_extractions", "sum"),
        memory_cost_usd=("memory_cost_usd", lambda c: c.sum(min_count=len(c))),
        expected_recovery_calls=("expected_recovery_calls", lambda c: _available_sum(c)),
        expected_recovery_tokens=("expected_recovery_tokens", lambda c: _available_sum(c)),
        expected_recovery_files=("expected_recovery_files", lambda c: _available_sum(c)),
        recovery_cost_usd=("recovery_cost_usd", lambda c: _available_sum(c)),
        total_cost_usd=("total_cost_usd", lambda c: c.sum(min_count=len(c))),
        measured_recovery_tokens=("measured_recovery_tokens", lambda c: _available_sum(c)),
        measured_recovery_calls=("measured_recovery_calls", lambda c: _available_sum(c)),
    ).reset_index()
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


def _available_sum(column: pd.Series) -> float | None:
    """Sum over the sessions where the estimate is available; null (never 0) where none is."""
    values = pd.to_numeric(column, errors="coerce")
    return float(values.sum()) if values.notna().any() else None


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


_COLUMNS = (
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
    ("needed recall", "needed_recall", "recall"),
    ("dropped recall", "dropped_recall", "recall"),
    ("cost", "cost_usd", "usd"),
    ("$/1k steps", "cost_per_1k_steps", "usd"),
    ("recovery tok", "expected_recovery_tokens", ""),
    ("recovery calls", "expected_recovery_calls", ""),
    ("recovery $", "recovery_cost_usd", "usd"),
    ("total cost", "total_cost_usd", "usd"),
)
#: The by-strategy table: the headline metrics with their 95% intervals over sessions.
_STRATEGY_COLUMNS = (
    *_COLUMNS[:4],
    ("saved [95% CI]", "saved_share", "pct_ci"),
    *_COLUMNS[6:12],
    ("needed recall [95% CI]", "needed_recall", "recall_ci"),
    _COLUMNS[13],
    ("recovery tok [95% CI]", "expected_recovery_tokens", "tok_ci"),
    ("measured", "measured_recovery_tokens", ""),
    ("cost [95% CI]", "cost_usd", "usd_ci"),
    ("total cost [95% CI]", "total_cost_usd", "usd_ci"),
)
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
            *_COLUMNS[:2],
            *_COLUMNS[3:4],
            *_COLUMNS[4:7],
            *_COLUMNS[9:11],
            *_COLUMNS[12:15],
            ("recorded $", "recorded_cost_usd", "usd"),
            _COLUMNS[16],
            _COLUMNS[19],
        )
        out += _section("By session", data["sessions"], columns, 44)
    if data.get("reference"):
        cols = (
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
