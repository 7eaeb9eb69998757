"""The public API: the issue's snippet, with this project's names, runs on data/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

import workbench as wb

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


@pytest.fixture(scope="module")
def corpus():
    return wb.load(DATA, progress=False)


@pytest.fixture(scope="module")
def runs(corpus):
    return wb.replay(corpus, ["none", "sm-compact", wb.strategy("sm-compact", min_tokens=20_000)], progress=False)


def _hashes(frame: pd.DataFrame) -> set[str]:
    return set(frame["config_hash"])


def test_the_snippet(corpus, runs, tmp_path, monkeypatch):
    assert len(corpus) == 6 and len(corpus.main) == 5
    session = corpus.largest()
    assert runs.labels == ["none", "sm-compact", "sm-compact min_tokens=20k"]
    for frame in (runs.steps, runs.events):
        assert {"label", "config_hash", "session_id", "strategy"} <= set(frame.columns)
    summary = runs.summary()
    assert list(summary["label"]) == runs.labels and list(summary.columns[:2]) == ["label", "strategy"]
    for column in ("saved_share", "expected_recovery_tokens", "cost_usd", "violating_steps", "steps_blocked"):
        assert column in summary.columns
    assert summary.set_index("label").loc["none", "saved_share"] == 0
    assert summary.set_index("label").loc["sm-compact", "saved_share"] > 0
    timeline, pareto = runs.plot.timeline(session), runs.plot.pareto()
    assert isinstance(timeline, Figure) and isinstance(pareto, Figure)
    legend = [t.get_text() for t in timeline.axes[0].get_legend().get_texts()]
    assert "sm-compact min_tokens=20k" in legend
    assert not any(h in text for h in _hashes(runs.configs) for text in legend)
    monkeypatch.chdir(tmp_path)
    swept = wb.sweep(ROOT / "experiments" / "smoke.yaml", store=tmp_path / "store", executor="inline", progress=False)
    assert swept.sweep.cells_total == 60 and "sm-compact min_tokens=5k trigger=40%" in swept.labels
    assert "label" in swept.summary().columns and "label" in swept.steps.columns
    runs.save(tmp_path / "mine")
    report = wb.report(tmp_path / "mine")
    assert set(report.strategies["label"]) == set(runs.labels)
    assert "sm-compact min_tokens=20k" in report.text
    view = wb.widgets.keep_window(session)
    assert view.state.session_id == session.id
    assert any(line.startswith("as a config: sm-compact") for line in wb.widgets.readout_lines(view.state))
    assert "as a config: sm-compact min_tokens=20k" in "\n".join(wb.widgets.readout_lines(view.set(min_tokens=20_000)))


def test_replay_is_the_engine(corpus, runs):
    """No second implementation: the rows are `replay_session`'s, plus label and config_hash."""
    from workbench.replay import replay_session
    from workbench.strategies import create

    session = corpus.largest()
    direct = pd.DataFrame(replay_session(session, create("sm-compact", {"min_tokens": 20_000})).steps)
    mine = runs.steps[(runs.steps["label"] == "sm-compact min_tokens=20k") & (runs.steps["session_id"] == session.id)]
    pd.testing.assert_frame_equal(mine.drop(columns=["label", "config_hash"]).reset_index(drop=True), direct)


def test_replay_in_worker_processes_gives_the_same_frames(corpus, runs):
    """``workers=2``: the sessions are replayed by two forked processes, the rows come back in order."""
    pooled = wb.replay(
        corpus, ["none", "sm-compact", wb.strategy("sm-compact", min_tokens=20_000)], progress=False, workers=2
    )
    for frame in ("configs", "cells", "steps", "events"):
        pd.testing.assert_frame_equal(getattr(pooled, frame), getattr(runs, frame))
    assert len(pooled.cells) == 3 * len(corpus)
    with pytest.raises(ValueError, match="--workers must be a positive number"):
        wb.replay(corpus, "none", progress=False, workers=0)


def test_a_failing_strategy_fails_the_pooled_replay_as_it_fails_one_process(corpus):
    class Broken(wb.Strategy):
        name = "broken-in-worker"
        Config = wb.StrategyConfig

        def compact(self, view, state):
            raise RuntimeError(f"boom at {view.step}")

    for workers in (1, 2):
        with pytest.raises(RuntimeError, match="boom at 0"):
            wb.replay(corpus, Broken, progress=False, workers=workers)


def test_summary_by_session_and_the_same_tables_as_a_sweep(corpus, runs):
    from workbench.experiments.tables import config_table

    per_session = runs.summary(by="session")
    assert len(per_session) == 3 * 6 and per_session["label"].notna().all()
    pooled = config_table(runs.summary(by="session", columns="all")).set_index("config_hash")
    mine = runs.summary(columns="all").set_index("config_hash")
    assert mine["saved_share"].to_dict() == pytest.approx(pooled["saved_share"].to_dict())


def test_summary_shows_the_columns_a_comparison_acts_on(runs):
    """The default summary is at most 15 columns, each described in ``attrs``; the rest on request."""
    summary = runs.summary()
    assert list(summary.columns) == [
        "label",
        "strategy",
        "sessions",
        "steps",
        "compactions",
        "saved_share",
        "saved_share_ci_low",
        "saved_share_ci_high",
        "violating_steps",
        "steps_blocked",
        "expected_recovery_tokens",
        "cost_usd",
        "total_cost_usd",
        "unpriced_sessions",
    ]
    assert set(summary.attrs["columns"]) == set(summary.columns) and all(summary.attrs["columns"].values())
    per_session = runs.summary(by="session")
    assert len(per_session.columns) <= 15 and "session_id" in per_session.columns
    every = runs.summary(columns="all")
    assert {"config_hash", "needed_recall", "peak_context_tokens", "cfg.min_tokens"} <= set(every.columns)
    assert "references kept" in every.attrs["columns"]["needed_recall"]
    assert every.attrs["columns"]["cfg.min_tokens"] and len(every.columns) > 40
    assert every[list(summary.columns)].equals(summary)
    picked = runs.summary(columns=["label", "needed_recall"])
    assert list(picked.columns) == ["label", "needed_recall"]
    # the savings family alone: the default columns up to the blocked calls
    assert list(runs.summary(metrics=("savings",)).columns) == list(summary.columns)[:10]
    with pytest.raises(KeyError, match="no_such_column"):
        runs.summary(columns=["label", "no_such_column"])
    with pytest.raises(ValueError, match="columns must be"):
        runs.summary(columns="everything")


def test_pareto_plots_expected_recovery_against_savings(runs):
    """The fidelity axis a comparison leads with is the expected re-acquisition, lower is better."""
    axes = runs.plot.pareto().axes[0]
    assert "expected re-acquired tokens" in axes.get_ylabel()
    assert "references kept" in runs.plot.pareto(y="needed_recall").axes[0].get_ylabel()
    table = wb.widgets.compare(runs).current_table()  # the widget's table: the sessions come with the runs
    assert list(table.columns[table.columns.get_loc("saved_share") + 1 :][:1]) == ["expected_recovery_tokens"]
    summary = runs.summary().set_index("label")["expected_recovery_tokens"]
    assert table.set_index("label")["expected_recovery_tokens"].to_dict() == pytest.approx(summary.to_dict())


def test_strategy_arguments():
    nested = wb.strategy("sm-compact", trigger={"pct_of_window": 60})
    dotted = wb.strategy("sm-compact", **{"trigger.pct_of_window": 60})
    assert nested.config == dotted.config and nested.config.trigger.pct_of_window == 60
    assert wb.strategy(nested, min_tokens=5_000).config.trigger.pct_of_window == 60
    with pytest.raises(ValueError, match="min_tokenz"):
        wb.strategy("sm-compact", min_tokenz=1)
    with pytest.raises(ValueError, match="unknown strategy"):
        wb.strategy("no-such-strategy")


def test_sessions_indexing(corpus):
    first = corpus[0]
    assert corpus[first.id[:8]] is first and len(corpus[:2]) == 2
    overview = corpus.overview()
    assert list(overview["session_id"]) == [s.id for s in corpus] and overview["api_calls"].sum() > 0
    assert corpus.skipped().empty
    with pytest.raises(KeyError):
        corpus["zzzz"]
    with pytest.raises(FileNotFoundError):
        wb.load(DATA / "missing", progress=False)


def test_an_unpriced_session_is_counted_not_a_null_total(runs):
    """A config's pooled cost is the sum over its priced sessions, and ``unpriced_sessions`` says how many it
    leaves out: one unpriced session neither nulls the total nor hides."""
    from workbench.experiments.tables import config_table

    cells = runs.summary(by="session", columns="all")
    first = cells.iloc[0]["config_hash"]
    priced = config_table(cells).set_index("config_hash")
    cells.loc[cells.index[0], "cost_usd"] = float("nan")
    table = config_table(cells).set_index("config_hash")
    assert table.loc[first, "cost_usd"] == pytest.approx(
        priced.loc[first, "cost_usd"] - runs.summary(by="session").iloc[0]["cost_usd"]
    )
    assert table.loc[first, "unpriced_sessions"] == 1 and (table.drop(first)["unpriced_sessions"] == 0).all()
    assert table["cost_usd"].notna().all()


def test_import_is_cheap_and_verbs_stand_for_their_modules():
    code = "import sys, workbench; print(sorted(m for m in ('pandas', 'matplotlib', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    from workbench.replay import replay_session

    assert wb.replay.replay_session is replay_session
    assert callable(wb.replay) and callable(wb.report) and callable(wb.strategies)
    assert "sm-compact" in set(wb.strategies()["name"])
    assert set(wb.__all__) <= set(dir(wb))
    for name in wb.__all__:
        assert getattr(wb, name) is not None, name


def test_the_five_notebooks_use_only_the_public_api_and_widgets():
    import re

    import nbformat

    names = ("01_quickstart", "02_tune_keep_window", "03_compare_strategies", "04_api_invariants", "05_session_memory")
    public = set(wb.__all__)
    widgets = set(wb.widgets.__all__)
    for name in names:
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        imports = re.findall(r"^\s*(?:from|import)\s+(workbench\S*)(.*)$", code, flags=re.M)
        assert imports == [("workbench", " as wb")], (name, imports)
        used = set(re.findall(r"\bwb\.(\w+)", code))
        assert used <= public, (name, used - public)
        assert set(re.findall(r"\bwb\.widgets\.(\w+)", code)) <= widgets, name
