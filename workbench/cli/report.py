"""``workbench recovery`` and ``report``: the commands that score recorded sessions and replay results
(rows of `COMMANDS`, the table `workbench.cli` builds its parser from).

Importing this module costs nothing beyond `workbench.cli.common`: each command imports what it scores
with when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .common import (
    FORMAT,
    JSON,
    PATHS,
    PROBE_BUDGET,
    Command,
    _emit,
    _finish,
    _rows,
    _Stream,
    _values,
    arg,
    echo,
    fail,
    probe_announcer,
)

__all__ = ["COMMANDS"]


def recovery(
    paths: list[Path],
    estimator: str = "claude-rough",
    validate_scores: bool = False,
    as_json: bool = False,
    fmt: str | None = None,
) -> None:
    """What the agent re-acquired after every recorded compaction (re-reads, re-runs, repeated searches,
    fetches, sub-agent calls and questions) and the instructions the user repeated, one session group at a
    time (`workbench.reporting.recovery_groups`)."""
    from ..reporting.recovery_groups import RecoveryTally, score_group
    from ..tokens.estimators import estimator_names
    from ..transcript.isolation import stream_groups

    if estimator not in estimator_names():
        fail(f"unknown estimator {estimator!r} (known: {', '.join(estimator_names())})", 2)
    stream = _Stream(paths, fmt)
    tally = RecoveryTally()
    for part in _values(  # each group scored, then dropped before the next is read
        stream_groups(
            lambda g: score_group(g, estimator, validate_scores),
            stream.groups(),
            tally.failed,
            progress=None if as_json else "recovery",
        )
    ):
        tally.add(part)
    stream.fail_if_nothing()
    frame = tally.frame()
    failures = tally.failed
    data: dict[str, Any] = {
        "estimator": estimator,
        "sessions": tally.measured,
        "compactions": _rows(frame),
        "failed": [f.as_dict() for f in failures],
    }
    if frame.empty:
        human = "no recorded compaction (compact_boundary) on a main chain in these sessions"
    else:
        names = frame["file"].map(lambda f: Path(f).name)
        shown = frame.drop(columns=["reread_paths", "session_id"]).assign(file=names)
        human = f"{len(frame)} recorded compactions in {frame['file'].nunique()} files\n" + shown.to_string(index=False)
    succeeded = tally.measured
    if validate_scores and not frame.empty:
        from ..metrics.validation import file_predictors, measure_correlations, score_correlations

        failures = [*failures, *tally.table_failed, *tally.files_failed]
        table = tally.table(estimator)
        correlations = score_correlations(table)
        checks = measure_correlations(table)
        predictors = file_predictors(tally.files())
        data["validation"] = {
            "compactions": _rows(table.drop(columns=["reread_paths"])),
            "correlations": _rows(correlations),
            "measure_correlations": _rows(checks),
            "file_predictors": _rows(predictors),
        }
        human += (
            "\n\nscores vs measured recovery_tokens (Spearman, per compaction):\n"
            + correlations.to_string(index=False)
            + "\n\neach predicted measure vs what it predicts (Spearman, per compaction):\n"
            + checks.to_string(index=False)
            + "\n\nper file read before a compaction: re-read rate by predictor:\n"
            + predictors.to_string(index=False)
        )
        data["failed"] = [f.as_dict() for f in failures]
        succeeded = tally.validated
    _emit(data, as_json, human)
    _finish(failures, succeeded)


def report_command(
    results_dir: Path,
    as_json: bool = False,
    window: int = 200_000,
    blocking_limit: int = 177_000,
    baseline: str | None = None,
    probes: bool = False,
    probe_budget_usd: float | None = None,
    probe_model: str = "claude-sonnet-4-6",
    probe_judge_model: str | None = None,
    probe_kinds: list[str] | None = None,
    probes_per_kind: int = 1,
    references: bool = False,
) -> None:
    """Summarise replay results: savings, violations, expected recovery and cost per session and strategy
    (references kept with ``--references``), with 95% bootstrap intervals over sessions and paired
    differences against a baseline."""
    from ..reporting.report import render_report, report

    if not results_dir.is_dir():
        fail(f"{results_dir}: not a folder", 1)
    options = None
    if probes:
        if probe_budget_usd is None or probe_budget_usd < 0:
            fail("--probes needs --probe-budget-usd (a hard budget in USD, >= 0)", 2)
        from ..probes.text import PROBE_KINDS

        kinds = tuple(probe_kinds or PROBE_KINDS)
        if unknown := [k for k in kinds if k not in PROBE_KINDS]:
            fail(f"unknown probe kind(s) {unknown}; known: {', '.join(PROBE_KINDS)}", 2)

        options = {
            "budget_usd": probe_budget_usd,
            "model": probe_model,
            "judge_model": probe_judge_model,
            "kinds": kinds,
            "n_per_kind": probes_per_kind,
            "on_estimate": probe_announcer(probe_budget_usd),
            "progress": not as_json,
        }
    refusals: tuple[type[Exception], ...] = ()
    if probes:
        from ..online.client import MissingAPIKeyError
        from ..probes.run import ProbeBudgetError

        refusals = (ProbeBudgetError, MissingAPIKeyError)
    try:
        data = report(
            results_dir,
            window=window,
            blocking_limit=blocking_limit,
            baseline=baseline,
            probes=options,
            references=references,
        )
    except refusals as exc:
        fail(str(exc), 2)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc), 1)
    _emit(data, as_json, render_report(data))
    for failed in data.get("failed_runs", []):
        echo(f"error: {failed['path']}: {failed['reason']} (run folder left out)", err=True)


COMMANDS: tuple[Command, ...] = (
    Command(
        "recovery",
        recovery,
        (
            PATHS,
            arg("--estimator", default="claude-rough", metavar="NAME", help="Estimator for the re-read tokens."),
            arg(
                "--validate",
                dest="validate_scores",
                action="store_true",
                help="Also score the fidelity metrics against what was re-acquired.",
            ),
            JSON,
            FORMAT,
        ),
    ),
    Command(
        "report",
        report_command,
        (
            arg(
                "results_dir", type=Path, metavar="DIR", help="A `workbench replay --out` folder, or a folder of them."
            ),
            JSON,
            arg("--window", type=int, default=200_000, metavar="TOKENS", help="Context window for overflow counts."),
            arg(
                "--blocking-limit",
                type=int,
                default=177_000,
                metavar="TOKENS",
                help="Blocking limit for overflow counts.",
            ),
            arg(
                "--baseline",
                metavar="STRATEGY",
                help="Strategy the paired differences are taken against (default: recorded, none).",
            ),
            arg(
                "--references",
                action="store_true",
                help="Also score references kept (needed_recall, and Claude's recorded summaries); slower: "
                "every record's text is read for facts.",
            ),
            arg(
                "--probes",
                action="store_true",
                help="Run the online judge probes on every compaction (needs a budget).",
            ),
            PROBE_BUDGET,
            arg(
                "--probe-model",
                default="claude-sonnet-4-6",
                metavar="MODEL",
                help="Model that writes and answers the probes.",
            ),
            arg("--probe-judge-model", metavar="MODEL", help="Judge model (default: --probe-model)."),
            arg(
                "--probe-kind",
                dest="probe_kinds",
                action="append",
                metavar="KIND",
                help="Probe kind (repeatable; default: all four).",
            ),
            arg("--probes-per-kind", type=int, default=1, metavar="N", help="Probes of each kind per compaction."),
        ),
    ),
)
