"""Replay many sessions and turn the results into tidy frames (one row per step / per event)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..strategies.base import Strategy
from ..transcript.model import Session
from .engine import ReplayResult, replay_session

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["replay_frames", "replay_sessions"]


def replay_sessions(
    sessions: Iterable[Session], strategy: Strategy, *, estimator: str = "claude-rough", progress: bool = False
) -> list[ReplayResult]:
    """One `ReplayResult` per session; each session gets fresh strategy state."""
    from tqdm.auto import tqdm  # here, not at import: tqdm.auto brings asyncio, ~5% of a replay's start-up

    items = list(sessions)
    iterator = tqdm(items, desc=f"replay {strategy.name}", unit="session", disable=not progress)
    return [replay_session(session, strategy, estimator=estimator) for session in iterator]


def replay_frames(results: Iterable[ReplayResult]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(steps, events)`` DataFrames."""
    import pandas as pd  # here, not at import: `workbench replay` without --out needs no pandas (~0.6 s)

    results = list(results)
    steps = pd.DataFrame([row for r in results for row in r.steps])
    events = pd.DataFrame([row for r in results for row in r.events])
    return steps, events
