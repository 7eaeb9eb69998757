"""A real distributed run: ``dask scheduler`` and two ``dask worker`` processes started
with the distributed CLI on 127.0.0.1, the sweep CLI pointed at them with ``--executor dask://…``.

Workers read the sessions by path (the test's files are on the one filesystem they share), get the
same cells as the local executor, and a worker killed mid-sweep (SIGKILL) loses no finished cell: the
scheduler reruns its task on the other worker and every cell stored before the kill is still there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from workbench.experiments import ResultStore, run_sweep

from .conftest import REPO, TINY, comparable, sm_grid, write_spec
from .test_sweep import _cli

pytestmark = pytest.mark.slow

#: Long enough (150 cells in tasks of one) that a worker can be killed while the sweep runs.
LONG = sm_grid("dask-kill", max_tokens=(20000, 40000))


def _dask() -> str:
    found = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    if found is None:
        pytest.skip("the dask command line (distributed) is not installed")
    return found


class Cluster:
    """A scheduler and named workers started with the distributed CLI, stopped in `close`."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.address = ""

    def start(self, workers: int) -> None:
        dask = _dask()
        info = self.root / "scheduler.json"
        self._spawn(
            "scheduler",
            [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
        )
        self.address = self._scheduler_address(info, deadline=time.time() + 60)
        assert self.address.startswith("tcp://127.0.0.1:"), self.address
        for n in range(workers):
            self._spawn(
                f"worker-{n}",
                [
                    dask,
                    "worker",
                    self.address,
                    "--name",
                    f"worker-{n}",
                    "--nthreads",
                    "1",
                    "--no-nanny",  # the PID is the worker itself: SIGKILL kills it, nothing restarts it
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                    "--local-directory",
                    str(self.root / f"worker-{n}"),
                    "--death-timeout",
                    "60",
                ],
            )
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=120)

    def _scheduler_address(self, info: Path, deadline: float) -> str:
        """The address in the scheduler file, once the scheduler has written all of it (the file exists,
        empty or half written, before it is complete: reading it as soon as it exists failed under load)."""
        while True:
            self._alive("scheduler")
            try:
                return str(json.loads(info.read_text())["address"])
            except (OSError, ValueError, KeyError):
                if time.time() > deadline:
                    raise
            time.sleep(0.1)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.root / f"{name}.log").open("wb")
        self.processes[name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)

    def _alive(self, name: str) -> None:
        if self.processes[name].poll() is not None:
            log = (self.root / f"{name}.log").read_text(errors="replace")
            raise AssertionError(f"{name} exited {self.processes[name].returncode}:\n{log[-3000:]}")

    def kill(self, name: str) -> None:
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait(timeout=30)

    def close(self) -> None:
        for process in reversed(list(self.processes.values())):
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "WORKBENCH_CODE_VERSION": "test",
        "DASK_DISTRIBUTED__WORKER__DAEMON": "False",
    }
    root = tmp_path / "cluster"
    root.mkdir()
    running = Cluster(root, env)
    try:
        running.start(workers=2)
        yield running
    finally:
        running.close()


def _sweep(spec: Path, store: Path, address: str, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _cli("sweep", str(spec), "--store", str(store), "--executor", address.replace("tcp://", "dask://"), *extra),
        env={**os.environ, "WORKBENCH_CODE_VERSION": "test"},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _steps(store: ResultStore) -> pd.DataFrame:
    return store.steps().drop(columns="batch").sort_values(["cell_id", "step"]).reset_index(drop=True)


def test_the_distributed_cli_cluster_gives_the_local_executors_cells(tmp_path: Path, cluster: Cluster) -> None:
    spec = write_spec(tmp_path, TINY)
    local = run_sweep(spec, store=tmp_path / "local", executor="local", workers=2, progress=False)
    proc = _sweep(spec, tmp_path / "dask", cluster.address, "--json")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    result = json.loads(out)
    assert result["cells_computed"] == local.cells_computed == 30 and result["executor"].startswith("dask://127.0.0.1")
    a, b = ResultStore(tmp_path / "local"), ResultStore(tmp_path / "dask")
    pd.testing.assert_frame_equal(comparable(a.cells()), comparable(b.cells()))
    pd.testing.assert_frame_equal(_steps(a), _steps(b))


def test_a_worker_killed_mid_sweep_loses_no_finished_cell(tmp_path: Path, cluster: Cluster) -> None:
    spec = write_spec(tmp_path, LONG)
    reference = run_sweep(spec, store=tmp_path / "ref", executor="inline", progress=False)
    total = reference.cells_total
    assert total == 30 * 6
    store = ResultStore(tmp_path / "dask")
    proc = _sweep(spec, tmp_path / "dask", cluster.address, "--batch-size", "1", "--json")
    try:
        deadline = time.time() + 300
        while time.time() < deadline and len(store.batches()) < 10 and proc.poll() is None:
            time.sleep(0.05)
        before = store.done_ids()
        cluster.kill("worker-0")
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert 10 <= len(before) < total, "the worker must be killed after some cells and before the end"
    assert proc.returncode == 0, err.decode()[-3000:]
    after = store.done_ids()
    assert before <= after, "a cell stored before the kill is gone"
    assert len(after) == total and json.loads(out)["cells_failed"] == 0
    cells = store.cells()
    raw = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "dask" / "cells").glob("part-*.parquet"))])
    assert raw["cell_id"].is_unique and len(cells) == total
    pd.testing.assert_frame_equal(comparable(cells), comparable(ResultStore(tmp_path / "ref").cells()))
    pd.testing.assert_frame_equal(_steps(store), _steps(ResultStore(tmp_path / "ref")))
