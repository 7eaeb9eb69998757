import json

import pytest

from workbench.replay import replay_frames, replay_sessions
from workbench.report import load_results, render_report, report, write_manifest
from workbench.strategies import create

HEADLINE = {"tokens_saved", "peak_context_tokens", "violations", "needed_recall", "dropped_recall", "cost_usd"}


def _write(root, sessions, names, inputs):
    for name in names:
        strategy = create(name)
        steps, events = replay_frames(replay_sessions(sessions, strategy))
        folder = root / name
        folder.mkdir(parents=True)
        steps.to_parquet(folder / "steps.parquet")
        events.to_parquet(folder / "events.parquet")
        write_manifest(folder, name, strategy.config.model_dump(mode="json"), inputs)


@pytest.mark.corpus
def test_report_over_corpus_runs(tmp_path, corpus, main_sessions):
    sessions = [s for s in main_sessions if len(s.records) > 1000]
    _write(tmp_path, sessions, ["none", "recorded", "microcompact-truncate"], [corpus / "claude-code"])
    data = report(tmp_path)  # sessions loaded from the manifests' inputs
    json.dumps(data)
    assert {r["strategy"] for r in data["strategies"]} == {"none", "recorded", "microcompact-truncate"}
    assert len(data["sessions"]) == 3 * len(sessions)
    for row in data["sessions"]:
        assert set(row) >= HEADLINE
        assert row["needed_recall"] is not None and row["cost_usd"] > 0
    by = {r["strategy"]: r for r in data["strategies"]}
    assert by["none"]["needed_recall"] == 1.0 and by["none"]["tokens_saved"] == 0
    assert by["recorded"]["tokens_saved"] > 0 and by["recorded"]["compactions"] == 3
    assert by["recorded"]["needed_recall"] < 1.0
    assert by["none"]["steps_blocked_without"] > 0 and by["recorded"]["steps_blocked"] == 0
    assert data["reference"] and data["calibration"]
    from workbench.metrics.bill import bill_sessions

    bills = bill_sessions(sessions).set_index("session_id")["recorded_cost_usd"].to_dict()
    for row in data["sessions"]:  # the bill next to the simulated cost, the same under every strategy
        assert row["recorded_cost_usd"] == pytest.approx(bills[row["session_id"]])
        assert row["recorded_cost_output_estimated_usd"] >= row["recorded_cost_usd"]
        assert row["output_tokens_estimate"] >= row["recorded_output_tokens"] and row["output_tokens_estimated"] > 0
    text = render_report(data)
    assert "By strategy" in text and "recorded" in text


def test_report_without_sessions(tmp_path, main_sessions):
    sessions = main_sessions[:2]
    _write(tmp_path, sessions, ["none"], [])
    steps, _, runs = load_results(tmp_path)
    assert len(runs) == 1 and steps["config_hash"].nunique() == 1
    data = report(tmp_path)
    assert data["sessions"][0]["needed_recall"] is None
    assert any("not available" in n for n in data["notes"])
    render_report(data)
