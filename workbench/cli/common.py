"""Shared pieces of the ``workbench`` commands: the declarative command table, argument types, output,
loading and error reporting.

The command line is the standard library's `argparse`, for start-up (docs/usage.md). Each module of this
package declares its commands as `Command` rows (name, function, arguments as `arg` rows);
`workbench.cli` builds one parser from them. A command's function receives the
parsed arguments as keywords and imports what it needs when it runs, so parsing ``ingest`` imports no
pandas, pydantic or replay engine. This module itself imports only the standard library at load time.

Exit codes (docs/usage.md): 0 when anything could be read and processed (bad lines, unreadable
files and failed sessions are reported, not fatal), 1 when nothing could (missing path, no transcript,
every session failed), 2 for bad arguments or configs, 130 when interrupted. Never a traceback. A command
ends early with `fail` (one ``error:`` line on stderr, then `SystemExit` with the code).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

if TYPE_CHECKING:
    from ..transcript import LoadReport, Session
    from ..transcript.isolation import SessionFailure

__all__ = [
    "FORMAT",
    "JSON",
    "PATHS",
    "PROBE_BUDGET",
    "Arg",
    "Command",
    "Once",
    "arg",
    "at_least_one",
    "echo",
    "fail",
]


# ------------------------------------------------------------------ the command table


class Arg:
    """One `argparse.ArgumentParser.add_argument` call: its names (or positional name) and keywords."""

    __slots__ = ("flags", "options")

    def __init__(self, flags: tuple[str, ...], options: Mapping[str, Any]) -> None:
        self.flags = flags
        self.options = options

    def __repr__(self) -> str:
        return f"Arg({self.flags!r}, {dict(self.options)!r})"


def arg(*flags: str, **options: Any) -> Arg:
    """An argument row: ``arg("--window", type=int, default=200_000, help=...)``, as `add_argument` takes it."""
    return Arg(flags, options)


class Command:
    """A ``workbench`` command: its name, the function that runs it (keyword per argument ``dest``) and
    its arguments. The help is the function's docstring (its first paragraph in the command list)."""

    __slots__ = ("args", "name", "run")

    def __init__(self, name: str, run: Callable[..., None], args: tuple[Arg, ...] = ()) -> None:
        self.name = name
        self.run = run
        self.args = args

    def __repr__(self) -> str:
        return f"Command({self.name!r})"

    @property
    def description(self) -> str:
        return _cleandoc(self.run.__doc__ or "")

    @property
    def summary(self) -> str:
        return " ".join(self.description.split("\n\n", 1)[0].split())


def _cleandoc(doc: str) -> str:
    """`inspect.cleandoc` (the first line stripped, the rest's common indentation and the blank lines
    around removed) without importing inspect (~0.011 s: ast, dis, tokenize), for the command's help; a
    test compares the two over every command."""
    lines = doc.expandtabs().split("\n")
    margins = [len(line) - len(line.lstrip()) for line in lines[1:] if line.lstrip()]
    lines[0] = lines[0].lstrip()
    if margins:
        lines[1:] = [line[min(margins) :] for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def at_least_one(text: str) -> int:
    """An int option's type with ``min=1``: ``--workers 0`` is a usage error (exit 2) naming the option."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


class Once(argparse.Action):
    """A single-valued option given twice is a usage error naming both values, not the last one silently
    (``workbench replay -s none -s sm-compact`` replayed ``sm-compact`` alone). ``why``: what to do instead."""

    def __init__(self, *args: Any, why: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.why = why

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        if getattr(namespace, self.dest, None) not in (None, self.default):
            earlier = getattr(namespace, self.dest)
            hint = f": {self.why}" if self.why else ""
            raise argparse.ArgumentError(self, f"given twice ({earlier!r}, then {values!r}){hint}")
        setattr(namespace, self.dest, values)


PATHS = arg("paths", nargs="+", type=Path, metavar="PATH", help="Transcript files or folders.")
JSON = arg("--json", dest="as_json", action="store_true", help="Print machine-readable JSON.")
FORMAT = arg("--format", dest="fmt", metavar="NAME", help="Force a loader instead of auto-detection.")
PROBE_BUDGET = arg(
    "--probe-budget-usd",
    type=float,
    metavar="USD",
    help="Hard budget of the probe run in USD: refuse above it, stop at it.",
)


# ------------------------------------------------------------------ output and errors


def echo(text: str, err: bool = False) -> None:
    """One message and a newline on stdout (or stderr), flushed so the two streams stay in order."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(f"{text}\n")
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk or device behind a redirection: name the stream, not "internal error"
        raise OSError(exc.errno, exc.strerror, "<stderr>" if err else "<stdout>") from None


def fail(message: str, code: int) -> NoReturn:
    """End the command: ``error: MESSAGE`` on stderr, exit ``code`` (1 nothing readable, 2 bad arguments)."""
    echo(f"error: {message}", err=True)
    raise SystemExit(code)


def _emit(data: dict[str, Any], as_json: bool, human: str) -> None:
    echo(json.dumps(data, indent=2, default=str) if as_json else human)


def _rows(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame as JSON records (NaN as null)."""
    return json.loads(frame.to_json(orient="records")) if len(frame) else []


# ------------------------------------------------------------------ loading (the transcript package on first use)


def _load(paths: list[Path], fmt: str | None) -> tuple[list[Session], LoadReport]:
    from ..transcript import LoadReport, TranscriptError, load_paths

    report = LoadReport()
    try:
        sessions = list(load_paths(paths, format=fmt, report=report))
    except (TranscriptError, ValueError) as exc:  # unknown --format, a bad WORKBENCH_MAX_LINE_BYTES
        fail(str(exc), 2)
    return sessions, report


def _finish(failures: list[SessionFailure], succeeded: int) -> None:
    """Report the sessions that failed (one line each); exit 1 when none succeeded."""
    for failure in failures:
        echo(f"error: {failure}", err=True)
    if failures and not succeeded:
        fail(f"all {len(failures)} session(s) failed", 1)


def _report_errors(report: LoadReport) -> None:
    for error in report.errors:
        echo(f"error: {error['file']}: {error['reason']}", err=True)


def _fail_if_nothing(sessions: list[Session], report: LoadReport) -> None:
    _report_errors(report)
    if not any(s.records for s in sessions):
        fail("no transcript records could be read", 1)


def _check_load_args(fmt: str | None) -> None:
    """Exit 2 for an unknown --format or a bad WORKBENCH_MAX_LINE_BYTES, before anything is read."""
    from ..transcript import TranscriptError
    from ..transcript.files import max_line_bytes
    from ..transcript.registry import get_loader

    try:
        if fmt:
            get_loader(fmt)
        max_line_bytes()
    except (TranscriptError, ValueError) as exc:
        fail(str(exc), 2)


class _Stream:
    """The inputs' sessions read lazily, one session group (a main session and its sub-agents) at a time
    (`workbench.transcript.groups.load_groups`), so a command holds one group in memory, not the corpus."""

    def __init__(self, paths: list[Path], fmt: str | None) -> None:
        from ..transcript import LoadReport

        _check_load_args(fmt)
        self.paths, self.fmt = paths, fmt
        self.report = LoadReport()
        self.records = 0

    def groups(self) -> Iterator[list[Session]]:
        from ..transcript.groups import load_groups

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
        _report_errors(self.report)
        if not self.records:
            fail("no transcript records could be read", 1)


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


if TYPE_CHECKING:
    _T = TypeVar("_T")


def _values(pairs: Iterator[tuple[Any, _T]]) -> Iterator[_T]:
    """The values of ``(session or group, value)`` pairs, each session let go of before the next is read
    (a generator expression over the pairs kept the last one alive while the next group loaded)."""
    for pair in pairs:
        value = pair[1]
        del pair
        yield value


def probe_announcer(budget_usd: float) -> Callable[[dict[str, Any]], None]:
    """The callback the online probes call with their cost estimate before sending anything: one line on
    stderr (``report --probes`` and ``sweep --report --probes``)."""

    def announce(estimate: dict[str, Any]) -> None:
        echo(
            f"probe estimate: ${estimate['estimate_usd']:,.4f} (upper bound) for {estimate['jobs']} compactions, "
            f"{estimate['requests']} requests to send, {estimate['cached']} cached; budget ${budget_usd:,.2f}",
            err=True,
        )

    return announce
