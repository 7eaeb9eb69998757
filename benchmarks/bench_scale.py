"""Benchmark: a heavy user's history, at 1x, 8x and ~1 GB of Claude Code JSONL.

Builds, in a temporary folder (deleted afterwards; nothing is written into the repository), corpora of
N copies of the real Claude Code corpus (``$WORKBENCH_CORPUS/claude-code`` and ``claude-code-more``)
with every UUID (session ids, record uuids, file and folder names) rewritten per copy, so every copy's
sessions are distinct sessions, and a ~1 GB corpus of `workbench.synthetic` sessions (generated from a
few seeds, then copied the same way). For each size it runs, each as its own process with its own
cold caches, and reports wall time, peak RSS (``os.wait4``: the child's own maximum resident set) and
throughput (corpus MB / wall s):

* ``floor``: the decoder's parse + count floor: read every file, decode every line with orjson and count
  chars/4 of every line (what any loader must at least do), in a bare Python process;
* ``ingest cold`` / ``ingest warm``: ``workbench ingest --json`` with an empty cache, then again (the
  parsed-session cache: only hashing);
* ``start-up``: ``workbench replay -s none --json`` of one 46 KB session (``data/``): what any command costs
  before it reads the corpus (interpreter, imports, the command line);
* ``replay``: ``workbench replay -s claude-code --json`` (token counts warm from a first replay, so the
  figure is the replay's own cost: cold counting is the token cache's business, bench_tokens.py), and
  where its time goes: ``load warm`` (a bare process reading every session from the parsed-session
  cache, the Records a replay starts from) and ``replay none`` (the engine with a strategy that never
  compacts: load plus the engine's own per-call work);
* ``ingest cold Nw`` / ``replay Nw``: the same with ``--workers N`` (N: the CPU count), next to the
  one-process floor (a figure of what a machine's cores give, not of the 2x target, which compares one
  process with one process); every row also gives its CPU time (user + system, workers included);
* ``sweep``: ``workbench sweep`` of a small spec (``none`` and ``claude-code`` on every session) over the
  corpus, planned from the per-file summaries (no parse when warm), local executor.

A row whose first run takes under ``QUICK_S`` seconds is run ``--repeat`` times (default 5; its cache
made cold again before each run where the row is a cold one) and reports the median wall and CPU time
and the largest peak RSS (``runs``: how many): a 0.1 s row's single run moved by a third between runs
on this shared machine, and the warm ingest and start-up ratios rest on such rows.

Targets: replay within 2x of the floor; the 8x corpus's peak RSS at most 1.5x the 1x corpus's (ingest,
replay, sweep); a warm ingest at least 10x faster than a cold one. Every figure is measured in this run
(the machine may be loaded: compare the ratios, which are taken within the run). The checks also take
each replay apart over the floor (`_budget`): start-up + load warm + the ``none`` engine + claude-code's
own work, the last of which no faster start-up, loader or engine can remove.

Last, planning a sweep over ``--plan-sessions`` (default 10,000) small sessions (copies of
``data/short-question-*.jsonl``, 46 KB each with new ids): cold, warm, and what holding every session costs.

And one file of ``--tiny-lines`` (default 10⁶) tiny records: peak RSS of ``ingest`` and ``wb.load``
against the file's size (target: under 10x).

Usage: ``python benchmarks/bench_scale.py [--sizes 1,8] [--big-mb 1024] [--plan-sessions N] [--tiny-lines N]
[--repeat N] [--skip-sweep] [--json]``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: ``--workers`` of the ``ingest cold Nw`` and ``replay Nw`` rows: every CPU (2 where the README's table is from)
WORKERS = os.cpu_count() or 1
#: rows faster than this (first run, seconds) are run `_REPEAT` times and report medians
QUICK_S = 2.0
_REPEAT = {"n": 5}
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

FLOOR = r"""
import os, sys, orjson
total = 0
for root in sys.argv[1:]:
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            with open(os.path.join(folder, name), "rb") as handle:
                for line in handle.read().split(b"\n"):
                    if line.strip():
                        orjson.loads(line)
                        total += len(line) // 4
print(total)
"""

PLAN = r"""
import sys
from workbench.experiments.run import plan_sweep
plan = plan_sweep(sys.argv[1])
print(len(plan.sessions), len(plan.cells), type(plan.sessions[0]).__name__)
"""

LOAD = r"""
import sys
from workbench.transcript.groups import load_groups
print(sum(len(s.records) for group in load_groups(sys.argv[1:]) for s in group))
"""

HOLD = r"""
import sys
from workbench.transcript import load_paths
print(len([s for s in load_paths([sys.argv[1]]) if s.records]))
"""

SPEC = """name: scale
corpus: [{corpus}]
estimator: claude-rough
metrics: [savings, validity, cost]
strategies:
  - name: none
  - name: claude-code
"""


def _copy_with_new_ids(sources: list[Path], out: Path, copies: int, label: str) -> None:
    """``copies`` copies of every .jsonl under ``sources`` below ``out``, UUIDs rewritten per copy."""
    for copy in range(copies):
        space = uuid.uuid5(uuid.NAMESPACE_URL, f"workbench-bench-scale/{label}/{copy}")

        def new(old: str, space: uuid.UUID = space) -> str:
            return str(uuid.uuid5(space, old))

        for source in sources:
            for path in sorted(source.rglob("*.jsonl")):
                relative = _UUID_TEXT.sub(lambda m: new(m.group()), str(path.relative_to(source)))
                target = out / f"copy-{copy:04d}" / source.name / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                data = path.read_bytes()
                target.write_bytes(_UUID.sub(lambda m: new(m.group().decode()).encode(), data))


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*.jsonl")) / 1e6


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str, float]:
    """(wall s, peak RSS MB, stdout, CPU s) of one child process (CPU: user + system of the child and the
    children it waited for, e.g. a replay's or a sweep's worker processes)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} … exited {child.returncode}: {errors[-2000:]}")
    return wall, usage.ru_maxrss / 1024, text, usage.ru_utime + usage.ru_stime


def _measure(corpus: Path, work: Path, *, sweep: bool) -> dict[str, dict[str, float]]:
    python = sys.executable
    # the ``workbench`` command as installed (`make setup`), as a user runs it; ``-m`` adds runpy's imports
    script = Path(python).with_name("workbench")
    workbench = [str(script)] if script.is_file() else [python, "-m", "workbench.cli"]
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("WORKBENCH_SESSION_CACHE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once (`_compile`), not per run
    shutil.rmtree(work / "cache", ignore_errors=True)
    size = _size_mb(corpus)
    rows: dict[str, dict[str, float]] = {}

    def row(name: str, argv: list[str], run_env: dict[str, str] = env, before: Callable[[], None] | None = None) -> str:
        """Run the row (``before`` each run: what makes it cold again), more than once when it is quick."""
        runs = []
        while not runs or (len(runs) < _REPEAT["n"] and runs[0][0] < QUICK_S):
            if before is not None:
                before()
            runs.append(_run(argv, run_env))
        wall = statistics.median(run[0] for run in runs)
        cpu = statistics.median(run[3] for run in runs)
        rss = max(run[1] for run in runs)
        speed = None if name == "start-up" else round(size / wall, 1)  # start-up reads no corpus
        rows[name] = {
            "wall_s": round(wall, 3),  # ms: the ratios of 0.1 s rows are taken from these
            "cpu_s": round(cpu, 3),
            "peak_rss_mb": round(rss),
            "mb_per_s": speed,
            "runs": len(runs),
        }
        return runs[0][2]

    def cold_sessions() -> None:
        shutil.rmtree(work / "cache" / "sessions", ignore_errors=True)

    row("floor", [python, "-c", FLOOR, str(corpus)])
    one_session = str(ROOT / "data" / "short-question-21636369.jsonl")
    row("start-up", [*workbench, "replay", "--json", "-s", "none", one_session])
    row("ingest cold", [*workbench, "ingest", "--json", str(corpus)], before=cold_sessions)
    row("ingest warm", [*workbench, "ingest", "--json", str(corpus)])  # the cold row's last run left it warm
    ingest_nw = [*workbench, "ingest", "--json", str(corpus), "--workers", str(WORKERS)]
    row(f"ingest cold {WORKERS}w", ingest_nw, before=cold_sessions)
    _run([*workbench, "replay", "--json", str(corpus), "-s", "claude-code"], env)  # token counts warm
    row("load warm", [python, "-c", LOAD, str(corpus)])
    row("replay none", [*workbench, "replay", "--json", str(corpus), "-s", "none"])
    row("replay", [*workbench, "replay", "--json", str(corpus), "-s", "claude-code"])
    row(
        f"replay {WORKERS}w",
        [*workbench, "replay", "--json", str(corpus), "-s", "claude-code", "--workers", str(WORKERS)],
    )
    if sweep:
        spec = work / "scale.yaml"
        spec.write_text(SPEC.format(corpus=json.dumps(str(corpus))))
        sweep_argv = [*workbench, "sweep", str(spec), "--store", str(work / "store"), "--json"]
        row("sweep", sweep_argv, before=lambda: shutil.rmtree(work / "store", ignore_errors=True))
    floor, floor_cpu = rows["floor"]["wall_s"], rows["floor"]["cpu_s"]
    for values in rows.values():
        values["x_floor"] = round(values["wall_s"] / floor, 2)
        values["cpu_x_floor"] = round(values["cpu_s"] / floor_cpu, 2)
    rows["ingest warm"]["cold_over_warm"] = round(rows["ingest cold"]["wall_s"] / rows["ingest warm"]["wall_s"], 1)
    return {"corpus_mb": round(size, 1), **rows}  # type: ignore[dict-item]


def _planning(base: Path, sessions: int) -> dict[str, dict[str, float]]:
    """Planning a sweep over ``sessions`` small sessions: cold (every file parsed once, alone), warm (the
    per-file summaries only) and, for comparison, holding every session in memory as planning did."""
    seed = base / "plan-seed"
    seed.mkdir()
    shutil.copy(ROOT / "data" / "short-question-21636369.jsonl", seed / "short-question-21636369.jsonl")
    corpus = base / "plan-corpus"
    _copy_with_new_ids([seed], corpus, sessions, "plan")
    work = base / "plan-work"
    work.mkdir()
    spec = work / "plan.yaml"
    spec.write_text(SPEC.format(corpus=json.dumps(str(corpus))))
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("WORKBENCH_SESSION_CACHE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once (`_compile`), not per run
    rows = {}
    for name, argv in (
        ("plan cold", [sys.executable, "-c", PLAN, str(spec)]),
        ("plan warm", [sys.executable, "-c", PLAN, str(spec)]),
        ("hold all sessions", [sys.executable, "-c", HOLD, str(corpus)]),
    ):
        wall, rss, text, _ = _run(argv, {**env, "WORKBENCH_SESSION_CACHE": "0"} if name.startswith("hold") else env)
        rows[name] = {"wall_s": round(wall, 2), "peak_rss_mb": round(rss), "output": text.strip()}
    shutil.rmtree(corpus)
    return {"sessions": sessions, "corpus_mb": round(_size_mb(seed) * sessions, 1), **rows}  # type: ignore[dict-item]


TINY_LOAD = r"""
import sys
import workbench as wb
print(len(wb.load(sys.argv[1], progress=False)[0].records))
"""


def _tiny_lines(base: Path, count: int) -> dict[str, float]:
    """One file of ``count`` tiny records (a ``progress`` line with uuid and sessionId, ~117 bytes):
    peak RSS of ``workbench ingest`` and of ``wb.load`` against the file's size."""
    path = base / "tiny" / "tiny.jsonl"
    path.parent.mkdir()
    sid = str(uuid.uuid4())
    with path.open("w") as handle:
        for n in range(count):
            handle.write(f'{{"type":"progress","uuid":"{uuid.UUID(int=n)}","sessionId":"{sid}"}}\n')
    size = path.stat().st_size / 1e6
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(base / "tiny" / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("WORKBENCH_SESSION_CACHE", None)
    out: dict[str, float] = {"lines": count, "file_mb": round(size, 1)}
    for name, argv in (
        ("ingest", [sys.executable, "-m", "workbench.cli", "ingest", "--json", str(path)]),
        ("wb.load", [sys.executable, "-c", TINY_LOAD, str(path)]),
    ):
        wall, rss, _, _ = _run(argv, env)
        out[f"{name} wall_s"] = round(wall, 1)
        out[f"{name} peak_rss_mb"] = round(rss)
        out[f"{name} x_size"] = round(rss / size, 1)
    shutil.rmtree(path.parent)
    return out


def _compile() -> None:
    """Bring the package's bytecode up to date, as an install does: with stale or missing ``.pyc`` files
    (an edited checkout, or ``PYTHONDONTWRITEBYTECODE`` set) every child would compile its modules again,
    which is no command's own cost."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "workbench")], check=True, cwd=ROOT)


def main() -> None:
    args = sys.argv[1:]
    sizes = [int(x) for x in (args[args.index("--sizes") + 1] if "--sizes" in args else "1,8").split(",") if x]
    big_mb = float(args[args.index("--big-mb") + 1]) if "--big-mb" in args else 1024.0
    sweep = "--skip-sweep" not in args
    plan_n = int(args[args.index("--plan-sessions") + 1]) if "--plan-sessions" in args else 10_000
    tiny_n = int(args[args.index("--tiny-lines") + 1]) if "--tiny-lines" in args else 1_000_000
    _REPEAT["n"] = max(1, int(args[args.index("--repeat") + 1])) if "--repeat" in args else 5
    corpus_root = Path(os.environ.get("WORKBENCH_CORPUS", ROOT.parent / "shared" / "corpus"))
    sources = [corpus_root / "claude-code", corpus_root / "claude-code-more"]
    if not all(p.is_dir() for p in sources):
        sys.exit(f"bench_scale: the real corpus is missing ({sources[0]}): export WORKBENCH_CORPUS=/path/to/corpus")
    _compile()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="workbench-bench-scale-") as tmp:
        base = Path(tmp)
        for n in sizes:
            corpus = base / f"real-{n}x"
            _copy_with_new_ids(sources, corpus, n, "real")
            results[f"real {n}x"] = _measure(corpus, base / "work", sweep=sweep)
            shutil.rmtree(corpus)
            _print_row(f"real {n}x", results[f"real {n}x"])
        if big_mb > 0:
            from workbench.synthetic import write_corpus

            seeds = base / "synthetic-seeds"
            for seed in range(8):
                write_corpus(seeds / f"seed-{seed}", seed=seed)
            copies = max(1, round(big_mb / _size_mb(seeds)))
            corpus = base / "synthetic-big"
            _copy_with_new_ids([seeds], corpus, copies, "synthetic")
            shutil.rmtree(seeds)
            label = f"synthetic {_size_mb(corpus):,.0f} MB"
            results[label] = _measure(corpus, base / "work", sweep=sweep)
            _print_row(label, results[label])
        if plan_n > 0:
            results["planning"] = _planning(base, plan_n)
            print(f"\nplanning a sweep over {plan_n:,} sessions ({results['planning']['corpus_mb']} MB):")
            for name in ("plan cold", "plan warm", "hold all sessions"):
                row = results["planning"][name]
                print(f"  {name:<18}{row['wall_s']:>9.2f} s {row['peak_rss_mb']:>8,.0f} MB   ({row['output']})")
        if tiny_n > 0:
            tiny = results["tiny lines"] = _tiny_lines(base, tiny_n)
            print(f"\n{tiny_n:,} tiny lines ({tiny['file_mb']} MB, one session):")
            for name in ("ingest", "wb.load"):
                print(
                    f"  {name:<10}{tiny[f'{name} wall_s']:>8.1f} s {tiny[f'{name} peak_rss_mb']:>8,.0f} MB peak RSS "
                    f"= {tiny[f'{name} x_size']:.1f}x the file (target < 10)"
                )
    if "--json" in args:
        print(json.dumps(results, indent=2))
    _print_checks(results)


def _print_row(label: str, result: dict) -> None:
    print(f"\n{label}: {result['corpus_mb']:,.1f} MB of JSONL")
    print(f"  {'step':<16}{'wall s':>9}{'CPU s':>8}{'peak RSS MB':>13}{'MB/s':>9}{'x floor':>9}{'CPU x':>7}{'runs':>6}")
    for name, row in result.items():
        if isinstance(row, dict):
            timing = f"{row['wall_s']:>9.3f}{row['cpu_s']:>8.3f}{row['peak_rss_mb']:>13,.0f}"
            speed = "-" if row["mb_per_s"] is None else f"{row['mb_per_s']:.1f}"
            print(f"  {name:<16}{timing}{speed:>9}{row['x_floor']:>9.2f}{row['cpu_x_floor']:>7.2f}{row['runs']:>6}")
    sys.stdout.flush()


def _budget(result: dict) -> str:
    """The replay's time taken apart, each part over the floor: the command's start-up, loading the Records
    (the ``load warm`` row: a bare process), the engine with a strategy that does nothing (``replay none``
    less those two; the interpreter's own start, ~0.015 s, is in both, so this is a little low) and
    claude-code's own work (``replay`` less ``replay none``). The last is what no faster start-up, loader
    or engine removes: above 2 alone, they cannot meet the target."""
    floor = result["floor"]["wall_s"]
    start, load = result["start-up"]["wall_s"], result["load warm"]["wall_s"]
    engine = result["replay none"]["wall_s"] - start - load
    own = result["replay"]["wall_s"] - result["replay none"]["wall_s"]
    return (
        f"replay = start-up {start / floor:.2f}x + load warm {load / floor:.2f}x + the none engine "
        f"{engine / floor:.2f}x + claude-code's own work {own / floor:.2f}x the floor"
    )


def _print_checks(results: dict[str, dict]) -> None:
    print("\nchecks (ratios within this run):")
    small = results.get("real 1x")
    large = results.get("real 8x")
    if small and large:
        for step in ("ingest cold", "replay", "sweep"):
            if step in small and step in large:
                ratio = large[step]["peak_rss_mb"] / small[step]["peak_rss_mb"]
                print(f"  {step} peak RSS 8x / 1x = {ratio:.2f} (target <= 1.5)")
    for label, result in results.items():
        if label in ("planning", "tiny lines"):
            continue
        warm = result["ingest warm"]["cold_over_warm"]
        replay = result["replay"]["x_floor"]
        print(f"  {label}: warm ingest {warm:.1f}x faster than cold (target >= 10)")
        print(f"  {label}: replay {replay:.2f}x the parse + count floor (target <= 2)")
        # where the target is missed: start-up, loading, the engine, and the strategy's own work apart
        print(f"  {label}: {_budget(result)}")
        pooled = result.get(f"replay {WORKERS}w")
        if pooled:
            print(
                f"  {label}: replay with {WORKERS} workers {pooled['x_floor']:.2f}x the one-process floor's wall time "
                f"({pooled['cpu_x_floor']:.2f}x its CPU time)"
            )


if __name__ == "__main__":
    main()
