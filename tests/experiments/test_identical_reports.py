"""Identical inputs give identical reports: one spec swept into two fresh stores with different batching
and executors (so their part files, and the order rows are read in, differ) gives byte-identical config
tables, the same cell rows in the same order (but for each cell's provenance: timings, executor, batch),
and the same summary but for the store's own path and timings."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from workbench.experiments import plan_sweep, run_sweep
from workbench.experiments.report import write_report

from .conftest import TINY, write_spec


def _summary(folder: Path, store: Path) -> str:
    text = (folder / "summary.md").read_text(encoding="utf-8").replace(str(store), "<store>")
    text = re.sub(r"executor: \w+; [0-9.]+ s", "executor: <e>", text)  # how it ran, not what it found
    return re.sub(r'"?(elapsed_s|started_at|finished_at)"?: [0-9.e+-]+', r"\1: <t>", text)


def test_two_stores_of_one_spec_give_the_same_report(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, TINY)
    plan = plan_sweep(spec)
    one = run_sweep(spec, store=tmp_path / "a", executor="inline", progress=False, batch_size=1)
    two = run_sweep(spec, store=tmp_path / "b", executor="local", workers=2, progress=False, batch_size=64)
    write_report(one, plan, tmp_path / "ra")
    write_report(two, plan, tmp_path / "rb")
    assert (tmp_path / "ra" / "configs.csv").read_bytes() == (tmp_path / "rb" / "configs.csv").read_bytes()
    provenance = ["started_at", "elapsed_s", "executor", "finished_at", "batch", "written_at"]
    cells = [pd.read_csv(tmp_path / r / "cells.csv").drop(columns=provenance) for r in ("ra", "rb")]
    pd.testing.assert_frame_equal(cells[0], cells[1])
    assert _summary(tmp_path / "ra", tmp_path / "a") == _summary(tmp_path / "rb", tmp_path / "b")


def test_report_json_of_identical_runs_is_byte_identical(tmp_path: Path) -> None:
    """``workbench report --json`` over run folders of the same replays, written by one process and by two
    worker processes (parts in another order), prints the same bytes but for the folder's own path."""
    import subprocess
    import sys

    from .conftest import DATA, REPO

    def cli(*args: str) -> str:
        run = subprocess.run(
            [sys.executable, "-m", "workbench.cli", *args], cwd=REPO, capture_output=True, text=True, check=True
        )
        return run.stdout

    outputs = []
    for name, workers in (("one", "1"), ("two", "2")):
        for strategy in ("none", "sm-compact"):
            cli("replay", str(DATA), "-s", strategy, "--out", str(tmp_path / name / strategy), "--workers", workers)
        outputs.append(cli("report", str(tmp_path / name), "--json").replace(str(tmp_path / name), "<results>"))
    assert outputs[0] == outputs[1]
