"""One session id in several files (copies of a folder, a resumed session): reported separately, never
merged: summing their steps into one session would show 1 + 4 steps as 5 with the cost off, and ten
copies would crash on a non-unique multi-index."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from workbench.replay import replay_frames, replay_sessions
from workbench.reporting.report import render_report, report, write_manifest
from workbench.strategies import create
from workbench.transcript import load_paths

DATA = Path(__file__).resolve().parents[2] / "data"
SOURCE = DATA / "long-autocompact-e3e70682.jsonl"


def _replay(inputs: list[Path], out: Path, names=("none", "full-compact")) -> None:
    sessions = [s for s in load_paths(inputs) if s.records]
    for name in names:
        strategy = create(name)
        steps, events = replay_frames(replay_sessions(sessions, strategy))
        folder = out / name
        folder.mkdir(parents=True)
        steps.to_parquet(folder / "steps.parquet")
        events.to_parquet(folder / "events.parquet")
        write_manifest(folder, name, strategy.config.model_dump(mode="json"), inputs)


def _rows(data: dict, strategy: str) -> dict[str, dict]:
    return {Path(r["file"]).name: r for r in data["sessions"] if r["strategy"] == strategy}


def test_a_resumed_copy_and_an_identical_copy_are_reported_as_their_own_sessions(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "copy").mkdir(parents=True)
    shutil.copy(SOURCE, corpus / "full.jsonl")
    shutil.copy(SOURCE, corpus / "copy" / "again.jsonl")
    lines = SOURCE.read_text(encoding="utf-8").splitlines(keepends=True)
    (corpus / "resumed.jsonl").write_text("".join(lines[: len(lines) // 3]), encoding="utf-8")
    _replay([corpus], tmp_path / "runs")
    _replay([SOURCE], tmp_path / "alone")
    _replay([corpus / "resumed.jsonl"], tmp_path / "alone-resumed")

    data = report(tmp_path / "runs")
    alone = report(tmp_path / "alone")["sessions"]
    resumed = report(tmp_path / "alone-resumed")["sessions"]
    sid = alone[0]["session_id"]
    assert {r["session_id"] for r in data["sessions"]} == {sid}
    for strategy in ("none", "full-compact"):
        rows = _rows(data, strategy)
        assert set(rows) == {"full.jsonl", "again.jsonl", "resumed.jsonl"}
        single = next(r for r in alone if r["strategy"] == strategy)
        part = next(r for r in resumed if r["strategy"] == strategy)
        for column in ("steps", "tokens_saved", "peak_context_tokens", "compactions", "cost_usd", "needed_recall"):
            assert rows["full.jsonl"][column] == rows["again.jsonl"][column] == single[column], column
            assert rows["resumed.jsonl"][column] == part[column], column
        assert rows["resumed.jsonl"]["steps"] < rows["full.jsonl"]["steps"]
    pooled = {r["strategy"]: r for r in data["strategies"]}
    assert pooled["none"]["sessions"] == 3
    assert pooled["none"]["steps"] == 2 * alone[0]["steps"] + resumed[0]["steps"]
    assert any("is in 3 files" in note and "never merged" in note for note in data["notes"])
    text = render_report(data)
    assert "file" in text.splitlines()[text.splitlines().index("By session") + 1]


def test_ten_copies_do_not_crash_the_report(tmp_path):
    corpus = tmp_path / "corpus"
    for n in range(10):
        (corpus / f"c{n}").mkdir(parents=True)
        shutil.copy(DATA / "short-bugfix-d95bafc8.jsonl", corpus / f"c{n}" / "s.jsonl")
    _replay([corpus], tmp_path / "runs", names=("none",))
    data = report(tmp_path / "runs")
    assert len(data["sessions"]) == 10 and len({r["file"] for r in data["sessions"]}) == 10
    assert data["strategies"][0]["sessions"] == 10
    assert len({r["cost_usd"] for r in data["sessions"]}) == 1


def test_the_same_session_in_two_run_folders_is_two_rows(tmp_path):
    _replay([DATA / "short-bugfix-d95bafc8.jsonl"], tmp_path / "runs" / "a", names=("none",))
    _replay([DATA / "short-bugfix-d95bafc8.jsonl"], tmp_path / "runs" / "b", names=("none",))
    data = report(tmp_path / "runs")
    assert len(data["sessions"]) == 2 and {r["steps"] for r in data["sessions"]} == {10}
    assert all("[run " in r["file"] for r in data["sessions"])


def test_an_old_run_folder_with_copies_is_an_error_naming_it(tmp_path):
    """Written before steps recorded their file: the copies cannot be told apart, so no silent merge."""
    _replay([DATA / "short-bugfix-d95bafc8.jsonl", DATA / "short-bugfix-d95bafc8.jsonl"], tmp_path / "x", ("none",))
    path = tmp_path / "x" / "none" / "steps.parquet"
    steps = pd.read_parquet(path)
    pd.concat([steps, steps]).drop(columns=["file"]).to_parquet(path)
    with pytest.raises(ValueError, match=r"steps\.parquet: session d95bafc8-\S+ appears more than once"):
        report(tmp_path / "x")
