"""Benchmark: load + token-count the open Claude Code corpus with each estimator, cold and cached.

Prints, per estimator, the first (cold caches: no token counts, no parsed sessions) and second (warm:
the token-count cache and the parsed-session cache) run, split into load and count,
and the ratios first/second for the count phase and end to end. Measured in this run; nothing is
hard-coded. Usage: ``python benchmarks/bench_tokens.py [CORPUS_PATH] [--json]``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ESTIMATORS = ("claude-rough", "claude-padded", "tiktoken:o200k_base", "tiktoken:cl100k_base")


def _run(path: Path, name: str, db: Path) -> tuple[float, float, int, int]:
    from workbench.tokens.cache import CachedEstimator
    from workbench.tokens.estimators import get_estimator
    from workbench.transcript import load_paths

    start = time.perf_counter()
    sessions = list(load_paths([path]))
    loaded = time.perf_counter()
    estimator = CachedEstimator(get_estimator(name), db)
    total = sum(sum(estimator.count_many(s.records)) for s in sessions)
    counted = time.perf_counter()
    estimator.close()
    return loaded - start, counted - loaded, total, estimator.stats.misses


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    corpus = Path(args[0]) if args else Path(os.environ.get("WORKBENCH_CORPUS", "../shared/corpus")) / "claude-code"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = tmp
        from workbench.tokens.estimators import get_estimator

        for name in ESTIMATORS:
            get_estimator(name)  # load the BPE ranks outside the timed region
            db = Path(tmp) / f"{name.replace(':', '_')}.sqlite"
            shutil.rmtree(Path(tmp) / "sessions", ignore_errors=True)  # cold: no parsed sessions either
            load1, count1, total1, _misses1 = _run(corpus, name, db)
            load2, count2, total2, misses2 = _run(corpus, name, db)
            assert total1 == total2 and misses2 == 0
            rows.append(
                {
                    "estimator": name,
                    "tokens": total1,
                    "first_load_s": round(load1, 4),
                    "first_count_s": round(count1, 4),
                    "second_load_s": round(load2, 4),
                    "second_count_s": round(count2, 4),
                    "count_ratio": round(count1 / count2, 2),
                    "end_to_end_ratio": round((load1 + count1) / (load2 + count2), 2),
                    "second_run_misses": misses2,
                }
            )
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=2))
        return
    print(f"corpus: {corpus}")
    header = list(rows[0])
    print("  ".join(f"{h:>18}" for h in header))
    for row in rows:
        print("  ".join(f"{row[h]!s:>18}" for h in header))


if __name__ == "__main__":
    main()
