"""Session-memory sections: sizes against the caps, truncation markers, diffs between extractions."""

from __future__ import annotations

import pytest

from workbench.memory.template import MAX_SECTION_LENGTH, TRUNCATION_MARKER, SessionMemory
from workbench.transcript.model import Session
from workbench.widgets import MemorySectionsView, memory_diff, memory_history, memory_snapshot, replay_memory


def _oversized() -> SessionMemory:
    return SessionMemory.from_contents(
        {
            "Session Title": "Fix the parser",
            "Worklog": "\n".join(f"- step {i}: edited parser.py line {i}" for i in range(600)),
        }
    )


def test_snapshot_sizes_and_truncation() -> None:
    snap = memory_snapshot(_oversized(), step=7)
    assert [s.name for s in snap.sections][:2] == ["Session Title", "Current State"] and len(snap.sections) == 10
    worklog = next(s for s in snap.sections if s.name == "Worklog")
    assert worklog.over_cap and worklog.tokens > MAX_SECTION_LENGTH and worklog.truncated
    assert worklog.truncated_content.endswith(TRUNCATION_MARKER.strip("\n"))
    assert snap.truncated_sections == ("# Worklog",)
    assert not next(s for s in snap.sections if s.name == "Session Title").truncated
    assert snap.total_tokens > worklog.tokens and snap.step == 7


def test_diff_between_extractions() -> None:
    before = SessionMemory.from_contents({"Current State": "writing tests", "Worklog": "- one"})
    after = SessionMemory.from_contents({"Current State": "tests pass", "Worklog": "- one\n- two"})
    diffs = {d.heading: d for d in memory_diff(before, after)}
    assert set(diffs) == {"# Current State", "# Worklog"}
    assert (diffs["# Worklog"].added, diffs["# Worklog"].removed) == (1, 0)
    assert "+- two" in diffs["# Worklog"].lines
    assert (diffs["# Current State"].added, diffs["# Current State"].removed) == (1, 1)
    assert memory_diff(after, after) == []


def test_view_renders_bars_markers_and_diff() -> None:
    history = [
        {"step": 3, "memory": SessionMemory.from_contents({"Worklog": "- one"})},
        {"step": 9, "memory": _oversized()},
    ]
    view = MemorySectionsView(history)
    html = view.sections.value
    assert "wb-truncation-marker" in html and "[truncated at compaction]" in html
    assert "/ 2,000" in html and "/ 12,000" in html and "extraction at step 9" in html
    assert "changes since the extraction at step 3" in view.diff.value
    view.pick.value = 0
    assert "first extraction" in view.diff.value and "wb-truncation-marker" not in view.sections.value
    assert memory_history("# Worklog\n- x")[0][0] is None


@pytest.mark.corpus
def test_replay_keeps_the_extraction_history(main_sessions: list[Session]) -> None:
    session = max(main_sessions, key=lambda s: len(s.conversation()))
    replay = replay_memory(session)
    assert len(replay.history) >= 2
    steps = [h["step"] for h in replay.history]
    assert steps == sorted(steps)
    assert all(isinstance(h["memory"], SessionMemory) for h in replay.history)
    assert any(e["kind"] == "sm-compact" for e in replay.result.events)
    view = MemorySectionsView(replay)
    assert view.pick.max == len(replay.history) - 1
    assert view.diffs(), "the last two extractions should differ"
    # a plain ReplayResult gives the memory as inlined in each sm-compact summary
    assert memory_history(replay.result)
