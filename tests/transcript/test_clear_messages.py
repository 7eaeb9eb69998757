"""Ordinary mistakes and machine limits end in one line naming what and where, never "internal error":
a file where a folder goes, a full output device, a system limit, a cache folder that is a file, a tab in
a spec; warnings print once, without a Python source location."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli
from hostile import write_claude

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def _spec(tmp_path: Path) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f'name: t\ncorpus: ["{DATA}"]\nstrategies:\n  - name: none\n', encoding="utf-8")
    return spec


def test_a_file_where_a_folder_goes_is_a_usage_error(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args, expected in (
        (("--store", afile), f"--store {afile}: not a folder"),
        (
            ("--store", tmp_path / "s", "--report", afile / "r"),
            f"--report {afile / 'r'}: not a folder ({afile} is a file)",
        ),
    ):
        result = run_cli("sweep", _spec(tmp_path), "--executor", "inline", *args)
        assert result.exit_code == 2 and expected in result.stderr and "internal error" not in result.output


def test_a_tab_in_a_spec_is_one_line_with_its_place(tmp_path: Path) -> None:
    spec = tmp_path / "tab.yaml"
    spec.write_text("name: t\n\tcorpus: [data]\n", encoding="utf-8")
    result = run_cli("sweep", spec)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line == f"error: {spec}: not valid YAML: line 2, column 1: a tab character (YAML indents with spaces only)"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_output_device_names_the_stream() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "workbench.cli", "ingest", str(DATA)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    assert done.returncode == 1
    assert "error: <stdout>: No space left on device" in done.stderr and "internal error" not in done.stderr


def test_a_system_limit_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_claude(tmp_path / "c" / "s1.jsonl", "s1")
    from workbench.replay import frames

    def limited(self, result):
        raise OSError(errno.EMFILE, "Too many open files", str(tmp_path / "out" / "part"))

    monkeypatch.setattr(frames.FrameWriter, "add", limited)
    result = run_cli("replay", tmp_path / "c", "-s", "none", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert f"error: {tmp_path / 'out' / 'part'}: Too many open files" in result.stderr
    assert "internal error" not in result.output


def test_a_cache_folder_that_is_a_file_is_one_warning_not_a_transcript_error(tmp_path: Path) -> None:
    afile = tmp_path / "cache-file"
    afile.write_text("x")
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(afile), "WORKBENCH_SESSION_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "ingest", str(DATA)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"cache folder {afile} (WORKBENCH_CACHE_DIR): a file, not a folder" in warnings[0]
    assert "cannot read" not in done.stderr and ".py:" not in done.stderr


def test_replay_and_report_run_without_a_cache_folder_each_cache_saying_so(tmp_path: Path) -> None:
    """A cache folder that cannot be made turns each cache off with one warning naming it (the parsed
    sessions, the token counts, the report's per-session analyses); the commands give what they give with
    a working cache."""
    afile = tmp_path / "cache-file"
    afile.write_text("x")

    def run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache)}
        command = [sys.executable, "-m", "workbench.cli", *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)

    outputs = {}
    for name, cache in (("broken", afile), ("working", tmp_path / "cache")):
        runs = tmp_path / f"runs-{name}"
        replayed = run(cache, "replay", str(DATA), "--strategy", "sm-compact", "--out", str(runs))
        assert replayed.returncode == 0, replayed.stderr
        reported = run(cache, "report", str(runs), "--json")
        assert reported.returncode == 0, reported.stderr
        outputs[name] = json.loads(reported.stdout)
        stderr = (replayed.stderr + "\n" + reported.stderr).replace("\r", "\n")  # progress bars redraw with \r
        warned = [line[line.index("warning:") :] for line in stderr.splitlines() if "warning:" in line]
        if name == "working":
            assert not warned
            continue
        kinds = sorted(re.match(r"warning: (\w+ cache)", line).group(1) for line in warned)  # type: ignore[union-attr]
        # replay: the session and token caches; report: those and the analysis cache
        assert kinds == ["analysis cache", "session cache", "session cache", "token cache", "token cache"]
        assert all(f"cache folder {afile} (WORKBENCH_CACHE_DIR): a file, not a folder" in line for line in warned)
    for data in outputs.values():
        data.pop("results_dir")
        for run_ in data["runs"]:
            run_.pop("path")
    assert outputs["broken"] == outputs["working"]
