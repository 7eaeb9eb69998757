"""Benchmark: replaying the open Claude Code corpus with ``claude-code`` vs just loading and counting it.

Both runs start from a warm token-count cache (the first replay fills it), so the ratio measures what
replay adds on top of load + count: stepping, strategy decisions, memory extraction, summaries and
validation. Target: replay ≤ 1.5× load + count. Prints what this run measured.

Both are timed under the same conditions: no sessions from an earlier run are kept alive (loading
allocates enough to trigger full garbage collections, whose cost grows with everything else alive).
They alternate ``--repeat`` times (default 5); the ratio is that of the medians, and the min/max of
each are printed as the spread.
Usage: ``python benchmarks/bench_replay.py [CORPUS_PATH] [--strategy NAME] [--repeat N] [--json]``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def main() -> None:
    args = sys.argv[1:]
    options = {"--strategy": "claude-code", "--repeat": "5"}
    for name in options:
        if name in args:
            options[name] = args[args.index(name) + 1]
    strategy_name, repeat = options["--strategy"], int(options["--repeat"])
    positional = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] not in options)]
    corpus = (
        Path(positional[0])
        if positional
        else Path(os.environ.get("WORKBENCH_CORPUS", "../shared/corpus")) / "claude-code"
    )
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = tmp
        from workbench.replay import replay_sessions
        from workbench.strategies import create
        from workbench.tokens.cache import cached_estimator
        from workbench.transcript import load_paths

        def load_and_count() -> None:
            sessions = list(load_paths([corpus]))
            for name in ("claude-rough", "claude-padded"):
                estimator = cached_estimator(name)
                for session in sessions:
                    estimator.count_many(session.records)

        strategy = create(strategy_name)

        def replay() -> list:
            return replay_sessions(list(load_paths([corpus])), strategy)

        def timed(run: Callable[[], object]) -> float:
            start = time.perf_counter()
            run()
            return time.perf_counter() - start

        load_and_count()  # fill the cache
        results = replay()  # warm-up (the timed replays are the same)
        baselines, replays = [], []
        for _ in range(repeat):
            baselines.append(timed(load_and_count))
            replays.append(timed(replay))
        baseline, replayed = statistics.median(baselines), statistics.median(replays)
    row = {
        "strategy": strategy_name,
        "sessions": len(results),
        "steps": sum(len(r.steps) for r in results),
        "events": sum(len(r.events) for r in results),
        "repeat": repeat,
        "load_and_count_s": round(baseline, 4),
        "load_and_count_spread_s": [round(min(baselines), 4), round(max(baselines), 4)],
        "replay_s": round(replayed, 4),
        "replay_spread_s": [round(min(replays), 4), round(max(replays), 4)],
        "ratio": round(replayed / baseline, 2),
        "target_ratio": 1.5,
    }
    print(json.dumps(row, indent=2) if "--json" in args else "  ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
