"""Planning a sweep from per-file metadata: no session held, nothing parsed when the
corpus is unchanged, the same cell ids (so old stores stay valid) and the same results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.experiments import ResultStore, load_spec, run_sweep
from workbench.experiments.run import plan_for_sessions, plan_sweep
from workbench.transcript import Session, claude_code, load_paths
from workbench.transcript.summary import SessionInfo

from .conftest import TINY, comparable, copy_data, write_spec


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = claude_code.ClaudeCodeLoader.load

    def load(self: claude_code.ClaudeCodeLoader, path: Path) -> list[Session]:
        seen.append(Path(path).name)
        return real(self, path)

    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "load", load)
    return seen


def test_a_plan_holds_no_session_and_a_warm_plan_parses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: list[str]
) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    corpus = copy_data(tmp_path)
    spec = write_spec(tmp_path, TINY.replace("DATA", str(corpus)))
    cold = plan_sweep(load_spec(spec))
    assert len(parses) == 6 and all(isinstance(s, SessionInfo) for s in cold.sessions)
    warm = plan_sweep(load_spec(spec))
    assert len(parses) == 6, "a plan over an unchanged corpus parsed again"
    held = plan_for_sessions(load_spec(spec), [s for s in load_paths([corpus]) if s.records])
    assert [c.id for c in warm.cells] == [c.id for c in cold.cells] == [c.id for c in held.cells]
    assert warm.corpus_fingerprint == held.corpus_fingerprint


def test_a_sweep_planned_from_metadata_gives_the_same_cells(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, TINY)
    resolved = load_spec(spec)
    from_metadata = run_sweep(spec, store=tmp_path / "meta", executor="local", workers=2, progress=False)
    sessions = [s for s in load_paths(resolved.corpus) if s.records]
    held = plan_for_sessions(resolved, sessions)
    from_sessions = run_sweep(spec, store=tmp_path / "held", executor="inline", progress=False, plan=held)
    assert from_metadata.cells_computed == from_sessions.cells_computed == 30
    a, b = ResultStore(tmp_path / "meta"), ResultStore(tmp_path / "held")
    pd.testing.assert_frame_equal(comparable(a.cells()), comparable(b.cells()))
    key = ["cell_id", "step"]
    pd.testing.assert_frame_equal(
        a.steps().drop(columns="batch").sort_values(key).reset_index(drop=True),
        b.steps().drop(columns="batch").sort_values(key).reset_index(drop=True),
    )
