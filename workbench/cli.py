"""``workbench`` command line. Every command has ``--json`` for scripts; logic lives in the packages.

Exit codes (README "Exit codes"): 0 when anything could be read and processed (bad lines, unreadable
files and failed sessions are reported, not fatal), 1 when nothing could (missing path, no transcript,
every session failed), 2 for bad arguments or configs, 130 when interrupted. Never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from .isolation import SessionFailure, each_session, fold_sessions, stream_sessions
from .transcript import LoadReport, Session, TranscriptError, load_paths
from .transcript.export import ExportError, check_destination, plan_export, session_bytes, write_atomic
from .transcript.registry import file_summaries, get_loader, load_groups
from .transcript.session_cache import FileSummary, file_summary

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

PathsArg = Annotated[list[Path], typer.Argument(help="Transcript files or folders.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
FormatOpt = Annotated[str | None, typer.Option("--format", help="Force a loader instead of auto-detection.")]


def _emit(data: dict[str, Any], as_json: bool, human: str) -> None:
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
    else:
        typer.echo(human)


def _rows(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame as JSON records (NaN as null)."""
    return json.loads(frame.to_json(orient="records")) if len(frame) else []


def _load(paths: list[Path], fmt: str | None) -> tuple[list[Session], LoadReport]:
    report = LoadReport()
    try:
        sessions = list(load_paths(paths, format=fmt, report=report))
    except (TranscriptError, ValueError) as exc:  # unknown --format, a bad WORKBENCH_MAX_LINE_BYTES
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    return sessions, report


def _finish(failures: list[SessionFailure], succeeded: int) -> None:
    """Report the sessions that failed (one line each); exit 1 when none succeeded."""
    for failure in failures:
        typer.echo(f"error: {failure}", err=True)
    if failures and not succeeded:
        typer.echo(f"error: all {len(failures)} session(s) failed", err=True)
        raise typer.Exit(1)


def _fail_if_nothing(sessions: list[Session], report: LoadReport) -> None:
    for error in report.errors:
        typer.echo(f"error: {error['file']}: {error['reason']}", err=True)
    if not any(s.records for s in sessions):
        typer.echo("error: no transcript records could be read", err=True)
        raise typer.Exit(1)


def _check_load_args(fmt: str | None) -> None:
    """Exit 2 for an unknown --format or a bad WORKBENCH_MAX_LINE_BYTES, before anything is read."""
    from .transcript.files import max_line_bytes

    try:
        if fmt:
            get_loader(fmt)
        max_line_bytes()
    except (TranscriptError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


class _Stream:
    """The inputs' sessions read lazily, one session group (a main session and its sub-agents) at a time
    (`workbench.transcript.load_groups`), so a command holds one group in memory, not the corpus."""

    def __init__(self, paths: list[Path], fmt: str | None) -> None:
        _check_load_args(fmt)
        self.paths, self.fmt = paths, fmt
        self.report = LoadReport()
        self.records = 0

    def sessions(self) -> Iterator[Session]:
        for group in load_groups(self.paths, format=self.fmt, report=self.report):
            self.records += sum(len(s.records) for s in group)
            yield from group

    def fail_if_nothing(self) -> None:
        """After the stream: the load errors (one line each); exit 1 when no record could be read."""
        for error in self.report.errors:
            typer.echo(f"error: {error['file']}: {error['reason']}", err=True)
        if not self.records:
            typer.echo("error: no transcript records could be read", err=True)
            raise typer.Exit(1)


def ingest_report(sessions: list[Session], report: LoadReport) -> dict[str, Any]:
    """The ``workbench ingest`` summary (``lines == records + len(skipped)``) of loaded sessions."""
    return _ingest_data([file_summary(sessions)], report)


def _ingest_data(summaries: Iterable[FileSummary], report: LoadReport) -> dict[str, Any]:
    """The ``workbench ingest`` summary from per-file summaries (merged as they come: one at a time)."""
    by_kind: Counter[str] = Counter()
    by_format: Counter[str] = Counter()
    skipped: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    different: list[str] = []
    lines = records = sessions = subagents = checked = 0
    for summary in summaries:
        lines += summary.lines
        records += summary.records
        sessions += len(summary.sessions)
        subagents += sum(info.is_subagent for info in summary.sessions)
        skipped += summary.skipped
        by_kind += summary.by_kind
        by_format += summary.by_format
        warnings += summary.warnings
        checked += summary.round_trip_checked
        different += summary.round_trip_different
    return {
        "files": len(report.files),
        "lines": lines,  # inline sub-agents: lines their main owns
        "records": records,
        "sessions": sessions,
        "subagent_sessions": subagents,
        "skipped": skipped,
        "by_kind": dict(sorted(by_kind.items())),
        "by_format": dict(by_format),
        "warnings": warnings,
        "ignored": report.ignored,
        "errors": report.errors,
        "round_trip": {"checked": checked, "identical": checked - len(different), "different": different},
    }


@app.command()
def ingest(paths: PathsArg, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """Load transcripts and report every line: kept as a record or skipped with file, line and reason.

    Files are read one at a time; an unchanged file's summary comes from the parsed-session cache
    (`workbench.transcript.session_cache`: nothing is parsed)."""
    _check_load_args(fmt)
    report = LoadReport()
    data = _ingest_data((summary for _, summary in file_summaries(paths, format=fmt, report=report)), report)
    lines = [
        f"{data['files']} files, {data['sessions']} sessions ({data['subagent_sessions']} sub-agent), "
        f"{data['lines']} lines -> {data['records']} records, {len(data['skipped'])} skipped",
        "by kind: " + ", ".join(f"{k}={v}" for k, v in data["by_kind"].items()),
        f"round trip: {data['round_trip']['identical']}/{data['round_trip']['checked']} files byte-identical",
    ]
    lines += [f"skipped {s['file']}:{s['line']}: {s['reason']}" for s in data["skipped"]]
    lines += [f"warning {w['file']}:{w['line']}: {w['reason']}" for w in data["warnings"]]
    lines += [f"ignored {i['file']}: {i['reason']}" for i in data["ignored"]]
    _emit(data, as_json, "\n".join(lines))
    for error in report.errors:
        typer.echo(f"error: {error['file']}: {error['reason']}", err=True)
    if not data["records"]:
        typer.echo("error: no transcript records could be read", err=True)
        raise typer.Exit(1)


@app.command()
def tokens(
    paths: PathsArg,
    estimator: Annotated[
        list[str] | None, typer.Option("--estimator", "-e", help="Estimator name (repeatable); default: all.")
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Calibrate the estimators against the context size recorded at every API call."""
    import pandas as pd

    from .tokens.calibration import boundary_table, calibration_frame, calibration_summary

    try:
        empty = calibration_frame([], estimator)  # checks the estimator names
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    stream = _Stream(paths, fmt)
    failures: list[SessionFailure] = []
    frames, tables, done = [], [], 0
    for _, (part, table) in stream_sessions(
        lambda s: (calibration_frame([s], estimator), boundary_table([s])), stream.sessions(), failures
    ):
        done += 1
        frames += [part] if len(part) else []
        tables += [table] if len(table) else []
    stream.fail_if_nothing()
    frame = pd.concat(frames, ignore_index=True) if frames else empty
    boundaries = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    summary = calibration_summary(frame)
    data = {
        "note": None
        if len(frame)
        else "no API call with recorded usage in these sessions: nothing to calibrate against",
        "sessions": done,
        "estimators": summary.to_dict(orient="records"),
        "boundaries": boundaries.to_dict(orient="records"),
        "failed": [f.as_dict() for f in failures],
    }
    human = summary.to_string(index=False) if len(frame) else str(data["note"])
    if not boundaries.empty:
        human += "\n\nrecorded compact boundaries (preTokens vs estimate just before):\n" + boundaries.to_string(
            index=False
        )
    _emit(data, as_json, human)
    _finish(failures, done)


@app.command()
def export(
    paths: PathsArg,
    out: Annotated[Path, typer.Option("--out", help="Output folder (not an input, nor inside one).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that already exist in --out.")] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Write each session to its own JSONL file (unmodified Claude Code sessions are byte-identical).

    Nothing is written when --out is an input or inside one, or (without --force) when a target exists.
    """
    sessions, report = _load(paths, fmt)
    _fail_if_nothing(sessions, report)
    sessions = [s for s in sessions if not s.is_inline]  # inline sub-agents: their lines are the main session's
    targets = plan_export(sessions, paths, out)
    try:
        check_destination(out, paths, targets, (s.source for s in sessions), force=force)
    except ExportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    target_of = {id(s): t for s, t in zip(sessions, targets, strict=True)}
    failures: list[SessionFailure] = []
    done = each_session(
        lambda s: str(write_atomic(target_of[id(s)], session_bytes(s), force=force)), sessions, failures
    )
    written = [path for _, path in done]
    data = {"written": written, "sessions": len(written), "failed": [f.as_dict() for f in failures]}
    _emit(data, as_json, "\n".join(written))
    _finish(failures, len(done))


@app.command()
def validate(
    paths: PathsArg,
    no_repair: Annotated[
        bool, typer.Option("--no-repair", help="Validate the normalized request without repair.")
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Validate the request Claude Code would have sent before every recorded API call."""
    from .api.study import ValidateStudy

    stream = _Stream(paths, fmt)
    failures: list[SessionFailure] = []
    study = ValidateStudy(repair=not no_repair)
    used = fold_sessions(study.add, stream.sessions(), failures)
    stream.fail_if_nothing()
    data = study.report()
    data["failed"] = [f.as_dict() for f in failures]
    human = (
        f"{data['sessions']} sessions, {data['steps']} steps, "
        f"{len(data['violations'])} violations, {data['repaired']} repaired"
    )
    human += "".join(
        f"\n{v['session_id']} step {v['step']}: {v['rule']} at {v['location']}: {v['message']}"
        for v in data["violations"]
    )
    _emit(data, as_json, human)
    _finish(failures, len(used))


@app.command()
def invariants(paths: PathsArg, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """The naive-cut study: violation rates of cuts at every index and at keep-window cut points."""
    from .api.study import InvariantsStudy

    stream = _Stream(paths, fmt)
    failures: list[SessionFailure] = []
    study = InvariantsStudy()
    used = fold_sessions(study.add, stream.sessions(), failures)
    stream.fail_if_nothing()
    data = study.report()
    data["failed"] = [f.as_dict() for f in failures]
    lines = []
    for family in ("all_indices", "keep_window"):
        for variant, row in data[family].items():
            if isinstance(row, dict) and "rate" in row:
                lines.append(
                    f"{family:<12} {variant:<18} cuts={row['cuts']:<6} "
                    f"violating={row['violating']:<6} rate={row['rate']:.4f}"
                )
    _emit(data, as_json, "\n".join(lines))
    _finish(failures, len(used))


def _parse_sets(items: list[str] | None) -> dict[str, Any]:
    """``key=value`` pairs (dotted keys nest, values parsed as YAML) into a config dict.

    Usage errors (exit 2), never a traceback: a value YAML cannot parse (``[``, an undefined alias
    ``*a``, a ``!!python/...`` tag, which ``safe_load`` refuses), and a key set both as a value and as a
    mapping (``trigger=5`` with ``trigger.pct_of_window=3``, in either order). A plain key set twice keeps
    the last value, as options do.
    """
    import yaml

    config: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        parts = key.split(".")
        if not sep or not all(parts):
            raise ValueError(f"--set expects key=value with a non-empty (dotted) key, got {item!r}")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            reason = " ".join(str(exc).split())
            raise ValueError(f"--set {item!r}: the value is not valid YAML ({reason[:200]})") from None
        node = config
        for depth, part in enumerate(parts[:-1], start=1):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[:depth])
                raise ValueError(f"--set {item!r}: {where} is already set to {child!r}, not a mapping")
            node = child
        leaf = parts[-1]
        if isinstance(node.get(leaf), dict) and not isinstance(parsed, dict):
            raise ValueError(
                f"--set {item!r}: {key} already has keys set ({', '.join(sorted(node[leaf]))}), not a single value"
            )
        if isinstance(node.get(leaf), dict) and isinstance(parsed, dict):
            parsed = {**node[leaf], **parsed}
        node[leaf] = parsed
    return config


@app.command("strategies")
def list_strategies(as_json: JsonOpt = False) -> None:
    """List the registered strategies (built in and from `workbench.strategies` entry points) with their
    config schema and defaults; entry points that fail to load are listed under errors."""
    from .strategies.registry import broken_strategies, strategy_origin
    from .strategies.registry import strategies as registry

    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "description": cls.description,
            "unsafe": cls.unsafe,
            "origin": strategy_origin(name),
            "defaults": cls.Config().model_dump(mode="json"),
            "schema": cls.Config.model_json_schema(),
        }
        for name, cls in sorted(registry().items())
    ]
    errors = [b.as_dict() for b in broken_strategies()]
    human = "\n".join(
        f"{r['name']:<24}{' (unsafe)' if r['unsafe'] else '':<10}{r['description']}"
        + ("" if r["origin"] == "builtin" else f" [{r['origin']}]")
        for r in rows
    )
    human += "".join(f"\nerror: strategy {e['name']} ({e['entry_point']}): {e['error']}" for e in errors)
    _emit({"strategies": rows, "errors": errors}, as_json, human)


@app.command()
def replay(
    paths: PathsArg,
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Strategy name (see `workbench strategies`).")],
    sets: Annotated[
        list[str] | None, typer.Option("--set", help="Config override key=value (dotted keys nest).")
    ] = None,
    estimator: Annotated[
        str, typer.Option(help="Per-record estimator for post-compaction accounting.")
    ] = "claude-rough",
    out: Annotated[Path | None, typer.Option("--out", help="Write steps.parquet and events.parquet here.")] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Replay sessions call by call through a compaction strategy."""
    from pydantic import ValidationError

    from .replay import replay_session
    from .replay.frames import FrameWriter
    from .strategies import create

    try:
        instance = create(strategy, _parse_sets(sets))
    except (ValueError, ValidationError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
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
    writer = FrameWriter(out) if out is not None else None
    try:
        for _, result in stream_sessions(  # one session group in memory at a time; rows go to parquet parts
            lambda s: replay_session(s, instance, estimator=estimator),
            stream.sessions(),
            failures,
            progress=None if as_json else f"replay {instance.name}",
        ):
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
        stream.fail_if_nothing()
        if writer is not None:
            writer.close()
    finally:
        if writer is not None:
            writer.discard()
    data = {
        "strategy": instance.name,
        "config": instance.config.model_dump(mode="json"),
        "sessions": rows,
        "failed": [f.as_dict() for f in failures],
    }
    if out is not None and rows:
        from .report import write_manifest

        write_manifest(out, instance.name, instance.config.model_dump(mode="json"), paths, estimator=estimator, fmt=fmt)
        data["out"] = str(out)
    lines = [
        f"{s['session_id'][:44]:<46}{s['steps']:>6} steps  peak {s['peak_context_tokens']:>8}  "
        + (", ".join(f"{e['kind']}@{e['step']}({e['tokens_before']}->{e['tokens_after']})" for e in s["events"]) or "-")
        for s in data["sessions"]
    ]
    _emit(data, as_json, "\n".join(lines))
    _finish(failures, len(rows))


@app.command()
def recovery(
    paths: PathsArg,
    estimator: Annotated[str, typer.Option(help="Estimator for the re-read tokens.")] = "claude-rough",
    validate_scores: Annotated[
        bool, typer.Option("--validate", help="Also score the fidelity metrics against what was re-acquired.")
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """What the agent re-acquired after every recorded compaction (re-reads, re-runs, repeated questions)."""
    from .metrics.recovery import recovery as measure
    from .tokens.estimators import estimator_names

    if estimator not in estimator_names():
        typer.echo(f"error: unknown estimator {estimator!r} (known: {', '.join(estimator_names())})", err=True)
        raise typer.Exit(2)
    sessions, report = _load(paths, fmt)
    _fail_if_nothing(sessions, report)
    frame = measure(sessions, estimator=estimator)
    data = {"estimator": estimator, "sessions": len(sessions), "compactions": _rows(frame)}
    if frame.empty:
        human = "no recorded compaction (compact_boundary) on a main chain in these sessions"
    else:
        names = frame["file"].map(lambda f: Path(f).name)
        shown = frame.drop(columns=["reread_paths", "session_id"]).assign(file=names)
        human = f"{len(frame)} recorded compactions in {frame['file'].nunique()} files\n" + shown.to_string(index=False)
    if validate_scores and not frame.empty:
        from .metrics.validation import compaction_table, file_predictors, file_table, score_correlations

        table = compaction_table(sessions, estimator=estimator)
        correlations = score_correlations(table)
        predictors = file_predictors(file_table(sessions))
        data["validation"] = {
            "compactions": _rows(table.drop(columns=["reread_paths"])),
            "correlations": _rows(correlations),
            "file_predictors": _rows(predictors),
        }
        human += (
            "\n\nscores vs measured recovery_tokens (Spearman, per compaction):\n"
            + correlations.to_string(index=False)
            + "\n\nper file read before a compaction: re-read rate by predictor:\n"
            + predictors.to_string(index=False)
        )
    _emit(data, as_json, human)


@app.command("report")
def report_command(
    results_dir: Annotated[Path, typer.Argument(help="A `workbench replay --out` folder, or a folder of them.")],
    as_json: JsonOpt = False,
    window: Annotated[int, typer.Option(help="Context window for overflow counts.")] = 200_000,
    blocking_limit: Annotated[int, typer.Option(help="Blocking limit for overflow counts.")] = 177_000,
    baseline: Annotated[
        str | None, typer.Option(help="Strategy the paired differences are taken against (default: recorded, none).")
    ] = None,
    probes: Annotated[
        bool, typer.Option("--probes", help="Run the online judge probes on every compaction (needs a budget).")
    ] = False,
    probe_budget_usd: Annotated[
        float | None, typer.Option(help="Hard budget of the probe run in USD: refuse above it, stop at it.")
    ] = None,
    probe_model: Annotated[str, typer.Option(help="Model that writes and answers the probes.")] = "claude-sonnet-4-6",
    probe_judge_model: Annotated[str | None, typer.Option(help="Judge model (default: --probe-model).")] = None,
    probe_kinds: Annotated[
        list[str] | None, typer.Option("--probe-kind", help="Probe kind (repeatable; default: all four).")
    ] = None,
    probes_per_kind: Annotated[int, typer.Option(help="Probes of each kind per compaction.")] = 1,
) -> None:
    """Summarise replay results: savings, violations, recall, recovery and cost per session and strategy,
    with 95% bootstrap intervals over sessions and paired differences against a baseline."""
    from .report import render_report, report

    if not results_dir.is_dir():
        typer.echo(f"error: {results_dir}: not a folder", err=True)
        raise typer.Exit(1)
    options = None
    if probes:
        if probe_budget_usd is None or probe_budget_usd < 0:
            typer.echo("error: --probes needs --probe-budget-usd (a hard budget in USD, >= 0)", err=True)
            raise typer.Exit(2)
        from .online.probe_text import PROBE_KINDS

        kinds = tuple(probe_kinds or PROBE_KINDS)
        if unknown := [k for k in kinds if k not in PROBE_KINDS]:
            typer.echo(f"error: unknown probe kind(s) {unknown}; known: {', '.join(PROBE_KINDS)}", err=True)
            raise typer.Exit(2)

        def announce(estimate: dict[str, Any]) -> None:
            typer.echo(
                f"probe estimate: ${estimate['estimate_usd']:,.4f} (upper bound) for {estimate['jobs']} compactions, "
                f"{estimate['requests']} requests to send, {estimate['cached']} cached; "
                f"budget ${probe_budget_usd:,.2f}",
                err=True,
            )

        options = {
            "budget_usd": probe_budget_usd,
            "model": probe_model,
            "judge_model": probe_judge_model,
            "kinds": kinds,
            "n_per_kind": probes_per_kind,
            "on_estimate": announce,
            "progress": not as_json,
        }
    refusals: tuple[type[Exception], ...] = ()
    if probes:
        from .online.client import MissingAPIKeyError
        from .online.probe_run import ProbeBudgetError

        refusals = (ProbeBudgetError, MissingAPIKeyError)
    try:
        data = report(results_dir, window=window, blocking_limit=blocking_limit, baseline=baseline, probes=options)
    except refusals as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except (FileNotFoundError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    _emit(data, as_json, render_report(data))
    for failed in data.get("failed_runs", []):
        typer.echo(f"error: {failed['path']}: {failed['reason']} (run folder left out)", err=True)


from .cli_sweep import register as register_sweep  # noqa: E402  (sweep/demo commands live beside)

register_sweep(app)


def main() -> None:
    """Entry point. An unexpected error prints one line (set ``WORKBENCH_DEBUG=1`` for the traceback)."""
    import os

    try:
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except BrokenPipeError:
        sys.exit(0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # click usage errors: bad options, arguments
            exc.show()
            sys.exit(exc.exit_code)
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        typer.echo(
            f"error: {type(exc).__name__}: {exc} (internal error; WORKBENCH_DEBUG=1 shows the traceback)", err=True
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
