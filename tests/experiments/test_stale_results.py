"""Nothing stored is stale: a sweep into a store that already holds results gives, after any of its inputs
changes, exactly what a sweep into an empty store gives (the cells it reuses are only those a fresh run
would compute the same). Each input is changed in turn: a config value, the estimator, a session's
content and the code version."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from workbench.experiments import ResultStore, cells, run_sweep

from .conftest import comparable, copy_data

SPEC = """\
name: stale
corpus: ["{data}"]
estimator: {estimator}
metrics: [savings, validity]
strategies:
  - name: none
  - name: sm-compact
    grid:
      min_tokens: [{min_tokens}]
"""


def _spec(folder: Path, data: Path, *, estimator: str = "claude-rough", min_tokens: int = 5000) -> Path:
    path = folder / "spec.yaml"
    path.write_text(SPEC.format(data=data, estimator=estimator, min_tokens=min_tokens), encoding="utf-8")
    return path


#: What a cell records of the run that computed it rather than of its result: the corpus fingerprint is
#: the whole corpus's when the cell was computed (a cell of an unchanged session stays valid when another
#: session changes, and keeps the fingerprint it was computed under).
PROVENANCE = ["cell_id", "corpus_fingerprint"]


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    kept = comparable(frame).drop(columns=PROVENANCE, errors="ignore")
    keys = [c for c in ("session_id", "strategy", "config_hash") if c in kept.columns]
    return kept.sort_values(keys, kind="stable").reset_index(drop=True)


def _results(store: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cells a store holds and their steps, without provenance (timings, batches) or cell ids."""
    result = ResultStore(store)
    kept = comparable(result.cells()).drop(columns=PROVENANCE, errors="ignore")
    keys = [c for c in ("session_id", "strategy", "config_hash") if c in kept.columns]
    kept = kept.sort_values(keys, kind="stable").reset_index(drop=True)
    steps = result.steps().drop(columns=["cell_id", "batch"], errors="ignore")
    steps = steps.sort_values([*keys, "step"], kind="stable").reset_index(drop=True)
    return kept, steps


def _sweep(spec: Path, store: Path) -> int:
    return run_sweep(spec, store=store, executor="inline", progress=False).cells_computed


def _edit_session(data: Path) -> None:
    """Append a user prompt and an answer to one session (its content, so its fingerprint, changes)."""
    path = data / "short-question-21636369.jsonl"
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    extra = {**last, "uuid": "edited-1", "parentUuid": last.get("uuid"), "type": "user"}
    extra["message"] = {"role": "user", "content": "one more question, added after the first sweep"}
    extra.pop("requestId", None)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(extra) + "\n")


CHANGES: dict[str, Callable[[Path, Path, pytest.MonkeyPatch], Path]] = {
    "a config value": lambda folder, data, _: _spec(folder, data, min_tokens=7000),
    "the estimator": lambda folder, data, _: _spec(folder, data, estimator="claude-padded"),
    "a session's content": lambda folder, data, _: (_edit_session(data), _spec(folder, data))[1],
}


@pytest.mark.parametrize("change", [*CHANGES, "the code version"])
def test_a_store_after_any_input_changes_equals_a_fresh_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    data = copy_data(tmp_path)
    store = tmp_path / "store"
    _sweep(_spec(tmp_path, data), store)
    if change == "the code version":
        monkeypatch.setenv("WORKBENCH_CODE_VERSION", "test-after-an-upgrade")
        cells.code_version.cache_clear()
        spec = _spec(tmp_path, data)
    else:
        spec = CHANGES[change](tmp_path, data, monkeypatch)
    computed = _sweep(spec, store)
    assert computed > 0, f"{change}: every cell was taken from the store"
    fresh = tmp_path / "fresh"
    _sweep(spec, fresh)
    plan_ids = set(ResultStore(fresh).cells()["cell_id"])
    reused = ResultStore(store).cells()
    reused = reused[reused["cell_id"].isin(plan_ids)]
    assert len(reused) == len(plan_ids), change
    ours, fresh_steps = _results(fresh)
    kept = _comparable(reused)
    pd.testing.assert_frame_equal(kept[ours.columns], ours, check_dtype=False)
    steps = ResultStore(store).steps(reused).drop(columns=["cell_id", "batch"], errors="ignore")
    keys = [c for c in ("session_id", "strategy", "config_hash") if c in steps.columns]
    steps = steps.sort_values([*keys, "step"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(steps[fresh_steps.columns], fresh_steps, check_dtype=False)
