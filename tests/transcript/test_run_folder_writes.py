"""``replay --out`` over a folder that already holds a run: refused without ``--force``; with it, all or
nothing (a full disk or a kill never leaves parquet files of one run beside the manifest of another), and a
folder that mixes two runs is left out of ``report`` with the reason instead of mislabelled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_helpers import run_cli
from hostile import write_claude

from workbench.reporting.runs import load_results


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_claude(folder / "s1.jsonl", "s1")
    write_claude(folder / "s2.jsonl", "s2")
    return folder


def test_an_existing_run_is_kept_unless_force(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "run"
    assert run_cli("replay", corpus, "-s", "none", "--out", out).exit_code == 0
    before = _files(out)
    assert set(before) == {"steps.parquet", "events.parquet", "manifest.json"}
    again = run_cli("replay", corpus, "-s", "sm-compact", "--out", out)
    assert again.exit_code == 2 and "already holds a replay run; --force replaces it" in again.stderr
    assert _files(out) == before
    forced = run_cli("replay", corpus, "-s", "sm-compact", "--out", out, "--force")
    assert forced.exit_code == 0
    assert json.loads((out / "manifest.json").read_text())["strategy"] == "sm-compact"
    assert set(pq.read_table(out / "steps.parquet").column("strategy").to_pylist()) == {"sm-compact"}
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_a_full_disk_leaves_the_previous_run_whole(tmp_path: Path, corpus: Path, monkeypatch) -> None:
    out = tmp_path / "run"
    assert run_cli("replay", corpus, "-s", "none", "--out", out).exit_code == 0
    before = _files(out)

    real = pq.ParquetWriter

    def full(*args, **kwargs):  # the file is created, then the disk is full
        real(*args, **kwargs).close()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "ParquetWriter", full)
    result = run_cli("replay", corpus, "-s", "sm-compact", "--out", out, "--force")
    assert result.exit_code != 0 and "No space left on device" in result.output
    assert _files(out) == before and not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_folder_mixing_two_runs_is_left_out_with_the_reason(tmp_path: Path, corpus: Path) -> None:
    """New parquet files beside an old manifest (a kill between writes of a writer without the commit)."""
    old, new = tmp_path / "old", tmp_path / "new"
    assert run_cli("replay", corpus, "-s", "none", "--out", old).exit_code == 0
    assert run_cli("replay", corpus, "-s", "sm-compact", "--out", new).exit_code == 0
    shutil.copy(new / "steps.parquet", old / "steps.parquet")
    failed: list[dict[str, str]] = []
    with pytest.raises(ValueError, match="no run folder could be read"):
        load_results(old, failed=failed)
    [problem] = failed
    assert "manifest.json names strategy none but steps.parquet holds sm-compact" in problem["reason"]
    report = run_cli("report", tmp_path, "--json")
    data = json.loads(report.stdout)
    assert [Path(f["path"]).name for f in data["failed_runs"]] == ["old"]


def test_out_that_is_a_file_is_a_usage_error(tmp_path: Path, corpus: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep me")
    result = run_cli("replay", corpus, "-s", "none", "--out", target)
    assert result.exit_code == 2 and "a file, not a folder" in result.stderr and "internal error" not in result.output
    assert target.read_text() == "keep me"
