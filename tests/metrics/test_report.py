import json

import pytest

from workbench.replay import replay_frames, replay_sessions
from workbench.reporting.report import load_results, render_report, report, write_manifest
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
    data = report(tmp_path, references=True)  # sessions loaded from the manifests' inputs
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
    # the user's instructions at stake in each compaction and how many the compacted context lost
    assert by["none"]["instructions"] is None  # nothing compacted, nothing at stake
    assert by["recorded"]["instructions"] > 0 and 0 <= by["recorded"]["instructions_kept"] <= 1
    assert by["recorded"]["instructions_kept"] == pytest.approx(
        1 - by["recorded"]["instructions_lost"] / by["recorded"]["instructions"]
    )
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


@pytest.mark.corpus
def test_report_recovery_cost_and_intervals(tmp_path, corpus, main_sessions):
    """The four strategies' report carries expected recovery, total cost, the CI
    fields and paired differences; `recorded` carries the measured recovery as its reference; few
    sessions are said so."""
    sessions = [s for s in main_sessions if len(s.records) > 1000]
    names = ["sm-compact", "full-compact", "recorded", "observation-masking"]
    _write(tmp_path, sessions, names, [corpus / "claude-code"])
    data = report(tmp_path, references=True)
    json.dumps(data)
    by = {r["strategy"]: r for r in data["strategies"]}
    assert set(by) == set(names)
    for row in by.values():
        for metric in ("saved_share", "needed_recall", "expected_recovery_tokens", "cost_usd", "total_cost_usd"):
            low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
            assert low is not None and low <= row[metric] + 1e-9 and row[metric] <= high + 1e-9, (metric, row)
        assert row["expected_recovery_tokens"] > 0
        assert row["total_cost_usd"] == pytest.approx(row["cost_usd"] + row["recovery_cost_usd"])
    assert by["recorded"]["measured_recovery_tokens"] == sum(r["recovery_tokens"] for r in data["recovery"])
    assert by["sm-compact"]["measured_recovery_tokens"] is None
    assert len(data["recovery"]) == 3 and data["baseline"] == "recorded"
    diffs = {(d["strategy"], d["metric"]) for d in data["differences"]}
    assert ("sm-compact", "needed_recall") in diffs and ("full-compact", "total_cost_usd") in diffs
    assert all(d["sessions"] == 3 for d in data["differences"])
    assert any("only 3 session(s) had a compaction" in n for n in data["notes"])
    text = render_report(data)
    assert "95% bootstrap intervals" in text and "Paired differences vs `recorded`" in text
    assert "re-acquired after Claude's recorded compactions" in text
    with pytest.raises(ValueError, match="baseline strategy 'nope'"):
        report(tmp_path, baseline="nope")


@pytest.mark.corpus
def test_recovery_is_null_for_a_format_without_tool_calls(tmp_path, corpus):
    """An Aider chat history records no tool calls: expected recovery is null, never 0."""
    from workbench.transcript import load_paths

    path = corpus / "aider" / "aider.chat.history.md"
    sessions = list(load_paths([path]))
    _write(tmp_path, sessions, ["none"], [path])
    data = report(tmp_path)
    assert data["sessions"] and all(r["expected_recovery_tokens"] is None for r in data["sessions"])
    assert data["strategies"][0]["expected_recovery_tokens"] is None
    assert data["strategies"][0]["expected_recovery_tokens_ci_low"] is None


@pytest.mark.corpus
def test_references_are_computed_on_request(tmp_path, corpus, main_sessions):
    """Without ``references`` the report leaves references kept out (null, a note says how to add them, the
    text shows no recall column) and leads with the expected recovery; with it, the recall columns and
    Claude's own compactions scored the same way are there, and nothing else changes."""
    sessions = [s for s in main_sessions if len(s.records) > 1000]
    _write(tmp_path, sessions, ["sm-compact", "recorded"], [corpus / "claude-code"])
    plain, full = report(tmp_path), report(tmp_path, references=True)
    assert all(r["needed_recall"] is None for r in plain["sessions"]) and plain["reference"] == []
    assert any("`--references` adds them" in note for note in plain["notes"])
    assert all(r["needed_recall"] is not None for r in full["sessions"]) and full["reference"]
    for a, b in zip(plain["sessions"], full["sessions"], strict=True):
        for key in ("tokens_saved", "violations", "expected_recovery_tokens", "cost_usd", "total_cost_usd"):
            assert a[key] == b[key], key
    header = next(line for line in render_report(plain).splitlines() if line.startswith("strategy"))
    assert "needed recall" not in header and "recovery tok" in header
    header = next(line for line in render_report(full).splitlines() if line.startswith("strategy"))
    assert header.index("recovery tok") < header.index("needed recall")
