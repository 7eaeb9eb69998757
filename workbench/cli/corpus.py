"""``workbench ingest``, ``tokens``, ``export``, ``validate``, ``invariants``, ``check``, ``reproduce``: the
commands over transcripts (rows of `COMMANDS`, the table `workbench.cli` builds its parser from).

Importing this module costs nothing beyond `workbench.cli.common`: each command imports what it needs
when it runs (``ingest`` the transcript package, ``tokens`` pandas, ``validate`` the API study).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import (
    FORMAT,
    JSON,
    PATHS,
    Command,
    _check_load_args,
    _emit,
    _fail_if_nothing,
    _finish,
    _load,
    _report_errors,
    _Stream,
    arg,
    at_least_one,
    fail,
)

if TYPE_CHECKING:
    from ..transcript import LoadReport, Session
    from ..transcript.isolation import SessionFailure
    from ..transcript.summary import FileSummary

__all__ = ["COMMANDS", "ingest_report"]


def ingest_report(sessions: list[Session], report: LoadReport) -> dict[str, Any]:
    """The ``workbench ingest`` summary (``lines == records + len(skipped)``) of loaded sessions."""
    from ..transcript.summary import file_summary

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


def ingest(paths: list[Path], workers: int = 1, as_json: bool = False, fmt: str | None = None) -> None:
    """Load transcripts and report every line: kept as a record or skipped with file, line and reason.

    Files are read one at a time (``--workers N``: by N processes, the report the same); an unchanged
    file's summary comes from the parsed-session cache (`workbench.transcript.session_cache`: nothing is
    parsed)."""
    from ..transcript import LoadReport
    from ..transcript.registry import file_summaries

    _check_load_args(fmt)
    report = LoadReport()
    summaries = file_summaries(paths, format=fmt, report=report, workers=workers)
    data = _ingest_data((summary for _, summary in summaries), report)
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
    _report_errors(report)
    if not data["records"]:
        fail("no transcript records could be read", 1)


def tokens(
    paths: list[Path], estimator: list[str] | None = None, as_json: bool = False, fmt: str | None = None
) -> None:
    """Calibrate the estimators against the context size recorded at every API call."""
    import pandas as pd

    from ..tokens.calibration import boundary_table, calibration_frame, calibration_summary
    from ..transcript.isolation import stream_sessions

    try:
        empty = calibration_frame([], estimator)  # checks the estimator names
    except ValueError as exc:
        fail(str(exc), 2)
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


def export(paths: list[Path], out: Path, force: bool = False, as_json: bool = False, fmt: str | None = None) -> None:
    """Write each session to its own JSONL file (unmodified Claude Code sessions are byte-identical).

    Nothing is written when --out is an input or inside one, or (without --force) when a target exists.
    """
    from ..transcript.export import ExportError, check_destination, plan_export, session_bytes, write_atomic
    from ..transcript.isolation import each_session

    sessions, report = _load(paths, fmt)
    _fail_if_nothing(sessions, report)
    sessions = [s for s in sessions if not s.is_inline]  # inline sub-agents: their lines are the main session's
    targets = plan_export(sessions, paths, out)
    try:
        check_destination(out, paths, targets, (s.source for s in sessions), force=force)
    except ExportError as exc:
        fail(str(exc), 2)
    target_of = {id(s): t for s, t in zip(sessions, targets, strict=True)}
    failures: list[SessionFailure] = []
    copied: dict[Path, str] = {}  # a source file written once for all the sessions it holds

    def write(session: Session) -> str:
        target = target_of[id(session)]
        if target not in copied:
            copied[target] = str(write_atomic(target, session_bytes(session), force=force))
        return copied[target]

    done = each_session(write, sessions, failures)
    written = list(dict.fromkeys(path for _, path in done))
    data = {"written": written, "sessions": len(done), "failed": [f.as_dict() for f in failures]}
    _emit(data, as_json, "\n".join(written))
    _finish(failures, len(done))


def validate(paths: list[Path], no_repair: bool = False, as_json: bool = False, fmt: str | None = None) -> None:
    """Validate the request Claude Code would have sent before every recorded API call."""
    from ..studies.naive_cut import ValidateStudy
    from ..transcript.isolation import fold_sessions

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


def invariants(paths: list[Path], as_json: bool = False, fmt: str | None = None) -> None:
    """The naive-cut study: violation rates of cuts at every index and at keep-window cut points."""
    from ..studies.naive_cut import InvariantsStudy
    from ..transcript.isolation import fold_sessions

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


def check(paths: list[Path], strategy: list[str] | None = None, as_json: bool = False, fmt: str | None = None) -> None:
    """What the workbench can and cannot model of a history: one row per session (format, Claude Code versions,
    models and prices, window, history the file does not hold, what the recording itself breaks, strategies
    that add rejected requests or loop, unknown record types) and a summary line."""
    from ..experiments.check import check_session, default_strategies, summary
    from ..strategies.registry import strategies
    from ..transcript.isolation import fold_sessions

    known = strategies()
    names = strategy or default_strategies()
    unknown = [n for n in names if n not in known]
    if unknown:
        fail(f"unknown strategy {', '.join(unknown)} (see `workbench strategies`)", 2)
    stream = _Stream(paths, fmt)
    failures: list[SessionFailure] = []
    rows = []
    used = fold_sessions(lambda s: rows.append(check_session(s, names)), stream.sessions(), failures, progress="check")
    stream.fail_if_nothing()
    totals = summary(rows)
    unsafe = sorted(n for n in names if known[n].unsafe)
    data = {"summary": {**totals, "unsafe": unsafe}, "sessions": [r.as_dict() for r in rows]}
    data["failed"] = [f.as_dict() for f in failures]
    human = [
        f"{totals['sessions']} sessions ({', '.join(f'{n} {k}' for k, n in totals['formats'].items())}), "
        f"{totals['fully_modelled']} fully modelled; {totals['resumed_sessions']} start with history the file "
        f"does not hold, {totals['window_1m_sessions']} 1M-window, {totals['unpriced_sessions']} unpriced"
        + (f" ({', '.join(totals['unpriced_models'])})" if totals["unpriced_models"] else "")
        + f", {totals['recording_violation_sessions']} break an API rule as recorded"
        + (
            f"; versions newer than the table: {', '.join(totals['unknown_versions'])}"
            if totals["unknown_versions"]
            else ""
        )
    ]
    for name, n in sorted(totals["sessions_with_added_violations"].items()):
        flag = " (unsafe)" if name in unsafe else ""
        human.append(f"  {name}{flag} adds rejected requests in {n} session{'s' if n != 1 else ''}")
    for name, n in sorted(totals["sessions_with_loops"].items()):
        plural = "s" if n != 1 else ""
        human.append(f"  {name} loops (more than 3 ineffective compactions in a row) in {n} session{plural}")
    for row in rows:
        if row.problems:
            human.append(f"{row.file or row.session_id}: {'; '.join(row.problems)}")
    _emit(data, as_json, "\n".join(human))
    _finish(failures, len(used))


def reproduce(paths: list[Path], as_json: bool = False, fmt: str | None = None) -> None:
    """Where Claude Code really compacted in these histories, and whether the version table reproduces it:
    one row per recorded compaction (version, model, table row and threshold, preTokens / postTokens, the
    call `full-compact --set summarizer=recorded` compacts before, and `claude-code`'s for the first
    automatic one), then the hit rate per version range. Then one row per recorded microcompact
    (``microcompact_boundary``): the version, whether its table row runs the legacy microcompact, the call
    ours fires before and ``tokensSaved`` ours against the recorded one."""
    from ..replay.reproduction import microcompact_reproduction, reproduction, summary_by_row
    from ..transcript.isolation import fold_sessions

    stream = _Stream(paths, fmt)
    failures: list[SessionFailure] = []
    rows: list[Any] = []
    micro: list[Any] = []

    def both(session: Session) -> None:
        rows.extend(reproduction(session))
        micro.extend(microcompact_reproduction(session))

    used = fold_sessions(both, stream.sessions(), failures, progress="reproduce")
    stream.fail_if_nothing()
    by_row = summary_by_row(rows)
    data = {
        "by_row": by_row,
        "compactions": [r.as_dict() for r in rows],
        "microcompactions": [m.as_dict() for m in micro],
        "failed": [f.as_dict() for f in failures],
    }
    human = [f"{len(rows)} recorded compactions in {len({r.recorded.file for r in rows})} files"]
    for row in rows:
        rec = row.recorded
        ours = "-" if row.full_compact_step is None else str(row.full_compact_step)
        first = "-" if row.claude_code_step is None else str(row.claude_code_step)
        pipeline = f", claude-code {first}" if row.first_auto else ""
        if row.post_tokens_error is not None:
            pipeline += f"; after: ours {row.full_compact_tokens_after:,} vs postTokens {rec.post_tokens:,}"
        human.append(
            f"  {rec.file or rec.session_id} call {rec.step} {rec.trigger} {rec.pre_tokens or '-'} "
            f"(v{rec.version}, {rec.model}, row {row.label_threshold}): full-compact {ours}{pipeline}"
            f"{'' if row.full_compact_hit else '  MISSED'}"
        )
    for label, counts in by_row.items():
        human.append(
            f"{label}: full-compact {counts['full_compact_hits']}/{counts['auto']} automatic, claude-code "
            f"{counts['claude_code_hits']}/{counts['first_auto']} first"
        )
    if micro:
        human.append(f"{len(micro)} recorded microcompacts")
    for m in micro:
        rec = m.recorded
        ours = "-" if m.step is None else str(m.step)
        saved = "-" if m.tokens_saved is None else f"{m.tokens_saved:,}"
        recorded = "-" if rec.tokens_saved is None else f"{rec.tokens_saved:,}"
        error = "" if m.tokens_saved_error is None else f" ({m.tokens_saved_error:+.1%})"
        human.append(
            f"  {rec.file or rec.session_id} call {rec.step} microcompact (v{rec.version}, row {m.row}, legacy "
            f"microcompact {'on' if m.runs else 'off'}): ours {ours}, tokensSaved ours {saved} vs recorded "
            f"{recorded}{error}{'' if m.hit else '  MISSED'}"
        )
    _emit(data, as_json, "\n".join(human))
    _finish(failures, len(used))


COMMANDS: tuple[Command, ...] = (
    Command(
        "ingest",
        ingest,
        (
            PATHS,
            arg(
                "--workers",
                type=at_least_one,
                default=1,
                metavar="N",
                help="Read the files in N worker processes (a new corpus; the same report, in the same order).",
            ),
            JSON,
            FORMAT,
        ),
    ),
    Command(
        "tokens",
        tokens,
        (
            PATHS,
            arg(
                "-e",
                "--estimator",
                action="append",
                metavar="NAME",
                help="Estimator name (repeatable); default: all.",
            ),
            JSON,
            FORMAT,
        ),
    ),
    Command(
        "export",
        export,
        (
            PATHS,
            arg("--out", type=Path, required=True, metavar="DIR", help="Output folder (not an input, nor inside one)."),
            arg("--force", action="store_true", help="Overwrite files that already exist in --out."),
            JSON,
            FORMAT,
        ),
    ),
    Command(
        "validate",
        validate,
        (
            PATHS,
            arg("--no-repair", action="store_true", help="Validate the normalized request without repair."),
            JSON,
            FORMAT,
        ),
    ),
    Command("invariants", invariants, (PATHS, JSON, FORMAT)),
    Command(
        "check",
        check,
        (
            PATHS,
            arg(
                "-s",
                "--strategy",
                action="append",
                metavar="NAME",
                help="Check only this strategy (repeatable; default: every registered strategy).",
            ),
            JSON,
            FORMAT,
        ),
    ),
    Command("reproduce", reproduce, (PATHS, JSON, FORMAT)),
)
