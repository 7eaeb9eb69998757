"""Benchmark: the naive-cut study (`workbench invariants`) on the corpus and on sessions k times longer.

Each corpus file is rewritten k times end to end (every uuid, ``message.id`` and tool id of copy j
gets a suffix, the copies' chains are linked), so a session of n records becomes one of k·n with the
same shapes. The study is timed on k = 1, 2, 4 (after one untimed run each; the median of ``--repeat``
runs each, alternating k so the load of the machine falls on all of them), and the scaling exponent
``log(t_k / t_1) / log k`` is printed: 1 is linear, 2 quadratic. Target:
near-linear (exponent well below 1.5).
The direct computation (`workbench.studies.reference`, the algorithm before) is timed on k = 1 too,
unless ``--no-reference``; both results are compared (they must be identical).

Usage: ``python benchmarks/bench_invariants.py [CORPUS_PATH] [--k 1,2,4] [--repeat 3] [--no-reference] [--json]``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_IDS = {"uuid", "parentUuid", "logicalParentUuid", "leafUuid", "tool_use_id", "messageId", "id"}


def _suffixed(value, tag: str):
    if isinstance(value, dict):
        return {k: (f"{v}{tag}" if k in _IDS and isinstance(v, str) else _suffixed(v, tag)) for k, v in value.items()}
    if isinstance(value, list):
        return [_suffixed(v, tag) for v in value]
    return value


def longer(source: Path, copies: int, target: Path) -> None:
    """``source`` (JSONL) repeated ``copies`` times with fresh ids into ``target``."""
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    last = None
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as handle:
        for copy in range(copies):
            for index, row in enumerate(rows):
                new = _suffixed(row, f"-x{copy}") if copy else row
                if copy and index == 0 and "parentUuid" in new:
                    new = {**new, "parentUuid": last}
                last = new.get("uuid") or last
                handle.write(json.dumps(new, ensure_ascii=False) + "\n")


def main() -> None:
    args = sys.argv[1:]
    options = {"--k": "1,2,4", "--repeat": "3"}
    for name in options:
        if name in args:
            options[name] = args[args.index(name) + 1]
    ks = [int(k) for k in options["--k"].split(",")]
    repeat = int(options["--repeat"])
    positional = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] not in options)]
    corpus = (
        Path(positional[0])
        if positional
        else Path(os.environ.get("WORKBENCH_CORPUS", "../shared/corpus")) / "claude-code"
    )
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = str(Path(tmp) / "cache")
        from workbench.studies.naive_cut import invariants_report
        from workbench.studies.reference import reference_invariants_report
        from workbench.transcript import load_paths

        sources = sorted(p for p in corpus.rglob("*.jsonl"))
        sessions, records = {}, {}
        for k in ks:
            folder = Path(tmp) / f"k{k}"
            for source in sources:
                longer(source, k, folder / source.relative_to(corpus))
            sessions[k] = [s for s in load_paths([folder]) if s.records]
            records[k] = sum(len(s.conversation()) for s in sessions[k])
            invariants_report(sessions[k])  # a first run, not timed: token counts, imports
        times: dict[int, list[float]] = {k: [] for k in ks}
        reports = {}
        for _ in range(repeat):
            for k in ks:
                started = time.perf_counter()
                reports[k] = invariants_report(sessions[k])
                times[k].append(time.perf_counter() - started)
        median = {k: statistics.median(v) for k, v in times.items()}
        reference = None
        if "--no-reference" not in args and 1 in ks:
            started = time.perf_counter()
            expected = reference_invariants_report(sessions[1])
            reference = time.perf_counter() - started
            assert json.dumps(expected, sort_keys=True) == json.dumps(reports[1], sort_keys=True), "results differ"
    base = min(ks)
    rows = []
    for k in ks:
        ratio = median[k] / median[base]
        exponent = math.log(ratio) / math.log(k / base) if k != base else None
        rows.append(
            {
                "k": k,
                "sessions": len(sessions[k]),
                "records": records[k],
                "seconds_median": round(median[k], 3),
                "seconds_min": round(min(times[k]), 3),
                "seconds_max": round(max(times[k]), 3),
                "ratio_to_k1": round(ratio, 2),
                "exponent": None if exponent is None else round(exponent, 2),
                "us_per_record": round(median[k] / records[k] * 1e6, 1),
            }
        )
    result = {"corpus": str(corpus), "repeat": repeat, "rows": rows}
    if reference is not None:
        result["reference_seconds_k1"] = round(reference, 3)
        result["speedup_k1"] = round(reference / median[1], 1)
        result["identical_to_reference"] = True
    if "--json" in args:
        print(json.dumps(result, indent=2))
        return
    print(f"naive-cut study on {corpus} ({len(sources)} files), median of {repeat} runs per k")
    for row in rows:
        extra = f", exponent {row['exponent']}" if row["exponent"] is not None else ""
        print(
            f"  k={row['k']}: {row['records']:,} records, {row['seconds_median']:.2f} s "
            f"(min {row['seconds_min']:.2f}, max {row['seconds_max']:.2f}); {row['ratio_to_k1']}x k=1{extra}; "
            f"{row['us_per_record']} us/record"
        )
    if reference is not None:
        print(
            f"  reference (direct computation) at k=1: {reference:.2f} s = {result['speedup_k1']}x slower; "
            "results identical"
        )


if __name__ == "__main__":
    main()
