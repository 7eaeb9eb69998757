"""Notebook execution shared by the notebook, export and browser tests."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
NAMES = (
    "01_quickstart",
    "02_tune_keep_window",
    "03_compare_strategies",
    "04_api_invariants",
    "05_session_memory",
)


def ensure_kernel() -> str:
    """The ``python3`` kernelspec of this interpreter (installed into ``sys.prefix`` when missing)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
        argv0 = spec.argv[0]
        if argv0 in ("python", "python3", sys.executable) or Path(argv0).resolve() == Path(sys.executable).resolve():
            return "python3"
    except NoSuchKernel:
        pass
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"],
        check=True,
        capture_output=True,
    )
    return "python3"


def inject_parameters(nb, values: dict) -> None:
    """Papermill's convention: a cell tagged ``injected-parameters`` right after the ``parameters`` cell."""
    from nbformat.v4 import new_code_cell

    if not values:
        return
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    cell = new_code_cell("\n".join(f"{k} = {v!r}" for k, v in values.items()))
    cell.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(at + 1, cell)


def execute_notebook(name: str, out_dir: Path, parameters: dict | None = None, timeout: int = 300):
    """Execute ``notebooks/<name>.ipynb`` headlessly (cwd ``notebooks/``) and write it to ``out_dir``."""
    import nbformat
    from nbclient import NotebookClient

    from workbench.experiments.kernel import client_kwargs

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    inject_parameters(nb, parameters or {})
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=ensure_kernel(),
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        store_widget_state=True,
        **client_kwargs(),  # the shell/IOPub waits that cannot stall until the cell timeout (item 18)
    )
    started, started_wall = time.perf_counter(), time.time()
    client.execute()
    elapsed = time.perf_counter() - started
    out = out_dir / f"{name}.ipynb"
    nbformat.write(nb, out)
    if elapsed > 60:  # say where the time went (the old ~300 s stall showed as a gap between two cells)
        warnings.warn(f"{name}: executed in {elapsed:.0f} s; {where_time_went(nb, started_wall)}", stacklevel=1)
    return nb, out, elapsed


def client_gaps(nb) -> list[float]:
    """Seconds between one cell going idle and the next going busy (kernel clock, nbclient's timing
    metadata): the client's own time between cells. A reply picked up only at the cell timeout shows
    here as a gap of the whole timeout."""
    from datetime import datetime

    def at(value: str) -> float:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()

    timings = [c.get("metadata", {}).get("execution", {}) for c in nb.cells]
    spans = [(at(t["iopub.status.busy"]), at(t["iopub.status.idle"])) for t in timings if "iopub.status.busy" in t]
    return [busy - idle for (_, idle), (busy, _) in itertools.pairwise(spans)]


def where_time_went(nb, started_wall: float) -> str:
    """Kernel start-up, each cell (busy → idle, from nbclient's timing metadata) and shutdown."""
    from datetime import datetime

    def at(value: str) -> float:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()

    parts, last = [], started_wall
    for index, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.status.busy" in timing and "iopub.status.idle" in timing:
            busy, idle = at(timing["iopub.status.busy"]), at(timing["iopub.status.idle"])
            parts.append(f"gap {busy - last:.1f} s, cell {index} {idle - busy:.1f} s")
            last = idle
    parts.append(f"after the last cell {time.time() - last:.1f} s")
    return "; ".join(parts)


@pytest.fixture(scope="session")
def executed_notebooks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """All five notebooks executed once: ``{name: (notebook, path, seconds)}``."""
    out_dir = tmp_path_factory.mktemp("executed")
    return {name: execute_notebook(name, out_dir) for name in NAMES}
