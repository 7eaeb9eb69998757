"""The full-compact summary prompt and the summary user message (docs §5.2, §5.3, §2.6).

Reproduced on purpose (docs/claude-code.md):

* §5.2: the 9 section names, exactly; the prompt structure ``preamble + base + optional
  "\\n\\nAdditional Instructions:\\n<custom>" + trailer``; the trailer quoted exactly. The preamble and
  the body are paraphrased, as the docs paraphrase them.
* §5.3: ``formatCompactSummary`` and ``getCompactUserSummaryMessage`` byte for byte, including the
  quoted strings.
* §2.6: SM-compact's summary text (truncated session memory, ``recentMessagesPreserved``, and the
  truncation note).

Deviation found in the corpus (Claude Code v2.1.39, the marot-spotter sessions): the recorded
``isCompactSummary`` messages keep the analysis as ``Analysis:\\n<text>`` instead of removing it, and
end with an older follow-up sentence (`LEGACY_CONTINUE_SENTENCE`). ``style="v2.1.39"`` reproduces those
messages byte for byte from the compaction agent's raw output; the default follows v2.1.88.
"""

from __future__ import annotations

import re
from typing import Literal

from ..memory.template import truncate_session_memory_for_compact

__all__ = [
    "COMPACT_SUMMARY_PREFIX",
    "CONTINUE_SENTENCE",
    "LEGACY_CONTINUE_SENTENCE",
    "NO_TOOLS_PREAMBLE",
    "NO_TOOLS_TRAILER",
    "RECENT_PRESERVED_SENTENCE",
    "SM_TRUNCATION_NOTE",
    "SUMMARY_SECTIONS",
    "TRANSCRIPT_HINT",
    "build_compact_prompt",
    "compact_user_summary_message",
    "format_compact_summary",
    "parse_summary_sections",
    "sm_compact_summary_message",
]

#: The 9 summary sections, exact names and order (docs §5.2).
SUMMARY_SECTIONS: tuple[str, ...] = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)

#: First piece of the summary message (docs §5.3), up to and including the blank line.
COMPACT_SUMMARY_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
#: Appended when a transcript path is known (docs §5.3); the path follows.
TRANSCRIPT_HINT = (
    "\n\nIf you need specific details from before compaction (like exact code snippets, error messages, "
    "or content you generated), read the full transcript at: "
)
#: Appended by SM-compact only (docs §5.3 ``recentMessagesPreserved``).
RECENT_PRESERVED_SENTENCE = "\n\nRecent messages are preserved verbatim."
#: Appended when follow-up questions are suppressed (auto-compact, SM-compact), v2.1.88 (docs §5.3).
CONTINUE_SENTENCE = (
    "\nContinue the conversation from where it left off without asking the user any further questions. "
    "Resume directly — do not acknowledge the summary, do not recap what was happening, do not preface "
    'with "I\'ll continue" or similar. Pick up the last task as if the break never happened.'
)
#: The same piece as recorded by Claude Code v2.1.39 in the corpus (not in the docs).
LEGACY_CONTINUE_SENTENCE = (
    "\nPlease continue the conversation from where we left off without asking the user any further "
    "questions. Continue with the last task that you were asked to work on."
)
#: SM-compact's note when a section was truncated (docs §2.6); the memory path follows.
SM_TRUNCATION_NOTE = (
    "\n\nSome session memory sections were truncated for length. The full session memory can be viewed at: "
)

#: Paraphrase of ``NO_TOOLS_PREAMBLE`` (docs §5.2 quotes only its first sentence).
NO_TOOLS_PREAMBLE = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n"
    "- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n"
    "- You already have all the context you need in the conversation above.\n"
    "- Tool calls will be REJECTED and will waste your only turn.\n"
    "- Your entire response must be plain text: an <analysis> block followed by a <summary> block.\n\n"
)
#: ``NO_TOOLS_TRAILER``, quoted by docs §5.2.
NO_TOOLS_TRAILER = (
    "\n\nREMINDER: Do NOT call any tools. Respond with plain text only — an <analysis> block followed by "
    "a <summary> block. Tool calls will be rejected and you will fail the task."
)

_SECTION_GUIDANCE: tuple[str, ...] = (
    "Capture all of the user's explicit requests and intents in detail",
    "List all important technical concepts, technologies, and frameworks discussed.",
    "Enumerate specific files and code sections examined, modified, or created. Pay special attention to "
    "the most recent messages and include full code snippets where applicable and a summary of why each "
    "file read or edit is important.",
    "List all errors that you ran into, and how you fixed them. Pay special attention to specific user "
    "feedback that you received, especially if the user told you to do something differently.",
    "Document problems solved and any ongoing troubleshooting efforts.",
    "List ALL user messages that are not tool results. These are critical for understanding the users' "
    "feedback and changing intent.",
    "Outline any pending tasks that you have explicitly been asked to work on.",
    "Describe in detail precisely what was being worked on immediately before this summary request, "
    "paying special attention to the most recent messages from both user and assistant. Include file "
    "names and code snippets where applicable.",
    "List the next step that you will take that is related to the most recent work you were doing. It "
    "must be DIRECTLY in line with the user's most recent explicit requests. If there is a next step, "
    "include direct quotes from the most recent conversation showing exactly what task you were working "
    "on and where you left off, verbatim, so there is no drift in task interpretation.",
)


def _base_prompt() -> str:
    sections = "\n".join(
        f"{i}. {name}: {hint}"
        for i, (name, hint) in enumerate(zip(SUMMARY_SECTIONS, _SECTION_GUIDANCE, strict=True), 1)
    )
    skeleton = "\n\n".join(f"{i}. {name}:\n   [...]" for i, name in enumerate(SUMMARY_SECTIONS, 1))
    return (
        "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
        "user's explicit requests and your previous actions.\n"
        "This summary should be thorough in capturing technical details, code patterns, and architectural "
        "decisions that would be essential for continuing development work without losing context.\n\n"
        "Before providing your final summary, wrap your analysis in <analysis> tags. In it:\n\n"
        "1. Chronologically analyze each message and section of the conversation, identifying the user's "
        "explicit requests and intents, your approach, key decisions, technical concepts and code patterns, "
        "specific details (file names, full code snippets, function signatures, file edits), errors and how "
        "you fixed them, and specific user feedback.\n"
        "2. Double-check for technical accuracy and completeness.\n\n"
        f"Your summary should include the following sections:\n\n{sections}\n\n"
        "Here's an example of how your output should be structured:\n\n"
        f"<example>\n<analysis>\n[Your thought process]\n</analysis>\n\n<summary>\n{skeleton}\n\n</summary>\n"
        "</example>\n\n"
        "There may be additional summarization instructions provided in the included context (for example "
        'a "## Compact Instructions" or "# Summary instructions" section). If so, follow them.'
    )


def build_compact_prompt(custom_instructions: str | None = None) -> str:
    """``getCompactPrompt`` (docs §5.2): preamble + base + optional additional instructions + trailer."""
    prompt = NO_TOOLS_PREAMBLE + _base_prompt()
    if custom_instructions and custom_instructions.strip():
        prompt += f"\n\nAdditional Instructions:\n{custom_instructions}"
    return prompt + NO_TOOLS_TRAILER


_ANALYSIS = re.compile(r"<analysis>([\s\S]*?)</analysis>")
_SUMMARY = re.compile(r"<summary>([\s\S]*?)</summary>")
_BLANKS = re.compile(r"\n\n+")


def format_compact_summary(summary: str, *, keep_analysis: bool = False) -> str:
    """``formatCompactSummary`` (docs §5.3).

    Removes the first ``<analysis>…</analysis>``, replaces the first ``<summary>X</summary>`` with
    ``Summary:\\n`` + trimmed X, collapses runs of 2+ newlines to 2, trims.

    Args:
        summary: the model's raw compaction output.
        keep_analysis: reproduce v2.1.39 as recorded in the corpus, which rewrote the analysis block to
            ``Analysis:\\n`` + trimmed text instead of removing it.
    """
    text = summary
    if keep_analysis:
        text = _ANALYSIS.sub(lambda m: "Analysis:\n" + m.group(1).strip(), text, count=1)
    else:
        text = _ANALYSIS.sub("", text, count=1)
    text = _SUMMARY.sub(lambda m: "Summary:\n" + m.group(1).strip(), text, count=1)
    return _BLANKS.sub("\n\n", text).strip()


Style = Literal["v2.1.88", "v2.1.39"]


def compact_user_summary_message(
    summary: str,
    suppress_follow_up: bool,
    transcript_path: str | None = None,
    recent_preserved: bool = False,
    *,
    style: Style = "v2.1.88",
) -> str:
    """``getCompactUserSummaryMessage`` (docs §5.3): the text of the ``isCompactSummary`` user message.

    Args:
        summary: raw model output (formatted here with `format_compact_summary`).
        suppress_follow_up: auto-compact and SM-compact: append the resume-directly sentence.
        transcript_path: the session's JSONL path, when known.
        recent_preserved: SM-compact only: say the recent messages were kept verbatim.
        style: ``"v2.1.39"`` reproduces the corpus' messages (analysis kept, older follow-up sentence).
    """
    legacy = style == "v2.1.39"
    text = COMPACT_SUMMARY_PREFIX + format_compact_summary(summary, keep_analysis=legacy)
    if transcript_path:
        text += TRANSCRIPT_HINT + transcript_path
    if recent_preserved:
        text += RECENT_PRESERVED_SENTENCE
    if suppress_follow_up:
        text += LEGACY_CONTINUE_SENTENCE if legacy else CONTINUE_SENTENCE
    return text


def sm_compact_summary_message(memory: str, *, transcript_path: str | None, memory_path: str) -> str:
    """SM-compact's summary text (docs §2.6 step 7): the truncated notes as the summary, follow-ups
    suppressed, recent messages preserved, plus the truncation note when a section was cut."""
    truncated, was_truncated = truncate_session_memory_for_compact(memory)
    text = compact_user_summary_message(truncated, True, transcript_path, True)
    if was_truncated:
        text += SM_TRUNCATION_NOTE + memory_path
    return text


_SECTION_LINE = re.compile(r"^(\d+)\.\s+([^:\n]+?):[ \t]*$", re.MULTILINE)


def parse_summary_sections(text: str) -> list[tuple[int, str]]:
    """The numbered top-level sections after ``Summary:`` (or inside ``<summary>``), as ``(n, name)``.

    A section line is ``N. Name:`` alone on its line, as in the §5.2 example skeleton.
    """
    match = re.search(r"<summary>|^Summary:$", text, re.MULTILINE)
    body = text[match.start() :] if match else text
    return [(int(m.group(1)), m.group(2).strip()) for m in _SECTION_LINE.finditer(body)]
