"""Shared helpers for the metric families: frame keys, config hashes, session lookup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..strategies.base import config_hash  # re-exported: where every module found it
from ..transcript.model import Session

__all__ = ["KEYS", "UNKNOWN_CONFIG", "config_hash", "ensure_keys", "session_map", "share"]

#: Every tidy metric frame starts with these columns.
KEYS = ["session_id", "strategy", "config_hash"]
#: ``config_hash`` of rows whose replay output did not record a config (no column, no manifest).
UNKNOWN_CONFIG = "n/a"


def ensure_keys(frame: pd.DataFrame | None, *, config: str | None = None) -> pd.DataFrame:
    """A copy of ``frame`` with the `KEYS` columns present (``config_hash`` filled when absent)."""
    frame = pd.DataFrame() if frame is None else frame.copy()
    for column in ("session_id", "strategy"):
        if column not in frame.columns:
            frame[column] = pd.Series(dtype=object)
    if "config_hash" not in frame.columns:
        frame["config_hash"] = config or UNKNOWN_CONFIG
    else:
        frame["config_hash"] = frame["config_hash"].fillna(config or UNKNOWN_CONFIG)
    return frame


def share(part: pd.Series, whole: pd.Series, empty: float) -> pd.Series:
    """``part / whole`` with ``empty`` where ``whole`` is 0."""
    return (part / whole.where(whole > 0)).fillna(empty)


def session_map(sessions: Iterable[Session] | Mapping[str, Session] | None) -> dict[str, Session]:
    if sessions is None:
        return {}
    if isinstance(sessions, Mapping):
        return dict(sessions)
    return {s.id: s for s in sessions}


def as_list(value: Any) -> list[Any]:
    """A list from a parquet cell (numpy array, list, None)."""
    if value is None:
        return []
    if isinstance(value, float) and pd.isna(value):
        return []
    if isinstance(value, str):
        return [value] if value else []
    return list(value)
