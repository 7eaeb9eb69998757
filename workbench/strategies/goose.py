"""``goose``: Goose's auto-compaction (block/goose, docs/peers.md "Late 2026").

Read in the search index's stored versions of block/goose (the repository snapshot, 588 MB, is too large to
bring here, so which stored version is the newest could not be established; the behaviour below is the same
in every version read): ``crates/goose/src/context_mgmt/mod.rs`` @ 331a8429 (``compact_messages``,
``check_if_compaction_needed``, ``DEFAULT_COMPACTION_THRESHOLD``), a later ``mod.rs`` built on the
``goose-context-management`` crate (same keep rule, plus carrying the turn-context event), and
``crates/goose/src/agents/state_machine/ops_compaction.rs`` @ 57f1b3f2 (``CompactionOperation``).

**When.** ``DEFAULT_COMPACTION_THRESHOLD = 0.8``, overridden by ``GOOSE_AUTO_COMPACT_THRESHOLD``; a value
``<= 0`` or ``>= 1`` turns auto-compaction off. It fires when ``tokens / context_limit > threshold``
(strictly above), ``tokens`` being the session's recorded token total (here the last response's usage total,
`ContextView.usage_tokens`; the view's estimate when there is none, as Goose estimates when the session has
no total) and ``context_limit`` the model's window (``context_window``, or the one the recording proves).
Proactive compaction runs only when the conversation's last message is a user message that is not a tool
response, i.e. before the first call of a user turn, never inside a tool loop.

**What.** ``compact_messages`` summarises *every* agent-visible message and hides them all from the agent;
the new context is the summary (a user-role message), an assistant continuation message (a fixed text saying
the context was compacted and to continue without mentioning it; paraphrased here) and a fresh copy of the
most recent user message that has text and no tool content (its text only), followed by that turn's own
context event. Nothing else of the history is kept verbatim. Here the summary is the offline summariser's
(Goose asks its fast model with the ``compaction.md`` prompt over the messages rendered as ``[role]: …`` lines,
thinking dropped, and retries with 10/20/50/100% of the tool responses removed from the middle when that
request itself overflows); the kept user message is the turn's real prompt and the meta records after it are
its turn context. A compaction that cannot bring the context under the trigger stops after 3 in a row
(`workbench.strategies.refill`; Goose documents no rule of its own).

Not modelled: the reactive path (a ``ContextLengthExceeded`` error compacts and retries, at most 2 times: a
replayed request never fails), Goose's ``/compact`` (nothing kept, its own continuation text; a recorded
Claude Code ``/compact`` is ignored), and background tool-pair summarisation (``GOOSE_TOOL_PAIR_SUMMARIZATION``:
off behind a constant in one version read, on by default in later ones; it replaces the oldest tool
call/response pairs, 10 at a time, once more than ``clamp(3 · window · threshold / 20,000, 10, 500)`` calls
outside the current turn are visible).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..request.normalize import is_sent
from ..transcript.model import Block
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .recent_window import assistant_note, is_prompt, user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = ["CONTINUATION", "DEFAULT_COMPACTION_THRESHOLD", "Goose", "GooseConfig", "turn_prompt"]

#: ``DEFAULT_COMPACTION_THRESHOLD`` in ``crates/goose/src/context_mgmt/mod.rs``.
DEFAULT_COMPACTION_THRESHOLD = 0.8

#: The assistant continuation after an automatic compaction at a user turn (paraphrase of Goose's text).
CONTINUATION = (
    "The context was compacted: the previous message summarises the conversation so far. Continue the"
    " conversation naturally from it, without mentioning the summary or that it was made."
)


class GooseConfig(StrategyConfig):
    context_window: int = Field(200_000, gt=0, description="the model's context limit")
    auto_compact_threshold: float = Field(
        DEFAULT_COMPACTION_THRESHOLD,
        ge=0,
        le=1,
        description="GOOSE_AUTO_COMPACT_THRESHOLD: compact above this share of the window; 0 or 1 turns it off",
    )
    continuation: str = Field(CONTINUATION, min_length=1)

    def fires(self, tokens: int) -> bool:
        threshold = self.auto_compact_threshold
        return 0 < threshold < 1 and tokens / self.context_window > threshold


def turn_prompt(view: ContextView) -> int | None:
    """The position of the user prompt a new user turn starts with, when the last sent record that is not
    meta is one (Goose's "last message is a user message, not a tool response"); None inside a tool loop."""
    for index in range(len(view.records) - 1, -1, -1):
        record = view.records[index]
        if not is_sent(record) or (record.kind == "user" and record.is_meta and not record.tool_results()):
            continue
        return index if is_prompt(record) else None
    return None


@register
class Goose(Strategy):
    """Goose auto-compaction (module docstring): at a user turn above 80% of the window, summary + continuation
    + the turn's prompt; nothing else kept."""

    name = "goose"
    description = (
        "Goose auto-compaction: at a new user turn above 80% of the window, summarise everything; keep only "
        "the summary, a continuation reply and the turn's prompt."
    )
    source = (
        "block/goose crates/goose/src/context_mgmt/mod.rs @ 331a8429 (compact_messages, "
        "check_if_compaction_needed) and crates/goose/src/agents/state_machine/ops_compaction.rs @ 57f1b3f2; "
        "newest version not established"
    )
    Config = GooseConfig
    config: GooseConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        prompt = turn_prompt(view)
        if prompt is None:
            return None  # Goose checks only before a user turn's first call
        tokens = view.usage_tokens or view.tokens
        fires = for_window(self.config, view).fires(tokens)
        return guarded(state, view, fires, lambda v: self._compact(v, prompt))

    def _compact(self, view: ContextView, prompt: int) -> Compaction:
        from ..summarize.offline import OfflineSummarizer

        records = view.records
        text = OfflineSummarizer().summarize([r for r in records if is_sent(r)])
        summary = user_note(text, self.name, str(view.step), event=True)
        reply = assistant_note(self.config.continuation, self.name, str(view.step))
        original = records[prompt]
        added: tuple[Any, ...] = (summary, reply)
        start = prompt
        if any(b.kind != "text" for b in original.blocks):  # only the message's text is copied
            copy = original.with_blocks([Block.text_block(original.text)], string_content=True)
            added, start = (*added, copy), prompt + 1
        return Compaction(
            kind=self.name,
            trigger="tokens",
            records=(*added, *records[start:]),
            dropped=tuple(r.uuid for r in records[:start]),
            added=added,
            start=start,
            summary=text,
            details={"kept_prompt": original.uuid},
        )
