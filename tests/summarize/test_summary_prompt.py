"""The compact prompt and the summary message (docs §5.2, §5.3, §2.6), checked against the corpus.

Deviations the corpus shows (Claude Code v2.1.39, three marot-spotter sessions) from the v2.1.88 docs:

* the summary message keeps the analysis as ``Analysis:\\n…`` (v2.1.88 removes it);
* the follow-up sentence is the older "Please continue the conversation from where we left off…";
* the compaction prompt of v2.1.39 has no no-tools preamble, numbers its section list 1–6, 6, 7, 8
  (two "6."; the example skeleton is numbered 1–9) and ends "IMPORTANT: Do NOT use any tools…";
* the model does not always keep the section names' case ("Errors and Fixes", "All User Messages").
"""

from __future__ import annotations

import json

import pytest

from workbench.summarize.prompt import (
    COMPACT_SUMMARY_PREFIX,
    CONTINUE_SENTENCE,
    LEGACY_CONTINUE_SENTENCE,
    NO_TOOLS_TRAILER,
    SUMMARY_SECTIONS,
    build_compact_prompt,
    compact_user_summary_message,
    format_compact_summary,
    parse_summary_sections,
    sm_compact_summary_message,
)

NAMES = [
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
]
RAW = (
    "<analysis>\nthinking\n</analysis>\n\n\n"
    "<summary>\n1. Primary Request and Intent:\n   Do X\n\n\n\n2. Key:\n   y\n</summary>\n"
)


def test_section_names():
    assert list(SUMMARY_SECTIONS) == NAMES


def test_format_compact_summary():
    assert format_compact_summary(RAW) == "Summary:\n1. Primary Request and Intent:\n   Do X\n\n2. Key:\n   y"
    assert format_compact_summary(RAW, keep_analysis=True) == (
        "Analysis:\nthinking\n\nSummary:\n1. Primary Request and Intent:\n   Do X\n\n2. Key:\n   y"
    )
    assert format_compact_summary("  plain\n\n\n\ntext  ") == "plain\n\ntext"


def test_summary_message_pieces():
    assert COMPACT_SUMMARY_PREFIX == (
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\n"
    )
    body = "Summary:\n1. Primary Request and Intent:\n   Do X\n\n2. Key:\n   y"
    assert compact_user_summary_message(RAW, False) == COMPACT_SUMMARY_PREFIX + body
    full = compact_user_summary_message(RAW, True, "/t.jsonl", True)
    assert full == (
        COMPACT_SUMMARY_PREFIX
        + body
        + "\n\nIf you need specific details from before compaction (like exact code snippets, error messages, or "
        "content you generated), read the full transcript at: /t.jsonl"
        + "\n\nRecent messages are preserved verbatim."
        + "\nContinue the conversation from where it left off without asking the user any further questions. "
        "Resume directly — do not acknowledge the summary, do not recap what was happening, do not preface with "
        '"I\'ll continue" or similar. Pick up the last task as if the break never happened.'
    )
    assert full.endswith(CONTINUE_SENTENCE)
    legacy = compact_user_summary_message(RAW, True, "/t.jsonl", style="v2.1.39")
    assert legacy.endswith("read the full transcript at: /t.jsonl" + LEGACY_CONTINUE_SENTENCE)
    assert "Analysis:\nthinking" in legacy


def test_sm_compact_message_truncation_note():
    memory = "\n# Worklog\n_d_\n" + "\n".join(["w" * 99] * 100)
    text = sm_compact_summary_message(memory, transcript_path="/t.jsonl", memory_path="/m/summary.md")
    assert "[... section truncated for length ...]" in text
    assert "\n\nRecent messages are preserved verbatim.\nContinue the conversation" in text
    assert text.endswith(
        "\n\nSome session memory sections were truncated for length. The full session memory can be viewed at: "
        "/m/summary.md"
    )
    small = sm_compact_summary_message("\n# Worklog\n_d_\n- x\n", transcript_path=None, memory_path="/m")
    assert small == COMPACT_SUMMARY_PREFIX + "# Worklog\n_d_\n- x" + RECENT_AND_CONTINUE


RECENT_AND_CONTINUE = "\n\nRecent messages are preserved verbatim." + CONTINUE_SENTENCE


def test_compact_prompt_structure():
    prompt = build_compact_prompt()
    assert prompt.startswith("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.")
    assert prompt.endswith(NO_TOOLS_TRAILER)
    assert NO_TOOLS_TRAILER == (
        "\n\nREMINDER: Do NOT call any tools. Respond with plain text only — an <analysis> block followed by a "
        "<summary> block. Tool calls will be rejected and you will fail the task."
    )
    assert "Additional Instructions" not in prompt
    custom = build_compact_prompt("Focus on tests.")
    assert custom.endswith("\n\nAdditional Instructions:\nFocus on tests." + NO_TOOLS_TRAILER)
    positions = [prompt.index(f"{i}. {name}:") for i, name in enumerate(NAMES, 1)]
    assert positions == sorted(positions)
    assert [n for _, n in parse_summary_sections(prompt)] == NAMES  # the example skeleton


def _compactions(corpus):
    """(recorded isCompactSummary text, raw compaction-agent output, prompt, transcript path) per session."""
    out = []
    for main in sorted((corpus / "claude-code" / "marot-spotter").glob("*.jsonl")):
        agents = sorted((main.parent / main.stem / "subagents").glob("agent-acompact-*.jsonl"))
        if not agents:
            continue
        summary = next(json.loads(line) for line in main.open(encoding="utf-8") if '"isCompactSummary":true' in line)
        agent = [json.loads(line) for line in agents[0].open(encoding="utf-8")]
        raw = agent[-1]["message"]["content"][0]["text"]
        out.append((summary, raw, agent[-2]["message"]["content"], main.stem))
    return out


@pytest.mark.corpus
def test_real_summary_messages_match_the_reproduced_format(corpus):
    found = _compactions(corpus)
    assert len(found) == 3
    for record, raw, _, session_id in found:
        text = record["message"]["content"]
        assert record["isVisibleInTranscriptOnly"] is True
        assert text.startswith(COMPACT_SUMMARY_PREFIX)
        assert "\n\nSummary:\n1. Primary Request and Intent:" in text
        sections = parse_summary_sections(text)
        assert [n for n, _ in sections] == list(range(1, 10))
        assert [name.lower() for _, name in sections] == [n.lower() for n in NAMES]
        # v2.1.39 deviations: analysis kept as "Analysis:", the older follow-up sentence.
        assert text[len(COMPACT_SUMMARY_PREFIX) :].startswith("Analysis:\n")
        assert text.endswith(LEGACY_CONTINUE_SENTENCE)
        path = text.split("read the full transcript at: ")[1].split("\n")[0]
        assert path.endswith(f"/{session_id}.jsonl")
        assert compact_user_summary_message(raw, True, path, style="v2.1.39") == text  # byte for byte


@pytest.mark.corpus
def test_real_compaction_prompt_names_the_nine_sections(corpus):
    for _, _, prompt, _ in _compactions(corpus):
        positions = [prompt.index(f"{name}:") for name in NAMES]
        assert positions == sorted(positions)
        assert "6. All user messages:" in prompt and "6. Pending Tasks:" in prompt  # v2.1.39 numbering quirk
        assert [n for _, n in parse_summary_sections(prompt)] == NAMES  # its example skeleton is 1-9
        assert "\n\nAdditional Instructions:\n" in prompt
