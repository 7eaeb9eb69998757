"""``workbench`` command line. Every command has ``--json`` for scripts; logic lives in the packages.

Exit codes (README "Exit codes"): 0 when anything could be read and processed (bad lines, unreadable
files and failed sessions are reported, not fatal), 1 when nothing could (missing path, no transcript,
every session failed), 2 for bad arguments or configs, 130 when interrupted. Never a traceback.

The commands live by concern: `workbench.cli_corpus` (ingest, tokens, export, validate, invariants),
`workbench.cli_results` (strategies, replay, recovery, report), `workbench.cli_sweep` (sweep, tune, demo);
shared argument types and helpers in `workbench.cli_common`.
"""

from __future__ import annotations

import sys

import typer

from . import cli_corpus, cli_results, cli_sweep
from .cli_corpus import ingest_report

__all__ = ["app", "ingest_report", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
cli_corpus.register(app)
cli_results.register(app)
cli_sweep.register(app)


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
