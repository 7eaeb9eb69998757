"""How well each estimator predicts the context size the API really measured.

Ground truth at every recorded API call is its ``usage``: input + cache creation + cache read tokens
(the size of the request). Each estimator predicts it from the records sent before the call (after the
last compact boundary):

* per-record estimators (``claude-rough``, ``claude-padded``, ``tiktoken:*``): the sum over the sent
  records plus a per-session overhead for what transcripts do not record (system prompt, tool
  definitions, CLAUDE.md). The overhead is measured once, at the session's first API call, and that
  call is then left out of the error statistics;
* ``usage``: ``tokenCountFromLastAPIResponse`` (the previous response's usage total, no estimate);
* ``claude-context``: Claude Code's ``tokenCountWithEstimation`` (docs §6, with the sibling walk of
  v2.1.88); ``claude-context-last-record``: the same anchored at the last usage record (no walk).

`boundary_table` checks ``claude-context`` against each recorded auto-compaction's
``compactMetadata.preTokens``: the value Claude Code itself computed just before compacting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .cache import cached_estimator
from .context import prompt_tokens, token_count_from_last_api_response, token_count_with_estimation

__all__ = ["CONTEXT_ESTIMATORS", "boundary_table", "calibration_frame", "calibration_summary"]

CONTEXT_ESTIMATORS = ("usage", "claude-context", "claude-context-last-record")
PER_RECORD = ("claude-rough", "claude-padded", "tiktoken:o200k_base", "tiktoken:cl100k_base")


def _segment_starts(records: Sequence[Record]) -> list[int]:
    """For each index, the index of the last compact boundary at or before it (0 if none)."""
    starts, current = [], 0
    for index, record in enumerate(records):
        if record.is_compact_boundary:
            current = index
        starts.append(current)
    return starts


def calibration_frame(sessions: Iterable[Session], estimators: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (session, API call, estimator): ``estimate``, ``actual``, ``error_pct``."""
    names = list(estimators or (*PER_RECORD, *CONTEXT_ESTIMATORS))
    per_record = [n for n in names if n not in CONTEXT_ESTIMATORS]
    unknown = [n for n in per_record if n not in PER_RECORD]
    if unknown:
        raise ValueError(f"unknown estimator(s) {unknown}; known: {', '.join((*PER_RECORD, *CONTEXT_ESTIMATORS))}")
    rough = cached_estimator("claude-rough")
    rows: list[dict[str, object]] = []
    for session in sessions:
        records = session.conversation()
        calls = [c for c in api_calls(records) if c.usage(records) is not None]
        if not calls:
            continue
        starts = _segment_starts(records)
        counts = {name: cached_estimator(name).count_many(records) for name in per_record}
        rough_counts = rough.count_many(records)
        overhead: dict[str, int] = {}
        for call in calls:
            actual = prompt_tokens(call.usage(records) or {})
            lo, hi = starts[call.first], call.first
            context = records[lo:hi]
            estimates: dict[str, int | None] = {}
            for name in per_record:
                sent = sum(counts[name][lo:hi])
                if name not in overhead:
                    overhead[name] = actual - sent
                    continue
                estimates[name] = overhead[name] + sent
            if "usage" in names:
                estimates["usage"] = token_count_from_last_api_response(context)
            for name, walk in (("claude-context", True), ("claude-context-last-record", False)):
                if name in names and token_count_from_last_api_response(context) is not None:
                    estimates[name] = token_count_with_estimation(
                        context, counts=rough_counts[lo:hi], walk_siblings=walk
                    )
            for name, estimate in estimates.items():
                if estimate is None or actual <= 0:
                    continue
                rows.append(
                    {
                        "session_id": session.id,
                        "step": call.step,
                        "message_id": call.message_id,
                        "estimator": name,
                        "estimate": int(estimate),
                        "actual": actual,
                        "error_pct": 100.0 * (estimate - actual) / actual,
                    }
                )
    columns = ["session_id", "step", "message_id", "estimator", "estimate", "actual", "error_pct"]
    return pd.DataFrame(rows, columns=columns)


def calibration_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per estimator: number of calls, median and p90 absolute % error, median signed % error."""
    if frame.empty:
        return pd.DataFrame(
            columns=["estimator", "calls", "median_abs_error_pct", "p90_abs_error_pct", "median_error_pct"]
        )
    grouped = frame.assign(abs_error=frame["error_pct"].abs()).groupby("estimator", sort=False)
    out = pd.DataFrame(
        {
            "calls": grouped.size(),
            "median_abs_error_pct": grouped["abs_error"].median(),
            "p90_abs_error_pct": grouped["abs_error"].quantile(0.9),
            "median_error_pct": grouped["error_pct"].median(),
        }
    ).reset_index()
    return out.round({"median_abs_error_pct": 3, "p90_abs_error_pct": 3, "median_error_pct": 3})


def boundary_table(sessions: Iterable[Session]) -> pd.DataFrame:
    """Every recorded compact boundary: ``preTokens`` vs ``claude-context`` just before it."""
    rows = []
    for session in sessions:
        records = session.conversation()
        starts = _segment_starts(records)
        for index, record in enumerate(records):
            if not record.is_compact_boundary:
                continue
            meta = record.compact_metadata
            pre = meta.get("preTokens")
            lo = starts[index - 1] if index else 0
            context = records[lo:index]
            row = {
                "session_id": session.id,
                "line": record.line_no,
                "trigger": meta.get("trigger"),
                "pre_tokens": pre,
            }
            for name, walk in (("claude-context", True), ("claude-context-last-record", False)):
                estimate = token_count_with_estimation(context, walk_siblings=walk)
                row[name] = estimate
                row[f"{name} error_pct"] = 100.0 * (estimate - pre) / pre if isinstance(pre, int) and pre else None
            rows.append(row)
    return pd.DataFrame(rows)
