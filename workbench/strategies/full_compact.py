"""Full (LLM) compaction, Claude Code's ``compactConversation`` (docs §5): nothing is kept.

The new context is ``[boundary, summary, ...re-attached files]``. The summary is written by a
summariser (offline deterministic by default) in the 9-section format and wrapped by
``getCompactUserSummaryMessage`` (docs §5.3). Post-compact file re-attachment (docs §5.4) is emulated
from the recording: the most recently *read* files (their recorded Read results), newest first, at most
``max_files_to_restore`` files of at most ``tokens_per_file`` tokens each within ``attachment_budget``;
CLAUDE.md and other memory files are never re-attached (docs §5.4: they come back with the user context).

``summarizer="recorded"`` replays Claude's own compactions, so that trigger and accounting fidelity can
be checked apart from summary quality: when the compaction happens right before the same API call as a
recorded one (`ContextView.recorded`), the new context is the recorded boundary and summary message
(plus the emulated attachments and the records written after the boundary), and the engine takes the
context size from the recording from then on (the post-compact usage, which includes the re-attached
files Claude Code really sent). Where no recorded compaction happened the offline summariser writes the
summary and the event says so (``summary_source``/``summary_note``).

The ``full-compact`` strategy selects its trigger constants per API call from the Claude Code version
that made it (``version="recorded"``, `workbench.strategies.versions`) or a pinned ``version``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator

from ..tokens.js import js_stringify, rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .records import compact_boundary, summary_message
from .refill import RefillGuard, guarded
from .registry import register
from .triggers import AutoCompactTrigger, for_version
from .versions import ClaudeCodeVersion, parse_version, version_constants

__all__ = [
    "FullCompact",
    "FullCompactConfig",
    "FullCompactStrategyConfig",
    "full_compaction",
    "is_memory_file",
    "post_compact_file_attachments",
    "validate_version",
    "version_row",
]

POST_COMPACT_MAX_FILES_TO_RESTORE = 5
POST_COMPACT_MAX_TOKENS_PER_FILE = 5_000
POST_COMPACT_TOKEN_BUDGET = 50_000


class FullCompactConfig(StrategyConfig):
    trigger: AutoCompactTrigger = AutoCompactTrigger()
    summarizer: Literal["offline", "anthropic", "recorded"] = Field(
        "offline",
        description="offline: deterministic extractive; anthropic: Claude (needs ANTHROPIC_API_KEY); recorded: "
        "Claude's recorded summary where Claude Code compacted before the same call, else offline",
    )
    summarizer_model: str = "claude-sonnet-4-6"
    suppress_follow_up_questions: bool = True
    max_files_to_restore: int = Field(POST_COMPACT_MAX_FILES_TO_RESTORE, ge=0)
    tokens_per_file: int = Field(POST_COMPACT_MAX_TOKENS_PER_FILE, ge=0)
    attachment_budget: int = Field(POST_COMPACT_TOKEN_BUDGET, ge=0)


def validate_version(value: str) -> str:
    """``"recorded"`` or a parseable Claude Code version (``"2.1.88"``)."""
    if value != "recorded":
        parse_version(value)
    return value


def version_row(version: str, view: ContextView) -> ClaudeCodeVersion:
    """The constants in force for ``view``'s call: its recorded version, or the pinned one."""
    return version_constants(view.version if version == "recorded" else version)


class FullCompactStrategyConfig(FullCompactConfig):
    version: str = Field("recorded", description="Claude Code version whose constants apply: recorded or e.g. 2.1.88")
    compact_by_hand_at: float | None = Field(
        None,
        gt=0,
        le=100,
        description="the user types /compact at the first new user turn once the context passes this % of the "
        "window (a manual compaction; the automatic one still fires at its threshold)",
    )

    @field_validator("version")
    @classmethod
    def _check_version(cls, value: str) -> str:
        return validate_version(value)


#: Memory files come back with the user context, never as re-attached files (docs §5.4).
_MEMORY_FILE_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md"})


def is_memory_file(path: str) -> bool:
    """CLAUDE.md / CLAUDE.local.md anywhere, or a rule file under ``.claude/rules/`` (memory files)."""
    normalized = path.replace("\\", "/")
    return normalized.rsplit("/", 1)[-1] in _MEMORY_FILE_NAMES or "/.claude/rules/" in normalized


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
            if block.name != "Read" or not path or path in seen or block.id not in results or is_memory_file(path):
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
    recorded = view.recorded if config.summarizer == "recorded" else None
    if recorded is not None and recorded.summary is not None and recorded.tail <= len(records):
        # Claude Code compacted right here: reproduce its compaction (the records written after its
        # boundary were sent after it, so they stay).
        head, tail = records[: len(records) - recorded.tail], records[len(records) - recorded.tail :]
        attachments = post_compact_file_attachments(head, config)
        added = (recorded.boundary, recorded.summary, *attachments)
        return Compaction(
            kind="full-compact",
            trigger=trigger,
            records=(*added, *tail),
            dropped=tuple(r.uuid for r in head),
            added=added,
            start=len(head),
            summary=recorded.summary.text,
            fallbacks=fallbacks,
            details={
                "recorded": True,
                "summary_source": "recorded",
                "recorded_boundary": recorded.boundary.uuid,
                "recorded_trigger": recorded.trigger,
            },
        )
    note = None
    if config.summarizer == "recorded":
        note = "no recorded compaction before this call: offline summary"
        raw_summary = summarizer_for(config.model_copy(update={"summarizer": "offline"})).summarize(records)
    else:
        raw_summary = summarizer_for(config).summarize(records)
    text = compact_user_summary_message(raw_summary, config.suppress_follow_up_questions)
    boundary = compact_boundary(trigger, view.tokens, records[-1] if records else None)
    summary = summary_message(text, boundary)
    attachments = post_compact_file_attachments(records, config)
    added = (boundary, summary, *attachments)
    source = "offline" if config.summarizer == "recorded" else config.summarizer
    return Compaction(
        kind="full-compact",
        trigger=trigger,
        records=added,
        dropped=tuple(r.uuid for r in records),
        added=added,
        start=len(records),
        summary=text,
        fallbacks=fallbacks,
        details={"summary_source": source, **({"summary_note": note} if note else {})},
    )


@register
class FullCompact(Strategy):
    name = "full-compact"
    description = (
        "Claude Code full compaction at the auto-compact threshold of the recorded version: 9-section summary, "
        "nothing kept (summarizer=recorded replays Claude's own summaries)."
    )
    source = (
        "Claude Code v2.1.88 source src/services/compact/compact.ts, prompt.ts (docs §5); trigger per version"
        " from workbench/strategies/versions.py (anthropics/claude-code CHANGELOG.md to 2.1.240)"
    )
    Config = FullCompactStrategyConfig
    config: FullCompactStrategyConfig

    def trigger_for(self, view: ContextView) -> AutoCompactTrigger:
        row = version_row(self.config.version, view)
        return for_version(self.config.trigger, row, view.model, window=view.window)

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        trigger = self.trigger_for(view)
        if self.by_hand(view, trigger):
            return guarded(state, view, True, lambda v: full_compaction(v, self.config, trigger="manual"))
        return guarded(state, view, trigger.fires(view), lambda v: full_compaction(v, self.config, trigger="auto"))

    def by_hand(self, view: ContextView, trigger: AutoCompactTrigger) -> bool:
        """``compact_by_hand_at``: a user who types ``/compact`` between turns once the context passes that
        share of the window does it before the first call of a new user turn (never inside a tool loop),
        as Goose's turn check finds it (`workbench.strategies.goose.turn_prompt`)."""
        share = self.config.compact_by_hand_at
        if share is None or view.tokens < trigger.context_window * share / 100:
            return False
        from .goose import turn_prompt

        return turn_prompt(view) is not None

    def compact_manual(self, view: ContextView, state: Any) -> Compaction | None:
        """A recorded ``/compact``: compact now whatever the size (docs §5.1 step 13)."""
        return full_compaction(view, self.config, trigger="manual")
