"""Benchmark: replaying the open Claude Code corpus with ``claude-code`` vs just loading and counting it.

Both runs start from a warm token-count cache (the first replay fills it), so the ratio measures what
replay adds on top of load + count: stepping, strategy decisions, memory extraction, summaries and
validation. Target (issue #4): replay ≤ 1.5× load + count. Prints what this run measured.
Usage: ``python benchmarks/bench_replay.py [CORPUS_PATH] [--strategy NAME] [--json]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    args = sys.argv[1:]
    strategy_name = "claude-code"
    if "--strategy" in args:
        strategy_name = args[args.index("--strategy") + 1]
    positional = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--strategy")]
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

        def load_and_count() -> tuple[list, float]:
            start = time.perf_counter()
            sessions = list(load_paths([corpus]))
            for name in ("claude-rough", "claude-padded"):
                estimator = cached_estimator(name)
                for session in sessions:
                    estimator.count_many(session.records)
            return sessions, time.perf_counter() - start

        load_and_count()  # fill the cache
        _, baseline = load_and_count()
        strategy = create(strategy_name)
        replay_sessions(list(load_paths([corpus])), strategy)  # warm-up
        start = time.perf_counter()
        results = replay_sessions(list(load_paths([corpus])), strategy)
        replayed = time.perf_counter() - start
    row = {
        "strategy": strategy_name,
        "sessions": len(results),
        "steps": sum(len(r.steps) for r in results),
        "events": sum(len(r.events) for r in results),
        "load_and_count_s": round(baseline, 4),
        "replay_s": round(replayed, 4),
        "ratio": round(replayed / baseline, 2),
        "target_ratio": 1.5,
    }
    print(json.dumps(row, indent=2) if "--json" in args else "  ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
