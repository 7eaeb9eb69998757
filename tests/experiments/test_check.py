"""``workbench check`` / ``wb.check``: each shape a history can have that the workbench cannot fully model
is named on its session's row, on generated sessions and on the real corpus."""

from __future__ import annotations

import json

import pytest

import workbench as wb
from workbench.cli import main
from workbench.experiments.check import RESUMED_TOKENS, check_session, summary
from workbench.synthetic.shapes import Shape, shaped_session


def test_a_plain_session_is_fully_modelled() -> None:
    row = check_session(shaped_session(Shape(calls=10)), ["none", "sm-compact", "observation-masking"])
    assert row.problems == [] and not row.resumed and row.window is None
    assert row.versions == ["2.1.88"] and row.unknown_versions == [] and row.unpriced_models == []


def test_each_shape_is_named() -> None:
    resumed = check_session(shaped_session(Shape(calls=6, hidden_tokens=184_000, result_chars=200)), [])
    assert resumed.resumed and resumed.hidden_tokens > RESUMED_TOKENS and resumed.window is None
    wide = check_session(shaped_session(Shape(calls=6, hidden_tokens=300_000, model="claude-sonnet-4-5[1m]")), [])
    assert wide.window == 1_000_000 and wide.resumed
    broken = check_session(shaped_session(Shape(calls=8, broken_at=2)), [])
    assert broken.recording_violations == 5 and broken.recording_rules == ["tool_use_without_tool_result"]
    newer = check_session(shaped_session(Shape(calls=4, version="2.1.301", model="acme-internal-7b")), [])
    assert newer.unknown_versions == ["2.1.301"] and newer.unpriced_models == ["acme-internal-7b"]
    assert any("newer than the version table" in p for p in newer.problems)
    assert any("unpriced: acme-internal-7b" in p for p in newer.problems)
    assert any("acme-internal-7b unknown to Claude Code" in p for p in newer.problems)
    within = check_session(shaped_session(Shape(calls=4, version="2.1.240")), [])
    assert within.unknown_versions == [] and not any("Claude Code" in p for p in within.problems)
    totals = summary([resumed, wide, broken, newer])
    assert totals["resumed_sessions"] == 2 and totals["window_1m_sessions"] == 1
    assert totals["recording_violation_sessions"] == 1 and totals["unknown_versions"] == ["2.1.301"]


def test_a_strategy_that_adds_rejected_requests_is_named() -> None:
    session = shaped_session(Shape(calls=30, batch=3, result_chars=40_000, hidden_tokens=20_000))
    row = check_session(session, ["none", "sm-compact", "sm-compact-naive", "truncate-oldest"])
    assert "sm-compact" not in row.added_violations
    assert row.added_violations.get("truncate-oldest", 0) > 0


def test_wb_check_is_a_frame_with_the_summary() -> None:
    frame = wb.check([shaped_session(Shape(calls=5)), shaped_session(Shape(calls=5, broken_at=1))], ["none"])
    assert list(frame.recording_violations) == [0, 3]
    assert frame.attrs["summary"]["sessions"] == 2


@pytest.mark.corpus
def test_check_names_the_shapes_of_the_dev_corpus(corpus, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as done:
        main(["check", str(corpus / "claude-code-more" / "obra-episodic-memory"), "-s", "sm-compact", "--json"])
    assert done.value.code == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["file"].rsplit("/", 1)[-1]: row for row in data["sessions"]}
    large = rows["large-conversation.jsonl"]
    assert large["resumed"] and large["hidden_tokens"] > 280_000 and large["window"] == 1_000_000
    assert large["recording_violations"] > 0 and large["loops"] == {} and large["added_violations"] == {}
    assert data["summary"]["resumed_sessions"] == 1


def test_an_unknown_strategy_is_a_usage_error(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as done:
        main(["check", str(tmp_path), "-s", "no-such-strategy"])
    assert done.value.code == 2
    assert "no-such-strategy" in capsys.readouterr().err
