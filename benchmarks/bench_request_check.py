"""Benchmark: the engine's incremental request check against a check from scratch at every call.

Masking strategies change their context before every API call, so the engine checks it (normalize,
validate, count repairs) at every call. `workbench.request.incremental.IncrementalCheck` redoes that only
from the first change. This replays one `workbench.synthetic` session of each ``--calls`` size (written
to a temporary folder, its token counts warm) through each masking strategy twice, alternating
``--repeat`` times: with the engine's incremental check, and with ``check_request`` from scratch with the
message memo (what the engine did before it checked incrementally). It prints the medians, their ratio, how each grows per
doubling of the session (4× is quadratic), the list entries of the replay's events (``kept_uuids``,
``not_kept_uuids``, ``dropped_uuids``, ...: what ``--out`` and the store hold, linear in the session), and
checks that both give the same rows.

Usage: ``python benchmarks/bench_request_check.py [--calls 250,500,1000] [--repeat 1] [--json]``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

STRATEGIES = ("observation-masking", "clear-tool-uses", "openhands-observation-masking")


def main() -> None:
    args = sys.argv[1:]
    options = {"--calls": "250,500,1000", "--repeat": "1"}
    for name in options:
        if name in args:
            options[name] = args[args.index(name) + 1]
    sizes = [int(n) for n in options["--calls"].split(",")]
    repeat = int(options["--repeat"])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = str(Path(tmp) / "cache")
        from workbench.replay import engine, replay_session
        from workbench.replay.validation import check_request
        from workbench.strategies import create
        from workbench.synthetic import generate_session
        from workbench.transcript import load_paths

        def from_scratch(context, *, thinking, original_thinking, memo, incremental):  # type: ignore[no-untyped-def]
            return check_request(context, thinking=thinking, original_thinking=original_thinking, memo=memo)

        incremental_check = engine.check_request

        for calls in sizes:
            path = Path(tmp) / f"session-{calls}.jsonl"
            path.write_text("\n".join(generate_session(7, target_tokens=10**9, max_calls=calls)) + "\n")
            session = next(iter(load_paths([path])))
            replay_session(session, create("none"))  # token counts warm
            for name in STRATEGIES:
                times: dict[str, list[float]] = {"incremental": [], "scratch": []}
                steps: dict[str, list] = {}
                entries = 0
                for _ in range(repeat):
                    for mode, check in (("incremental", incremental_check), ("scratch", from_scratch)):
                        engine.check_request = check  # type: ignore[assignment]
                        start = time.perf_counter()
                        result = replay_session(session, create(name))
                        times[mode].append(time.perf_counter() - start)
                        steps[mode] = result.steps
                        entries = sum(len(v) for e in result.events for v in e.values() if isinstance(v, list))
                engine.check_request = incremental_check  # type: ignore[assignment]
                if steps["incremental"] != steps["scratch"]:
                    raise SystemExit(f"{name}, {calls} calls: the incremental check changed the rows")
                rows.append(
                    {
                        "strategy": name,
                        "calls": calls,
                        "records": len(session.records),
                        "incremental_s": round(statistics.median(times["incremental"]), 3),
                        "scratch_s": round(statistics.median(times["scratch"]), 3),
                        "event_entries": entries,
                    }
                )
    for row in rows:
        row["speed-up"] = round(row["scratch_s"] / row["incremental_s"], 2)
        smaller = [r for r in rows if r["strategy"] == row["strategy"] and r["calls"] * 2 == row["calls"]]
        if smaller:
            row["incremental_x_per_doubling"] = round(row["incremental_s"] / smaller[0]["incremental_s"], 2)
            row["scratch_x_per_doubling"] = round(row["scratch_s"] / smaller[0]["scratch_s"], 2)
    if "--json" in args:
        print(json.dumps(rows, indent=2))
        return
    print(f"request check, incremental vs from scratch (medians of {repeat}; same rows checked):")
    print(
        f"  {'strategy':<31}{'calls':>6}{'records':>8}{'incr. s':>9}{'scratch s':>10}{'speed-up':>9}{'x/doubling':>16}"
        f"{'entries':>9}"
    )
    for row in rows:
        growth = (
            f"{row['incremental_x_per_doubling']:.2f} / {row['scratch_x_per_doubling']:.2f}"
            if "incremental_x_per_doubling" in row
            else "-"
        )
        print(
            f"  {row['strategy']:<31}{row['calls']:>6}{row['records']:>8}{row['incremental_s']:>9.3f}"
            f"{row['scratch_s']:>10.3f}{row['speed-up']:>9.2f}{growth:>16}{row['event_entries']:>9,}"
        )


if __name__ == "__main__":
    main()
