"""Shared helpers for the metric families: frame keys, config hashes, session lookup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..strategies.base import config_hash  # re-exported: where every module found it
from ..transcript.model import Session

__all__ = [
    "KEYS",
    "UNKNOWN_CONFIG",
    "Cells",
    "cell_events",
    "cell_rows",
    "config_hash",
    "ensure_keys",
    "row_cells",
    "session_map",
    "share",
]

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


def row_cells(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Each row's cell: its `KEYS` values as a tuple."""
    return list(zip(*(frame[key].tolist() for key in KEYS), strict=True))


def cell_rows(frame: pd.DataFrame) -> dict[tuple[Any, ...], list[int]]:
    """``{cell: [row positions]}`` of a frame with the `KEYS` columns, cells in first-row order (rows with a
    null key left out, as a groupby leaves them). Built from lists: a metric that reads a few cells of a
    session pays no groupby for them."""
    out: dict[tuple[Any, ...], list[int]] = {}
    for position, cell in enumerate(row_cells(frame)):
        if not any(value is None or value != value for value in cell):  # NaN != NaN
            out.setdefault(cell, []).append(position)
    return out


class Cells:
    """The `KEYS` cells of a frame's rows, numbered once in key order, as ``frame.groupby(KEYS, sort=True)``
    numbers them (a row with a null key in none): each cell's row count, integer sums and maxima as arrays.

    A report's frames hold a few thousand rows and pandas' fixed cost per grouped aggregation was most of
    their time; integer sums are exact in any order, so these equal the groupby's. A grouped float sum is
    not offered (pandas compensates it, and the report keeps its digits); `own_sums` gives what each
    cell's own column sums to."""

    def __init__(self, frame: pd.DataFrame) -> None:
        combined = np.zeros(len(frame), dtype=np.int64)
        valid = np.ones(len(frame), dtype=bool)
        for key in KEYS:  # each column's sorted codes, combined lexicographically
            codes, uniques = pd.factorize(frame[key], sort=True)
            valid &= codes >= 0
            combined = combined * (len(uniques) + 1) + codes
        self._rows = np.flatnonzero(valid)
        cells, first, self._codes = np.unique(combined[valid], return_index=True, return_inverse=True)
        self._codes = self._codes.reshape(-1)
        self.count = len(cells)
        self._first = self._rows[first]
        self._frame = frame

    def tuples(self) -> list[tuple[Any, ...]]:
        """Each cell's keys as a tuple, in cell order."""
        return list(self._tuples)

    @cached_property
    def _tuples(self) -> list[tuple[Any, ...]]:
        return row_cells(self._frame.iloc[self._first])

    def keys(self) -> pd.DataFrame:
        """One row per cell: its `KEYS` (dtypes inferred from the values, as a groupby's keys are)."""
        return pd.DataFrame(self.tuples(), columns=KEYS)

    @cached_property
    def _order(self) -> np.ndarray:
        """The frame's rows with a cell, grouped by cell (in row order within one)."""
        return self._rows[np.argsort(self._codes, kind="stable")]

    @cached_property
    def _starts(self) -> np.ndarray:
        """Where each cell's rows begin in `_order`."""
        return np.concatenate(([0], np.cumsum(self.size())[:-1])).astype(np.intp)

    def size(self) -> np.ndarray:
        """Each cell's row count."""
        return np.bincount(self._codes, minlength=self.count).astype(np.int64)

    def _grouped(self, values: Any, dtype: Any) -> np.ndarray:
        """``values`` (one per frame row) in `_order`, as ``dtype``."""
        grouped: np.ndarray = np.asarray(values)[self._order].astype(dtype)
        return grouped

    def sum(self, values: Any) -> np.ndarray:
        """Each cell's sum of ``values`` (one per frame row; booleans count), as int64."""
        if not self.count:
            return np.zeros(0, dtype=np.int64)
        return np.add.reduceat(self._grouped(values, np.int64), self._starts)

    def own_sums(self, values: Any) -> list[float]:
        """Each cell's sum of float ``values`` as the cell's own column gives it, ``sum(min_count=len)``: its
        values in row order summed by numpy, NaN when one of them is (an unpriced call)."""
        parts = np.split(self._grouped(values, float), self._starts[1:])
        return [float("nan") if np.isnan(part).any() else float(part.sum()) for part in parts] if self.count else []

    def max(self, values: Any) -> np.ndarray:
        """Each cell's maximum of ``values`` (one per frame row), as int64."""
        if not self.count:
            return np.zeros(0, dtype=np.int64)
        return np.maximum.reduceat(self._grouped(values, np.int64), self._starts)


def cell_events(frame: pd.DataFrame, fields: Iterable[str]) -> list[tuple[tuple[Any, ...], list[dict[str, Any]]]]:
    """The rows of an events frame as dicts of ``fields`` (those it has), by cell in key order, each cell's
    by ``step`` (ties in row order): what `frame.sort_values([*KEYS, "step"], kind="stable")` grouped by
    cell gives, without pandas' sort (a few events of a session sort faster as Python values)."""
    read = frame[[c for c in fields if c in frame.columns]].to_dict("records")
    steps = frame["step"].tolist()
    cells = cell_rows(frame)
    return [
        (cell, [read[i] for i in sorted(cells[cell], key=steps.__getitem__)])  # `sorted` is stable
        for cell in sorted(cells)
    ]


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
