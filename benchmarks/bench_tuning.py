"""Benchmark: tuning, reporting and summarising, as ratios measured in one run.

Targets (each printed with its measured ratio and whether it is met; a missed target is reported, not an
error, so the exit code is non-zero only when something fails):

* tune: ``wb.tune`` of a grid (every config it replays, the baseline and the reference included) takes
  at most 0.5 × the time of replaying each of those configs on its own (``wb.replay`` with one config,
  the corpus loaded once, no metrics: the cheapest independent run);
* report: ``workbench report`` on a ``workbench replay --out`` folder takes at most the time of the
  ``workbench replay`` that wrote it (both as command-line processes, start-up included). The report keeps
  what it needs of each session alone on disk (`workbench.reporting.session_analysis`), as the replay keeps
  token counts: the ratio is of a report of sessions reported on before (the first of the alternating runs
  fills that cache), and the ratio without that cache (a first report) is printed beside it;
* summary: ``runs.summary()`` (its default columns, computed from scratch) takes at most the
  ``wb.replay`` it summarises.

The corpus is the one ``experiments/tune-sm-compact.yaml`` tunes on: ``$WORKBENCH_CORPUS/claude-code``
and ``claude-code-more`` (42 sessions) with that spec's grid, or, without the corpus, the embedded
``data/`` with a smaller grid. Every measurement runs in a fresh process of its own (so no memo of an
earlier measurement helps a later one) after the same warm-up: the corpus loaded and replayed once
through ``none``, which fills the token-count cache the replays read (the parsed-session and token caches
on disk are warm for every measurement alike). Single process work throughout (``executor="inline"``);
each time is the best of ``REPEATS`` runs, and the two sides of a ratio alternate, so a neighbour's load on a
shared two-core machine moves the ratios less.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
COMPARED = ["none", "sm-compact", "full-compact", "truncate-oldest"]
REPEATS = 3
#: The grid on the embedded data/ (the real corpus uses the tune spec's own).
SMALL_SPACE = {"min_tokens": [2_000, 5_000, 10_000, 20_000], "trigger.pct_of_window": [40, 60, 80]}


def _setting() -> tuple[list[str], dict[str, list[Any]], str]:
    """(corpus paths, grid, description): the tune spec's corpus and grid when the corpus is there."""
    corpus = Path(os.environ.get("WORKBENCH_CORPUS", REPO.parent / "shared" / "corpus"))
    paths = [corpus / "claude-code", corpus / "claude-code-more"]
    if all(p.is_dir() for p in paths):
        import yaml

        spec = yaml.safe_load((REPO / "experiments" / "tune-sm-compact.yaml").read_text(encoding="utf-8"))
        return [str(p) for p in paths], spec["space"], "claude-code + claude-code-more, the tune spec's grid"
    return [str(DATA)], SMALL_SPACE, "the embedded data/ (no corpus found), a 12-point grid"


def _child(kind: str, paths: list[str], space: dict[str, list[Any]], extra: str) -> dict[str, Any]:
    """One measurement in this (fresh) process; returns its seconds and what the parent needs."""
    import pandas as pd

    import workbench as wb

    corpus = wb.load(paths, progress=False)
    wb.replay(corpus, "none", progress=False)  # warm-up: imports and the corpus' token counts
    if kind == "tune":
        store = Path(tempfile.mkdtemp(prefix="bench-tune-")) / "store"
        try:
            started = time.perf_counter()
            result = wb.tune(corpus, "sm-compact", space=space, store=store, executor="inline", progress=False)
            seconds = time.perf_counter() - started
        finally:
            shutil.rmtree(store.parent, ignore_errors=True)
        rows = pd.concat([result.per_session, result.baseline])[["strategy", "config_json"]].drop_duplicates()
        configs = [[row.strategy, json.loads(row.config_json)] for row in rows.itertuples(index=False)]
        return {"seconds": seconds, "configs": configs, "sessions": len(corpus)}
    if kind == "independent":
        configs = [wb.strategy(name, config) for name, config in json.loads(extra)]
        started = time.perf_counter()
        for one in configs:
            wb.replay(corpus, one, progress=False)
        return {"seconds": time.perf_counter() - started}
    if kind == "summary":
        started = time.perf_counter()
        runs = wb.replay(corpus, COMPARED, progress=False)
        replay_s = time.perf_counter() - started
        started = time.perf_counter()
        table = runs.summary()
        return {"seconds": time.perf_counter() - started, "replay": replay_s, "columns": table.shape[1]}
    raise ValueError(kind)


def _run_child(kind: str, paths: list[str], space: dict[str, list[Any]], extra: str = "") -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--paths", json.dumps(paths), "--space", json.dumps(space)]
    out = subprocess.run([*command, "--extra", extra], capture_output=True, text=True, cwd=REPO, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cli(*args: str, env: dict[str, str] | None = None) -> float:
    """Seconds of one ``workbench`` command run as its own process (``env``: variables added)."""
    command = [sys.executable, "-m", "workbench.cli", *args]
    started = time.perf_counter()
    out = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, check=False, env={**os.environ, **(env or {})}
    )
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed ({out.returncode}): {out.stderr[-2000:]}")
    return seconds


def _verdict(name: str, ratio: float, target: float, detail: str) -> bool:
    met = ratio <= target
    print(f"{name}: ratio {ratio:.2f} (target ≤ {target:g}): {'met' if met else 'NOT met'}; {detail}")
    return met


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-tuning-"))
    try:
        _measure(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(tmp: Path) -> None:
    paths, space, described = _setting()
    print(f"corpus: {described}")
    # the two sides alternate, so a neighbour's load drifting over the run hits both alike
    tunes, alone = [_run_child("tune", paths, space)], []
    configs = json.dumps(tunes[0]["configs"])
    for repeat in range(REPEATS):
        alone.append(_run_child("independent", paths, space, configs))
        if repeat + 1 < REPEATS:
            tunes.append(_run_child("tune", paths, space))
    tune = min(tunes, key=lambda r: r["seconds"])
    independent = min(alone, key=lambda r: r["seconds"])
    n = len(tune["configs"])
    tune_met = _verdict(
        "tune",
        tune["seconds"] / independent["seconds"],
        0.5,
        f"tune of {n} configs × {tune['sessions']} sessions {tune['seconds']:.2f} s vs {n} independent "
        f"replays {independent['seconds']:.2f} s",
    )

    folder = tmp / "replay"
    replay_runs, report_runs = [], []
    for _ in range(REPEATS):  # alternating, as above
        replay_runs.append(_cli("replay", *paths, "--strategy", "sm-compact", "--out", str(folder), "--force"))
        report_runs.append(_cli("report", str(folder)))
    replay_cli_s, report_cli_s = min(replay_runs), min(report_runs)
    report_met = _verdict(
        "report",
        report_cli_s / replay_cli_s,
        1.0,
        f"`workbench report` {report_cli_s:.2f} s vs the `workbench replay` it reads {replay_cli_s:.2f} s "
        "(the sessions' analyses cached, as after a first report of them)",
    )
    uncached = min(_cli("report", str(folder), env={"WORKBENCH_ANALYSIS_CACHE": "0"}) for _ in range(REPEATS))
    print(
        f"  report without the analysis cache (a first report of these sessions): ratio "
        f"{uncached / replay_cli_s:.2f} ({uncached:.2f} s)"
    )

    runs = [_run_child("summary", paths, space) for _ in range(REPEATS)]  # each: a replay, then its summary
    summary = min(runs, key=lambda r: r["seconds"])
    replay_s = min(r["replay"] for r in runs)
    summary_met = _verdict(
        "summary",
        summary["seconds"] / replay_s,
        1.0,
        f"runs.summary() {summary['seconds']:.2f} s ({summary['columns']} columns) vs wb.replay of "
        f"{len(COMPARED)} strategies {replay_s:.2f} s",
    )
    met = sum((tune_met, report_met, summary_met))
    print(f"targets met: {met} of 3")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=["tune", "independent", "summary"])
    parser.add_argument("--paths", default="[]")
    parser.add_argument("--space", default="{}")
    parser.add_argument("--extra", default="")
    options = parser.parse_args()
    if options.child:
        print(json.dumps(_child(options.child, json.loads(options.paths), json.loads(options.space), options.extra)))
    else:
        main()
