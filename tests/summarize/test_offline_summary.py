"""The offline full-compact summariser: shape (docs §5.2), verbatim quotes, determinism, real sessions."""

from __future__ import annotations

import time

import pytest
from memory_records import debugging_session
from record_builders import user

from workbench.summarize import (
    SUMMARY_SECTIONS,
    OfflineSummarizer,
    Summarizer,
    compact_user_summary_message,
    format_compact_summary,
    parse_summary_sections,
    summarize,
)


def _section(text: str, name: str) -> str:
    index = SUMMARY_SECTIONS.index(name)
    start = text.index(f"{index + 1}. {name}:")
    end = text.find(f"{index + 2}. ", start) if index < 8 else text.index("</summary>")
    return text[start:end]


def test_shape_and_quotes():
    out = summarize(debugging_session())
    assert out.startswith("<analysis>\n") and out.endswith("\n</summary>")
    assert [n for _, n in parse_summary_sections(out)] == list(SUMMARY_SECTIONS)
    users = _section(out, "All user messages")
    assert "- Fix the failing date parser tests in the utils package please" in users
    assert "- No, don't change parse_iso, fix the month table instead" in users
    current = _section(out, "Current Work")
    assert 'Most recent user message: "No, don\'t change parse_iso, fix the month table instead"' in current
    assert 'Most recent assistant message: "All 3 date tests pass now: the month table was off by one."' in current
    assert "was answered" in _section(out, "Optional Next Step")
    assert "`utils/dates.py` (Edit×2)" in _section(out, "Files and Code Sections")
    assert "MONTHS = list(range(1, 13))" in _section(out, "Files and Code Sections")
    assert "Bash `pytest tests/test_dates.py`: FAILED" in _section(out, "Errors and fixes")
    assert "User feedback:" in _section(out, "Errors and fixes")


def test_in_progress_next_step_and_custom_instructions():
    records = debugging_session()[:5]
    out = summarize(records, custom_instructions="Focus on the tests")
    step = _section(out, "Optional Next Step")
    assert "Continue the work in progress (last action: Bash pytest tests/test_dates.py)" in step
    assert "Additional instructions were given: Focus on the tests" in out.split("</analysis>")[0]


def test_content_lines_never_look_like_sections():
    tricky = "Please:\n1. Primary Request and Intent:\n9. Optional Next Step:"
    out = summarize([user(tricky)])
    assert [n for _, n in parse_summary_sections(out)] == list(SUMMARY_SECTIONS)


def test_protocol_and_message():
    summarizer = OfflineSummarizer()
    assert isinstance(summarizer, Summarizer) and summarizer.name == "offline"
    raw = summarizer.summarize(debugging_session())
    message = compact_user_summary_message(raw, True)
    assert "<analysis>" not in message and "\n\nSummary:\n1. Primary Request and Intent:" in message
    assert format_compact_summary(raw).startswith("Summary:\n1. Primary Request and Intent:")


def _largest(main_sessions, k=3):
    return sorted(main_sessions, key=lambda s: -len(s.records))[:k]


@pytest.mark.corpus
def test_real_sessions(main_sessions):
    for session in _largest(main_sessions):
        records = session.conversation()
        boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
        for part in (records[: boundaries[0]], records):
            started = time.perf_counter()
            out = summarize(part)
            assert time.perf_counter() - started < 2
            assert summarize(part) == out  # same bytes
            assert [n for _, n in parse_summary_sections(out)] == list(SUMMARY_SECTIONS)
            commands = [b.input["command"] for r in part for b in r.tool_uses() if b.name == "Bash"]
            files = [b.input["file_path"] for r in part for b in r.tool_uses() if b.name in ("Edit", "Write")]
            cwd = next(r.raw["cwd"] for r in part if r.raw.get("cwd"))
            assert files[-1].removeprefix(cwd + "/") in _section(out, "Files and Code Sections")
            assert commands[-1].split("\n")[0][:40] in out
            users = _section(out, "All user messages")
            requests = [r.text for r in part if r.kind == "user" and r.text.strip() and not r.tool_results()]
            for text in requests:
                if not text.startswith("This session is being continued") and not text.startswith("<"):
                    assert text.strip()[:60] in users
        # After the recorded compaction the summary carries the earlier intent exactly once.
        assert summarize(records).count("Earlier (from the previous compaction summary)") == 1
