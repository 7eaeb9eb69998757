"""Benchmark: tuning, reporting and summarising on the embedded data/ corpus, as ratios measured in one run.

Targets (each printed with its measured ratio and whether it is met; a missed target is reported, not an
error, so the exit code is non-zero only when something fails):

* tune: ``wb.tune`` of a grid (every config it replays, the baseline and the reference included) takes
  at most 0.5 × the time of replaying each of those configs on its own (``wb.replay`` with one config,
  the corpus loaded once, no metrics: the cheapest independent run);
* report: ``workbench report`` on a ``workbench replay --out`` folder takes at most the time of the
  ``workbench replay`` that wrote it (both as command-line processes, start-up included);
* summary: ``runs.summary()`` (every metric family, computed from scratch) takes at most the
  ``wb.replay`` it summarises.

Single process throughout (``executor="inline"``, one worker), a fresh store per tune; each time is the
best of ``REPEATS`` runs, so a neighbour's load on a shared two-core machine moves the ratios less.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
SPACE = {"min_tokens": [2_000, 5_000, 10_000, 20_000], "trigger.pct_of_window": [40, 60, 80]}
COMPARED = ["none", "sm-compact", "full-compact", "truncate-oldest"]
REPEATS = 3


def _timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = run()
    return time.perf_counter() - started, value


def _best(run: Callable[[int], Any]) -> tuple[float, Any]:
    """The fastest of ``REPEATS`` runs (``run`` gets the repetition's number) and its value."""
    return min((_timed(lambda i=i: run(i)) for i in range(REPEATS)), key=lambda pair: pair[0])


def _cli(*args: str) -> float:
    command = [sys.executable, "-m", "workbench.cli", *args]
    seconds, out = _best(lambda _: subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False))
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed ({out.returncode}): {out.stderr[-2000:]}")
    return seconds


def _verdict(name: str, ratio: float, target: float, detail: str) -> bool:
    met = ratio <= target
    print(f"{name}: ratio {ratio:.2f} (target ≤ {target:g}): {'met' if met else 'NOT met'}; {detail}")
    return met


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-tuning-"))
    os.environ["WORKBENCH_CACHE_DIR"] = str(tmp / "cache")
    try:
        _measure(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(tmp: Path) -> None:
    import workbench as wb

    corpus = wb.load(DATA, progress=False)
    wb.replay(corpus, "none", progress=False)  # warm-up: imports and the corpus' token counts

    tune_s, result = _best(
        lambda i: wb.tune(
            corpus, "sm-compact", space=SPACE, store=tmp / f"store-{i}", executor="inline", progress=False
        )
    )
    configs = [
        wb.strategy(row.strategy, json.loads(row.config_json)) for row in result.runs.configs.itertuples(index=False)
    ]
    independent_s = sum(_best(lambda _, one=one: wb.replay(corpus, one, progress=False))[0] for one in configs)
    summarised_s = sum(_best(lambda _, one=one: wb.replay(corpus, one, progress=False).summary())[0] for one in configs)
    tune_met = _verdict(
        "tune",
        tune_s / independent_s,
        0.5,
        f"tune of {len(configs)} configs × {len(corpus)} sessions {tune_s:.2f} s vs {len(configs)} independent "
        f"replays {independent_s:.2f} s (with a summary() each: {summarised_s:.2f} s, "
        f"ratio {tune_s / summarised_s:.2f})",
    )

    folder = tmp / "replay"
    replay_cli_s = _cli("replay", str(DATA), "--strategy", "sm-compact", "--out", str(folder), "--force")
    report_cli_s = _cli("report", str(folder))
    report_met = _verdict(
        "report",
        report_cli_s / replay_cli_s,
        1.0,
        f"`workbench report` {report_cli_s:.2f} s vs the `workbench replay` it reads {replay_cli_s:.2f} s",
    )

    replay_s, _ = _best(lambda _: wb.replay(corpus, COMPARED, progress=False))
    # a fresh `Runs` each time: summary() caches its tables
    summary_s, summary = min(
        (_timed(wb.replay(corpus, COMPARED, progress=False).summary) for _ in range(REPEATS)), key=lambda p: p[0]
    )
    summary_met = _verdict(
        "summary",
        summary_s / replay_s,
        1.0,
        f"runs.summary() {summary_s:.2f} s ({summary.shape[1]} columns) vs wb.replay of {len(COMPARED)} "
        f"strategies × {len(corpus)} sessions {replay_s:.2f} s",
    )
    met = sum((tune_met, report_met, summary_met))
    print(f"targets met: {met} of 3")


if __name__ == "__main__":
    main()
