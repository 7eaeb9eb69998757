"""``workbench ARGS`` run in-process through `workbench.cli.main` (imported as ``cli_helpers``: tests/ is on
sys.path, as for ``record_builders``).

`run_cli` captures what a user would see: the exit code `main` ends with (it always raises `SystemExit`),
stdout, stderr, and both streams interleaved in the order they were written (``output``).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

from workbench.cli import main

__all__ = ["CliResult", "run_cli"]


@dataclass(frozen=True)
class CliResult:
    """One run: ``exit_code``, ``stdout``, ``stderr`` and ``output`` (both streams, in order)."""

    exit_code: int
    stdout: str
    stderr: str
    output: str


class _Tee(io.StringIO):
    """A captured stream that also appends what it is given to the shared, interleaved one."""

    def __init__(self, both: io.StringIO) -> None:
        super().__init__()
        self._both = both

    def write(self, text: str) -> int:
        self._both.write(text)
        return super().write(text)


def run_cli(*args: str | Path) -> CliResult:
    """``workbench ARGS`` in-process; never a traceback (asserted), whatever the exit code."""
    both = io.StringIO()
    out, err = _Tee(both), _Tee(both)
    code: int | str | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    assert "Traceback" not in both.getvalue(), both.getvalue()
    assert isinstance(code, int), f"main ended with {code!r}, not an exit code"
    return CliResult(code, out.getvalue(), err.getvalue(), both.getvalue())
