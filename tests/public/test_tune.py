"""Tuning as a workflow: the front, the recommendation and its intervals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.experiments.tune import TuneSpec, pareto_mask, parse_bound

ROOT = Path(__file__).resolve().parents[2]


def test_pareto_mask_three_axes():
    # savings up, fidelity up, cost down
    values = np.array([[0.3, 0.8, 10.0], [0.2, 0.9, 9.0], [0.1, 0.7, 12.0], [0.3, 0.8, 11.0], [0.3, 0.8, 10.0]])
    assert pareto_mask(values, [1, 1, -1]).tolist() == [True, True, False, False, True]


def test_bounds():
    assert parse_bound("v", "== 0") == ("==", 0.0)
    assert parse_bound("v", ">= 0.8") == (">=", 0.8)
    assert parse_bound("v", 3) == ("<=", 3.0)
    with pytest.raises(ValueError, match=r"constraints\.v"):
        parse_bound("v", "about 3")


def test_cli_tune_on_the_synthetic_corpus(tmp_path):
    """`workbench tune` returns a front and a recommendation that satisfy the constraints."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_CODE_VERSION": "test"}
    spec = ROOT / "experiments" / "tune-smoke.yaml"
    cmd = [sys.executable, "-m", "workbench.cli", "tune", str(spec), "--json", "--store", str(tmp_path / "s")]
    cmd += ["--plot", str(tmp_path / "front.png")]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert data["sessions"] == 6 and data["configs"] == 4 * 3 * 3 - 3 and data["skipped_grid_points"] == 3
    assert data["front"] and data["recommended"] is not None and (tmp_path / "front.png").stat().st_size > 0
    rec = data["recommended"]
    assert rec["label"].startswith("sm-compact ") and rec["label"] in {row["label"] for row in data["front"]}
    assert data["axes"]["fidelity"] == "expected_recovery_tokens"  # the validated fidelity, lower is better
    assert max(row["saved_share"] for row in data["front"]) == rec["saved_share"]  # the objective: savings
    intervals = {row["metric"]: row for row in data["intervals"]}
    for metric in ("saved_share", "expected_recovery_tokens", "cost_usd"):
        row = intervals[metric]
        assert row["low"] <= row["high"] and row["value"] == pytest.approx(rec[metric])
    assert "saved_share vs reference" in intervals


def test_api_tune_constraints_and_objective(tmp_path):
    corpus = wb.load(ROOT / "data", progress=False)
    space = {"min_tokens": [5_000, 20_000], "trigger.pct_of_window": [40, 80]}
    result = wb.tune(corpus, "sm-compact", space=space, store=tmp_path / "s", executor="inline", progress=False)
    table = result.table
    assert len(table) == 4 + 1  # the grid and the base config (the reference)
    assert result.reference is not None and result.reference["label"] == "sm-compact"
    assert (table["feasible"] == ((table["added_violating_steps"] == 0) & (table["added_blocked_steps"] == 0))).all()
    assert list(result.baseline["strategy"].unique()) == ["none"] and len(result.per_session) == 5 * 6
    assert any(note.startswith("baseline none: cost_usd $") for note in result.notes)
    assert set(result.front["label"]) <= set(table.loc[table["feasible"], "label"])
    assert result.recommended is not None and result.config["min_tokens"] in (5_000, 20_000)
    assert result.runs.summary().shape[0] == 5 + 1 and "tune" in result.render()  # with the baseline
    # a constraint nothing meets: no recommendation, said so
    none = wb.tune(
        corpus,
        "sm-compact",
        space=space,
        constraints={"saved_share": ">= 2"},
        store=tmp_path / "s",
        executor="inline",
        progress=False,
    )
    assert none.recommended is None and none.front.empty and "no feasible config" in none.render()
    # minimise cost instead: the recommendation is the cheapest front config
    cheap = wb.tune(
        corpus,
        "sm-compact",
        space=space,
        objective="-cost_usd",
        store=tmp_path / "s",
        executor="inline",
        progress=False,
    )
    assert cheap.recommended["cost_usd"] == cheap.front["cost_usd"].min()


def test_added_columns_compare_each_call_with_the_baseline() -> None:
    """A violation where the baseline's request at the same call also breaks a rule is not added; blocked
    calls count beyond those without compaction."""
    import pandas as pd

    from workbench.experiments.tune import with_added_columns

    steps = pd.DataFrame(
        [
            # (strategy, config, session, file, step, violations)
            ("none", "n", "s1", "f1", 0, 0),
            ("none", "n", "s1", "f1", 1, 2),
            ("sm", "c", "s1", "f1", 0, 1),
            ("sm", "c", "s1", "f1", 1, 1),
            ("sm", "c", "s1", "f1", 2, 1),  # no baseline call here: not compared
        ],
        columns=["strategy", "config_hash", "session_id", "file", "step", "violations"],
    )
    per_session = pd.DataFrame(
        [("sm", "c", "s1", "f1", 3, 1), ("none", "n", "s1", "f1", 1, 1)],
        columns=["strategy", "config_hash", "session_id", "file", "steps_blocked", "steps_blocked_without"],
    )
    out = with_added_columns(per_session, steps, "none").set_index("config_hash")
    assert out.loc["c", "added_violating_steps"] == 1 and out.loc["c", "added_blocked_steps"] == 2
    assert out.loc["n", "added_violating_steps"] == 0
    absolute = with_added_columns(per_session, steps, None).set_index("config_hash")
    assert absolute.loc["c", "added_violating_steps"] == 3


def test_infeasibility_and_dominance_name_the_session() -> None:
    import pandas as pd

    from workbench.experiments.tune import infeasibility_notes
    from workbench.metrics.uncertainty import dominance_notes

    rows = pd.DataFrame(
        [
            ("a", "s1", "/x/big.jsonl", 4, 90.0),
            ("a", "s2", "/x/small.jsonl", 0, 5.0),
            ("b", "s1", "/x/big.jsonl", 2, 80.0),
            ("b", "s2", "/x/small.jsonl", 0, 6.0),
        ],
        columns=["config_hash", "session_id", "file", "added_violating_steps", "cost_usd"],
    )
    [note] = infeasibility_notes(rows, {"added_violating_steps": "== 0", "cost_usd": "<= 100"})
    assert note.startswith("no config meets added_violating_steps == 0: 1 session(s)") and "big.jsonl" in note
    assert "small.jsonl" not in note
    [carried] = dominance_notes(rows[rows["config_hash"] == "a"], "sm-compact", "result.per_session")
    assert "big.jsonl carries 95% of cost_usd" in carried
    assert dominance_notes(rows[rows["config_hash"] == "a"].assign(cost_usd=[1.0, 1.0]), "x", "") == []


def test_fidelity_column_is_configurable():
    spec = TuneSpec(
        name="t",
        corpus=["."],
        strategy="sm-compact",
        space={"min_tokens": [1]},
        axes={"fidelity": "expected_recovery_tokens"},
        fidelity_goal="min",
    )
    assert spec.axes.fidelity == "expected_recovery_tokens" and spec.fidelity_goal == "min"
    with pytest.raises(ValueError):
        TuneSpec(name="t", corpus=["."], strategy="sm-compact", space={"min_tokens": [1]}, objectiv="x")


def test_identical_configs_are_one_front_row_and_ties_are_said(tmp_path):
    """Configs whose results are identical on every session (a max_tokens that never binds) are one row
    of the front, the others listed in ``same_results``; a recommendation whose paired interval against
    the defaults contains 0 is reported as a tie."""
    corpus = wb.load(ROOT / "data", progress=False)
    space = {"min_tokens": [5_000, 10_000], "max_tokens": [40_000, 80_000], "trigger.pct_of_window": [None, 60]}
    result = wb.tune(corpus, "sm-compact", space=space, store=tmp_path / "s", executor="inline", progress=False)
    front = result.front
    columns = ["saved_share", "expected_recovery_tokens", "cost_usd"]
    assert not front.duplicated(subset=columns).any()
    merged = front[front["same_results"] != ""]
    assert len(merged) and all("did not bind" in n for n in result.notes if "identical results" in n)
    listed = [label for text in merged["same_results"] for label in text.split("; ")]
    assert set(listed).isdisjoint(front["label"]) and set(listed) <= set(result.table["label"])
    assert any(n.startswith("a tie: ") for n in result.notes)
    assert "same_results" in result.as_dict()["front"][0]


def test_the_front_plot_has_a_cost_axis_labels_and_the_defaults(tmp_path):
    corpus = wb.load(ROOT / "data", progress=False)
    space = {"min_tokens": [5_000, 20_000], "trigger.pct_of_window": [None, 60]}
    result = wb.tune(corpus, "sm-compact", space=space, store=tmp_path / "s", executor="inline", progress=False)
    fig = result.plot()
    ax, bar = fig.axes  # the plot and the cost colour bar
    assert bar.get_ylabel() == "cost, USD"
    assert ax.get_ylabel() == "expected re-acquired tokens (lower is better)"
    labels = {text.get_text() for text in ax.texts}
    on_front = result.table.loc[result.table["on_front"], "label"]
    assert labels == {label.partition(" ")[2] or label for label in on_front}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "defaults" in legend and any(t.startswith("recommended: ") for t in legend)


def test_runs_are_read_on_first_use_and_a_deleted_store_is_named(tmp_path):
    """``result.runs`` reads the replays' rows from the store when first asked for; a store deleted before
    that is named in the error, not a KeyError from an empty table."""
    import shutil

    corpus = wb.load(ROOT / "data", progress=False)
    space = {"min_tokens": [5_000, 20_000]}
    kept = wb.tune(corpus, "sm-compact", space=space, store=tmp_path / "kept", executor="inline", progress=False)
    assert kept._runs is None  # nothing read yet
    assert kept.runs.summary().shape[0] == 2 + 1 + 1  # the grid, the base config and the baseline
    gone = wb.tune(corpus, "sm-compact", space=space, store=tmp_path / "gone", executor="inline", progress=False)
    shutil.rmtree(tmp_path / "gone")
    with pytest.raises(FileNotFoundError, match="no longer holds the sweep's cells"):
        gone.runs  # noqa: B018
