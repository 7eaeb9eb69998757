"""Ground truth: Claude Code's own estimate just before each recorded auto-compaction."""

from __future__ import annotations

import json

from cli_helpers import run_cli

from workbench.tokens.calibration import boundary_table, calibration_frame, calibration_summary


def test_claude_context_reproduces_every_recorded_pre_tokens_within_one_percent(claude_sessions) -> None:
    table = boundary_table(claude_sessions)
    assert len(table) == 3 and set(table["trigger"]) == {"auto"}
    assert (table["claude-context error_pct"].abs() < 1.0).all(), table.to_string()
    # 8463c716: the final usage was persisted and nothing else was in memory -> exact
    exact = table[table["session_id"].str.startswith("8463c716")]
    assert (exact["claude-context"] == exact["pre_tokens"]).all()


def test_calibration_table_covers_every_estimator(claude_sessions) -> None:
    summary = calibration_summary(calibration_frame(claude_sessions))
    assert set(summary["estimator"]) == {
        "claude-rough",
        "claude-padded",
        "tiktoken:o200k_base",
        "tiktoken:cl100k_base",
        "usage",
        "claude-context",
        "claude-context-last-record",
    }
    by_name = summary.set_index("estimator")
    assert (by_name["calls"] > 400).all()
    # the usage-anchored estimate is far closer than any per-record sum
    assert by_name.loc["claude-context", "median_abs_error_pct"] < 1
    assert by_name.loc["claude-rough", "median_abs_error_pct"] > by_name.loc["claude-padded", "median_abs_error_pct"]


def test_tokens_cli_json(corpus) -> None:
    result = run_cli("tokens", str(corpus / "claude-code"), "-e", "claude-rough", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [row["estimator"] for row in data["estimators"]] == ["claude-rough"]
    assert len(data["boundaries"]) == 3
    bad = run_cli("tokens", str(corpus / "claude-code"), "-e", "nope")
    assert bad.exit_code == 2 and "unknown estimator" in bad.output
