"""``workbench`` command line. Every command has ``--json`` for scripts; logic lives in the packages.

Exit codes (docs/usage.md): 0 when anything could be read and processed (bad lines, unreadable
files and failed sessions are reported, not fatal), 1 when nothing could (missing path, no transcript,
every session failed), 2 for bad arguments or configs (a usage error is one line naming the option),
130 when interrupted (143 on SIGTERM). Never a traceback (``WORKBENCH_DEBUG=1`` shows it).

The commands live by concern: `workbench.cli.corpus` (ingest, tokens, export, validate, invariants),
`workbench.cli.results` (strategies, replay), `workbench.cli.report` (recovery, report),
`workbench.cli.sweep` (sweep, tune, demo); the command table, shared argument types and helpers in
`workbench.cli.common`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import threading
import warnings
from typing import Any, NoReturn

from . import corpus, report, results, sweep
from .common import Command, echo
from .corpus import ingest_report

__all__ = ["COMMANDS", "build_parser", "command_parser", "ingest_report", "main", "parse"]

COMMANDS: tuple[Command, ...] = (
    *corpus.COMMANDS,
    *results.COMMANDS,
    *report.COMMANDS,
    *sweep.COMMANDS,
)


class _Parser(argparse.ArgumentParser):
    """argparse with click's habits: a usage error is one line naming the option (exit 2), no prefix
    abbreviations of long options (``--jso`` is an error, not ``--json``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written (paragraphs kept); an option's default shown when it is a value (not
    None, not a flag's False), as typer showed ``[default: …]``; names up to 30 columns wide share their
    help's line."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("max_help_position", 32)
        kwargs.setdefault("width", _help_width())
        super().__init__(prog, **kwargs)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        shown = default is not None and default is not False and default != argparse.SUPPRESS
        if action.option_strings and shown and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def _help_width() -> int:
    """The width argparse would take (`shutil.get_terminal_size`: ``COLUMNS``, else the terminal's, else
    80; less 2) without importing shutil, which argparse does for every formatter it makes, and so for
    every option it adds (shutil imports bz2, lzma and zlib: ~4 ms of every command's start here)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


def _add_arguments(parser: argparse.ArgumentParser, command: Command) -> argparse.ArgumentParser:
    for row in command.args:
        parser.add_argument(*row.flags, **row.options)
    return parser


def command_parser(command: Command) -> argparse.ArgumentParser:
    """The parser of one command (``workbench NAME``): all a run builds, not the other commands' ones."""
    return _add_arguments(_Parser(prog=f"workbench {command.name}", description=command.description), command)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The whole ``workbench`` parser and each command's (for the command list, ``--help`` and errors)."""
    parser = _Parser(prog="workbench", description=__doc__)
    sub = parser.add_subparsers(
        title="commands", metavar="COMMAND", dest="command", required=True, parser_class=_Parser
    )
    parsers = {}
    for command in COMMANDS:
        child = sub.add_parser(command.name, help=command.summary.replace("%", "%%"), description=command.description)
        parsers[command.name] = _add_arguments(child, command)
    return parser, parsers


def parse(argv: list[str]) -> tuple[Command, dict[str, Any]]:
    """The command ``argv`` names and its arguments as keywords for its function.

    Only that command's parser is built (all twelve cost ~6 ms, a twentieth of a warm ``ingest``).
    Options and positional arguments may come in any order (``ingest a --json b``), as with typer: the
    command's parser is argparse's intermixed one. No arguments prints the help and exits 2 (as typer
    did). ``--help`` exits 0; a usage error exits 2 with one line naming the option or argument.
    """
    by_name = {c.name: c for c in COMMANDS}
    if argv and argv[0] in by_name:
        command = by_name[argv[0]]
        return command, vars(command_parser(command).parse_intermixed_args(argv[1:]))
    parser, _ = build_parser()
    if not argv:
        parser.print_help()
        raise SystemExit(2)
    parser.parse_args(argv)  # --help (exit 0), or an unknown command or option (exit 2, naming it)
    parser.error("a command is needed")  # pragma: no cover (argparse exits above: COMMAND is required)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run ``workbench ARGV`` (default ``sys.argv[1:]``) and exit with its code.

    An unexpected error prints one line (set ``WORKBENCH_DEBUG=1`` for the traceback); Ctrl-C exits 130;
    a closed pipe (the reader of ``workbench … | head`` gone) exits 0 quietly.
    """
    # pydantic reads every installed distribution's entry points for plugins when the first model class is
    # built (~0.035 s of every command that validates a config, 10% of a one-session replay here). The
    # command line uses none; a value the user set (``""`` lets all of them load) is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args = sys.argv[1:] if argv is None else list(argv)
    previous = _stop_on_sigterm()
    shown: set[str] = set()

    def show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        text = f"warning: {message}"  # one line, once: no Python source location for a user to decode
        if text not in shown:
            shown.add(text)
            echo(text, err=True)

    warnings.showwarning = show_warning
    try:
        command, options = parse(args)
        command.run(**options)
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
        sys.exit(0)
    except OSError as exc:  # the machine said no (a full disk, a file where a folder goes, too many open files)
        with contextlib.suppress(OSError):  # stderr itself is gone: the exit code says it
            echo(f"error: {_os_error(exc)}", err=True)
        sys.exit(1)
    except Terminated:
        echo("terminated", err=True)
        sys.exit(143)
    except KeyboardInterrupt:
        echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        if isinstance(exc, ModuleNotFoundError):  # an optional dependency a feature needs
            from ..util.resources import missing_extra

            if (hint := missing_extra(exc)) is not None:
                echo(f"error: {hint}", err=True)
                sys.exit(2)
        echo(f"error: {type(exc).__name__}: {exc} (internal error; WORKBENCH_DEBUG=1 shows the traceback)", err=True)
        sys.exit(1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(0)


def _os_error(exc: OSError) -> str:
    """What went wrong and where: the path the system refused, or the output stream."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        where = os.fsdecode(exc.filename) if isinstance(exc.filename, bytes) else str(exc.filename)
        target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{where}{target}: {reason}"
    if exc.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
        return f"cannot write: {reason}"
    return reason


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is so its cleanup runs (worker pools stopped, partial files
    removed), as for Ctrl-C; the command line exits 143."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _stop_on_sigterm() -> Any:
    """Turn SIGTERM into `Terminated` in the main thread (the previous handler, to restore; None elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _terminate)
