"""OnlineMemoryExtractor against the local fake API: update prompt, Edit emulation, structure checks."""

from __future__ import annotations

from typing import Any

from fake_anthropic import FAKE_KEY, MESSAGES_PATH, FakeAnthropic, sent_key
from online_records import SESSION, session
from record_builders import CWD, user

from workbench.memory.extractor import MemoryExtractor
from workbench.memory.template import SECTION_DESCRIPTIONS, SessionMemory
from workbench.online import OnlineMemoryExtractor, RetryPolicy, build_update_prompt
from workbench.online.extractor import apply_edit, default_memory_path, structure_error

PATH = default_memory_path(session())
STATE = "# Current State\n_" + SECTION_DESCRIPTIONS["# Current State"] + "_"
TITLE = "# Session Title\n_" + SECTION_DESCRIPTIONS["# Session Title"] + "_"


def edit(use_id: str, old: str, new: str, path: str = PATH, **kw: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": use_id,
        "name": "Edit",
        "input": {"file_path": path, "old_string": old, "new_string": new, **kw},
    }


def _extractor(fake: FakeAnthropic, **kw: Any) -> OnlineMemoryExtractor:
    return OnlineMemoryExtractor(
        model="claude-sonnet-4-6", max_tokens=4000, client=fake.client(), retry=RetryPolicy(initial_delay=0.01), **kw
    )


def _prompt_of(request: dict[str, Any]) -> str:
    return request["body"]["messages"][-1]["content"][-1]["text"]


def test_path_and_protocol() -> None:
    assert f"~/.claude/projects/-repo/{SESSION}/session-memory/summary.md" == PATH
    assert isinstance(OnlineMemoryExtractor(), MemoryExtractor)  # no key needed to construct


def test_round_trip_edits_applied(fake: FakeAnthropic) -> None:
    fake.reply = lambda body: [
        {"type": "text", "text": "Updating the notes."},
        edit("e1", TITLE, TITLE + "\nFix date parser tests in utils"),
        edit("e2", STATE, STATE + "\nAdding a leap-year test to tests/test_dates.py"),
    ]
    extractor = _extractor(fake)
    memory = extractor.extract(session())
    assert memory.section("Session Title").content == "Fix date parser tests in utils"
    assert memory.section("Current State").content == "Adding a leap-year test to tests/test_dates.py"
    assert [s.heading for s in memory.sections] == [s.heading for s in SessionMemory.empty().sections]
    report = extractor.last_report
    assert report is not None and report.applied == 2 and report.errors == [] and report.turns == 1
    assert report.ignored_text == "Updating the notes."

    (request,) = fake.calls(MESSAGES_PATH)
    assert sent_key(request) == FAKE_KEY
    body = request["body"]
    assert body["max_tokens"] == 4000 and body["model"] == "claude-sonnet-4-6"
    assert [t["name"] for t in body["tools"]] == ["Edit"]
    last = body["messages"][-1]
    # the extraction runs before the last turn's tool results exist: synthetic result first
    assert last["content"][0]["type"] == "tool_result" and last["content"][0]["is_error"] is True
    prompt = _prompt_of(request)
    assert prompt == build_update_prompt(SessionMemory.empty().text, PATH)
    assert prompt.startswith("IMPORTANT: This message and these instructions are NOT part of the actual user")
    assert f"<current_notes_content>\n{SessionMemory.empty().text}\n</current_notes_content>" in prompt
    assert PATH in prompt and "REMEMBER: Use the Edit tool in parallel and stop" in prompt


def test_previous_memory_is_inlined_and_reminders_appended(fake: FakeAnthropic) -> None:
    big = "\n".join(f"- step {i}: " + "x" * 90 for i in range(100))  # ~2500 rough tokens
    previous = SessionMemory.empty().__class__.from_contents({"Worklog": big, "Session Title": "Dates"})
    fake.reply = lambda body: [edit("e1", "- step 0: ", "- step zero: ")]
    memory = _extractor(fake).extract(session(), previous)
    prompt = _prompt_of(fake.calls()[0])
    assert previous.text in prompt
    assert (
        'IMPORTANT: The following sections exceed the per-section limit and MUST be condensed:\n- "# Worklog"' in prompt
    )
    assert memory.section("Worklog").content.startswith("- step zero: ")
    assert memory.section("Session Title").content == "Dates"


def test_broken_structure_falls_back_to_previous(fake: FakeAnthropic) -> None:
    previous = SessionMemory.from_contents({"Current State": "working"})
    fake.reply = lambda body: [edit("e1", "# Current State", "# Status")]
    extractor = _extractor(fake)
    assert extractor.extract(session(), previous) == previous
    report = extractor.last_report
    assert report is not None and report.fell_back and "section headers changed" in (report.structure_error or "")
    assert report.errors[-1] == report.structure_error


def test_italic_line_change_is_rejected(fake: FakeAnthropic) -> None:
    desc = "_" + SECTION_DESCRIPTIONS["# Worklog"] + "_"
    fake.reply = lambda body: [edit("e1", desc, "_my own description_")]
    extractor = _extractor(fake)
    assert extractor.extract(session()) == SessionMemory.empty()
    assert "italic description" in (extractor.last_report.structure_error or "")  # type: ignore[union-attr]


def test_failed_edit_goes_back_to_the_model(fake: FakeAnthropic) -> None:
    replies = iter(
        [
            [edit("e1", "no such text", "x"), {"type": "tool_use", "id": "b1", "name": "Bash", "input": {}}],
            [edit("e2", STATE, STATE + "\nRetried")],
        ]
    )
    fake.reply = lambda body: next(replies)
    extractor = _extractor(fake)
    memory = extractor.extract(session())
    assert memory.section("Current State").content == "Retried"
    _, second = fake.calls()
    results = second["body"]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["e1", "b1"]
    assert all(r["is_error"] for r in results)
    assert results[0]["content"].startswith("String to replace not found in file.")
    assert results[1]["content"] == f"only Edit on {PATH} is allowed"
    assert second["body"]["messages"][-2]["role"] == "assistant"
    assert extractor.last_report.turns == 2 and extractor.last_report.applied == 1  # type: ignore[union-attr]


def test_no_edits_keeps_memory_and_cache_hit(fake: FakeAnthropic) -> None:
    fake.reply = lambda body: [{"type": "text", "text": "Nothing new."}]
    records = [user("hello", session_id=SESSION)]
    assert _extractor(fake).extract(records) == SessionMemory.empty()
    again = _extractor(fake)
    assert again.extract(records) == SessionMemory.empty()
    assert len(fake.calls()) == 1 and again.stats.cache_hits == 1


def test_apply_edit_rules() -> None:
    text = "a b a"
    assert apply_edit(text, "/p", "Edit", {"file_path": "/p", "old_string": "b", "new_string": "c"}) == ("a c a", None)
    _, err = apply_edit(text, "/p", "Edit", {"file_path": "/p", "old_string": "a", "new_string": "c"})
    assert err and err.startswith("Found 2 matches")
    assert apply_edit(
        text, "/p", "Edit", {"file_path": "/p", "old_string": "a", "new_string": "c", "replace_all": True}
    ) == ("c b c", None)
    assert apply_edit(text, "/p", "Edit", {"file_path": "/q", "old_string": "a", "new_string": "c"})[1] == (
        "only Edit on /p is allowed"
    )
    assert "No changes" in (
        apply_edit(text, "/p", "Edit", {"file_path": "/p", "old_string": "a", "new_string": "a"})[1] or ""
    )
    assert apply_edit(text, "/p", "Write", {})[1] == "only Edit on /p is allowed"


def test_structure_error_cases() -> None:
    ref = SessionMemory.empty()
    assert structure_error(ref.text, ref) is None
    assert structure_error(ref.text.replace("# Worklog\n", "# Worklog\n_x_\n# Extra\n"), ref)
    assert structure_error("preamble\n" + ref.text, ref) == "text added before the first section header"
    filled = SessionMemory.from_contents({"Learnings": "- keep it\n## a sub-heading is fine"})
    assert structure_error(filled.text, ref) is None
    assert CWD == "/repo"
