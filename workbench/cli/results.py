"""``workbench strategies`` and ``replay``: the commands that replay (rows of `COMMANDS`, the table
`workbench.cli` builds its parser from; ``recovery`` and ``report``, which score, are `workbench.cli.report`).

Importing this module costs nothing beyond `workbench.cli.common`: ``replay`` imports the engine, the
strategies and pydantic when it runs, pandas and pyarrow only for ``--out``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import (
    FORMAT,
    JSON,
    PATHS,
    Command,
    Once,
    _emit,
    _finish,
    _parse_sets,
    _Stream,
    _values,
    arg,
    at_least_one,
    echo,
    fail,
)

if TYPE_CHECKING:
    from ..transcript.isolation import SessionFailure

__all__ = ["COMMANDS"]


def list_strategies(as_json: bool = False) -> None:
    """List the registered strategies (built in and from `workbench.strategies` entry points) with their
    config schema and defaults; entry points that fail to load are listed under errors."""
    from ..strategies.registry import broken_strategies, describe_strategies, get_strategy

    rows = [{**row, "schema": get_strategy(row["name"]).Config.model_json_schema()} for row in describe_strategies()]
    errors = [b.as_dict() for b in broken_strategies()]
    human = "\n".join(
        f"{r['name']:<24}{' (unsafe)' if r['unsafe'] else '':<10}{r['description']}"
        + ("" if r["origin"] == "builtin" else f" [{r['origin']}]")
        + (f"\n{'':<34}source: {r['source']}" if r["source"] else "")
        for r in rows
    )
    human += "".join(f"\nerror: strategy {e['name']} ({e['entry_point']}): {e['error']}" for e in errors)
    _emit({"strategies": rows, "errors": errors}, as_json, human)


def replay(
    paths: list[Path],
    strategy: str,
    sets: list[str] | None = None,
    estimator: str = "claude-rough",
    out: Path | None = None,
    process: bool = False,
    workers: int = 1,
    as_json: bool = False,
    fmt: str | None = None,
    force: bool = False,
) -> None:
    """Replay sessions call by call through a compaction strategy."""
    from pydantic import ValidationError

    from ..replay import replay_session
    from ..replay.facts import warning_lines
    from ..strategies import create
    from ..transcript.isolation import stream_groups, stream_sessions

    try:
        instance = create(strategy, _parse_sets(sets))
    except (ValueError, ValidationError) as exc:
        fail(str(exc), 2)
    if estimator == "claude-context":
        estimator = "claude-rough"  # claude-context = usage + claude-rough; accounting uses its rough part
    stream = _Stream(paths, fmt)
    failures: list[SessionFailure] = []
    keys = (
        "kind",
        "trigger",
        "step",
        "after_message_id",
        "tokens_before",
        "tokens_after",
        "violations",
        "violation_rules",
        "repaired",
        "fallbacks",
        "keep_start",
        "naive_start",
    )
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    writer = None
    if out is not None:  # pandas and pyarrow only for --out (importing them is ~0.6 s of every replay)
        from ..replay.frames import FrameWriter
        from ..replay.run_folder import run_in

        if out.exists() and not out.is_dir():
            fail(f"--out {out}: a file, not a folder (give the folder the run is written to)", 2)
        if run_in(out) and not force:
            fail(f"--out {out}: already holds a replay run; --force replaces it (or choose another folder)", 2)
        writer = FrameWriter(out)
    try:
        parallel = None
        if workers > 1:  # session groups by worker processes, results in the serial order
            from ..replay.parallel import ParallelReplay  # multiprocessing only when asked for

            parallel = ParallelReplay(
                paths, instance, workers=workers, estimator=estimator, fmt=fmt, process=process, report=stream.report
            )
            results = parallel.results(progress=None if as_json else f"replay {instance.name} ({workers} workers)")
        elif process:  # one group at a time, each as one process (a group without a main session: alone)
            from ..replay.parallel import replay_group_as_process

            results = (
                result
                for group_results in _values(
                    stream_groups(
                        lambda g: replay_group_as_process(g, instance, estimator=estimator),
                        stream.groups(),
                        failures,
                        progress=None if as_json else f"replay {instance.name} (processes)",
                    )
                )
                for result in group_results
            )
        else:
            results = _values(
                stream_sessions(  # one session group in memory at a time; rows to parquet parts
                    lambda s: replay_session(s, instance, estimator=estimator),
                    stream.sessions(),
                    failures,
                    progress=None if as_json else f"replay {instance.name}",
                )
            )
        for result in results:
            warnings.extend(warning_lines([result]))
            rows.append(
                {
                    "session_id": result.session_id,
                    "file": result.source,
                    "steps": len(result.steps),
                    "peak_context_tokens": result.peak_context_tokens,
                    "events": [{k: e.get(k) for k in keys} for e in result.events],
                }
            )
            if writer is not None:
                writer.add(result)
        if parallel is not None:
            stream.records, failures = parallel.records, parallel.failures
        stream.fail_if_nothing()
        if writer is not None:
            from ..replay.run_folder import manifest_data

            config = instance.config.model_dump(mode="json")
            writer.close(manifest_data(instance.name, config, paths, estimator=estimator, fmt=fmt))
    finally:
        if writer is not None:
            writer.discard()
    data = {
        "strategy": instance.name,
        "config": instance.config.model_dump(mode="json"),
        "sessions": rows,
        "failed": [f.as_dict() for f in failures],
        "warnings": warnings,
    }
    if out is not None and rows:
        data["out"] = str(out)
    lines = [
        f"{s['session_id'][:44]:<46}{s['steps']:>6} steps  peak {s['peak_context_tokens']:>8}  "
        + (", ".join(f"{e['kind']}@{e['step']}({e['tokens_before']}->{e['tokens_after']})" for e in s["events"]) or "-")
        for s in rows
    ]
    _emit(data, as_json, "\n".join(lines))
    if warnings and not as_json:
        echo(
            f"{len(warnings)} of {len(rows)} sessions rest on what a replay cannot fully model (`workbench check`):",
            err=True,
        )
        for line in warnings:
            echo(f"  {line}", err=True)
    _finish(failures, len(rows))


COMMANDS: tuple[Command, ...] = (
    Command("strategies", list_strategies, (JSON,)),
    Command(
        "replay",
        replay,
        (
            PATHS,
            arg(
                "-s",
                "--strategy",
                required=True,
                metavar="NAME",
                action=Once,
                why="one strategy per replay; replay each into its own --out folder under one parent and "
                "`workbench report` the parent, or compare several with `workbench sweep`",
                help="Strategy name (see `workbench strategies`); one per replay.",
            ),
            arg(
                "--set",
                dest="sets",
                action="append",
                metavar="KEY=VALUE",
                help="Config override key=value (dotted keys nest).",
            ),
            arg(
                "--estimator",
                default="claude-rough",
                metavar="NAME",
                help="Per-record estimator for post-compaction accounting.",
            ),
            arg(
                "--out",
                type=Path,
                metavar="DIR",
                help="Write steps.parquet, events.parquet and manifest.json here (all or nothing).",
            ),
            arg("--force", action="store_true", help="Replace the run --out already holds."),
            arg(
                "--process",
                action="store_true",
                help="Replay a main session and its sub-agents as one process: state the strategy shares between "
                "agents (Claude Code's module state) is shared, calls in timestamp order.",
            ),
            arg(
                "--workers",
                type=at_least_one,
                default=1,
                metavar="N",
                help="Replay session groups in N worker processes (same output, in the same order).",
            ),
            JSON,
            FORMAT,
        ),
    ),
)
