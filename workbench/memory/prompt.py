"""The session-memory update prompt (``getDefaultUpdatePrompt``, docs §1.1) and the notes path it names.

Every extraction sends it, whoever writes the notes: the online extractor (`workbench.online.extractor`)
sends it to a model, and the replay prices it as the extraction's extra user message
(`workbench.memory.fork`) also when the offline extractor stands in for the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..tokens.js import rough_tokens
from ..transcript.model import Record
from .template import SessionMemory, generate_section_reminders, section_token_sizes

__all__ = ["DEFAULT_UPDATE_PROMPT", "build_update_prompt", "default_memory_path", "substitute"]

#: The update prompt (``getDefaultUpdatePrompt``, docs §1.1), paraphrased; ``{{currentNotes}}`` and
#: ``{{notesPath}}`` are substituted in one pass (unknown ``{{keys}}`` stay as they are).
DEFAULT_UPDATE_PROMPT = "\n".join(
    (
        "IMPORTANT: This message and these instructions are NOT part of the actual user conversation. "
        "Never mention note-taking, notes extraction or these instructions inside the notes.",
        "",
        "Update the session notes file from the conversation above. Leave out this instruction message, the "
        "system prompt, CLAUDE.md entries and any earlier session summaries.",
        "",
        "The notes file {{notesPath}} has already been read for you. Its current content:",
        "<current_notes_content>",
        "{{currentNotes}}",
        "</current_notes_content>",
        "",
        "Your ONLY task: use the Edit tool on the notes file, then stop. Several edits are fine (update every "
        "section that needs it); issue all Edit calls in parallel in a single message. Use no other tool.",
        "",
        "STRUCTURE RULES:",
        "- Never modify, delete or add section headers (the lines starting with '#').",
        "- Never modify or delete the italic _description_ line right under each header: those lines are "
        "template instructions and must stay exactly as they are.",
        "- Edit only the content below each italic line, inside the existing sections. Add no new sections "
        "and nothing outside them.",
        "",
        "CONTENT RULES:",
        '- Skipping a section with nothing new is fine. No filler such as "No info yet": leave it empty.',
        "- Be DETAILED and INFO-DENSE: file paths, function names, error messages, exact commands, technical details.",
        '- "Key results" must hold the complete, exact output the user asked for (the full table, answer, document).',
        "- Do not repeat what the CLAUDE.md files in the context already say.",
        "- Keep each section under ~2000 tokens/words. When a section gets close, condense it by cycling out "
        "less important details and keeping the critical ones.",
        '- Always update "Current State" with the most recent work: it is what continuity after compaction depends on.',
        "",
        "Call Edit with file_path: {{notesPath}}",
        "",
        "STRUCTURE PRESERVATION REMINDER: every section keeps its header line and its italic description "
        "line unchanged; only the text after those two lines is yours to edit.",
        "",
        "REMEMBER: Use the Edit tool in parallel and stop. Take insights only from the user conversation, "
        "never from these instructions, and never touch headers or italic descriptions.",
    )
)

_VAR = re.compile(r"\{\{(\w+)\}\}")


def substitute(template: str, values: Mapping[str, str]) -> str:
    """``{{var}}`` substitution, single pass, unknown keys left intact (docs §1.1 custom prompts)."""
    return _VAR.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def build_update_prompt(notes: str | SessionMemory, notes_path: str, template: str = DEFAULT_UPDATE_PROMPT) -> str:
    """The extraction's user message: the prompt with the notes inlined, then the size reminders.

    ``notes``: the file's text, or the `SessionMemory` it renders (whose sizes are memoised).
    """
    if isinstance(notes, SessionMemory):
        text, sizes, total = notes.text, notes.section_tokens(), notes.tokens
    else:
        text, sizes, total = notes, section_token_sizes(notes), rough_tokens(notes)
    prompt = substitute(template, {"currentNotes": text, "notesPath": notes_path})
    return prompt + generate_section_reminders(sizes, total)


def default_memory_path(records: Sequence[Record]) -> str:
    """``~/.claude/projects/<sanitized-cwd>/<sessionId>/session-memory/summary.md`` from the records
    (``cwd`` and ``sessionId``; placeholders when absent). Only used as the path the prompt names."""
    cwd = next((r.raw.get("cwd") for r in records if isinstance(r.raw.get("cwd"), str)), None) or "/workspace"
    session = next((r.session_id for r in records if r.session_id), None) or "session"
    sanitized = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    return f"~/.claude/projects/{sanitized}/{session}/session-memory/summary.md"
