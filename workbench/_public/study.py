"""``wb.invariants``: the naive-cut study (the engine of ``workbench invariants``) as a tidy frame."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..transcript.model import Session
from .corpus import Sessions, as_sessions

__all__ = ["InvariantStudy", "check", "invariants"]

_VARIANTS = ("naive", "repaired", "adjusted", "adjusted_thinking")


@dataclass(frozen=True)
class InvariantStudy:
    """``table``: one row per cut family (``all_indices``, ``keep_window``) × variant (``naive``,
    ``repaired``, ``adjusted``, ``adjusted_thinking``) with ``cuts``, ``violating``, ``rate`` and the
    ``rules`` broken; ``data``: the full report (``workbench invariants --json``)."""

    table: pd.DataFrame
    data: Mapping[str, Any]

    def rate(self, family: str, variant: str) -> float:
        return float(self.data[family][variant]["rate"])

    def _repr_html_(self) -> str:
        return str(self.table.to_html(index=False, float_format=lambda v: f"{v:.2%}"))


def invariants(corpus: Sessions | Session | list[Session] | str | Path) -> InvariantStudy:
    """Validate every cut point four ways (see `workbench.studies.naive_cut`): how often would a naive cut of the
    keep window, or at any index, make the API answer 400, before and after the repairs and adjustments?

    Example::

        study = wb.invariants(corpus)
        study.table, study.rate("keep_window", "repaired")
    """
    from ..studies.naive_cut import invariants_report

    data = invariants_report(as_sessions(corpus))
    rows = []
    for family in ("all_indices", "keep_window"):
        for variant in _VARIANTS:
            row = data[family][variant]
            rules = ", ".join(f"{rule} ({v['cuts']})" for rule, v in row["by_rule"].items())
            rows.append(
                {
                    "cuts": family,
                    "variant": variant,
                    "cut points": row["cuts"],
                    "violating": row["violating"],
                    "rate": row["rate"],
                    "rules": rules,
                }
            )
    return InvariantStudy(pd.DataFrame(rows), data)


def check(corpus: Sessions | Session | list[Session] | str | Path, strategies: list[str] | None = None) -> pd.DataFrame:
    """What the workbench can and cannot model of a history (the engine of ``workbench check``, see
    `workbench.experiments.check`): one row per session; ``frame.attrs["summary"]`` holds the counts.

    Example::

        table = wb.check("~/.claude/projects")
        table[table.resumed | (table.recording_violations > 0)], table.attrs["summary"]
    """
    from ..experiments.check import check_sessions, summary

    rows = check_sessions(as_sessions(corpus), strategies)
    frame = pd.DataFrame([row.as_dict() for row in rows])
    frame.attrs["summary"] = summary(rows)
    return frame
