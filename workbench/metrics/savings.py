"""Savings: how many input tokens a strategy saves, and whether the session still fits the window.

Definitions (per step = one recorded API call; per session = one session × strategy × config):

* ``tokens_saved`` (step) = ``tokens_without_compaction − context_tokens``: the prompt the agent would
  have sent with no compaction at all minus the one it sends under the strategy.
* ``cumulative_tokens_saved`` (step) = running sum of ``tokens_saved``: input tokens not sent so far.
* ``tokens_saved`` (session) = Σ over steps; ``saved_share`` = that / Σ ``tokens_without_compaction``.
* ``peak_context_tokens`` = max ``context_tokens``; ``peak_without_compaction`` the same without it.
* ``steps_over_window[_without]`` = steps whose prompt ≥ ``window`` (default 200,000, docs §4.1);
  ``steps_blocked[_without]`` = steps at or above ``blocking_limit`` (default 177,000 = effective window
  180,000 − 3,000, Claude Code's ``isAtBlockingLimit``, docs §4.2), where Claude Code would refuse the
  request with "Prompt is too long".
* ``compactions`` = number of compaction events, ``compaction_kinds`` = ``kind:count`` list.

Worked example: a session of 3 steps whose uncompacted prompts are 100k, 170k, 180k; the strategy
compacts before step 2 down to 40k, so its prompts are 100k, 170k, 40k. Per step ``tokens_saved`` is
0, 0, 140k (cumulative 0, 0, 140k); the session saves 140k of 450k input tokens (``saved_share`` 0.311);
``peak_context_tokens`` = 170k, ``peak_without_compaction`` = 180k; without compaction 1 step is at the
blocking limit (180k ≥ 177k), with it none; no step is over the 200k window either way.

``baseline``: the ``recorded`` strategy keeps the recording's own compactions, so its
``tokens_without_compaction`` is the compacted size; pass the steps of a ``none`` replay as ``baseline``
to take the uncompacted size from there (matched on ``session_id`` and ``step``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from ._common import KEYS, Cells, cell_rows, ensure_keys, share

__all__ = ["BLOCKING_LIMIT", "SESSION_COLUMNS", "WINDOW", "savings_events", "savings_sessions", "savings_steps"]

WINDOW = 200_000
BLOCKING_LIMIT = 177_000


def savings_steps(
    steps: pd.DataFrame,
    *,
    window: int = WINDOW,
    blocking_limit: int = BLOCKING_LIMIT,
    baseline: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per session × strategy × config_hash × step."""
    frame = _with_baseline(ensure_keys(steps), baseline)
    columns = [*KEYS, "step", "context_tokens", "tokens_without_compaction"]
    if frame.empty:
        return pd.DataFrame(
            columns=[
                *columns,
                "tokens_saved",
                "cumulative_tokens_saved",
                "over_window",
                "over_window_without",
                "blocked",
                "blocked_without",
                "compacted",
            ]
        )
    out = frame[columns].copy()
    out["context_tokens"] = out["context_tokens"].astype("int64")
    out["tokens_without_compaction"] = out["tokens_without_compaction"].astype("int64")
    out = out.sort_values([*KEYS, "step"], kind="stable").reset_index(drop=True)
    out["tokens_saved"] = out["tokens_without_compaction"] - out["context_tokens"]
    out["cumulative_tokens_saved"] = out.groupby(KEYS, sort=False)["tokens_saved"].cumsum()
    out["over_window"] = out["context_tokens"] >= window
    out["over_window_without"] = out["tokens_without_compaction"] >= window
    out["blocked"] = out["context_tokens"] >= blocking_limit
    out["blocked_without"] = out["tokens_without_compaction"] >= blocking_limit
    compacted = frame.set_index([*KEYS, "step"])["compacted"] if "compacted" in frame else None
    out["compacted"] = (
        compacted.reindex(pd.MultiIndex.from_frame(out[[*KEYS, "step"]])).fillna(False).astype(bool).to_numpy()
        if compacted is not None
        else False
    )
    return out


def _with_baseline(frame: pd.DataFrame, baseline: pd.DataFrame | None) -> pd.DataFrame:
    """``frame`` (a copy of the steps) with ``tokens_without_compaction`` taken from ``baseline`` where it
    has the (session, step)."""
    if baseline is not None and len(baseline) and len(frame):
        base = baseline.drop_duplicates(["session_id", "step"]).set_index(["session_id", "step"])[
            "tokens_without_compaction"
        ]
        index = pd.MultiIndex.from_frame(frame[["session_id", "step"]])
        replaced = base.reindex(index).to_numpy()
        frame["tokens_without_compaction"] = pd.Series(replaced, index=frame.index).fillna(
            frame["tokens_without_compaction"]
        )
    return frame


def savings_events(events: pd.DataFrame | None) -> pd.DataFrame:
    """One row per compaction event: kind, trigger, step, tokens before/after and freed."""
    frame = ensure_keys(events)
    columns = [*KEYS, "event", "kind", "trigger", "step", "tokens_before", "tokens_after", "tokens_freed"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame = frame.sort_values([*KEYS, "step"], kind="stable").reset_index(drop=True)
    frame["event"] = frame.groupby(KEYS, sort=False).cumcount()
    before = pd.to_numeric(frame["tokens_before"], errors="coerce")
    after = pd.to_numeric(frame["tokens_after"], errors="coerce")
    frame["tokens_freed"] = before - after
    return frame[columns]


#: The columns of `savings_sessions`.
SESSION_COLUMNS = [
    *KEYS,
    "steps",
    "input_tokens",
    "input_tokens_without",
    "tokens_saved",
    "peak_context_tokens",
    "peak_without_compaction",
    "steps_over_window",
    "steps_over_window_without",
    "steps_blocked",
    "steps_blocked_without",
    "saved_share",
    "compactions",
    "compaction_kinds",
]


def savings_sessions(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    *,
    window: int = WINDOW,
    blocking_limit: int = BLOCKING_LIMIT,
    baseline: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per session × strategy × config_hash (see the module docstring for the columns): the sums of
    `savings_steps` per cell, counted on arrays (`Cells`)."""
    frame = _with_baseline(ensure_keys(steps), baseline)
    if frame.empty:
        return pd.DataFrame(columns=SESSION_COLUMNS)
    context = frame["context_tokens"].to_numpy(dtype="int64")
    without = frame["tokens_without_compaction"].to_numpy(dtype="int64")
    cells = Cells(frame)
    out = cells.keys()
    out["steps"] = cells.size()
    out["input_tokens"] = cells.sum(context)
    out["input_tokens_without"] = cells.sum(without)
    out["tokens_saved"] = cells.sum(without - context)
    out["peak_context_tokens"] = cells.max(context)
    out["peak_without_compaction"] = cells.max(without)
    out["steps_over_window"] = cells.sum(context >= window)
    out["steps_over_window_without"] = cells.sum(without >= window)
    out["steps_blocked"] = cells.sum(context >= blocking_limit)
    out["steps_blocked_without"] = cells.sum(without >= blocking_limit)
    out["saved_share"] = share(out["tokens_saved"], out["input_tokens_without"], 0.0)
    counts, kinds = _event_kinds(events)
    cell_keys = cells.tuples()
    out["compactions"] = np.array([counts.get(cell, 0) for cell in cell_keys], dtype=np.int64)
    out["compaction_kinds"] = [
        ",".join(f"{k}:{n}" for k, n in sorted(kinds.get(cell, Counter()).items())) for cell in cell_keys
    ]
    return out


def _event_kinds(events: pd.DataFrame | None) -> tuple[dict[tuple[Any, ...], int], dict[tuple[Any, ...], Counter[str]]]:
    """Per cell: its compaction events, and how many of each kind (a null kind counted in the first only)."""
    frame = ensure_keys(events)
    counts: dict[tuple[Any, ...], int] = {}
    kinds: dict[tuple[Any, ...], Counter[str]] = {}
    if frame.empty:
        return counts, kinds
    kind_values = frame["kind"].tolist()
    for cell, positions in cell_rows(frame).items():
        counts[cell] = len(positions)
        kinds[cell] = Counter(k for k in (kind_values[i] for i in positions) if not pd.isna(k))
    return counts, kinds
