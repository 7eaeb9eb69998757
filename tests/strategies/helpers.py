"""Helpers for the peer-strategy tests: the synthetic Claude Code-shaped sessions of tests/replay, and a
`ContextView` over a record list whose total is exactly the records' rough counts (no overhead)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay"))

from workbench.strategies.base import ContextView
from workbench.tokens.estimators import get_estimator
from workbench.transcript import Record


def view_of(records: Sequence[Record], *, tokens: int | None = None, step: int = 0) -> ContextView:
    rough = tuple(get_estimator("claude-rough").count_many(records))
    padded = tuple(get_estimator("claude-padded").count_many(records))
    return ContextView(tuple(records), sum(rough) if tokens is None else tokens, rough, padded, step)


def context_before_last_call(records: Sequence[Record]) -> list[Record]:
    """The records sent before the last API call (what the engine shows a strategy then)."""
    last = max(i for i, r in enumerate(records) if r.kind == "assistant")
    first = min(i for i, r in enumerate(records) if r.kind == "assistant" and r.message_id == records[last].message_id)
    return list(records[:first])
