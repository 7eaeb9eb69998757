"""A file name that is not valid UTF-8 (``bad-\\xff\\xfe.jsonl``): every command finishes the folder and names
the file as ``\\xNN`` text (the file system gives Python lone surrogates, which parquet and UTF-8 reject)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli
from hostile import write_claude

from workbench.transcript.files import printable_path

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse such names")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    write_claude(corpus / "good.jsonl", "s1")
    bad = os.path.join(os.fsencode(corpus), b"bad-\xff\xfe.jsonl")
    write_claude(Path(os.fsdecode(bad)), "s2")
    return corpus


def test_printable_path() -> None:
    assert printable_path("plain/é.jsonl") == "plain/é.jsonl" and printable_path(None) is None
    assert printable_path(os.fsdecode(b"bad-\xff\xfe.jsonl")) == "bad-\\xff\\xfe.jsonl"


def test_every_command_finishes_the_folder(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    replay = run_cli("replay", folder, "-s", "sm-compact", "--out", out, "--json")
    assert replay.exit_code == 0, replay.output
    assert sorted(Path(s["file"]).name for s in json.loads(replay.stdout)["sessions"]) == [
        "bad-\udcff\udcfe.jsonl",
        "good.jsonl",
    ]
    report = run_cli("report", out, "--json")
    assert report.exit_code == 0, report.output
    assert sorted(r["session_id"] for r in json.loads(report.stdout)["sessions"]) == ["s1", "s2"]
    assert run_cli("recovery", folder, "--json").exit_code == 0
    spec = tmp_path / "spec.yaml"
    spec.write_text(f'name: nu\ncorpus: ["{folder}"]\nmetrics: [savings]\nstrategies:\n  - name: sm-compact\n')
    sweep = run_cli("sweep", spec, "--store", tmp_path / "store", "--executor", "inline", "--json")
    assert sweep.exit_code == 0, sweep.output
    data = json.loads(sweep.stdout)
    assert data["cells_total"] == data["cells_computed"] == 2 and data["cells_failed"] == 0
