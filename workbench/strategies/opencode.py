"""opencode session compaction and pruning (docs/peers.md §1.5, ``packages/opencode/src/session/``).

``opencode`` (``overflow.ts`` + ``compaction.ts``) [V]:

* overflow when the context ≥ usable; ``reserved = compaction.reserved ?? min(20,000, model max
  output)``; ``usable = input limit − reserved``, or, when the model has no input limit (the models.dev
  entries of Claude models give context and output only), ``context − max output − reserved``: 200,000
  − 32,000 − 20,000 = 148,000 at our defaults (set ``input_limit`` for the other formula);
* the tail kept verbatim is ``compaction.preserve_recent_tokens ?? min(15,000, max(2,000, floor(usable ×
  0.25)))`` tokens, taken by turns (newest first, whole where they fit); the turn that does not fit is
  split inside at message granularity, then the walk stops; ``tail_turns`` caps the number of turns;
* the head becomes one summary (prepend mode; the offline summariser instead of the Markdown template).
  Not reproduced: suffix mode, fallbacks, and the synthetic "continue" user message injected after an
  auto compaction.

``opencode-prune`` (``compaction.ts`` prune) [V]: walk backwards, skip until 2 user turns have been seen
(the last 2 turns are protected), stop at a summary or at an output already cleared; once the completed
tool outputs seen exceed **PRUNE_PROTECT = 40,000** tokens every older output is a candidate; they are
cleared ("[Old tool result content cleared]") only when the candidates exceed **PRUNE_MINIMUM = 20,000**
tokens; **PRUNE_PROTECTED_TOOLS = ["skill"]** are never cleared. Prune runs when a prompt loop ends
(``mode="turn_end"``: at the first call after a new real user message), or before every call
(``"every_step"``). Whether it is on by default differs by version (§1.5); the strategy is on.

Mapping: an opencode **user message** is a real user record (`is_prompt`); a **turn** is that message
and everything after it; an opencode **assistant message** holds its tool calls *and* their outputs, so
it is one API call plus its tool_results (a step turn, `step_starts`): a cut at message granularity never
separates a call from its result. Tokens are chars/4 (opencode's ``Token.estimate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import Field

from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, NameSet, Strategy, StrategyConfig, for_window
from .recent_window import (
    is_added,
    is_prompt,
    prompt_indices,
    safe_cut,
    shrinking_start,
    splice,
    step_starts,
    user_note,
)
from .refill import RefillGuard, guarded
from .registry import register
from .rewrite import extends, in_place, rewrite_tool_results

__all__ = ["OpenCode", "OpenCodeConfig", "OpenCodePrune", "PruneConfig"]

PRUNE_CLEARED = "[Old tool result content cleared]"


class OpenCodeConfig(StrategyConfig):
    auto: bool = True
    context_window: int = Field(200_000, gt=0)
    input_limit: int | None = Field(None, gt=0)
    max_output_tokens: int = Field(32_000, gt=0)
    reserved: int | None = Field(None, ge=0, description="compaction.reserved")
    preserve_recent_tokens: int | None = Field(None, ge=0)
    tail_turns: int | None = Field(None, ge=0)

    @property
    def usable(self) -> int:
        reserved = self.reserved if self.reserved is not None else min(20_000, self.max_output_tokens)
        if self.input_limit is not None:
            return self.input_limit - reserved
        return self.context_window - self.max_output_tokens - reserved

    @property
    def tail_tokens(self) -> int:
        if self.preserve_recent_tokens is not None:
            return self.preserve_recent_tokens
        return min(15_000, max(2_000, self.usable * 25 // 100))


def tail_start(view: ContextView, budget: int, tail_turns: int | None) -> int:
    """First kept index: whole turns newest first while they fit, then the newest messages of the next."""
    records = view.records
    n = len(records)
    turns = [0, *[i for i in prompt_indices(records) if i > 0]]
    ends = [*turns[1:], n]
    messages = sorted(set(step_starts(records)) | set(turns))
    start = n
    used = 0
    for count, (first, end) in enumerate(zip(reversed(turns), reversed(ends), strict=True)):
        cost = sum(view.rough[first:end])
        if (tail_turns is None or count < tail_turns) and used + cost <= budget:
            used += cost
            start = first
            continue
        for m in reversed([m for m in messages if first <= m < end]):
            cost = sum(view.rough[m:start])
            if used + cost > budget:
                break
            used += cost
            start = m
        break
    return start


@register
class OpenCode(Strategy):
    """opencode auto compaction at usable = 148k (200k − 32k output − 20k reserved), 15k-token tail."""

    name = "opencode"
    description = (
        "opencode compaction when tokens ≥ window − max output − min(20k, max output): summary + 15k-token tail."
    )
    Config = OpenCodeConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        return guarded(state, view, config.auto and view.tokens >= config.usable, self._compact)

    def _compact(self, view: ContextView) -> Compaction:
        config = for_window(self.config, view)
        naive = tail_start(view, config.tail_tokens, config.tail_turns)
        start, fallbacks = shrinking_start(view, safe_cut(view.records, naive), config.usable)
        from ..summarize.offline import OfflineSummarizer

        text = OfflineSummarizer().summarize(list(view.records[:start]))
        summary = user_note(text, self.name, str(view.step), event=True)
        result = splice(
            view, start, kind=self.name, trigger="overflow", added=(summary,), naive_start=naive, summary=text
        )
        return replace(result, fallbacks=fallbacks)


class PruneConfig(StrategyConfig):
    protect_tokens: int = Field(40_000, ge=0, description="PRUNE_PROTECT")
    minimum_tokens: int = Field(20_000, ge=0, description="PRUNE_MINIMUM")
    protected_tools: NameSet = frozenset({"skill"})
    protected_turns: int = Field(2, ge=0)
    mode: Literal["turn_end", "every_step"] = "turn_end"


@dataclass
class PruneState:
    """``prompts_seen``: the prompts (`is_prompt`) of the context at the last call, counted on ``context``,
    the context last seen or returned (records shared, never copied): a context that extends it adds the
    prompts of what was appended, any other is counted again (a prune rewrites tool results only, which are
    never prompts). Before, every call counted the whole context's prompts."""

    prompts_seen: int = 0
    context: Sequence[Record] = ()

    def count(self, records: Sequence[Record]) -> int:
        if extends(records, self.context):
            counted = self.prompts_seen + sum(map(is_prompt, records[len(self.context) :]))
        else:
            counted = len(prompt_indices(records))
        self.context = records
        return counted


@register
class OpenCodePrune(Strategy):
    """opencode prune: protect the last 2 turns and the newest 40k tokens of tool output; clear older
    outputs when they exceed 20k tokens."""

    name = "opencode-prune"
    description = (
        "opencode prune: keep the last 2 turns and newest 40k tool-output tokens; clear older outputs if >20k."
    )
    Config = PruneConfig

    def new_state(self) -> PruneState:
        return PruneState()

    def compact(self, view: ContextView, state: PruneState) -> Compaction | None:
        config = self.config
        records = view.records
        prompts = state.count(records)
        new_turn = prompts > state.prompts_seen
        state.prompts_seen = prompts
        if config.mode == "turn_end" and not new_turn:
            return None
        names = {b.id: (b.name or "").lower() for r in records if r.kind == "assistant" for b in r.tool_uses()}
        protected = {t.lower() for t in config.protected_tools}
        turns = total = pruned = 0
        candidates: set[str] = set()
        done = False
        for record in reversed(records):
            if is_prompt(record):
                turns += 1
            if turns < config.protected_turns:
                continue
            if is_added(record) or record.is_compact_summary:
                break
            for block in reversed(record.tool_results()):
                if names.get(block.tool_use_id) in protected:
                    continue
                if block.content == PRUNE_CLEARED:
                    done = True
                    break
                estimate = rough_tokens(block.result_text())
                total += estimate
                if total > config.protect_tokens:
                    pruned += estimate
                    candidates.add(block.tool_use_id)
            if done:
                break
        if pruned <= config.minimum_tokens:
            return None

        def clear(block: Block) -> str:
            return PRUNE_CLEARED

        new, changed = rewrite_tool_results(records, clear, candidates)
        state.context = new
        return in_place(self.name, config.mode, records, new, {"pruned": changed, "pruned_tokens": pruned})
