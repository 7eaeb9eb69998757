"""Shared pieces of the ``workbench`` commands: argument types, output, loading and error reporting.

Exit codes (README "Exit codes"): 0 when anything could be read and processed (bad lines, unreadable
files and failed sessions are reported, not fatal), 1 when nothing could (missing path, no transcript,
every session failed), 2 for bad arguments or configs, 130 when interrupted. Never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from .isolation import SessionFailure
from .transcript import LoadReport, Session, TranscriptError, load_paths
from .transcript.registry import get_loader, load_groups

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

    def groups(self) -> Iterator[list[Session]]:
        for group in load_groups(self.paths, format=self.fmt, report=self.report):
            self.records += sum(len(s.records) for s in group)
            yield group
            del group  # released before the next group is read (the consumer drops its own reference)

    def sessions(self) -> Iterator[Session]:
        for group in self.groups():
            yield from group
            del group

    def fail_if_nothing(self) -> None:
        """After the stream: the load errors (one line each); exit 1 when no record could be read."""
        for error in self.report.errors:
            typer.echo(f"error: {error['file']}: {error['reason']}", err=True)
        if not self.records:
            typer.echo("error: no transcript records could be read", err=True)
            raise typer.Exit(1)


def _parse_sets(items: list[str] | None) -> dict[str, Any]:
    """``key=value`` pairs (dotted keys nest, values parsed as YAML) into a config dict.

    Usage errors (exit 2), never a traceback: a value YAML cannot parse (``[``, an undefined alias
    ``*a``, a ``!!python/...`` tag, which ``safe_load`` refuses), and a key set both as a value and as a
    mapping (``trigger=5`` with ``trigger.pct_of_window=3``, in either order). A plain key set twice keeps
    the last value, as options do.
    """
    config: dict[str, Any] = {}
    if not items:
        return config  # no yaml import (~3% of a replay's start-up) when nothing is set
    import yaml

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
