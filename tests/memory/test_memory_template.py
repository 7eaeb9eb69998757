"""The session-memory template, caps, truncation and reminders (docs §1.1), byte for byte."""

from __future__ import annotations

import pytest

from workbench.memory.template import (
    DEFAULT_SESSION_MEMORY_TEMPLATE,
    MAX_SECTION_LENGTH,
    MAX_TOTAL_SESSION_MEMORY_TOKENS,
    SECTION_HEADINGS,
    TRUNCATION_MARKER,
    MemorySection,
    SessionMemory,
    generate_section_reminders,
    is_session_memory_empty,
    parse_sections,
    section_token_sizes,
    truncate_session_memory_for_compact,
)
from workbench.tokens.js import rough_tokens

HEADINGS = [
    "# Session Title",
    "# Current State",
    "# Task specification",
    "# Files and Functions",
    "# Workflow",
    "# Errors & Corrections",
    "# Codebase and System Documentation",
    "# Learnings",
    "# Key results",
    "# Worklog",
]


def test_constants():
    assert MAX_SECTION_LENGTH == 2000
    assert MAX_TOTAL_SESSION_MEMORY_TOKENS == 12000
    assert TRUNCATION_MARKER == "\n[... section truncated for length ...]"


def test_template_headings_layout():
    assert list(SECTION_HEADINGS) == HEADINGS
    template = DEFAULT_SESSION_MEMORY_TEMPLATE
    assert template.startswith("\n# Session Title\n_")
    lines = template.split("\n")
    assert [ln for ln in lines if ln.startswith("# ")] == HEADINGS
    for i, line in enumerate(lines):
        if line.startswith("# "):
            italic = lines[i + 1]
            assert italic.startswith("_") and italic.endswith("_") and len(italic) > 2
            assert lines[i + 2] == ""  # a blank line separates sections
    assert list(parse_sections(template)) == HEADINGS


def test_render_parse_round_trip():
    empty = SessionMemory.empty()
    assert empty.text == DEFAULT_SESSION_MEMORY_TEMPLATE
    assert SessionMemory.parse(DEFAULT_SESSION_MEMORY_TEMPLATE) == empty
    filled = SessionMemory.from_contents({"Session Title": "Fix the parser", "# Worklog": "- step 1\n- step 2"})
    assert SessionMemory.parse(filled.text) == filled
    assert SessionMemory.parse(filled.text).text == filled.text
    assert filled.section("Worklog").content == "- step 1\n- step 2"
    assert "# Worklog\n_" in filled.text and filled.text.endswith("- step 1\n- step 2\n")
    with pytest.raises(ValueError):
        SessionMemory.from_contents({"# Not a section": "x"})


def test_emptiness():
    assert is_session_memory_empty(DEFAULT_SESSION_MEMORY_TEMPLATE)
    assert is_session_memory_empty("  " + DEFAULT_SESSION_MEMORY_TEMPLATE.strip() + "\n\n")
    assert SessionMemory.empty().is_empty
    assert not SessionMemory.from_contents({"Session Title": "x"}).is_empty


def test_truncation_keeps_small_sections_and_preamble():
    content = "preamble line\n# A\nshort body\n# B\n" + "y" * 8000
    assert truncate_session_memory_for_compact(content) == (content, False)


def test_truncation_exact_cut():
    line = "x" * 999  # 1000 with its newline: exactly 8 lines fit in 8000
    body = "\n".join([line] * 10)
    content = f"intro\n# Big\n{body}\n# Small\nok"
    out, truncated = truncate_session_memory_for_compact(content)
    assert truncated
    expected = "intro\n# Big\n" + "\n".join([line] * 8) + "\n\n[... section truncated for length ...]\n# Small\nok"
    assert out == expected


def test_truncation_counts_utf16_units():
    # 4000 emoji = 8000 UTF-16 units (fits); one more character does not.
    fits = "# E\n" + "😀" * 4000
    assert truncate_session_memory_for_compact(fits) == (fits, False)
    over = "# E\n" + "😀" * 3000 + "\n" + "😀" * 1001
    out, truncated = truncate_session_memory_for_compact(over)
    assert truncated and out == "# E\n" + "😀" * 3000 + "\n" + TRUNCATION_MARKER


def test_section_sizes_trim_bodies():
    content = "\n# A\n_d_\n" + "z" * 400 + "\n\n\n# B\n"
    assert section_token_sizes(content) == {"# A": round((3 + 1 + 400) / 4), "# B": 0}


def test_reminders_none():
    assert generate_section_reminders({"# Worklog": 2000}, 12000) == ""


def test_reminders_per_section():
    text = generate_section_reminders({"# Worklog": 2100, "# Workflow": 2500, "# Learnings": 10}, 5000)
    assert text == (
        "\n\nIMPORTANT: The following sections exceed the per-section limit and MUST be condensed:\n"
        '- "# Workflow" is ~2500 tokens (limit: 2000)\n'
        '- "# Worklog" is ~2100 tokens (limit: 2000)'
    )


def test_reminders_over_total():
    text = generate_section_reminders([("# Worklog", 2100)], 13000)
    assert text.startswith(
        "\n\nCRITICAL: The session memory file is currently ~13000 tokens, which exceeds the maximum of 12000 "
        "tokens. You MUST condense"
    )
    assert '"Current State"' in text and '"Errors & Corrections"' in text
    assert text.endswith('\n\nOversized sections to condense:\n- "# Worklog" is ~2100 tokens (limit: 2000)')
    assert "Oversized" not in generate_section_reminders({}, 13000)


def test_the_text_is_rendered_once_and_never_shared_with_another_value() -> None:
    import dataclasses
    import pickle

    memory = SessionMemory.from_contents({"# Current State": "working on it"})
    text = memory.text
    assert memory.text is text  # memoised
    assert memory.render() is text
    other = dataclasses.replace(memory, sections=SessionMemory.empty().sections)
    assert other.text == SessionMemory.empty().text != text
    restored = pickle.loads(pickle.dumps(memory))
    assert restored == memory and restored.text == text
    assert memory == SessionMemory.from_contents({"# Current State": "working on it"})  # the memo is not compared


_LINES = ["", " ", "plain", "# looks like a heading", "#no space", "_italic_", "é ünï 🎉", "\t tabbed ", "# "]


def _memories():
    from hypothesis import strategies as st

    text = st.lists(st.sampled_from(_LINES), max_size=4).map("\n".join)
    odd = ["Title", "# A\n# B", "# A", "#", "# Current State"]  # not a heading, two lines, repeated
    heading = st.one_of(st.sampled_from(HEADINGS), st.sampled_from(odd))
    section = st.builds(MemorySection, heading, text, text)
    return st.lists(section, max_size=6).map(lambda sections: SessionMemory(tuple(sections)))


def test_section_tokens_equal_the_parse_of_the_text() -> None:
    """`SessionMemory.section_tokens` skips the parse where it can: it must give what parsing the text gives,
    also for headings repeated, not starting with ``# `` or spanning lines, and content lines that start
    with ``# `` (the parse takes them for headings), and ``tokens`` what counting the text gives."""
    from hypothesis import given, settings

    @settings(max_examples=400, deadline=None)
    @given(_memories())
    def check(memory: SessionMemory) -> None:
        assert memory.section_tokens() == section_token_sizes(memory.text)
        assert memory.section_tokens() == section_token_sizes(memory.text)  # memoised, and a copy each call
        memory.section_tokens()["# Session Title"] = -1
        assert memory.section_tokens() == section_token_sizes(memory.text)
        assert memory.tokens == rough_tokens(memory.text)

    check()
    full = SessionMemory.from_contents({h: f"line one\nline two of {h}" for h in HEADINGS})
    assert full.section_tokens() == section_token_sizes(full.text)
    assert full.section_tokens() != section_token_sizes(SessionMemory.empty().text)
