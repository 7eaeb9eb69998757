"""Session-memory compaction (``trySessionMemoryCompaction``, docs §2) and its naive variant.

Before each API call the engine lets the strategy observe the context: the extraction trigger
(``shouldExtractMemory``, docs §1.3) decides whether the session memory is (re)written by the memory
extractor (offline deterministic by default) and moves ``lastSummarizedMessageId`` only after a turn
without tool calls. When the auto-compact threshold is crossed:

1. no memory yet, or template-only memory → fall back to full compaction;
2. ``lastSummarizedMessageId`` set but not in the context → fall back; unset (resumed) → index
   ``len - 1`` and expand backward (docs §2.6 step 4);
3. keep window = ``calculateMessagesToKeepIndex`` (minTokens 10k, minTextBlockMessages 5, maxTokens 40k,
   floor = last boundary + 1) then ``adjustIndexToPreserveAPIInvariants``, or the raw window without the
   adjustment (``sm-compact-naive``, unsafe: the article's ~2.79% failure mode);
   ``thinking_aware`` (default True in ``sm-compact``) adds `workbench.request.invariants.adjust_for_thinking`;
4. post-compact size (``estimateMessageTokens`` of the new context as one list, rounded up once: the
   string-content summary counts 0, docs §2.6 step 8) ≥ threshold → fall back to full compaction;
5. any exception in steps 2-4 → fall back to full compaction (docs §2.6 step 9);
6. ``lastSummarizedMessageId`` is reset after the compaction, also when it fell back to full compaction
   (``autoCompactIfNeeded`` resets it after either, docs §2.6 step 11); memory and
   ``tokensAtLastExtraction`` are kept (docs §1.2). The boundary's ``preTokens`` is
   ``tokenCountFromLastAPIResponse`` (the last response's usage total, docs §2.6 step 7), not the
   estimate the trigger used.

Three registered variants, because the reference adjustment is not enough on the open corpus:

* ``sm-compact-reference``: exactly v2.1.88 (``thinking_aware=False``). On all three real auto-compactions
  of the corpus every assistant response carried a tool_use, so ``lastSummarizedMessageId`` was never set
  (docs §1.2: only after a tool-free turn) and the window expands backward from ``len - 1`` (docs §2.6
  step 4) into the running tool loop. After the plain-text summary message the first kept response then
  opens the API's "final assistant message", and when it has no thinking block the request is rejected
  with thinking on (docs §9 item 11): 3 of 3 compactions, ``final_assistant_missing_thinking``.
* ``sm-compact``: the same plus our thinking-aware cut (``thinking_aware=True``, a deliberate deviation
  from v2.1.88, docs/replay.md, "What SM-compaction would have done"): zero violations on the corpus.
* ``sm-compact-naive``: no adjustment at all (unsafe).

``claude-code`` runs ``sm-compact-reference``'s configuration (it reproduces v2.1.88 as shipped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from ..memory.fork import ExtractionCall, extraction_call
from ..request.invariants import adjust_for_thinking
from ..tokens.estimators import estimate_message_tokens
from ..transcript.model import Record
from ..util.identity_memo import IdentityMemo
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .full_compact import FullCompactConfig, full_compaction
from .records import compact_boundary, summary_message
from .refill import RefillGuard, guarded
from .registry import register
from .triggers import AutoCompactTrigger

__all__ = [
    "SMCompact",
    "SMCompactConfig",
    "SMCompactNaive",
    "SMCompactReference",
    "SMCompactReferenceConfig",
    "SMState",
    "sm_compaction",
]

#: Where the notes would live (docs §1.1); named in the truncation note of the summary message.
MEMORY_PATH = "~/.claude/projects/<cwd>/<session>/session-memory/summary.md"


class SMCompactConfig(StrategyConfig):
    trigger: AutoCompactTrigger = AutoCompactTrigger()
    min_tokens: int = Field(10_000, ge=0, description="minTokens")
    min_text_block_messages: int = Field(5, ge=0, description="minTextBlockMessages")
    max_tokens: int = Field(40_000, gt=0, description="maxTokens")
    minimum_message_tokens_to_init: int = Field(10_000, ge=0)
    minimum_tokens_between_update: int = Field(5_000, ge=0)
    tool_calls_between_updates: int = Field(3, ge=0)
    extractor: Literal["offline", "anthropic"] = Field(
        "offline", description="offline: deterministic; anthropic: Claude with Claude Code's update rules"
    )
    extractor_model: str = "claude-sonnet-4-6"
    thinking_aware: bool = Field(
        True,
        description="also move the cut so the kept tool loop opens with thinking (our extension; "
        "False = v2.1.88 exactly)",
    )
    full_compact: FullCompactConfig = FullCompactConfig()

    @model_validator(mode="after")
    def _window_order(self) -> SMCompactConfig:
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens ({self.min_tokens}) must not exceed max_tokens ({self.max_tokens})")
        return self


@dataclass
class SMState:
    """Per-session module state (docs §1.2): trigger bookkeeping and the current memory."""

    trigger: Any
    extractor: Any = None
    memory: Any = None
    extractions: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    #: The last record the memory has seen; the next extraction reads only what came after it.
    last_extracted: Record | None = None
    #: The refill stop of the ``sm-compact`` strategies (`workbench.strategies.refill`; ``claude-code`` has
    #: its version's circuit breaker instead).
    refill: RefillGuard = field(default_factory=RefillGuard)


def _memory_api() -> Any:
    from ..memory import extractor, template, trigger

    return extractor, template, trigger


def new_sm_state(config: SMCompactConfig) -> SMState:
    from ..memory.trigger import ExtractionTrigger, TriggerConfig

    trigger_config = TriggerConfig(
        minimum_message_tokens_to_init=config.minimum_message_tokens_to_init,
        minimum_tokens_between_update=config.minimum_tokens_between_update,
        tool_calls_between_updates=config.tool_calls_between_updates,
    )
    if config.extractor == "anthropic":
        from ..online import OnlineMemoryExtractor

        extractor: Any = OnlineMemoryExtractor(config.extractor_model)
    else:
        from ..memory.extractor import OfflineMemoryExtractor

        extractor = OfflineMemoryExtractor()
    return SMState(trigger=ExtractionTrigger(trigger_config), extractor=extractor)


def observe_sm(view: ContextView, state: SMState) -> ExtractionCall | None:
    """The post-sampling hook: maybe extract memory from the context as it is now.

    Returns the extraction's forked call (`workbench.memory.fork`: what it read and wrote, for its cost)
    when one ran, else None.
    """
    records = list(view.records)
    if not records or view.is_subagent:
        return None  # the hook runs only for the main REPL thread (docs §1.3)
    if not state.trigger.observe(records, tokens=view.tokens).extracted:
        return None
    before = state.memory
    state.memory = state.extractor.extract(_unseen(records, state.last_extracted), state.memory)
    state.last_extracted = records[-1]
    state.extractions += 1
    state.history.append({"step": view.step, "memory": state.memory})
    return extraction_call(records, view.tokens, before, state.memory, state.extractor)


def _unseen(records: list[Record], last: Record | None) -> list[Record]:
    """The records after ``last`` (all of them when it is gone, e.g. compacted away).

    The memory is a running note: each update merges what is new into the previous notes, as Claude
    Code's extraction edits the existing file. Reading only the new records keeps extraction linear in
    the session length instead of quadratic.
    """
    if last is None:
        return records
    for index in range(len(records) - 1, -1, -1):
        if records[index] is last:
            return records[index + 1 :]
    return records


#: The config-free parts of recent compactions, by the records they saw (`IdentityMemo`): the configs of a
#: `replay_group` branch compact the same records at its splits, and a third as many cuts as compactions
#: were distinct on the tune grid.
_CUTS: IdentityMemo[int] = IdentityMemo()
_SIZES: IdentityMemo[int] = IdentityMemo()


def sm_compaction(
    view: ContextView,
    state: SMState,
    config: SMCompactConfig,
    *,
    adjust: bool,
    threshold: int | None = None,
    trigger: str = "auto",
    reset: bool = True,
) -> Compaction:
    """``trySessionMemoryCompaction`` with its fallbacks to full compaction (docs §2.6, §10).

    Args:
        view: the context before the call.
        state: the session-memory state (shared by a process's agents, `workbench.strategies.process`).
        config: keep window, trigger and the fallback's full-compaction config.
        adjust: apply ``adjustIndexToPreserveAPIInvariants`` (False: the naive window).
        threshold: the auto-compact threshold for the post-compact size check (default the config's;
            a manual ``/compact`` passes none, docs §2.6 step 8).
        trigger: ``auto`` or ``manual`` (the full-compaction fallback's boundary; SM's own is always auto).
        reset: reset ``lastSummarizedMessageId`` afterwards (docs §2.6 step 11).
    """
    from ..summarize.prompt import sm_compact_summary_message
    from .keep_window import keep_window

    _, template, _ = _memory_api()
    records = list(view.records)
    limit = config.trigger.threshold if threshold is None and trigger == "auto" else threshold

    def done(result: Compaction) -> Compaction:
        if reset:
            state.trigger.after_compaction()
        return result

    def fallback(reason: str) -> Compaction:
        return done(full_compaction(view, config.full_compact, trigger=trigger, fallbacks=(reason,)))

    if state.memory is None:
        return fallback("no session memory")
    content = state.memory.text
    if template.is_session_memory_empty(content):
        return fallback("session memory is the empty template")
    last_id = state.trigger.last_summarized_message_id
    if last_id is None:
        last_index = len(records) - 1
    else:
        last_index = next((i for i, r in enumerate(records) if r.uuid == last_id), -2)
        if last_index == -2:
            return fallback("lastSummarizedMessageId not found")
    try:
        window = keep_window(
            records,
            last_index,
            min_tokens=config.min_tokens,
            min_text_block_messages=config.min_text_block_messages,
            max_tokens=config.max_tokens,
            counts=view.padded,
        )
        start = window.start if adjust else window.naive_start
        if adjust and config.thinking_aware:
            start = _CUTS.get(records, window.naive_start, lambda: _thinking_cut(records, window.naive_start))
        kept = [r for r in records[start:] if not r.is_compact_boundary]
        text = sm_compact_summary_message(content, transcript_path=None, memory_path=MEMORY_PATH)
        # preCompactTokenCount = tokenCountFromLastAPIResponse (usage only), ?? 0 (docs §2.6 step 7)
        pre_tokens = view.usage_tokens if view.usage_tokens is not None else view.tokens
        boundary = compact_boundary("auto", pre_tokens, records[-1] if records else None)
        summary = summary_message(text, boundary)
        # estimateMessageTokens([boundary, summary, ...kept]) as one list: boundary and string summary count 0
        post_tokens = _SIZES.get(records, start, lambda: estimate_message_tokens(kept))
    except Exception as error:  # docs §2.6 step 9: any error → null → full compaction
        return fallback(f"session-memory compaction error: {type(error).__name__}: {error}")
    if limit is not None and post_tokens >= limit:
        return fallback("post-compact estimate above the auto-compact threshold")
    dropped = tuple(r.uuid for r in records[:start])
    return done(
        Compaction(
            kind="sm-compact" if adjust else "sm-compact-naive",
            trigger=trigger,
            records=(boundary, summary, *kept),
            dropped=dropped,
            added=(boundary, summary),
            start=start,
            naive_start=window.naive_start,
            summary=text,
            details={
                "post_compact_tokens": post_tokens,
                "last_summarized_index": last_index,
                "summary_source": "session-memory",
            },
        )
    )


def _thinking_cut(records: list[Record], naive_start: int) -> int:
    thinking = any(b.kind == "thinking" for r in records for b in r.blocks)
    return adjust_for_thinking(records, naive_start, thinking=thinking)


@register
class SMCompact(Strategy):
    name = "sm-compact"
    description = (
        "Claude Code session-memory compaction: memory note + recent window, API-invariant adjusted, plus our "
        "thinking-aware cut (thinking_aware=false gives v2.1.88 exactly: sm-compact-reference)."
    )
    source = (
        "Claude Code v2.1.88 source src/services/compact/sessionMemoryCompact.ts (docs §2), with the "
        "workbench's thinking-aware cut"
    )
    Config = SMCompactConfig
    config: SMCompactConfig
    adjust = True
    compaction_only = frozenset(
        {"min_tokens", "max_tokens", "min_text_block_messages", "thinking_aware", "full_compact"}
    )
    #: the threshold: when the compaction fires, and the post-compact size check inside it (docs §2.6 step 8)
    trigger_only = frozenset({"trigger"})

    def new_state(self) -> SMState:
        return new_sm_state(self.config)

    def observe(self, view: ContextView, state: SMState) -> ExtractionCall | None:
        return observe_sm(view, state)

    def fires(self, view: ContextView) -> bool:
        return for_window(self.config.trigger, view).is_above_threshold(view.tokens)

    def compact(self, view: ContextView, state: SMState) -> Compaction | None:
        return guarded(
            state.refill, view, self.fires(view), lambda v: sm_compaction(v, state, self.config, adjust=self.adjust)
        )

    def compact_manual(self, view: ContextView, state: SMState) -> Compaction | None:
        """``/compact`` without instructions: SM-compact first, no size check (docs §5.1 step 13)."""
        return sm_compaction(view, state, self.config, adjust=self.adjust, trigger="manual")


class SMCompactReferenceConfig(SMCompactConfig):
    thinking_aware: bool = Field(False, description="True adds our thinking-aware cut (= sm-compact)")


@register
class SMCompactReference(SMCompact):
    """v2.1.88's session-memory compaction as shipped. Flagged unsafe because Claude Code's own cut makes
    requests the API rejects: on all three auto-compactions of the dev corpus's marot sessions its kept
    window opens the running tool loop with a response that holds no thinking
    (``final_assistant_missing_thinking``, 16 requests; `tests/replay/test_reality_check.py`)."""

    name = "sm-compact-reference"
    source = "Claude Code v2.1.88 source src/services/compact/sessionMemoryCompact.ts (docs §2), exactly"
    unsafe = True
    description = (
        "Session-memory compaction exactly as Claude Code v2.1.88: adjustIndexToPreserveAPIInvariants only "
        "(its cut can open the kept tool loop without thinking)."
    )
    Config = SMCompactReferenceConfig


@register
class SMCompactNaive(SMCompact):
    name = "sm-compact-naive"
    description = "Session-memory compaction without adjustIndexToPreserveAPIInvariants (pre-fix baseline)."
    source = (
        "Claude Code v2.1.88 source src/services/compact/sessionMemoryCompact.ts (docs §2) without "
        "adjustIndexToPreserveAPIInvariants (the behaviour before that fix)"
    )
    unsafe = True
    adjust = False


def kept_records(compaction: Compaction) -> list[Record]:
    return list(compaction.records[len(compaction.added) :])
