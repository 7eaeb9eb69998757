"""`plan_sweep(..., workers=N)`: a new corpus summarised by worker processes gives the plan of one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.experiments import plan_sweep
from workbench.transcript import session_cache as sc

from .conftest import TINY, write_spec


def test_planning_with_workers_gives_the_same_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = write_spec(tmp_path, TINY)
    plans = []
    for workers in (1, 2):
        monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / f"cache-{workers}"))  # cold: every file parsed
        monkeypatch.setattr(sc, "_STATE", {"off": None, "warned_corrupt": False})
        plans.append(plan_sweep(spec, workers=workers))
    one, two = plans
    assert [c.id for c in two.cells] == [c.id for c in one.cells] and len(one.cells) > 20
    assert two.sessions == one.sessions and two.corpus_fingerprint == one.corpus_fingerprint
    # the workers cached the sessions they parsed, for the sweep's workers to read
    assert any((tmp_path / "cache-2" / "sessions").rglob("*"))
