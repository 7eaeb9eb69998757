"""Benchmark: the token cache's per-sequence level against record-by-record lookups.

``count_many`` of every session's records (``Session.conversation()``, what the replay engine asks for),
each pass on a fresh ``CachedEstimator`` (a new process's state: empty memo, new connection) over one
cache file, with the sequence level on (the default) and off (``_SEQUENCE_MIN`` above any request: the
record-by-record path, exactly the code before it). Three phases:

- ``cold``: an empty file each (tokenize everything; "on" also stores the sequence rows);
- ``upgrade``: every count in the file, no sequence row yet (the first run after upgrading: "on" looks
  up record by record and stores the rows), against a warm "off" pass;
- ``warm``: both alternate ``--repeat`` times (default 5) on the same file; medians, min/max as spread.

Every pass must give the same counts (checked). Wall and CPU seconds are measured in this run, nothing
is hard-coded; the ratios are off/on (above 1: the sequence level is faster).
Usage: ``python benchmarks/bench_token_sequences.py [PATH ...] [--estimator NAME] [--repeat N] [--json]``
(default paths: the corpus' ``claude-code`` and ``claude-code-more``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    args = sys.argv[1:]
    options = {"--estimator": "claude-rough", "--repeat": "5"}
    for name in options:
        if name in args:
            options[name] = args[args.index(name) + 1]
    positional = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] not in options)]
    corpus = Path(os.environ.get("WORKBENCH_CORPUS", "../shared/corpus"))
    paths = [Path(p) for p in positional] or [corpus / "claude-code", corpus / "claude-code-more"]
    name, repeat = options["--estimator"], int(options["--repeat"])
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = tmp
        from workbench.tokens import cache
        from workbench.tokens.estimators import get_estimator
        from workbench.transcript import load_paths

        lists = [s.conversation() for s in load_paths(paths)]
        for records in lists:
            for record in records:
                _ = record.content_key  # as the parsed-session cache hands them over: already computed
        get_estimator(name)  # BPE ranks, if any, loaded outside the timed passes
        minimum = cache._SEQUENCE_MIN

        def run(db: Path, sequences: bool) -> tuple[float, float, list[list[int]], cache.CacheStats]:
            cache._SEQUENCE_MIN = minimum if sequences else sys.maxsize
            estimator = cache.CachedEstimator(get_estimator(name), db)
            wall, cpu = time.perf_counter(), time.process_time()
            counts = [estimator.count_many(records) for records in lists]
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            estimator.close()
            cache._SEQUENCE_MIN = minimum
            return wall, cpu, counts, estimator.stats

        cold_off = run(Path(tmp) / "off.sqlite", sequences=False)
        cold_on = run(Path(tmp) / "on.sqlite", sequences=True)
        db = Path(tmp) / "off.sqlite"  # every count, no sequence row
        upgrade_off = run(db, sequences=False)
        upgrade_on = run(db, sequences=True)
        warm: dict[bool, list[tuple[float, float, list[list[int]], cache.CacheStats]]] = {False: [], True: []}
        for _ in range(repeat):
            for sequences in (False, True):
                warm[sequences].append(run(db, sequences))
        reference = cold_off[2]
        passes = [cold_on, upgrade_off, upgrade_on, *warm[False], *warm[True]]
        assert all(p[2] == reference for p in passes), "counts differ between passes"
        # warm: one row per distinct long list (a repeated list is answered by the memo), nothing tokenized
        long_lists = len({tuple(r.content_key for r in records) for records in lists if len(records) >= minimum})
        assert all((p[3].sequence_hits, p[3].sequence_misses, p[3].misses) == (long_lists, 0, 0) for p in warm[True])

        def median(runs: list[tuple[float, float, object, object]], i: int) -> float:
            return statistics.median(r[i] for r in runs)  # type: ignore[misc]

        row = {
            "paths": [str(p) for p in paths],
            "estimator": name,
            "sessions": len(lists),
            "records": sum(map(len, lists)),
            "long_sessions": sum(len(r) >= minimum for r in lists),
            "cold_off_s": round(cold_off[0], 4),
            "cold_on_s": round(cold_on[0], 4),
            "cold_ratio": round(cold_off[0] / cold_on[0], 3),
            "upgrade_off_s": round(upgrade_off[0], 4),
            "upgrade_on_s": round(upgrade_on[0], 4),
            "upgrade_ratio": round(upgrade_off[0] / upgrade_on[0], 3),
            "warm_off_s": round(median(warm[False], 0), 4),
            "warm_on_s": round(median(warm[True], 0), 4),
            "warm_off_spread_s": [round(min(r[0] for r in warm[False]), 4), round(max(r[0] for r in warm[False]), 4)],
            "warm_on_spread_s": [round(min(r[0] for r in warm[True]), 4), round(max(r[0] for r in warm[True]), 4)],
            "warm_ratio": round(median(warm[False], 0) / median(warm[True], 0), 2),
            "warm_cpu_ratio": round(median(warm[False], 1) / median(warm[True], 1), 2),
            "repeat": repeat,
        }
    if "--json" in sys.argv:
        print(json.dumps(row, indent=2))
        return
    width = max(map(len, row))
    for key, value in row.items():
        print(f"{key:>{width}}  {value}")


if __name__ == "__main__":
    main()
