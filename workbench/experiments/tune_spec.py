"""The tune spec: the validated model of a tuning run (`TuneSpec`, its `Axes`), reading it from YAML
(`load_tune_spec`, errors naming the file and the key) and the constraint grammar (``"== 0"``,
``">= 0.8"``, a bare number for ``<=``: `parse_bound`, checked on the per-config table by `_feasible`).

Separate from running the tuning (`workbench.experiments.tune`, whose docstring shows the format and
what each key does) because a spec is checked completely before anything runs: ``workbench tune`` and
``wb.tune`` build and validate it first, and a bad constraint fails at load time with the file's name,
not after the sweep.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .spec import CorpusSpec, SpecError, read_yaml

__all__ = ["DEFAULT_CONSTRAINTS", "LOWER_IS_BETTER", "Axes", "TuneSpec", "load_tune_spec", "parse_bound"]

#: Relative to the baseline (``none``): no request the API would reject where the baseline's at the same call
#: is accepted, no more calls at the blocking limit than without compaction. Absolute bounds
#: (``violating_steps: "== 0"``) would let one session whose recording already breaks a rule, or that starts
#: above the limit, make every config infeasible.
DEFAULT_CONSTRAINTS: dict[str, str | float | int] = {"added_violating_steps": "== 0", "added_blocked_steps": "== 0"}

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
}
_BOUND = re.compile(r"^\s*(<=|>=|==|<|>)\s*(-?[0-9.eE+-]+)\s*$")


#: Fidelity columns where less is better (what the agent had to re-acquire); any other fidelity is "more is
#: better" (``needed_recall``: references kept).
LOWER_IS_BETTER = frozenset({"expected_recovery_tokens", "expected_recovery_calls", "recovery_cost_usd"})


class Axes(BaseModel):
    """The three axes of the front. Fidelity defaults to expected recovery: of the fidelity scores, the one
    validated against what agents really re-acquired after real compactions (docs/metrics.md, "Which fidelity score
    to trust"); ``needed_recall`` (references kept) stays available."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    savings: str = "saved_share"
    fidelity: str = "expected_recovery_tokens"
    cost: str = "cost_usd"


class TuneSpec(CorpusSpec):
    """A tuning run (see the module docstring); unknown keys raise."""

    strategy: str
    config: dict[str, Any] = Field(default_factory=dict)
    space: dict[str, list[Any]] = Field(min_length=1)
    objective: str = "saved_share"
    axes: Axes = Axes()
    #: "max" or "min"; None: derived from the fidelity column (`LOWER_IS_BETTER`: min).
    fidelity_goal: Literal["max", "min"] | None = None
    constraints: dict[str, str | float | int] = Field(default_factory=lambda: {**DEFAULT_CONSTRAINTS})
    #: The strategy the ``added_*`` columns compare with, replayed beside the grid (None: no comparison, the
    #: ``added_*`` columns are then the absolute counts).
    baseline: str | None = "none"
    bootstrap: int = Field(2000, ge=100)
    confidence: float = Field(0.95, gt=0, lt=1)

    @property
    def goal(self) -> Literal["max", "min"]:
        """The fidelity's direction: as set, else min for a re-acquisition measure and max otherwise."""
        if self.fidelity_goal is not None:
            return self.fidelity_goal
        return "min" if self.axes.fidelity in LOWER_IS_BETTER else "max"

    def experiment(self) -> dict[str, Any]:
        """The experiment spec this tuning runs: the grid, and the base config as the reference."""
        return {
            "name": self.name,
            "description": self.description,
            "corpus": list(self.corpus),
            "corpus_fallback": list(self.corpus_fallback),
            "format": self.format,
            "estimator": self.estimator,
            "seed": self.seed,
            "max_sessions": self.max_sessions,
            "strategies": [
                {"name": self.strategy, "config": dict(self.config)},
                {"name": self.strategy, "config": dict(self.config), "grid": dict(self.space), "skip_invalid": True},
                *([{"name": self.baseline}] if self.baseline not in (None, self.strategy) else []),
            ],
        }


def parse_bound(column: str, bound: str | float | int) -> tuple[str, float]:
    """``"== 0"`` → ``("==", 0.0)``; a bare number means ``<=``."""
    if isinstance(bound, (int, float)) and not isinstance(bound, bool):
        return "<=", float(bound)
    match = _BOUND.match(str(bound))
    if not match:
        raise ValueError(f"constraints.{column}: expected e.g. '== 0', '>= 0.8' or a number, got {bound!r}")
    return match.group(1), float(match.group(2))


def load_tune_spec(path: str | Path) -> TuneSpec:
    """Read and validate a tune spec; errors name the file and the key."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, Mapping):
        raise SpecError(f"{path}: (top level): expected a mapping, got {type(data).__name__}")
    try:
        spec = TuneSpec(**data)
    except ValidationError as exc:
        where = [f"{path}: {'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg']}" for e in exc.errors()]
        raise SpecError("\n".join(where)) from None
    for column, bound in spec.constraints.items():
        try:
            parse_bound(column, bound)
        except ValueError as exc:
            raise SpecError(f"{path}: {exc}") from None
    return spec


def _feasible(table: pd.DataFrame, constraints: Mapping[str, str | float | int]) -> tuple[pd.Series, pd.Series]:
    ok = pd.Series(True, index=table.index)
    violated: list[list[str]] = [[] for _ in range(len(table))]
    for column, bound in constraints.items():
        op, limit = parse_bound(column, bound)
        if column not in table.columns:
            raise ValueError(f"constraint on {column!r}: no such column (have {', '.join(sorted(table.columns))})")
        holds = table[column].map(lambda v, op=op, limit=limit: v is not None and not pd.isna(v) and _OPS[op](v, limit))
        ok &= holds.astype(bool)
        for i, good in enumerate(holds):
            if not good:
                violated[i].append(f"{column} {op} {limit:g}")
    return ok, pd.Series([", ".join(v) for v in violated], index=table.index)
