"""Validity: would the Anthropic API have rejected the requests a strategy produces?

The replay engine validates the request at every step after a compaction (`workbench.request.validate`,
which reproduces the Messages API's 400s) and records, per step and per compaction event, the number
of violations, the rules they broke, how many repairs Claude Code's ``normalizeMessagesForAPI`` /
``ensureToolResultPairing`` would have applied (``repaired``, docs §8), and the fallbacks a strategy
took (e.g. SM-compact falling back to full compaction, docs §2.6).

Definitions:

* ``violating_steps`` = steps whose request has ≥ 1 violation; ``violation_rate`` = that / steps.
* ``violations`` = Σ per-step violation counts (a request broken in two places counts 2).
* ``compaction_violations`` = compaction events whose first request after the compaction has ≥ 1
  violation; ``compaction_violation_rate`` = that / compactions (the article's "2.79% of SM-compactions").
* ``repairs`` = Σ ``repaired`` over steps; ``repaired_steps`` = steps needing ≥ 1 repair.
* ``adjusted_compactions`` = events whose kept window was moved to preserve API invariants
  (``keep_start != naive_start``, docs §2.5).
* ``fallbacks`` = Σ fallbacks over events; ``fallback_reasons`` = ``reason:count`` list.
* `validity_rules` counts each rule per scope (``step`` or ``compaction``).

Worked example: 4 steps with violation counts 0, 2, 0, 1 (rules ``a,b``; ``a``) and repaired 0, 1, 0, 0
→ ``violating_steps`` 2, ``violation_rate`` 0.5, ``violations`` 3, ``repairs`` 1, ``repaired_steps`` 1;
rule counts (step scope): ``a`` 2, ``b`` 1. One compaction at step 1 with 2 violations and fallback
``no-memory`` → ``compaction_violations`` 1, ``compaction_violation_rate`` 1.0, ``fallback_reasons``
``no-memory:1``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from ._common import KEYS, Cells, as_list, cell_rows, ensure_keys

__all__ = ["SESSION_COLUMNS", "validity_events", "validity_rules", "validity_sessions", "validity_steps"]


def _rules(value: object) -> list[str]:
    if isinstance(value, str):
        return [r for r in value.split(",") if r]
    return [str(r) for r in as_list(value)]


def validity_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per session × strategy × config_hash × step."""
    frame = ensure_keys(steps)
    columns = [*KEYS, "step", "violations", "violation_rules", "repaired", "has_violation"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    out = frame[[*KEYS, "step", "violations", "violation_rules", "repaired"]].copy()
    out["violation_rules"] = out["violation_rules"].map(lambda v: ",".join(_rules(v)))
    out["violations"] = out["violations"].fillna(0).astype(int)
    out["repaired"] = out["repaired"].fillna(0).astype(int)
    out["has_violation"] = out["violations"] > 0
    return out.sort_values([*KEYS, "step"], kind="stable").reset_index(drop=True)


def validity_events(events: pd.DataFrame | None) -> pd.DataFrame:
    """One row per compaction event."""
    frame = ensure_keys(events)
    columns = [*KEYS, "event", "kind", "step", "violations", "violation_rules", "repaired", "adjusted", "fallbacks"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame = frame.sort_values([*KEYS, "step"], kind="stable").reset_index(drop=True)
    frame["event"] = frame.groupby(KEYS, sort=False).cumcount()
    frame["violation_rules"] = frame["violation_rules"].map(lambda v: ",".join(_rules(v)))
    frame["fallbacks"] = frame["fallbacks"].map(lambda v: ",".join(str(x) for x in as_list(v)))
    keep = pd.to_numeric(frame.get("keep_start"), errors="coerce")
    naive = pd.to_numeric(frame.get("naive_start"), errors="coerce")
    frame["adjusted"] = (keep.notna() & naive.notna() & (keep != naive)).to_numpy()
    frame["violations"] = frame["violations"].fillna(0).astype(int)
    frame["repaired"] = frame["repaired"].fillna(0).astype(int)
    return frame[columns]


def validity_rules(steps: pd.DataFrame, events: pd.DataFrame | None = None) -> pd.DataFrame:
    """Long frame: session × strategy × config_hash × scope × rule → count."""
    rows: list[dict[str, object]] = []
    for scope, frame in (("step", validity_steps(steps)), ("compaction", validity_events(events))):
        for keys, group in frame.groupby(KEYS):
            counts = Counter(rule for value in group["violation_rules"] for rule in _rules(value))
            rows.extend(
                {**dict(zip(KEYS, keys, strict=True)), "scope": scope, "rule": rule, "count": n}
                for rule, n in sorted(counts.items())
            )
    return pd.DataFrame(rows, columns=[*KEYS, "scope", "rule", "count"])


#: The columns of `validity_sessions`.
SESSION_COLUMNS = [
    *KEYS,
    "steps",
    "violating_steps",
    "violations",
    "repairs",
    "repaired_steps",
    "violation_rate",
    "compactions",
    "compaction_violations",
    "adjusted_compactions",
    "fallbacks",
    "fallback_reasons",
    "compaction_violation_rate",
]


def validity_sessions(steps: pd.DataFrame, events: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per session × strategy × config_hash (see the module docstring for the columns): the counts
    of `validity_steps` and `validity_events` per cell, counted on arrays (`Cells`)."""
    frame = ensure_keys(steps)
    if frame.empty:
        return pd.DataFrame(columns=SESSION_COLUMNS)
    violations = frame["violations"].fillna(0).to_numpy(dtype="int64")
    repaired = frame["repaired"].fillna(0).to_numpy(dtype="int64")
    cells = Cells(frame)
    out = cells.keys()
    out["steps"] = cells.size()
    out["violating_steps"] = cells.sum(violations > 0)
    out["violations"] = cells.sum(violations)
    out["repairs"] = cells.sum(repaired)
    out["repaired_steps"] = cells.sum(repaired > 0)
    out["violation_rate"] = (out["violating_steps"] / out["steps"].where(out["steps"] > 0)).fillna(0.0)
    per_cell = _event_counts(events)
    none = (0, 0, 0, Counter[str]())
    counted = [per_cell.get(cell, none) for cell in cells.tuples()]
    for position, column in enumerate(("compactions", "compaction_violations", "adjusted_compactions")):
        out[column] = np.array([c[position] for c in counted], dtype=np.int64)
    out["fallbacks"] = np.array([c[3].total() for c in counted], dtype=np.int64)
    out["fallback_reasons"] = [",".join(f"{k}:{n}" for k, n in sorted(c[3].items())) for c in counted]
    out["compaction_violation_rate"] = (
        out["compaction_violations"] / out["compactions"].where(out["compactions"] > 0)
    ).fillna(0.0)
    return out


def _event_counts(events: pd.DataFrame | None) -> dict[tuple[Any, ...], tuple[int, int, int, Counter[str]]]:
    """Per cell of `validity_events`: its events, those with a violation, those adjusted, and its fallback
    reasons counted (a reason with a comma counts as its parts, as in the ``fallbacks`` text)."""
    frame = ensure_keys(events)
    if frame.empty:
        return {}
    violating = (frame["violations"].fillna(0).astype(int) > 0).tolist()
    keep = pd.to_numeric(frame.get("keep_start"), errors="coerce")
    naive = pd.to_numeric(frame.get("naive_start"), errors="coerce")
    adjusted = (keep.notna() & naive.notna() & (keep != naive)).tolist()
    fallbacks = [",".join(str(x) for x in as_list(v)).split(",") for v in frame["fallbacks"].tolist()]
    out = {}
    for cell, positions in cell_rows(frame).items():
        reasons = Counter(x for i in positions for x in fallbacks[i] if x)
        out[cell] = (len(positions), sum(violating[i] for i in positions), sum(adjusted[i] for i in positions), reasons)
    return out
