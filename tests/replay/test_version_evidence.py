"""Per-version evidence: every recorded compaction of the dev corpus, the version-table row it is replayed
with, and whether the replay reproduces it (`workbench.replay.reproduction`, ``workbench reproduce``).

The expected rows are written out, so a change of the table that loses a reproduced compaction fails here,
and the docs' table (docs/replay.md) is the renderer's output over the same corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.replay.reproduction import markdown_table, reproduce, summary_by_row
from workbench.transcript import load_paths

pytestmark = pytest.mark.corpus

#: (session, version, model, row, recorded call, trigger, full-compact's call, claude-code's first call or
#: None where the row is not the session's first automatic compaction)
EXPECTED = [
    ("258c7280", "2.1.39", "claude-opus-4-6", "2.1.21–2.1.50", 102, "auto", 102, 102),
    ("4d5611e5", "2.1.39", "claude-opus-4-6", "2.1.21–2.1.50", 61, "auto", 61, 61),
    ("8463c716", "2.1.39", "claude-opus-4-6", "2.1.21–2.1.50", 71, "auto", 71, 71),
    ("24a90d02", "2.0.57", "claude-opus-4-5-20251101", "1.0.x–2.0.57", 89, "auto", 89, 89),
    ("b566e56e", "2.0.57", "claude-opus-4-5-20251101", "1.0.x–2.0.57", 49, "auto", 49, 49),
    ("b566e56e", "2.0.57", "claude-opus-4-5-20251101", "1.0.x–2.0.57", 109, "auto", 109, None),
    ("b566e56e", "2.0.57", "claude-opus-4-5-20251101", "1.0.x–2.0.57", 163, "auto", 163, None),
    ("b566e56e", "2.0.57", "claude-opus-4-5-20251101", "1.0.x–2.0.57", 203, "auto", 203, None),
    ("d6a37ffc", "2.0.58", "claude-opus-4-5-20251101", "2.0.58–2.0.x", 36, "manual", 36, None),
    ("d6a37ffc", "2.0.58", "claude-opus-4-5-20251101", "2.0.58–2.0.x", 72, "manual", 72, None),
    ("765a9806", "2.0.42", "claude-sonnet-4-5-20250929", "1.0.x–2.0.57", 23, "auto", 23, 23),
    ("765a9806", "2.0.42", "claude-sonnet-4-5-20250929", "1.0.x–2.0.57", 89, "auto", 89, None),
    ("765a9806", "2.0.42", "claude-sonnet-4-5-20250929", "1.0.x–2.0.57", 175, "auto", 175, None),
    ("ce3dbbb4", "2.0.37", "claude-sonnet-4-5-20250929", "1.0.x–2.0.57", 127, "auto", 127, 127),
    # resumed on 2.0.42 from the leaf before the first compaction: the request held the old branch, which
    # the file keeps before the abandoned one, so the replay reaches the threshold one call later
    ("ce3dbbb4", "2.0.42", "claude-sonnet-4-5-20250929", "1.0.x–2.0.57", 199, "auto", 200, None),
]


@pytest.fixture(scope="module")
def rows(corpus):
    return reproduce(load_paths([corpus]))


def test_every_recorded_compaction_is_enumerated_and_reproduced(rows) -> None:
    got = [
        (
            r.recorded.session_id[:8],
            r.recorded.version,
            r.recorded.model,
            r.row,
            r.recorded.step,
            r.recorded.trigger,
            r.full_compact_step,
            r.claude_code_step if r.first_auto else None,
        )
        for r in rows
    ]
    assert sorted(got) == sorted(EXPECTED)
    assert all(r.full_compact_hit for r in rows)
    assert all(r.claude_code_hit for r in rows if r.first_auto)


def test_the_summary_counts_per_row(rows) -> None:
    assert summary_by_row(rows) == {
        "2.1.21–2.1.50": {"auto": 3, "full_compact_hits": 3, "first_auto": 3, "claude_code_hits": 3, "manual": 0},
        "1.0.x–2.0.57": {"auto": 10, "full_compact_hits": 10, "first_auto": 4, "claude_code_hits": 4, "manual": 0},
        "2.0.58–2.0.x": {"auto": 0, "full_compact_hits": 0, "first_auto": 0, "claude_code_hits": 0, "manual": 2},
    }


def test_the_docs_show_this_evidence(rows) -> None:
    page = (Path(__file__).parents[2] / "docs" / "replay.md").read_text()
    for line in markdown_table(sorted(rows, key=lambda r: (r.recorded.file or "", r.recorded.step))):
        assert line in page, line


def test_the_command_reports_the_same(corpus, capsys) -> None:
    from workbench.cli import main

    with pytest.raises(SystemExit) as done:
        main(["reproduce", str(corpus / "claude-code-sonnet45"), "--json"])
    assert done.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["step"] for c in data["compactions"]] == [23, 89, 175, 127, 199]
    assert data["by_row"]["1.0.x–2.0.57"]["full_compact_hits"] == 5


def test_the_size_after_is_compared_with_post_tokens() -> None:
    from workbench.replay.reproduction import RecordedCompaction, Reproduction

    recorded = RecordedCompaction("s", None, 10, "auto", 170_000, 40_000, "2.1.120", "claude-opus-4-6")
    row = Reproduction(recorded, "2.1.117–2.1.222", 167_000, 10, 170_100, 43_000, True, 10)
    assert row.post_tokens_error == pytest.approx(0.075) and row.full_compact_hit and row.claude_code_hit
    early = Reproduction(recorded, "2.1.117–2.1.222", 167_000, 9, 166_000, None, True, None)
    assert early.post_tokens_error is None and not early.full_compact_hit and early.claude_code_hit is False
    assert row.as_dict()["post_tokens_error"] == pytest.approx(0.075)
