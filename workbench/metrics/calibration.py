"""Calibration of the cost simulation (`workbench.metrics.cost`) against the recorded bill.

For ``none``/``recorded`` replays, the simulated dollars of each session are compared with its recorded
bill (``recorded_cost_usd``, `workbench.metrics.bill`); ``cost_error`` = |simulated − recorded| / recorded,
``signed_error`` the same with its sign (``none`` only on sessions without recorded compactions: after a
recorded compaction the recorded usage measures a context the ``none`` replay does not have).
``modelled_cost_usd``/``modelled_error`` price the ``recorded`` replay with the counterfactual rule (misses
modelled, not observed): how well the rule every other strategy gets does where the truth is known.
`dollar_weighted_error` pools sessions by dollars, with a bootstrap interval.

Two steps, so a caller can read the sessions one at a time (`workbench.reporting.sessions`): what is needed
of each session (`calibration_facts`: its bill, whether it has a recorded compaction, its observed cache
misses) and the table from the simulated steps and those facts (`calibration_table`). `calibrate_cost`
does both over sessions in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..transcript.model import Session
from ._common import KEYS, ensure_keys, session_map
from .bill import bill_row
from .cache_sim import miss_causes
from .pricing import DEFAULT_MODEL, Price, load_pricing

__all__ = [
    "EXPLAIN_ABOVE",
    "CalibrationFacts",
    "calibrate_cost",
    "calibration_facts",
    "calibration_table",
    "dollar_weighted_error",
]

#: A calibrated session this far off the bill gets an ``explanation``.
EXPLAIN_ABOVE = 0.05


@dataclass(frozen=True)
class CalibrationFacts:
    """What the calibration needs of one session besides its simulated steps."""

    bill: Mapping[str, Any]
    """`bill_row` of the session."""
    compacted: bool
    """The recording has a compaction (``compact_boundary``): no ``none`` row."""
    causes: pd.DataFrame
    """`miss_causes` of the session (its observed cache misses)."""


def calibration_facts(session: Session, pricing: Mapping[str, Price]) -> CalibrationFacts:
    return CalibrationFacts(
        bill_row(session, pricing),
        any(r.is_compact_boundary for r in session.conversation()),
        miss_causes(session),
    )


def _explain(cost_error: float, prompt_error: float, misses: int) -> str:
    if cost_error <= EXPLAIN_ABOVE:
        return ""
    why = [f"replay's prompt sizes {prompt_error:+.1%} off the recorded ones (estimated before each usage is known)"]
    if misses:
        why.append(f"{misses} observed cache misses")
    return "; ".join(why)


def calibrate_cost(
    steps: pd.DataFrame,
    events: pd.DataFrame | None,
    sessions: Iterable[Session] | Mapping[str, Session],
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """Per session × strategy: simulated vs recorded dollars (``none``/``recorded`` runs).

    ``none`` rows are only produced for sessions without recorded compactions (module docstring).
    Columns: ``recorded_cost_usd`` (the bill, = ccusage), ``simulated_cost_usd``, ``cost_error``,
    ``signed_error``, ``modelled_cost_usd`` and ``modelled_error`` (``recorded`` rows: the counterfactual
    miss rule), recorded/simulated ``cache_read`` and ``cache_write`` with ``read_error``/``write_error``,
    and ``misses`` (observed cache misses) with their ``miss_causes``, ``prompt_error`` (Σ simulated prompt
    tokens vs Σ recorded) and, for sessions more than 5% off, an ``explanation``.
    """
    from .cost import cost_steps  # `workbench.metrics.cost` re-exports this module's functions

    table = pricing or load_pricing()
    by_id = session_map(sessions)
    steps = ensure_keys(steps)
    steps = steps[steps["strategy"].isin(["none", "recorded"]) & steps["session_id"].isin(by_id)]
    per_step = cost_steps(steps, events, by_id, pricing=table, default_model=default_model)
    if per_step.empty:
        return pd.DataFrame()
    modelled = cost_steps(
        steps[steps["strategy"] == "recorded"],
        events,
        by_id,
        pricing=table,
        default_model=default_model,
        misses="modelled",
    )
    facts = {sid: calibration_facts(by_id[sid], table) for sid in per_step["session_id"].unique()}
    return calibration_table(per_step, modelled, facts)


def calibration_table(
    per_step: pd.DataFrame, modelled: pd.DataFrame, facts: Mapping[str, CalibrationFacts]
) -> pd.DataFrame:
    """`calibrate_cost` from the `cost_steps` rows of the ``none``/``recorded`` cells (``per_step``; those
    of ``recorded`` with ``misses="modelled"``: ``modelled``) and the sessions' `calibration_facts`."""
    if per_step.empty:
        return pd.DataFrame()
    modelled_by = modelled.groupby(KEYS)["cost_usd"].sum().to_dict() if len(modelled) else {}
    rows = []
    for keys, group in per_step.groupby(KEYS, sort=True):
        fact = facts[keys[0]]
        if keys[1] == "none" and fact.compacted:
            continue
        bill = fact.bill
        rec_cost = float(bill["recorded_cost_usd"])
        if not rec_cost or np.isnan(rec_cost):
            continue
        causes = fact.causes
        sim_cost = float(group["cost_usd"].sum())
        rec_read = float(bill["cache_read"])
        rec_write = float(bill["cache_write_5m"] + bill["cache_write_1h"] + bill["input_tokens"])
        sim_read = float(group["cache_read"].sum())
        sim_write = float(group["cache_write"].sum() + group["input_tokens"].sum())
        model_cost = modelled_by.get(keys, float("nan"))
        rec_prompt = float(bill["input_tokens"] + bill["cache_write_5m"] + bill["cache_write_1h"] + bill["cache_read"])
        prompt_error = (float(group["prompt_tokens"].sum()) - rec_prompt) / rec_prompt if rec_prompt else 0.0

        def err(sim: float, rec: float) -> float:
            return abs(sim - rec) / rec if rec else 0.0

        rows.append(
            {
                **dict(zip(KEYS, keys, strict=True)),
                "steps": len(group),
                "recorded_cost_usd": rec_cost,
                "simulated_cost_usd": sim_cost,
                "cost_error": err(sim_cost, rec_cost),
                "signed_error": (sim_cost - rec_cost) / rec_cost,
                "modelled_cost_usd": model_cost,
                "modelled_error": (model_cost - rec_cost) / rec_cost,
                "recorded_cache_read": rec_read,
                "simulated_cache_read": sim_read,
                "read_error": err(sim_read, rec_read),
                "recorded_cache_write": rec_write,
                "simulated_cache_write": sim_write,
                "write_error": err(sim_write, rec_write),
                "misses": len(causes),
                "miss_causes": ", ".join(sorted(set(causes["cause"]))) if len(causes) else "",
                "prompt_error": prompt_error,
                "explanation": _explain(err(sim_cost, rec_cost), prompt_error, len(causes)),
            }
        )
    return pd.DataFrame(rows)


def dollar_weighted_error(
    calibration: pd.DataFrame,
    column: str = "simulated_cost_usd",
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """Pooled error of one strategy's calibration rows: ``signed`` = (Σ simulated − Σ recorded) / Σ recorded,
    ``absolute`` = Σ |simulated − recorded| / Σ recorded, each with a 95% bootstrap interval over sessions."""
    sim = calibration[column].to_numpy(dtype=float)
    rec = calibration["recorded_cost_usd"].to_numpy(dtype=float)

    def stats(index: np.ndarray) -> tuple[float, float]:
        total = rec[index].sum()
        return (sim[index].sum() - total) / total, np.abs(sim[index] - rec[index]).sum() / total

    signed, absolute = stats(np.arange(len(rec)))
    rng = np.random.default_rng(seed)
    draws = np.array([stats(rng.integers(0, len(rec), len(rec))) for _ in range(resamples)])
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return {
        "sessions": len(rec),
        "signed": float(signed),
        "signed_low": float(low[0]),
        "signed_high": float(high[0]),
        "absolute": float(absolute),
        "absolute_low": float(low[1]),
        "absolute_high": float(high[1]),
    }
