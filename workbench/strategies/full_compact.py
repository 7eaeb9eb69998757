"""Full (LLM) compaction, Claude Code's ``compactConversation`` (docs §5): nothing is kept.

The new context is ``[boundary, summary, ...re-attached files]``. The summary is written by a
summariser (offline deterministic by default) in the 9-section format and wrapped by
``getCompactUserSummaryMessage`` (docs §5.3). Post-compact file re-attachment (docs §5.4) is emulated
from the recording: the most recently *read* files (their recorded Read results), newest first, at most
``max_files_to_restore`` files of at most ``tokens_per_file`` tokens each within ``attachment_budget``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from ..tokens.js import js_stringify, rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .records import compact_boundary, summary_message
from .registry import register
from .triggers import AutoCompactTrigger

__all__ = ["FullCompact", "FullCompactConfig", "full_compaction", "post_compact_file_attachments"]

POST_COMPACT_MAX_FILES_TO_RESTORE = 5
POST_COMPACT_MAX_TOKENS_PER_FILE = 5_000
POST_COMPACT_TOKEN_BUDGET = 50_000


class FullCompactConfig(StrategyConfig):
    trigger: AutoCompactTrigger = AutoCompactTrigger()
    summarizer: Literal["offline", "anthropic"] = Field(
        "offline", description="offline: deterministic extractive; anthropic: Claude (needs ANTHROPIC_API_KEY)"
    )
    summarizer_model: str = "claude-sonnet-4-6"
    suppress_follow_up_questions: bool = True
    max_files_to_restore: int = Field(POST_COMPACT_MAX_FILES_TO_RESTORE, ge=0)
    tokens_per_file: int = Field(POST_COMPACT_MAX_TOKENS_PER_FILE, ge=0)
    attachment_budget: int = Field(POST_COMPACT_TOKEN_BUDGET, ge=0)


def _attachment(text: str, key: str) -> Record:
    return Record(
        kind="user",
        role="user",
        uuid=f"attachment-{key}",
        blocks=(Block.text_block(f"<system-reminder>\n{text}\n</system-reminder>"),),
        has_content=True,
        is_meta=True,
        raw={"type": "user", "isMeta": True, "uuid": f"attachment-{key}"},
        modified=True,
    )


def post_compact_file_attachments(records: Sequence[Record], config: FullCompactConfig) -> list[Record]:
    """Recorded Read results of the most recently read files, as meta user messages (docs §5.4)."""
    results = {b.tool_use_id: b.result_text() for r in records for b in r.tool_results() if not b.is_error}
    seen: set[str] = set()
    out: list[Record] = []
    used = 0
    for record in reversed(records):
        for block in reversed(record.tool_uses()):
            path = (block.input or {}).get("file_path") if isinstance(block.input, dict) else None
            if block.name != "Read" or not path or path in seen or block.id not in results:
                continue
            seen.add(path)
            content = results[block.id]
            if rough_tokens(content) > config.tokens_per_file:
                text = (
                    f"Note: {path} was read before the last conversation was summarized, but the contents are too"
                    " large to include. Use Read tool if you need to access it."
                )
            else:
                text = (
                    f"Called the Read tool with the following input: {js_stringify({'file_path': path})}\n"
                    f"Result of calling the Read tool:\n{content}"
                )
            cost = rough_tokens(text)
            if used + cost > config.attachment_budget or len(out) >= config.max_files_to_restore:
                return out
            used += cost
            out.append(_attachment(text, block.id or path))
    return out


def summarizer_for(config: FullCompactConfig) -> Any:
    """The configured summariser; the online one is created (and asks for a key) only when chosen."""
    if config.summarizer == "anthropic":
        from ..online import OnlineSummarizer

        return OnlineSummarizer(config.summarizer_model)
    from ..summarize.offline import OfflineSummarizer

    return OfflineSummarizer()


def full_compaction(
    view: ContextView, config: FullCompactConfig, *, trigger: str, fallbacks: tuple[str, ...] = ()
) -> Compaction:
    """Summarise everything and keep nothing."""
    from ..summarize.prompt import compact_user_summary_message

    records = list(view.records)
    raw_summary = summarizer_for(config).summarize(records)
    text = compact_user_summary_message(raw_summary, config.suppress_follow_up_questions)
    boundary = compact_boundary(trigger, view.tokens, records[-1] if records else None)
    summary = summary_message(text, boundary)
    attachments = post_compact_file_attachments(records, config)
    added = (boundary, summary, *attachments)
    return Compaction(
        kind="full-compact",
        trigger=trigger,
        records=added,
        dropped=tuple(r.uuid for r in records),
        added=added,
        start=len(records),
        summary=text,
        fallbacks=fallbacks,
    )


@register
class FullCompact(Strategy):
    name = "full-compact"
    description = "Claude Code full compaction at the auto-compact threshold: 9-section summary, nothing kept."
    Config = FullCompactConfig
    config: FullCompactConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        if not self.config.trigger.is_above_threshold(view.tokens):
            return None
        return full_compaction(view, self.config, trigger="auto")
