from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from workbench.experiments import ResultStore, load_spec, run_sweep

from .conftest import REPO, TINY, comparable, sm_grid, write_spec

KILL_SPEC = sm_grid("killme")


def test_rerun_computes_only_missing_cells(tmp_path):
    spec = write_spec(tmp_path, TINY)
    first = run_sweep(spec, store=tmp_path / "store", executor="inline", progress=False)
    assert first.cells_total == 5 * 6 and first.cells_computed == 30 and first.cells_cached == 0
    again = run_sweep(spec, store=tmp_path / "store", executor="inline", progress=False)
    assert again.cells_computed == 0 and again.cells_cached == 30
    bigger = write_spec(tmp_path, TINY.replace("[5000, 10000]", "[5000, 10000, 20000]"))
    grown = run_sweep(bigger, store=tmp_path / "store", executor="inline", progress=False)
    assert grown.cells_total == 7 * 6 and grown.cells_computed == 12
    store = ResultStore(tmp_path / "store")
    cells = store.cells()
    assert len(cells) == 42 and cells["cell_id"].is_unique
    for column in (
        "config_json",
        "passed_config_json",
        "corpus_fingerprint",
        "package_version",
        "git_revision",
        "code_version",
        "started_at",
        "finished_at",
        "session_fingerprint",
    ):
        assert column in cells.columns
    steps = store.steps()
    assert set(steps["cell_id"]) == set(cells["cell_id"])
    assert cells.set_index("cell_id")["steps"].to_dict() == steps.groupby("cell_id").size().to_dict()
    assert cells["compactions"].sum() > 0


def test_orphaned_parts_of_an_unfinished_batch_are_ignored(tmp_path):
    spec = write_spec(tmp_path, TINY)
    run_sweep(spec, store=tmp_path / "store", executor="inline", progress=False)
    store = ResultStore(tmp_path / "store")
    before = store.steps()
    orphan = before.head(5).assign(batch="99999999999999999999-deadbeef")
    orphan.to_parquet(tmp_path / "store" / "steps" / "part-99999999999999999999-deadbeef.parquet")
    (tmp_path / "store" / "cells" / ".part-x.parquet.tmp").write_bytes(b"half a file")
    assert len(store.steps()) == len(before)
    assert len(store.cells()) == 30


def _cli(*args: str, **kwargs):
    code = "from workbench.cli import main; main()"
    return [sys.executable, "-c", f"if __name__ == '__main__':\n    {code}", *args]


def test_killed_sweep_resumes_without_loss_or_duplicates(tmp_path):
    spec = write_spec(tmp_path, KILL_SPEC)
    reference = run_sweep(spec, store=tmp_path / "ref", executor="inline", progress=False)
    total = reference.cells_total
    assert total == 15 * 6
    store_dir = tmp_path / "store"
    env = {**os.environ, "WORKBENCH_CODE_VERSION": "test"}
    proc = subprocess.Popen(
        _cli(
            "sweep",
            str(spec),
            "--store",
            str(store_dir),
            "--executor",
            "local",
            "--workers",
            "1",
            "--batch-size",
            "1",
            "--json",
        ),
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    store = ResultStore(store_dir)
    deadline = time.time() + 60
    try:
        while time.time() < deadline and len(store.batches()) < 5:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker processes, mid-run
    finally:
        proc.wait(timeout=30)
    done = store.done_ids()
    assert 5 <= len(done) < total, "the sweep must be killed after some cells and before the end"
    resumed = run_sweep(spec, store=store_dir, executor="local", workers=2, progress=False)
    assert resumed.cells_computed == total - len(done)
    assert resumed.cells_cached == len(done)
    cells = store.cells()
    raw = pd.concat([pd.read_parquet(p) for p in sorted((store_dir / "cells").glob("part-*.parquet"))])
    assert raw["cell_id"].is_unique and len(cells) == total
    pd.testing.assert_frame_equal(comparable(cells), comparable(ResultStore(tmp_path / "ref").cells()))
    ours = store.steps().drop(columns=["batch"]).sort_values(["cell_id", "step"]).reset_index(drop=True)
    ref = (
        ResultStore(tmp_path / "ref")
        .steps()
        .drop(columns=["batch"])
        .sort_values(["cell_id", "step"])
        .reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(ours, ref)
    # the killed store reads as one dataset per table, with no rows of the killed batches
    for table in ("cells", "steps", "events"):
        raw = pd.read_parquet(store_dir / table)
        assert len(raw) == len(getattr(store, table)()), table


def test_dask_local_cluster_matches_local_executor(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = write_spec(tmp_path, TINY)
    local = run_sweep(spec, store=tmp_path / "local", executor="local", workers=2, progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        remote = run_sweep(spec, store=tmp_path / "dask", executor=address, progress=False)
    assert local.cells_computed == remote.cells_computed == 30
    a, b = ResultStore(tmp_path / "local"), ResultStore(tmp_path / "dask")
    pd.testing.assert_frame_equal(comparable(a.cells()), comparable(b.cells()))
    key = ["cell_id", "step"]
    pd.testing.assert_frame_equal(
        a.steps().drop(columns="batch").sort_values(key).reset_index(drop=True),
        b.steps().drop(columns="batch").sort_values(key).reset_index(drop=True),
    )


def test_cli_json_and_report(tmp_path):
    spec = write_spec(tmp_path, TINY)
    out = subprocess.run(
        _cli(
            "sweep",
            str(spec),
            "--store",
            str(tmp_path / "s"),
            "--executor",
            "inline",
            "--json",
            "--report",
            str(tmp_path / "report"),
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "WORKBENCH_CODE_VERSION": "test"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"cells_total", "cells_computed", "cells_cached", "store"} <= set(data)
    assert data["cells_total"] == 30 and data["cells_computed"] == 30
    for name in (
        "summary.md",
        "summary.html",
        "configs.csv",
        "timeline.png",
        "violations.png",
        "heatmap-sm-compact-saved_share.png",
    ):
        assert (tmp_path / "report" / name).stat().st_size > 0
    bad = subprocess.run(
        _cli("sweep", str(write_spec(tmp_path, TINY.replace("seed", "x").replace("metrics", "metricz"), "bad.yaml"))),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "bad.yaml" in bad.stderr and "metricz" in bad.stderr


def test_spec_points_are_unique_cells(tmp_path):
    spec = load_spec(write_spec(tmp_path, TINY.replace("[5000, 10000]", "[10000, 10000]")))
    assert len(spec.points) == 1 + 2


def test_report_intervals_and_paired_differences(tmp_path):
    """The sweep report gives 95% intervals over sessions, the expected recovery and total cost,
    and paired differences against `none`; plots draw the intervals."""
    from workbench.experiments.report import write_report
    from workbench.experiments.run import plan_sweep

    body = TINY.replace("metrics: [savings, validity]", "metrics: [savings, validity, cost, fidelity, references]")
    spec = write_spec(tmp_path, body)
    result = run_sweep(spec, store=tmp_path / "s", executor="inline", progress=False)
    out = write_report(result, plan_sweep(spec), tmp_path / "report")
    configs = pd.read_csv(out / "configs.csv")
    for metric in ("saved_share", "needed_recall", "expected_recovery_tokens", "cost_usd", "total_cost_usd"):
        assert configs[f"{metric}_ci_low"].notna().all(), metric
        assert (configs[f"{metric}_ci_low"] <= configs[metric] + 1e-9).all()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Paired differences vs `none`" in summary and "total_cost_usd" in summary
    assert "session(s) had a compaction" in summary  # the embedded data: too few sessions to rank
    header = next(line for line in summary.splitlines() if line.startswith("| label"))
    assert header.index("expected_recovery_tokens") < header.index("needed_recall")
    assert "`needed_recall`/`dropped_recall` = references kept" in summary
    assert "![Savings vs expected re-acquired tokens (lower is better)" in summary
