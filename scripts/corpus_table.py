"""Every registered strategy at its defaults on a corpus folder: the README's "Every strategy" table.

    .venv/bin/python scripts/corpus_table.py ../shared/corpus/claude-code [--out results/corpus-table]

Replays every strategy (`wb.replay`), writes the run folders, reads them back with `wb.report` and prints
the markdown table (95% bootstrap intervals over sessions) and the report's notes, so the table in the
README is this script's output, not a hand copy.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import workbench as wb
from workbench.strategies.registry import strategies


def _pct(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1%}"


def _num(value: Any, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _usd(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"${value:,.2f}"


def _int(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{int(value):,}"


def _ci(row: dict[str, Any], column: str, fmt: Any) -> str:
    return f"{fmt(row.get(column))} [{fmt(row.get(column + '_ci_low'))}, {fmt(row.get(column + '_ci_high'))}]"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--out", type=Path, default=Path("results/corpus-table"))
    args = parser.parse_args(argv)
    corpus = wb.load(args.corpus, progress=False)
    names = sorted(strategies())
    runs = wb.replay(corpus, names, progress=True)
    runs.save(args.out)
    report = wb.report(args.out)
    steps = int(runs.steps.groupby("config_hash").size().max())
    print(f"{len(corpus)} sessions, {steps} API calls, {len(names)} strategies at their defaults\n")
    print(
        "| strategy | saved [95% CI] | blocked steps | compactions | violating steps | needed_recall [95% CI] "
        "| expected recovery tokens [95% CI] (calls) | cost [95% CI] | total cost [95% CI] | unpriced sessions |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in sorted(report.data["strategies"], key=lambda r: str(r.get("label"))):
        unsafe = " (unsafe)" if strategies()[row["strategy"]].unsafe else ""
        print(
            f"| `{row['label']}`{unsafe} | {_ci(row, 'saved_share', _pct)} | {_int(row.get('steps_blocked'))} "
            f"| {_int(row.get('compactions'))} | {_int(row.get('violating_steps'))} "
            f"| {_ci(row, 'needed_recall', _num)} | {_ci(row, 'expected_recovery_tokens', _int)} "
            f"({_int(row.get('expected_recovery_calls'))}) | {_ci(row, 'cost_usd', _usd)} "
            f"| {_ci(row, 'total_cost_usd', _usd)} | {_int(row.get('unpriced_sessions'))} |"
        )
    print()
    for note in report.notes:
        print(f"- {note}")


if __name__ == "__main__":
    sys.exit(main())
