"""The offline session-memory extractor: content, caps (docs §1.1), determinism, real sessions."""

from __future__ import annotations

import time

import pytest
from memory_records import debugging_session
from pydantic import ValidationError
from record_builders import CWD, assistant, result, say, tool_use, user

from workbench.memory.extractor import ExtractorConfig, MemoryExtractor, OfflineMemoryExtractor, extract
from workbench.memory.template import SECTION_HEADINGS, SessionMemory, section_token_sizes
from workbench.tokens.js import rough_tokens


def test_sections_from_a_small_session():
    memory = extract(debugging_session())
    s = memory.contents()
    assert list(s) == list(SECTION_HEADINGS)
    assert s["# Session Title"] == "Fix the failing date parser tests in the utils package …"  # ≤ 10 words
    assert "- Fix the failing date parser tests" in s["# Task specification"]
    assert "`utils/dates.py` (Edit×2; defines parse_iso)" in s["# Files and Functions"]
    assert "searched Grep `MONTHS` in `utils`" in s["# Files and Functions"]
    assert s["# Workflow"] == "- `pytest tests/test_dates.py` ×2 (failed at least once)"
    errors = s["# Errors & Corrections"]
    assert "Bash `pytest tests/test_dates.py` → FAILED tests/test_dates.py::test_iso" in errors
    assert "User correction: No, don't change parse_iso, fix the month table instead" in errors
    assert s["# Codebase and System Documentation"] == "- `README.md`: Utils; Testing"
    assert "`pytest tests/test_dates.py` failed first and passed on a later run" in s["# Learnings"]
    assert s["# Key results"] == "All 3 date tests pass now: the month table was off by one."
    worklog = s["# Worklog"].split("\n")
    assert worklog[0].startswith("- User: Fix the failing") and worklog[-1].startswith("- Answered: All 3")
    assert "- Edit utils/dates.py" in worklog
    assert s["# Current State"].startswith("Latest user request: No, don't change parse_iso")
    assert SessionMemory.parse(memory.text) == memory


def test_previous_memory_is_merged_not_duplicated():
    records = debugging_session()
    first = extract(records[:7])
    both = extract(records[7:], previous=first)
    assert both.section("Session Title").content == first.section("Session Title").content
    assert both.section("Task specification").content.count("Fix the failing date parser") == 1
    assert "`pytest tests/test_dates.py`" in both.section("Workflow").content
    again = extract(records[7:], previous=both)
    assert again.section("Worklog").content == both.section("Worklog").content


def test_compact_summary_is_previous_context_once():
    summary = (
        "This session is being continued from a previous conversation that ran out of context. The summary "
        "below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent:\n"
        "   Port the scheduler to asyncio.\n\n2. Key Technical Concepts:\n   - asyncio"
    )
    records = [user(summary, is_compact_summary=True), user("continue"), say("Done.")]
    spec = extract(records).section("Task specification").content
    assert spec.count("Port the scheduler to asyncio.") == 1
    assert "Key Technical Concepts" not in spec
    assert extract(records).section("Session Title").content == "continue"


def test_condenses_oldest_first():
    records = [user(f"request number {i} " + "x" * 60) for i in range(200)]
    cfg = ExtractorConfig(max_section_tokens=300, max_total_tokens=1000)
    memory = extract(records, config=cfg)
    assert memory.tokens <= 1000
    assert all(n <= 300 for n in section_token_sizes(memory.text).values())
    spec = memory.section("Task specification").content
    assert "request number 199 " in spec and "request number 0 " not in spec
    assert memory.section("Session Title").content.startswith("request number 0 ")


def test_config_is_validated():
    with pytest.raises(ValidationError):
        ExtractorConfig(max_section_tokens=0)
    with pytest.raises(ValidationError):
        ExtractorConfig(max_section_tokens=3000, max_total_tokens=2000)
    with pytest.raises(ValidationError):
        ExtractorConfig(bogus=1)


def test_protocol():
    extractor = OfflineMemoryExtractor()
    assert isinstance(extractor, MemoryExtractor) and extractor.name == "offline"
    assert extractor.extract(debugging_session()).text == extract(debugging_session()).text
    assert CWD == "/repo"


def _largest(main_sessions, k=3):
    return sorted(main_sessions, key=lambda s: -len(s.records))[:k]


@pytest.mark.corpus
def test_real_sessions_caps_determinism_and_content(main_sessions):
    for session in _largest(main_sessions):
        records = session.conversation()
        started = time.perf_counter()
        memory = extract(records)
        assert time.perf_counter() - started < 2
        assert extract(records).text == memory.text  # same bytes
        assert rough_tokens(memory.text) <= 12000
        sizes = section_token_sizes(memory.text)
        assert list(sizes) == list(SECTION_HEADINGS)
        assert all(n <= 2000 for n in sizes.values()), sizes
        assert all(memory.contents()[h] for h in ("# Session Title", "# Files and Functions", "# Workflow"))
        commands = [b.input["command"] for r in records for b in r.tool_uses() if b.name == "Bash"]
        assert commands[-1].split()[0] in memory.section("Workflow").content
        edited = [b.input["file_path"] for r in records for b in r.tool_uses() if b.name in ("Edit", "Write")]
        cwd = next(r.raw["cwd"] for r in records if r.raw.get("cwd"))
        assert edited[-1].removeprefix(cwd + "/") in memory.section("Files and Functions").content
        assert SessionMemory.parse(memory.text).text == memory.text


@pytest.mark.corpus
def test_real_sessions_incremental_extraction_respects_caps(main_sessions):
    session = _largest(main_sessions, 1)[0]
    records = session.conversation()
    memory = None
    for end in range(200, len(records) + 200, 200):
        memory = extract(records[end - 200 : end], previous=memory)
        assert memory.tokens <= 12000
        assert all(n <= 2000 for n in memory.section_tokens().values())
    assert (
        memory is not None
        and memory.section("Session Title").content == extract(records).section("Session Title").content
    )


def test_queued_prompts_and_question_answers_are_user_messages():
    from workbench.memory.extractor import collect_facts
    from workbench.transcript.model import Record

    queued = Record(kind="queue-operation", raw={"operation": "enqueue", "content": "also update the docs"})
    records = [
        user("Fix it"),
        queued,
        assistant(tool_use("q1", "AskUserQuestion", questions=[{"question": "Which branch?"}])),
        result("q1", 'User has answered your questions: "Which branch?"="main"'),
        user("also update the docs"),  # the queued prompt delivered later is not listed twice
    ]
    texts = [t for _, t in collect_facts(records).user_messages]
    assert texts == ["Fix it", "also update the docs", 'User has answered your questions: "Which branch?"="main"']
    assert "- AskUserQuestion Which branch?" in extract(records).section("Worklog").content
