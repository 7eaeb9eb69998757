"""The session-memory extraction trigger, ``shouldExtractMemory`` and its state (docs §1.2, §1.3).

Claude Code runs a post-sampling hook after every main-thread model response with the message list
``[...post-compact-boundary slice, ...this response's assistant records]`` (the last message is an
assistant record; this turn's tool results are not in it yet). `ExtractionTrigger.observe` is that
hook: feed it that list and it says whether an extraction ran and what ``lastSummarizedMessageId`` now
is, which is what SM-compact's keep window starts from (docs §2.6 step 4).

Reproduced (docs §1.3):

* Not yet initialized: nothing happens below ``minimumMessageTokensToInit`` (10k); crossing it marks
  the session initialized for good.
* ``tokenOK``: ``tokenCountWithEstimation(messages) - tokensAtLastExtraction >= 5000``; always required.
* ``toolOK``: at least 3 ``tool_use`` blocks in assistant messages strictly after
  ``lastMemoryMessageUuid`` (from the start when unset; 0 when set but no longer present).
* Extract when ``tokenOK and (toolOK or the last assistant message has no tool_use)`` (natural break).
* On extraction: ``lastMemoryMessageUuid`` and ``tokensAtLastExtraction`` are updated;
  ``lastSummarizedMessageId`` is set to the last message's uuid only if the last assistant message has
  no tool_use (``updateLastSummarizedMessageIdIfSafe``).
* Compaction resets only ``lastSummarizedMessageId`` (`ExtractionTrigger.after_compaction`);
  ``tokensAtLastExtraction`` is never lowered (§1.3 quirk).

Assumption: the extraction always succeeds (the forked agent's outcome is not in the transcript).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..tokens.context import token_count_with_estimation
from ..transcript.model import Record

__all__ = ["ExtractionTrigger", "TriggerConfig", "TriggerResult", "should_extract_memory"]


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    """``DEFAULT_SESSION_MEMORY_CONFIG`` (docs §1.2). Values must be positive (as the remote override
    requires); bad values raise instead of falling back."""

    minimum_message_tokens_to_init: int = 10_000
    minimum_tokens_between_update: int = 5_000
    tool_calls_between_updates: int = 3

    def __post_init__(self) -> None:
        for name in ("minimum_message_tokens_to_init", "minimum_tokens_between_update", "tool_calls_between_updates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True)
class TriggerResult:
    """What one post-sampling hook call did."""

    extracted: bool
    tokens: int
    last_summarized_message_id: str | None


def _last_assistant_has_tool_use(messages: Sequence[Record]) -> bool:
    for record in reversed(messages):
        if record.kind == "assistant":
            return any(b.kind == "tool_use" for b in record.blocks)
    return False


def _tool_calls_since(messages: Sequence[Record], uuid: str | None) -> int:
    start = 0
    if uuid is not None:
        index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].uuid == uuid), None)
        if index is None:
            return 0
        start = index + 1
    return sum(len(r.tool_uses()) for r in messages[start:] if r.kind == "assistant")


class ExtractionTrigger:
    """The module state of ``sessionMemory.ts`` for one session, and its post-sampling hook."""

    def __init__(self, config: TriggerConfig | None = None) -> None:
        self.config = config or TriggerConfig()
        self.initialized = False
        self.tokens_at_last_extraction = 0
        self.last_memory_message_uuid: str | None = None
        self.last_summarized_message_id: str | None = None
        self.extractions = 0

    def __eq__(self, other: object) -> bool:
        """Equal when in the same state: `workbench.replay.replay_group` replays configs whose states
        come out of a compaction equal once."""
        return type(other) is type(self) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable state

    def should_extract(self, messages: Sequence[Record], tokens: int) -> bool:
        """``shouldExtractMemory`` (docs §1.3 steps 2-7); marks the session initialized."""
        if not self.initialized:
            if tokens < self.config.minimum_message_tokens_to_init:
                return False
            self.initialized = True
        token_ok = tokens - self.tokens_at_last_extraction >= self.config.minimum_tokens_between_update
        if not token_ok:  # the token threshold is always required (step 7); skip counting tool calls
            return False
        tool_ok = _tool_calls_since(messages, self.last_memory_message_uuid) >= self.config.tool_calls_between_updates
        return tool_ok or not _last_assistant_has_tool_use(messages)

    def observe(self, messages: Sequence[Record], *, tokens: int | None = None) -> TriggerResult:
        """Run the hook after a model response.

        Args:
            messages: post-compact-boundary slice plus this response's assistant records.
            tokens: ``tokenCountWithEstimation(messages)`` if already known (computed otherwise).

        Returns:
            Whether an extraction ran, the token count used, and ``lastSummarizedMessageId``.
        """
        if tokens is None:
            tokens = token_count_with_estimation(messages)
        extracted = bool(messages) and self.should_extract(messages, tokens)
        if extracted:
            self.extractions += 1
            self.last_memory_message_uuid = messages[-1].uuid
            self.tokens_at_last_extraction = tokens
            if not _last_assistant_has_tool_use(messages):
                self.last_summarized_message_id = messages[-1].uuid
        return TriggerResult(extracted, tokens, self.last_summarized_message_id)

    def after_compaction(self) -> None:
        """A successful compaction resets ``lastSummarizedMessageId`` only (docs §1.2, §2.6 step 11)."""
        self.last_summarized_message_id = None


def should_extract_memory(
    messages: Sequence[Record], trigger: ExtractionTrigger | None = None, *, tokens: int | None = None
) -> TriggerResult:
    """Functional form: run ``trigger`` (a fresh one when None) over ``messages``."""
    return (trigger or ExtractionTrigger()).observe(messages, tokens=tokens)
