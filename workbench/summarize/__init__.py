"""Full-compact summaries: Claude Code's prompt and summary message (docs §5.2, §5.3), and summarisers.

`prompt` reproduces the strings; `offline` writes a deterministic summary without a model call. Any
object with a ``name`` and ``summarize(records, *, custom_instructions=None) -> str`` is a `Summarizer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .offline import OfflineSummarizer, Summarizer, SummarizerConfig, summarize

#: Names of `offline`, imported on first use: a module that needs only the prompt strings (the report's
#: metrics) does not import the summariser and the session-memory extractor it uses (13 ms).
_OFFLINE = frozenset({"OfflineSummarizer", "Summarizer", "SummarizerConfig", "summarize"})


def __getattr__(name: str) -> Any:
    if name in _OFFLINE:
        from . import offline

        return getattr(offline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
