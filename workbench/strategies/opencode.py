"""opencode session compaction and pruning (``packages/opencode/src/session/``).

Sources, read for each fact below: sst/opencode at commit 31e22f65 (``session/compaction.ts``,
``session/overflow.ts``, ``packages/core/src/session/compaction.ts`` and ``compaction-suffix.ts``), the main
line; and anomalyco/opencode commit 001aa6cc (``session/compaction.ts``), the head of pull request
anomalyco/opencode#20632 ("PTL retry, breaker policy, attachment restoration & budget accounting",
2026-04-02), which was closed without being merged: the main line at 31e22f65 has no retry ladder,
no ``COMPACTION_MAX_OUTPUT_TOKENS`` and no ``POST_COMPACT_TOKEN_BUDGET``.

``opencode`` (sst/opencode @31e22f65, ``overflow.ts`` + ``compaction.ts``) [V]:

* overflow when the context ≥ usable; ``reserved = compaction.reserved ?? min(20,000, model max
  output)`` (``COMPACTION_BUFFER``); ``usable = input limit − reserved``, or, when the model has no input
  limit (the models.dev entries of Claude models give context and output only), ``context − max output −
  reserved``: 200,000 − 32,000 − 20,000 = 148,000 at our defaults (set ``input_limit`` for the other
  formula); ``compaction.auto = false`` turns it off;
* the tail kept verbatim is ``compaction.preserve_recent_tokens ?? min(15,000, max(2,000, floor(usable ×
  0.25)))`` tokens (``MIN/MAX_PRESERVE_RECENT_TOKENS``), taken by turns (newest first, whole where they
  fit); the turn that does not fit is split inside at message granularity, then the walk stops;
  ``tail_turns`` caps the number of turns;
* the head becomes one summary (prepend mode, the default ``compaction.mode``): the head serialized to
  text, tool results cut to 2,000 characters (``TOOL_OUTPUT_MAX_CHARS``), cleared outputs as "[Old tool
  result content cleared]", sent with ``buildPrompt``: the Markdown template of ``compaction-suffix.ts``
  (``## Objective``, ``## Important Details``, ``## Work State`` with ``### Completed`` / ``### Active`` /
  ``### Blocked``, ``## Next Move``, ``## Relevant Files``), merged with the previous summary when there is
  one. A summarisation request the provider rejects as too long ends the compaction with an error (no
  retry).

  Modelled: the summary is written offline in that template (`opencode_summary`; `validate_summary` is
  the source's ``validateSummary`` check, recorded in the event); a previous summary is carried forward
  as part of the head the offline summariser reads (the source passes it apart, as ``<prior-summary>``);
  the serialized head's size is the
  summariser's input (``summarizer_input_tokens`` in the event's details); a head whose serialized prompt
  does not fit the window is not compacted [assumed: the provider's overflow]. Not reproduced: suffix mode
  and its fallbacks, the synthetic "continue" user message injected after an auto compaction, plugins.

``opencode-retry`` (anomalyco/opencode @001aa6cc, pull request #20632, not merged) [V]: the same overflow
trigger [assumed: that commit's ``overflow.ts`` was not read]; the *whole* history is summarised (no tail)
with at most ``COMPACTION_MAX_RETRIES = 2`` retries when the summarisation request is too long, attempt 0
the messages as they are ("full"), attempt 1 every completed tool output cleared ("compact-tools"),
attempt 2 the cleared messages from the 5th-last user message on (``PTL_KEEP_RECENT_TURNS = 5``,
"recent-turns"); each attempt's request carries the prompt (``## Goal``, ``## Instructions``,
``## Discoveries``, ``## Accomplished``, ``## Relevant files / directories``) and caps the summary at
``COMPACTION_MAX_OUTPUT_TOKENS = 20,000``; when every attempt fails, an error summary is written and the
session stops (no compaction here). After a summary the new context is the compaction's user message
(rendered "What did we do so far?" by ``toModelMessages``, anomalyco ``message-v2.ts`` @007a9409), the
summary, and the synthetic "Continue if you have next steps, or stop and ask for clarification if you are
unsure how to proceed." ``POST_COMPACT_TOKEN_BUDGET = 50,000`` less the summary's tokens is the room for
restoring at most 5 non-media tool attachments of the compacted messages (recorded in the details as
``post_compact_budget_left``; the transcripts replayed here carry no opencode file attachments, so none is
restored). A request is too long [assumed] when its tokens plus the 20,000-token output cap exceed the
window (the provider's own check is not in the source).

``opencode-prune`` (``compaction.ts`` prune; the same code at sst @31e22f65 and anomalyco @001aa6cc) [V]:
walk backwards, skip until 2 user turns have been seen (the last 2 turns are protected), stop at a
summary or at an output already cleared; protected tools (**PRUNE_PROTECTED_TOOLS = ["skill"]**) are
skipped before that check; once the completed tool outputs seen exceed **PRUNE_PROTECT = 40,000** tokens
every older output is a candidate; they are cleared ("[Old tool result content cleared]") only when the
candidates exceed **PRUNE_MINIMUM = 20,000** tokens. Prune runs when a prompt loop ends (``mode=
"turn_end"``: at the first call after a new real user message), or before every call (``"every_step"``).
On the main line it runs only when ``compaction.prune`` is set (``if (!cfg.compaction?.prune) return``);
#20632 ran it unless set to false. The strategy is the pruning itself, on.

Mapping: an opencode **user message** is a real user record (`is_prompt`); a **turn** is that message
and everything after it; an opencode **assistant message** holds its tool calls *and* their outputs, so
it is one API call plus its tool_results (a step turn, `step_starts`): a cut at message granularity never
separates a call from its result. Tokens are chars/4 (opencode's ``Token.estimate``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import Field

from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, NameSet, Strategy, StrategyConfig, for_window
from .recent_window import (
    assistant_note,
    is_added,
    is_prompt,
    overhead,
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

__all__ = [
    "CONTINUE_TEXT",
    "PRUNE_CLEARED",
    "OpenCode",
    "OpenCodeConfig",
    "OpenCodePrune",
    "OpenCodeRetry",
    "OpenCodeRetryConfig",
    "PruneConfig",
    "opencode_summary",
    "retry_summary",
    "validate_summary",
]

MAIN_SOURCE = "sst/opencode packages/opencode/src/session/compaction.ts @ 31e22f65"
PRUNE_CLEARED = "[Old tool result content cleared]"
COMPACTION_QUESTION = "What did we do so far?"
CONTINUE_TEXT = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
TOOL_OUTPUT_MAX_CHARS = 2_000
#: ``validateSummary``'s expected headings, in order.
SUMMARY_HEADINGS = (
    "## Objective",
    "## Important Details",
    "## Work State",
    "### Completed",
    "### Active",
    "### Blocked",
    "## Next Move",
    "## Relevant Files",
)
#: The fixed text of the two prompts (template and instructions), by size only.
PROMPT_TOKENS = 450
RETRY_PROMPT_TOKENS = 330


class OverflowConfig(StrategyConfig):
    """``overflow.ts``: the model's limits and ``compaction.auto`` / ``compaction.reserved``."""

    auto: bool = True
    context_window: int = Field(200_000, gt=0)
    input_limit: int | None = Field(None, gt=0)
    max_output_tokens: int = Field(32_000, gt=0)
    reserved: int | None = Field(None, ge=0, description="compaction.reserved")

    @property
    def usable(self) -> int:
        reserved = self.reserved if self.reserved is not None else min(20_000, self.max_output_tokens)
        if self.input_limit is not None:
            return max(0, self.input_limit - reserved)
        return max(0, self.context_window - self.max_output_tokens - reserved)


class OpenCodeConfig(OverflowConfig):
    preserve_recent_tokens: int | None = Field(None, ge=0)
    tail_turns: int | None = Field(None, ge=0)

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


def serialize(records: Sequence[Record]) -> str:
    """The head as the prepend prompt's ``<conversation>`` text (``serialize`` in ``compaction.ts``)."""
    lines: list[str] = []
    for record in records:
        if record.kind == "user":
            text = record.text.strip()
            if text:
                lines.append(f"[User]: {text}")
            for block in record.tool_results():
                output = block.result_text()
                if output != PRUNE_CLEARED and len(output) > TOOL_OUTPUT_MAX_CHARS:
                    output = output[:TOOL_OUTPUT_MAX_CHARS] + "\n[truncated]"
                lines.append(f"[Tool result]: {output}")
        elif record.kind == "assistant":
            for block in record.blocks:
                if block.kind == "text" and block.text:
                    lines.append(f"[Assistant]: {block.text}")
                elif block.kind == "thinking" and block.raw.get("thinking"):
                    lines.append(f"[Assistant reasoning]: {block.raw.get('thinking')}")
                elif block.kind == "tool_use":
                    lines.append(f"[Assistant tool call]: {block.name}({json.dumps(block.input)})")
    return "\n\n".join(lines)


_SECTION = re.compile(r"^(\d+)\.\s+[^:\n]+:[ \t]*$", re.MULTILINE)


def _offline_sections(records: Sequence[Record]) -> dict[int, list[str]]:
    """The offline summary's nine sections by number, as bullet lines."""
    from ..summarize.offline import OfflineSummarizer

    text = OfflineSummarizer().summarize(records)
    body = text.split("<summary>", 1)[-1].rsplit("</summary>", 1)[0]
    marks = list(_SECTION.finditer(body))
    out: dict[int, list[str]] = {}
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        chunk = body[mark.end() : following.start() if following else len(body)]
        lines = [line.strip() for line in chunk.strip().splitlines() if line.strip()]
        out[int(mark.group(1))] = [line if line.startswith("- ") else f"- {line}" for line in lines]
    return out


def _section(sections: dict[int, list[str]], *numbers: int) -> str:
    lines = [line for n in numbers for line in sections.get(n, [])]
    return "\n".join(lines) if lines else "- (none)"


def opencode_summary(records: Sequence[Record]) -> str:
    """The offline summary of ``records`` in opencode's template (``SUMMARY_TEMPLATE``)."""
    s = _offline_sections(records)
    return "\n\n".join(
        [
            f"## Objective\n{_section(s, 1)}",
            f"## Important Details\n{_section(s, 2, 6)}",
            f"## Work State\n### Completed\n{_section(s, 5)}\n\n### Active\n{_section(s, 8)}\n\n"
            f"### Blocked\n{_section(s, 4, 7)}",
            f"## Next Move\n{_section(s, 9)}",
            f"## Relevant Files\n{_section(s, 3)}",
        ]
    )


def retry_summary(records: Sequence[Record]) -> str:
    """The offline summary of ``records`` in the five sections of #20632's prompt."""
    s = _offline_sections(records)
    return "\n\n".join(
        [
            f"## Goal\n\n{_section(s, 1)}",
            f"## Instructions\n\n{_section(s, 6)}",
            f"## Discoveries\n\n{_section(s, 2, 4)}",
            f"## Accomplished\n\n{_section(s, 5, 8, 7)}",
            f"## Relevant files / directories\n\n{_section(s, 3)}",
        ]
    )


_HEADING = re.compile(r"^(#{2,3} .+)$", re.MULTILINE)


def validate_summary(text: str) -> bool:
    """``validateSummary``: exactly the template's headings in order, every section but ``## Work State``
    non-empty."""
    marks = list(_HEADING.finditer(text))
    if tuple(m.group(1) for m in marks) != SUMMARY_HEADINGS:
        return False
    for index, mark in enumerate(marks):
        if index == 2:
            continue
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        if not text[mark.end() : end].strip():
            return False
    return True


@register
class OpenCode(Strategy):
    """opencode auto compaction at usable = 148k (200k − 32k output − 20k reserved), 15k-token tail."""

    name = "opencode"
    description = (
        "opencode compaction when tokens ≥ window − max output − min(20k, max output): templated summary + "
        "15k-token tail."
    )
    source = MAIN_SOURCE
    Config = OpenCodeConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        assert isinstance(config, OpenCodeConfig)
        return guarded(state, view, config.auto and view.tokens >= config.usable, lambda v: self._compact(v, config))

    def _compact(self, view: ContextView, config: OpenCodeConfig) -> Compaction | None:
        naive = tail_start(view, config.tail_tokens, config.tail_turns)
        start, fallbacks = shrinking_start(view, safe_cut(view.records, naive), config.usable)
        head = list(view.records[:start])
        prompt_tokens = rough_tokens(serialize(head)) + PROMPT_TOKENS
        if prompt_tokens > config.context_window:
            return None
        text = opencode_summary(head)
        summary = user_note(text, self.name, str(view.step), event=True)
        result = splice(
            view,
            start,
            kind=self.name,
            trigger="overflow",
            added=(summary,),
            naive_start=naive,
            summary=text,
            details={
                "summarizer_calls": 1,
                "summarizer_input_tokens": [prompt_tokens],
                "summarizer_output_tokens": [rough_tokens(text)],
                "summary_valid": validate_summary(text),
            },
        )
        return replace(result, fallbacks=fallbacks)


class OpenCodeRetryConfig(OverflowConfig):
    max_retries: int = Field(2, ge=0, description="COMPACTION_MAX_RETRIES (compaction.max_retries)")
    recent_turns: int = Field(5, ge=1, description="PTL_KEEP_RECENT_TURNS")
    summary_max_output_tokens: int = Field(
        20_000, gt=0, description="COMPACTION_MAX_OUTPUT_TOKENS (compaction.max_output_tokens)"
    )
    post_budget: int = Field(50_000, ge=0, description="POST_COMPACT_TOKEN_BUDGET (compaction.post_budget)")


RETRY_STRATEGIES = ("full", "compact-tools", "recent-turns")


def _clear(block: Block) -> str | None:
    return None if block.result_text() == PRUNE_CLEARED else PRUNE_CLEARED


def keep_recent(records: Sequence[Record], turns: int) -> list[Record]:
    """``keepRecent``: the records from the ``turns``-th last user message on (all when there are fewer).
    A user message is a real prompt or a user record a compaction added (opencode's compaction and continue
    messages)."""
    seen = 0
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if is_prompt(record) or (record.kind == "user" and is_added(record)):
            seen += 1
        if seen >= turns:
            return list(records[index:])
    return list(records)


@register
class OpenCodeRetry(Strategy):
    """opencode pull request #20632: the whole history summarised, retried on a too-long request with tool
    outputs cleared, then with the last 5 user turns only."""

    name = "opencode-retry"
    description = (
        "opencode #20632 compaction at usable tokens: whole history summarised (≤20k output); on a too-long "
        "request retry with tool outputs cleared, then the last 5 turns."
    )
    source = "anomalyco/opencode packages/opencode/src/session/compaction.ts @ 001aa6cc (pull request #20632)"
    Config = OpenCodeRetryConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        assert isinstance(config, OpenCodeRetryConfig)
        return guarded(state, view, config.auto and view.tokens >= config.usable, lambda v: self._compact(v, config))

    def attempts(self, view: ContextView, config: OpenCodeRetryConfig) -> list[tuple[str, list[Record], int]]:
        """Each attempt's strategy, messages and request tokens, in order, up to ``max_retries`` retries."""
        from ..tokens.estimators import get_estimator

        records = list(view.records)
        cleared: list[Record] | None = None
        out = []
        base = overhead(view) + RETRY_PROMPT_TOKENS
        for attempt in range(config.max_retries + 1):
            strategy = RETRY_STRATEGIES[min(attempt, 2)]
            if strategy == "full":
                messages, tokens = records, sum(view.rough)
            else:
                if cleared is None:
                    cleared = rewrite_tool_results(records, _clear)[0]
                messages = cleared if strategy == "compact-tools" else keep_recent(cleared, config.recent_turns)
                tokens = sum(get_estimator("claude-rough").count_many(messages))
            out.append((strategy, messages, base + tokens))
        return out

    def _compact(self, view: ContextView, config: OpenCodeRetryConfig) -> Compaction | None:
        tried: list[str] = []
        for strategy, messages, tokens in self.attempts(view, config):
            if tokens + config.summary_max_output_tokens > config.context_window:
                tried.append(strategy)
                continue
            text = retry_summary(messages)[: config.summary_max_output_tokens * 4]
            summary_tokens = rough_tokens(text)
            key = str(view.step)
            added = (
                user_note(COMPACTION_QUESTION, self.name, key),
                assistant_note(text, self.name, key),
                user_note(CONTINUE_TEXT, self.name, key, "continue"),
            )
            return Compaction(
                kind=self.name,
                trigger="overflow",
                records=added,
                dropped=tuple(r.uuid for r in view.records),
                added=added,
                start=len(view.records),
                naive_start=len(view.records),
                summary=text,
                fallbacks=tuple(f"summarisation request too long: {s}" for s in tried),
                details={
                    "retry_strategy": strategy,
                    "retries": len(tried),
                    "summarizer_calls": 1,
                    "summarizer_input_tokens": [tokens],
                    "summarizer_output_tokens": [summary_tokens],
                    "post_compact_budget_left": max(0, config.post_budget - summary_tokens),
                },
            )
        return None


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
    never prompts), so a call does not count the whole context's prompts."""

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
    source = MAIN_SOURCE
    Config = PruneConfig

    def new_state(self) -> PruneState:
        return PruneState()

    def compact(self, view: ContextView, state: PruneState) -> Compaction | None:
        config = self.config
        assert isinstance(config, PruneConfig)
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
                # a result without an id is cleared by none (the rewrite selects results by id)
                if total > config.protect_tokens and block.tool_use_id is not None:
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
