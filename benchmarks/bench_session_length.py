"""Benchmark: how every strategy's replay grows with the length of one session.

A heavy user's longest sessions run to a thousand API calls and more. A strategy that looks at its whole
context before every call costs the square of the session's length (the masking and truncating
strategies keep an index of what changed since their last call so that they do not). This replays one
`workbench.synthetic` session of each ``--calls`` size (written to a temporary folder, its token counts
warm from a first replay) through every registered strategy with its defaults, ``--repeat`` times in
turn, in this process, and prints per strategy the median seconds at each size, how much the time grows
per doubling of the session (2x is linear, 4x quadratic; below ~0.05 s the figure is mostly noise) and
the time over the ``none`` strategy's at the largest size (the engine alone).

Usage: ``python benchmarks/bench_session_length.py [--calls 250,500,1000] [--repeat 3] [--strategies a,b]
[--json]``. Run it with another checkout's ``PYTHONPATH`` to measure that one (same sessions: the
generator is seeded).
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
    options = {"--calls": "250,500,1000", "--repeat": "3", "--strategies": ""}
    for name in options:
        if name in args:
            options[name] = args[args.index(name) + 1]
    sizes = [int(n) for n in options["--calls"].split(",")]
    repeat = int(options["--repeat"])
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_CACHE_DIR"] = str(Path(tmp) / "cache")
        from workbench.replay import replay_session
        from workbench.strategies import create
        from workbench.strategies.registry import strategies
        from workbench.synthetic import generate_session
        from workbench.transcript import load_paths

        names = options["--strategies"].split(",") if options["--strategies"] else sorted(strategies())
        if "none" not in names:
            names.append("none")
        sessions = {}
        for calls in sizes:
            path = Path(tmp) / f"session-{calls}.jsonl"
            path.write_text("\n".join(generate_session(7, target_tokens=10**9, max_calls=calls)) + "\n")
            sessions[calls] = next(iter(load_paths([path])))
            replay_session(sessions[calls], create("none"))  # token counts warm
        times: dict[tuple[str, int], list[float]] = {(name, calls): [] for name in names for calls in sizes}
        events: dict[tuple[str, int], int] = {}
        for _ in range(repeat):
            for name in names:
                for calls, session in sessions.items():
                    start = time.perf_counter()
                    result = replay_session(session, create(name))
                    times[name, calls].append(time.perf_counter() - start)
                    events[name, calls] = len(result.events)
    largest = sizes[-1]
    rows = []
    for name in names:
        row: dict = {"strategy": name}
        for calls in sizes:
            row[f"s_{calls}"] = round(statistics.median(times[name, calls]), 4)
            row[f"events_{calls}"] = events[name, calls]
        for smaller, calls in zip(sizes, sizes[1:], strict=False):
            if calls == 2 * smaller:
                row[f"x_{smaller}_to_{calls}"] = round(row[f"s_{calls}"] / row[f"s_{smaller}"], 2)
        rows.append(row)
    engine_alone = next(r for r in rows if r["strategy"] == "none")[f"s_{largest}"]
    for row in rows:
        row[f"x_none_at_{largest}"] = round(row[f"s_{largest}"] / engine_alone, 1)
    if "--json" in args:
        print(json.dumps({"calls": sizes, "records": [len(sessions[c].records) for c in sizes], "rows": rows}))
        return
    records = ", ".join(f"{c} calls: {len(sessions[c].records):,} records" for c in sizes)
    print(f"replay time by session length (medians of {repeat}; {records}):")
    growth = [k for k in rows[0] if k.startswith("x_") and "_to_" in k]
    header = "".join(f"{f'{c} s':>9}" for c in sizes) + "".join(f"{k[2:].replace('_to_', '→'):>11}" for k in growth)
    print(f"  {'strategy':<31}{header}{'× none':>8}{'events':>8}")
    for row in sorted(rows, key=lambda r: -r[f"s_{largest}"]):
        cells = "".join(f"{row[f's_{c}']:>9.3f}" for c in sizes) + "".join(f"{row[k]:>10.2f}x" for k in growth)
        print(f"  {row['strategy']:<31}{cells}{row[f'x_none_at_{largest}']:>8.1f}{row[f'events_{largest}']:>8}")


if __name__ == "__main__":
    main()
