"""The replays over the real corpus: real requests validate, naive cuts break, adjusted cuts hold pairing,
and only the thinking-aware adjustment also holds the thinking rule."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.studies.naive_cut import invariants_report, keep_window_cuts, validate_report
from workbench.transcript.model import Session

pytestmark = pytest.mark.corpus

PAIRING_RULES = {"tool_result_without_tool_use", "tool_use_without_tool_result", "duplicate_tool_use_id"}


@pytest.fixture(scope="module")
def report(claude_sessions: list[Session]) -> dict[str, Any]:
    return invariants_report(claude_sessions)


def test_every_real_request_validates(claude_sessions: list[Session]) -> None:
    result = validate_report(claude_sessions)
    assert result["sessions"] == len(claude_sessions)
    assert result["steps"] > 500
    assert result["violations"] == []
    assert result["repaired"] == 0


def test_validate_report_without_repair_is_also_clean(claude_sessions: list[Session]) -> None:
    result = validate_report(claude_sessions, repair=False)
    assert result["violations"] == [] and result["repaired"] == 0


def test_report_shape(report: dict[str, Any]) -> None:
    for family in ("all_indices", "keep_window"):
        for variant in ("naive", "repaired", "adjusted", "adjusted_thinking"):
            cell = report[family][variant]
            assert set(cell) >= {"cuts", "violating", "rate", "by_rule"}
            assert cell["cuts"] > 0 and 0 <= cell["rate"] <= 1


def test_naive_cuts_break_pairing_and_adjusted_cuts_do_not(report: dict[str, Any]) -> None:
    every = report["all_indices"]
    assert every["naive"]["violating"] > 0 and every["naive"]["rate"] > 0.1
    assert every["adjusted"]["violating"] == 0
    assert every["repaired"]["violating"] == 0 and every["repaired"]["repairs"] > 0
    assert every["adjusted_thinking"]["violating"] == 0


def test_keep_window_adjusted_cuts_only_miss_thinking(report: dict[str, Any]) -> None:
    """The reference adjustment fixes pairing and split siblings, but a window that starts inside a long
    tool loop can begin with a thinking-less response (docs §9 item 11 error when thinking is on)."""
    keep = report["keep_window"]
    assert keep["naive"]["rate"] > 0
    assert not PAIRING_RULES & set(keep["adjusted"]["by_rule"])
    assert set(keep["adjusted"]["by_rule"]) <= {"final_assistant_missing_thinking"}
    assert keep["adjusted"]["violating"] <= keep["repaired"]["violating"] <= keep["naive"]["violating"]


def test_keep_window_thinking_gap_stays_visible_and_the_extension_closes_it(report: dict[str, Any]) -> None:
    """``adjusted`` is still the reference's number (the finding); ``adjusted_thinking`` has none, at the
    price of the extra records/tokens it reports."""
    keep = report["keep_window"]
    missing = keep["adjusted"]["by_rule"]["final_assistant_missing_thinking"]["cuts"]
    assert keep["adjusted"]["violating"] == missing > 0
    thinking = keep["adjusted_thinking"]
    assert thinking["violating"] == 0 and thinking["by_rule"] == {}
    assert thinking["cuts"] == keep["adjusted"]["cuts"]
    assert thinking["moved_cuts"] >= missing
    assert thinking["extra_records_mean"] > 0 and thinking["extra_tokens_mean"] > 0
    assert thinking["extra_records_mean_moved"] >= thinking["extra_records_mean"]
    assert thinking["extra_tokens_mean_moved"] >= thinking["extra_tokens_mean"]


def test_keep_window_cuts_only_move_earlier(main_sessions: list[Session]) -> None:
    total = 0
    for session in main_sessions:
        for _step, offset, naive, start, end in keep_window_cuts(session):
            if naive >= 0:
                assert offset <= start <= naive <= end
                total += 1
    assert total > 300
