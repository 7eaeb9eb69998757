"""Benchmark: a 1,000-cell SM-compact grid (50 configs × 20 sessions) over the open Claude Code corpus.

Prints the sweep's cells/second and its ratio against running every cell as an independent full
replay. The independent cost is *measured on a sample and extrapolated* (two configs per session, the
per-session mean × 50 configs), in two variants:

* in-process: per cell, parse the session's file, count its tokens with the three estimators the
  replay uses (no cache: an independent run starts from nothing), replay;
* CLI: per cell, a fresh ``workbench replay FILE --strategy sm-compact --set …`` process (what a shell
  loop over the grid does), measured on a few cells.

The sweep itself parses the corpus once, warms the on-disk token cache once and replays on a local
process pool (``--workers``, default CPU count), into a fresh store and a fresh token cache.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRID = {
    "min_tokens": [2000, 5000, 10000, 15000, 20000],
    "max_tokens": [30000, 40000, 60000, 80000, 100000],
    "min_text_block_messages": [3, 5],
}


def _corpus() -> Path:
    root = Path(os.environ.get("WORKBENCH_CORPUS") or REPO.parent / "shared" / "corpus")
    path = root / "claude-code"
    if not path.is_dir():
        sys.exit(f"corpus not found: {path} (set WORKBENCH_CORPUS)")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cli-sample", type=int, default=4, help="cells timed as separate CLI processes")
    args = parser.parse_args()
    corpus = _corpus()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    os.environ["WORKBENCH_CACHE_DIR"] = str(tmp / "cache")  # cold token cache for the sweep
    spec = tmp / "bench.yaml"
    grid = "\n".join(f"      {k}: {v}" for k, v in GRID.items())
    spec.write_text(
        f"name: bench\ncorpus: [{corpus}]\nmetrics: [savings]\nstrategies:\n  - name: sm-compact\n    grid:\n{grid}\n",
        encoding="utf-8",
    )

    from workbench.experiments import load_spec, plan_sweep, run_sweep

    started = time.perf_counter()
    plan = plan_sweep(load_spec(spec))
    result = run_sweep(
        plan.spec, store=tmp / "store", executor="local", workers=args.workers, progress=False, plan=plan
    )
    sweep_s = time.perf_counter() - started
    cells = result.cells_total
    configs = len(plan.spec.points)
    print(
        f"sweep: {cells} cells ({configs} configs × {len(plan.sessions)} sessions), {args.workers} workers: "
        f"{sweep_s:.2f} s wall = {cells / sweep_s:.1f} cells/s (planning, parsing and cold token counting included)"
    )

    from workbench.replay import replay_session
    from workbench.strategies import create
    from workbench.tokens.estimators import get_estimator
    from workbench.transcript import load_paths

    rng = random.Random(0)
    per_session = []
    for session in plan.sessions:
        times = []
        for point in rng.sample(list(plan.spec.points), 2):
            t0 = time.perf_counter()
            fresh = {s.id: s for s in load_paths([session.source])}[session.id]
            for name in ("claude-rough", "claude-padded"):
                get_estimator(name).count_many(fresh.conversation())
            replay_session(fresh, create("sm-compact", dict(point.passed)))
            times.append(time.perf_counter() - t0)
        per_session.append(sum(times) / len(times))
    independent_s = sum(per_session) * configs
    print(
        f"independent in-process replays (load + count + replay per cell; measured on {2 * len(plan.sessions)} "
        f"cells, extrapolated to {cells}): {independent_s:.2f} s -> sweep is {independent_s / sweep_s:.1f}x faster"
    )

    cli_times = []
    sample = rng.sample(plan.cells, min(args.cli_sample, len(plan.cells)))
    for cell in sample:
        sets = []
        for key, value in cell.passed.items():
            sets += ["--set", f"{key}={value}"]
        t0 = time.perf_counter()
        subprocess.run(
            [
                str(Path(sys.executable).parent / "workbench"),
                "replay",
                str(cell.source),
                "--strategy",
                "sm-compact",
                *sets,
                "--json",
            ],
            check=True,
            capture_output=True,
        )
        cli_times.append(time.perf_counter() - t0)
    cli_s = sum(cli_times) / len(cli_times) * cells
    print(
        f"independent CLI runs (`workbench replay FILE --strategy sm-compact --set ...` per cell; measured on "
        f"{len(cli_times)} cells, extrapolated to {cells}): {cli_s:.1f} s -> sweep is {cli_s / sweep_s:.1f}x faster"
    )
    started = time.perf_counter()
    inline = run_sweep(plan.spec, store=tmp / "store-inline", executor="inline", progress=False, plan=plan)
    inline_s = time.perf_counter() - started
    print(
        f"the same grid with the inline executor (one process, no worker start-up; token cache warm as for the "
        f"in-process baseline): {inline.cells_computed} cells in {inline_s:.2f} s -> "
        f"{independent_s / inline_s:.1f}x faster than independent in-process replays"
    )
    print(
        f"target >= 10x: in-process {'met' if independent_s / sweep_s >= 10 else 'NOT met'} with the local "
        f"pool, {'met' if independent_s / inline_s >= 10 else 'NOT met'} inline; "
        f"CLI {'met' if cli_s / sweep_s >= 10 else 'NOT met'}"
    )
    print(f"(scratch folder: {tmp})")


if __name__ == "__main__":
    main()
