"""``workbench advise`` / ``wb.advise``: Claude Code's settings weighed on a history, each paired against
what happened, with intervals and a verdict."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from cli_helpers import run_cli

import workbench as wb
from workbench.experiments.advise import DEFAULT_SETTINGS, Advice, _verdict

ROOT = Path(__file__).resolve().parents[2]


def test_advise_on_the_embedded_corpus(tmp_path: Path) -> None:
    advice = wb.advise(ROOT / "data", store=tmp_path / "s", executor="inline", progress=False)
    assert isinstance(advice, Advice) and advice.sessions == 6
    grid = len(DEFAULT_SETTINGS["trigger.pct_override"]) * len(DEFAULT_SETTINGS["trigger.auto_compact_window"])
    families = advice.settings["family"].value_counts().to_dict()
    assert families == {"threshold": grid - 1, "by hand": 3, "session memory": 4}  # every setting but what happened
    assert "as shipped" not in set(advice.settings["setting"])
    assert {"d_total_cost_usd", "d_total_cost_usd_low", "d_expected_recovery_tokens_high"} <= set(advice.settings)
    prefixes = ("CLAUDE_", "/compact by hand at ", "ENABLE_CLAUDE_CODE_SM_COMPACT=1")
    assert all(s.startswith(prefixes) for s in advice.settings["setting"])
    assert (advice.settings["setting"] == "ENABLE_CLAUDE_CODE_SM_COMPACT=1").sum() == 1  # the shipped keep window
    assert advice.happened["compactions"] >= 1 and advice.happened["total_cost_usd"] > 0
    assert advice.happened["recorded_compactions"] >= 1 and advice.happened["recorded_cost_usd"] > 0
    assert advice.verdict and "verdict: " in advice.render() and "In the recording: " in advice.render()
    rows = advice.settings.dropna(subset=["d_total_cost_usd_low"])
    assert (rows["d_total_cost_usd_low"] <= rows["d_total_cost_usd"]).all()
    assert (rows["d_total_cost_usd"] <= rows["d_total_cost_usd_high"]).all()
    page = advice.write_html(tmp_path / "advice.html").read_text(encoding="utf-8")
    assert "<svg" in page and "Verdict: " in page and "What happened" in page
    assert all(html.escape(setting) in page for setting in advice.settings["setting"])
    assert all(name in page for name in advice.settings.attrs["columns"])  # the legend explains the columns


def test_the_verdict_needs_a_saving_beyond_noise() -> None:
    import pandas as pd

    def frame(high: float, recovery_low: float) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "setting": "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=60",
                    "d_total_cost_usd": -5.0,
                    "d_total_cost_usd_low": -9.0,
                    "d_total_cost_usd_high": high,
                    "d_expected_recovery_tokens": 10.0,
                    "d_expected_recovery_tokens_low": recovery_low,
                    "added_violating_steps": 0,
                }
            ]
        )

    assert _verdict(frame(-1.0, -5.0)).startswith("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=60 would have cost $5.00 less")
    assert _verdict(frame(+1.0, -5.0)).startswith("no setting beats your current one beyond noise")
    assert _verdict(frame(-1.0, +5.0)).startswith("no setting beats")  # cheaper, but it forgets more


def test_the_command(tmp_path: Path) -> None:
    page = tmp_path / "advice.html"
    args = ("advise", ROOT / "data", "--store", tmp_path / "s", "--executor", "inline", "--json", "--html", page)
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sessions"] == 6 and len(data["settings"]) == 21 and data["verdict"] and data["columns"]
    assert data["html"] == str(page) and "<svg" in page.read_text(encoding="utf-8")
    missing = run_cli("advise", tmp_path / "nothing-here")
    assert missing.exit_code == 1 and "internal error" not in missing.output


@pytest.mark.corpus
def test_a_corpus_without_claude_code_is_refused(corpus: Path, tmp_path: Path) -> None:
    result = run_cli("advise", corpus / "gemini-cli", "--store", tmp_path / "s", "--executor", "inline")
    assert result.exit_code == 2 and "needs Claude Code sessions" in result.stderr
