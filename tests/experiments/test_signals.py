"""A sweep's worker processes end with their driver, whatever signal ends it: SIGTERM is an orderly stop
(exit 143, what finished is stored, a re-run resumes), and a driver killed outright (SIGKILL) leaves no
worker blocked forever (the kernel's parent-death signal, `workbench.util.pool.die_with_parent`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.experiments import ResultStore, run_sweep

from .conftest import REPO, sm_grid, write_spec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux only")


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_sweep(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    spec = write_spec(tmp_path, sm_grid("signals", max_tokens=(20_000, 30_000, 40_000)))
    store = tmp_path / "store"
    code = "from workbench.cli import main; main()"
    cmd = [sys.executable, "-c", f"if __name__ == '__main__':\n    {code}"]
    cmd += ["sweep", str(spec), "--store", str(store), "--executor", "local", "--workers", "2", "--batch-size", "1"]
    env = {**os.environ, "WORKBENCH_CODE_VERSION": "test"}
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and (len(_children(proc.pid)) < 2 or len(ResultStore(store).batches()) < 2):
        time.sleep(0.02)
    return proc, spec, store


def _wait_gone(pids: set[int], seconds: float = 15) -> set[int]:
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return {p for p in pids if _alive(p)}


def test_sigterm_stops_the_sweep_and_its_workers(tmp_path: Path) -> None:
    proc, spec, store = _start_sweep(tmp_path)
    workers = _children(proc.pid)
    assert len(workers) >= 2, "the sweep must be running its workers"
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 143 and "terminated" in stderr and "Traceback" not in stderr
    assert _wait_gone(workers) == set()
    done = ResultStore(store).done_ids()
    resumed = run_sweep(spec, store=store, executor="inline", progress=False)
    assert resumed.cells_cached == len(done) and resumed.cells_computed == resumed.cells_total - len(done)


def test_a_killed_driver_leaves_no_worker_behind(tmp_path: Path) -> None:
    proc, _, _ = _start_sweep(tmp_path)
    workers = _children(proc.pid)
    assert len(workers) >= 2
    proc.kill()  # SIGKILL: no handler runs in the driver
    proc.wait(timeout=30)
    assert _wait_gone(workers) == set()
