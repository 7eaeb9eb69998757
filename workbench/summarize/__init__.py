"""Full-compact summaries: Claude Code's prompt and summary message (docs §5.2, §5.3), and summarisers.

`prompt` reproduces the strings; `offline` writes a deterministic summary without a model call. Any
object with a ``name`` and ``summarize(records, *, custom_instructions=None) -> str`` is a `Summarizer`.
"""

from .offline import OfflineSummarizer, Summarizer, SummarizerConfig, summarize
from .prompt import (
    COMPACT_SUMMARY_PREFIX,
    SUMMARY_SECTIONS,
    build_compact_prompt,
    compact_user_summary_message,
    format_compact_summary,
    parse_summary_sections,
    sm_compact_summary_message,
)

__all__ = [
    "COMPACT_SUMMARY_PREFIX",
    "SUMMARY_SECTIONS",
    "OfflineSummarizer",
    "Summarizer",
    "SummarizerConfig",
    "build_compact_prompt",
    "compact_user_summary_message",
    "format_compact_summary",
    "parse_summary_sections",
    "sm_compact_summary_message",
    "summarize",
]
