"""Validation of the fidelity scores against measured recovery (`workbench.metrics.validation`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.metrics.validation import (
    compaction_table,
    file_predictors,
    file_table,
    fisher_exact,
    score_correlations,
    spearman,
)
from workbench.transcript import load_paths


def test_statistics():
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.4857, abs=1e-4)  # Fisher's tea tasting, two-sided
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.002759, abs=1e-5)
    up = spearman(range(8), [1, 2, 3, 4, 5, 6, 7, 9])
    assert up["n"] == 8 and up["rho"] == pytest.approx(1.0) and up["p_permutation"] < 0.001
    assert spearman([1, 2, 3], [1, 1, 1])["rho"] is None  # constant: undefined, not 0


def test_on_the_recorded_compactions(corpus: Path):
    sessions = list(load_paths([corpus / "claude-code", corpus / "claude-code-more"]))
    table = compaction_table(sessions)
    assert len(table) == 10 and table["needed_recall"].notna().all()
    assert (table["section_coverage"] == 1.0).all()  # every Claude summary has the 9 sections: no signal
    rows = score_correlations(table).set_index("score")
    assert (rows["n"] == 10).all()
    assert rows.loc["expected_recovery_tokens", "rho"] > 0.5
    assert rows.loc["needed_recall", "rho"] > 0  # the wrong sign for a score of "what the agent needs"
    files = file_table(sessions)
    assert files.groupby(["session_id", "event"]).size().sum() == len(files) and files["reread"].sum() == 21
    predictors = file_predictors(files).set_index("predictor")
    assert predictors.loc["path_in_summary", "reread_if_true"] > predictors.loc["path_in_summary", "reread_if_false"]


def test_a_compaction_with_no_file_read_before_it(tmp_path: Path):
    """The file table of such a compaction is empty; it had no columns, so `compaction_table` raised
    ``KeyError: 'session_id'`` (and ``workbench recovery --validate`` reported the session as failed)."""
    from workbench.synthetic import generate_session

    path = tmp_path / "s.jsonl"
    lines = generate_session(1, target_tokens=30_000, compact_at=22_000, after_compact_calls=4, session_id="s")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sessions = list(load_paths([path]))
    assert file_table(sessions).empty
    table = compaction_table(sessions)
    assert len(table) == 1 and table.loc[0, "read_files_before"] == 0
    assert file_predictors(file_table(sessions)).empty
