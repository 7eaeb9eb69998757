"""The installed ``workbench`` entry point: exit codes and no tracebacks (subprocess, as a user runs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from workbench.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def test_exit_codes_and_messages(tmp_path: Path, corpus: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (("report", str(empty)), 1, "no replay results"),
        (("replay",), 2, "the following arguments are required: -s/--strategy"),
        (("ingest",), 2, "the following arguments are required: PATH"),
        (("ingest", str(tmp_path / "nope")), 1, "path does not exist"),
        (
            ("replay", str(corpus / "claude-code" / "marot-spotter" / "short.jsonl"), "-s", "nope"),
            2,
            "unknown strategy",
        ),
        (("replay", str(corpus / "swe-agent"), "-s", "sm-compact", "--set", "min_tokens=-1"), 2, "min_tokens"),
        (("tokens", str(corpus / "swe-agent")), 0, "nothing to calibrate against"),
    ]
    for args, status, message in cases:
        run = _run(*args)
        assert run.returncode == status, (args, run.stdout, run.stderr)
        assert message in run.stdout + run.stderr, (args, run.stdout, run.stderr)
        assert "Traceback" not in run.stdout + run.stderr
