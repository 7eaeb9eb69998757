from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


@pytest.fixture(autouse=True)
def _pinned_code_version(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Cell ids include the code version; pin it so concurrent edits elsewhere cannot change ids mid-test."""
    from workbench.experiments import cells

    monkeypatch.setenv("WORKBENCH_CODE_VERSION", "test")
    cells.code_version.cache_clear()
    monkeypatch.setenv(
        "WORKBENCH_CACHE_DIR", os.environ.get("WORKBENCH_CACHE_DIR") or str(tmp_path_factory.getbasetemp() / "cache")
    )


def write_spec(folder: Path, body: str, name: str = "spec.yaml") -> Path:
    path = folder / name
    path.write_text(body.replace("DATA", str(DATA)), encoding="utf-8")
    return path


def sm_grid(name: str, *, max_tokens: tuple[int, ...] = ()) -> str:
    """A spec of 15 (or 15 × len(max_tokens)) sm-compact cells over ``data/``, long enough to interrupt."""
    extra = f"      max_tokens: {list(max_tokens)}\n" if max_tokens else ""
    return (
        f"name: {name}\n"
        'corpus: ["DATA"]\n'
        "metrics: [savings]\n"
        "strategies:\n"
        "  - name: sm-compact\n"
        "    grid:\n"
        "      min_tokens: [2000, 4000, 6000, 8000, 10000]\n"
        f"{extra}"
        "      trigger.pct_of_window: [40, 60, 80]\n"
    )


TINY = """\
name: tiny
corpus: ["DATA"]
metrics: [savings, validity]
strategies:
  - name: none
  - name: sm-compact
    grid:
      min_tokens: [5000, 10000]
      trigger.pct_of_window: [40, 80]
"""


def comparable(frame):
    """A stored cell table without run-specific provenance (timings, batch ids, executor)."""
    drop = ["batch", "started_at", "finished_at", "written_at", "elapsed_s", "executor"]
    return frame.drop(columns=[c for c in drop if c in frame.columns]).sort_values("cell_id").reset_index(drop=True)


def copy_data(tmp: Path) -> Path:
    target = tmp / "data"
    shutil.copytree(DATA, target)
    return target
