"""Anthropic API server-side context management (docs/peers.md §1.9), emulated on the client's records.

Sources, as read: the API docs mirrored as Markdown in ``gpambrozio/ClaudeDocs``,
``docs-md/api/build-with-claude/context-editing.md`` @ ff5b8ed9 (2026-08-22) and
``compaction-threshold.md`` @ 0b87af04 (platform.claude.com/docs/en/build-with-claude/context-editing,
/compaction-threshold); the parameter types of ``anthropics/anthropic-sdk-typescript``
``src/resources/beta/messages/messages.ts`` @ bfa9197f (``BetaCompact20260112Edit``,
``BetaCompactionIterationUsage``, stop reason ``compaction``).

* ``clear-tool-uses``: context editing ``clear_tool_uses_20250919`` [V]: trigger **100,000 input
  tokens** (or a ``tool_uses`` count), ``keep`` **3 tool uses**, ``clear_at_least`` none,
  ``exclude_tools`` none, ``clear_tool_inputs`` **false**. The oldest tool results are replaced by
  placeholder text. The placeholder wording is not documented [U]; ours is configurable. The docs say
  clearing begins once the prompt "exceeds" the trigger; here it fires at the trigger value.
* ``clear-thinking``: ``clear_thinking_20251015`` [V]: ``keep: {type: thinking_turns, value: N}`` keeps the
  last N assistant turns' thinking, ``"all"`` keeps all. The default here is the last turn only, the
  default the docs give for models before Opus 4.5 / Sonnet 4.6 and for Haiku; for Opus 4.5+ and Sonnet
  4.6+ the docs' default is all turns (``keep: "all"``: no clearing).
* ``server-compact``: threshold compaction ``compact_20260112`` (beta ``compact-2026-01-12``) [V]:
  ``trigger`` **150,000 input tokens** (``input_tokens`` is the only trigger type; at least 50,000), the
  API compacts once the input *reaches* it; ``instructions`` (default null) replaces the default summary
  prompt completely; ``pause_after_compaction`` **false**. The response starts with a ``compaction``
  block and the API drops every content block before it on later requests, so the request that reaches
  the trigger already continues from the summary. The summary is an extra sampling step by the same
  model: it is billed and rate-limited, reported as a ``compaction`` entry of ``usage.iterations`` (its
  input: the whole request), and the top-level ``input_tokens``/``output_tokens`` hold only the other
  iterations (the event's ``details["compaction_usage"]``). With ``pause_after_compaction`` the response
  holds only the block (``stop_reason: "compaction"``) and the client may re-insert messages after it
  before continuing: ``keep_messages`` re-inserts the last N API messages (the docs' example keeps 3:
  the prior exchange and the current user message), moved back to a message that does not start with a
  tool result whose call would be summarised (the API rejects an orphan result) and, with thinking, to a
  response that opens the kept tool loop with thinking (`workbench.request.invariants.adjust_for_thinking`).
  The docs ask to remove thinking from re-inserted turns on Claude Fable 5.1 and Opus 5.5; the replay
  keeps it, as other models accept it [U: the validator does not model that check]. Not modelled: with
  server tools the trigger is checked at each sampling iteration, so one request can compact more than
  once.

Mapping. A **tool use** is one tool_use block and its tool_result (one pair). An **assistant turn** is all
the responses after one real user message (a user-sense turn, `prompt_indices`): thinking must survive
within the current tool loop, so the turn, not the single response, is the unit. Input tokens are the
view's total.

Emulation of a server-side edit: the client keeps the full history and the server edits every request.
The replay keeps one evolving context instead, so ``clear-tool-uses`` remembers how many tokens it has
cleared and compares ``trigger`` with the *uncleared* size (what the server would measure); the set it
clears (all but the newest ``keep``) is the server's, applied incrementally. ``server-compact`` is the
compaction block rendered as a boundary + a user-role summary (the Messages validator has no
``compaction`` block type); the request that triggers it is counted after compaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, model_validator

from ..request.invariants import adjust_for_thinking
from ..request.normalize import is_sent
from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, NameSet, Strategy, StrategyConfig
from .recent_window import is_prompt
from .records import compact_boundary, summary_message
from .refill import RefillGuard, guarded
from .registry import register
from .rewrite import extends, in_place

__all__ = [
    "COMPACT_TRIGGER_MINIMUM",
    "ClearThinking",
    "ClearToolUses",
    "ClearToolUsesConfig",
    "ServerCompact",
    "ServerCompactConfig",
    "ThinkState",
    "cleared_record",
    "reinserted_start",
]


_CONTEXT_EDITING = (
    "gpambrozio/ClaudeDocs docs-md/api/build-with-claude/context-editing.md @ ff5b8ed9 "
    "(platform.claude.com/docs/en/build-with-claude/context-editing, beta context-management-2025-06-27)"
)
#: ``compact_20260112``: ``trigger.value`` must be at least this many input tokens (compaction-threshold.md).
COMPACT_TRIGGER_MINIMUM = 50_000


class InputTokens(StrategyConfig):
    type: Literal["input_tokens"] = "input_tokens"
    value: int = Field(gt=0)


class ToolUses(StrategyConfig):
    type: Literal["tool_uses"] = "tool_uses"
    value: int = Field(ge=0)


class ThinkingTurns(StrategyConfig):
    type: Literal["thinking_turns"] = "thinking_turns"
    value: int = Field(ge=1)


class ClearToolUsesConfig(StrategyConfig):
    trigger: InputTokens | ToolUses = InputTokens(value=100_000)
    keep: ToolUses = ToolUses(value=3)
    clear_at_least: InputTokens | None = None
    exclude_tools: NameSet = frozenset()
    clear_tool_inputs: bool = False
    placeholder: str = Field("[Tool result cleared by context editing]", min_length=1)


@dataclass
class ClearState:
    """``cleared``: the tool_use ids cleared so far, ``cleared_tokens`` what that freed. The rest indexes
    ``context``, the context `ClearToolUses` last returned or saw (records shared, never copied), so a call
    whose context extends it reads only the records added since: ``uses`` the sent tool_uses in order,
    ``answered`` the ids with a tool_result, ``results``/``inputs`` the positions of the records holding each
    id's tool_result / tool_use, ``waiting`` the ids of the uses past the newest ``keep`` (``taken`` of
    ``uses``) not excluded and not cleared yet. Another context rebuilds it; decisions are the whole walk's
    (``tests/strategies/test_masking_incremental.py``)."""

    cleared: set[str]
    cleared_tokens: int = 0
    context: list[Record] = field(default_factory=list)
    uses: list[tuple[str, str | None]] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)
    results: dict[str, list[int]] = field(default_factory=dict)
    inputs: dict[str, list[int]] = field(default_factory=dict)
    waiting: list[str] = field(default_factory=list)
    taken: int = 0

    def follow(self, records: Sequence[Record]) -> None:
        """Bring the index to ``records`` (read what was added, or everything when they do not extend it)."""
        start = len(self.context)
        if not extends(records, self.context):
            self.context, self.uses, self.answered, self.results, self.inputs = [], [], set(), {}, {}
            self.waiting, self.taken, start = [], 0, 0
        for index in range(start, len(records)):
            record = records[index]
            for block in record.tool_results():
                if block.tool_use_id is not None:
                    self.results.setdefault(block.tool_use_id, []).append(index)
            if record.kind == "user":
                self.answered.update(record.tool_result_ids())
            elif record.kind == "assistant":
                for block in record.tool_uses():
                    if block.id:
                        self.inputs.setdefault(block.id, []).append(index)
                if is_sent(record):
                    self.uses += [(b.id, b.name) for b in record.tool_uses() if b.id]
        self.context = list(records)


def cleared_record(record: Record, ids: set[str], config: ClearToolUsesConfig) -> Record:
    """``record`` with the results (and, with ``clear_tool_inputs``, the inputs) of ``ids`` cleared; the
    record itself when nothing changes."""
    blocks = list(record.blocks)
    if record.kind == "user":
        blocks = [
            Block(b.kind, {**b.raw, "content": config.placeholder})
            if b.kind == "tool_result" and b.tool_use_id in ids
            else b
            for b in blocks
        ]
    elif record.kind == "assistant" and config.clear_tool_inputs:
        blocks = [b.with_raw(input={}) if b.kind == "tool_use" and b.id in ids else b for b in blocks]
    return record.with_blocks(blocks) if blocks != list(record.blocks) else record


@register
class ClearToolUses(Strategy):
    """``clear_tool_uses_20250919`` at its defaults: above 100k input tokens clear all but the 3 newest
    tool results (peers.md §1.9)."""

    name = "clear-tool-uses"
    description = (
        "Anthropic context editing clear_tool_uses: above 100k input tokens clear all but the last 3 tool results."
    )
    source = _CONTEXT_EDITING
    Config = ClearToolUsesConfig
    config: ClearToolUsesConfig

    def new_state(self) -> ClearState:
        return ClearState(set())

    def compact(self, view: ContextView, state: ClearState) -> Compaction | None:
        config = self.config
        records = view.records
        state.follow(records)
        uses = state.uses
        if config.trigger.type == "input_tokens":
            if view.tokens + state.cleared_tokens < config.trigger.value:
                return None
        elif len(uses) < config.trigger.value:
            return None
        # the uses but the newest ``keep``: those not excluded wait until they are answered and cleared
        old = max(0, len(uses) - config.keep.value)
        state.waiting += [i for i, name in uses[state.taken : old] if name not in config.exclude_tools]
        state.taken = max(state.taken, old)
        ids = {i for i in state.waiting if i in state.answered} - state.cleared
        if not ids:
            return None
        at = sorted({p for i in ids for p in state.results.get(i, ())})
        sizes = {
            b.tool_use_id: rough_tokens(b.result_text())
            for p in at
            for b in records[p].tool_results()
            if b.tool_use_id in ids
        }
        freed = sum(sizes.values()) - rough_tokens(config.placeholder) * len(ids)
        if config.clear_at_least is not None and state.cleared_tokens + freed < config.clear_at_least.value:
            return None
        if config.clear_tool_inputs:
            at = sorted({*at, *(p for i in ids for p in state.inputs.get(i, ()))})
        new = list(records)
        changed = []
        for position in at:
            cleared = cleared_record(records[position], ids, config)
            if cleared is not records[position]:
                new[position] = cleared
                changed.append(position)
        state.cleared |= ids
        state.cleared_tokens += freed
        state.waiting = [i for i in state.waiting if i not in state.cleared]
        state.context = new
        return in_place(
            self.name,
            config.trigger.type,
            records,
            new,
            {"cleared_tool_uses": len(ids), "cleared_input_tokens": freed},
            changed_at=tuple(changed),
        )


class ClearThinkingConfig(StrategyConfig):
    keep: ThinkingTurns | Literal["all"] = ThinkingTurns(value=1)


_THINKING = frozenset({"thinking", "redacted_thinking"})


def _has_thinking(record: Record) -> bool:
    return record.kind == "assistant" and any(b.kind in _THINKING for b in record.blocks)


@dataclass
class ThinkState:
    """`ClearThinking`'s index of ``context``, the context it last returned or saw (records shared, never
    copied): ``last`` where its last user-sense turn starts (`prompt_indices`, 0 before the first prompt),
    ``thinking`` the starts of the turns whose assistant records hold thinking, ``clean`` how many records
    at its head hold none (the clearing reached there). A call whose context extends it reads only what was
    added; another context rebuilds it. Decisions are the whole walk's over every turn
    (``tests/strategies/test_masking_incremental.py``)."""

    context: Sequence[Record] = ()
    last: int = 0
    thinking: list[int] = field(default_factory=list)
    clean: int = 0

    def follow(self, records: Sequence[Record]) -> None:
        start = len(self.context)
        if not extends(records, self.context):
            self.last, self.thinking, self.clean, start = 0, [], 0, 0
        for index in range(start, len(records)):
            record = records[index]
            if is_prompt(record):
                self.last = index
            elif _has_thinking(record) and (not self.thinking or self.thinking[-1] != self.last):
                self.thinking.append(self.last)
        self.context = records


@register
class ClearThinking(Strategy):
    """``clear_thinking_20251015`` at its default: keep the thinking of the last assistant turn only."""

    name = "clear-thinking"
    description = "Anthropic context editing clear_thinking: keep thinking blocks of the last assistant turn only."
    source = _CONTEXT_EDITING
    Config = ClearThinkingConfig
    config: ClearThinkingConfig

    def new_state(self) -> ThinkState:
        return ThinkState()

    def compact(self, view: ContextView, state: ThinkState) -> Compaction | None:
        if self.config.keep == "all":
            return None
        records = view.records
        state.follow(records)
        keep = self.config.keep.value
        if len(state.thinking) <= keep:
            return None
        limit = state.thinking[-keep]  # a turn's start: every turn before it ends before it
        head: list[Record] = []
        changed = 0
        for record in records[state.clean : limit]:
            if not _has_thinking(record):
                head.append(record)
                continue
            changed += 1
            rest = [b for b in record.blocks if b.kind not in _THINKING]
            if rest:
                head.append(record.with_blocks(rest))
        if not changed:
            return None
        new = [*records[: state.clean], *head, *records[limit:]]
        removed = len(records) - len(new)  # assistant records that held only thinking
        state.context, state.clean = new, limit - removed
        state.thinking = [start - removed for start in state.thinking[-keep:]]
        state.last -= removed
        return in_place(self.name, "thinking_turns", records, new, {"cleared_thinking_records": changed})


class ServerCompactConfig(StrategyConfig):
    trigger: InputTokens = InputTokens(value=150_000)
    pause_after_compaction: bool = False
    instructions: str | None = None
    keep_messages: int = Field(
        0, ge=0, description="with pause_after_compaction: the last API messages the client re-inserts after the block"
    )

    @model_validator(mode="after")
    def _minimum(self) -> ServerCompactConfig:
        if self.trigger.value < COMPACT_TRIGGER_MINIMUM:
            raise ValueError(f"compact_20260112 trigger must be at least 50,000 input tokens, got {self.trigger.value}")
        if self.keep_messages and not self.pause_after_compaction:
            raise ValueError("keep_messages needs pause_after_compaction: only a paused response lets the client add")
        return self


def _message_starts(records: Sequence[Record]) -> list[int]:
    """Where each API message starts: a sent user or assistant record whose role differs from the previous
    sent one (consecutive records of one role become one message)."""
    starts: list[int] = []
    role = None
    for index, record in enumerate(records):
        if record.kind not in ("user", "assistant") or not is_sent(record):
            continue
        if record.kind != role:
            starts.append(index)
            role = record.kind
    return starts


def reinserted_start(records: Sequence[Record], messages: int) -> int:
    """Where the last ``messages`` API messages of ``records`` start, moved back message by message while
    the part from there holds a tool result whose call is before it (``len(records)`` for 0)."""
    starts = _message_starts(records)
    if messages <= 0 or not starts:
        return len(records)
    position = max(0, len(starts) - messages)
    while position > 0:
        tail = records[starts[position] :]
        calls = {b.id for r in tail if r.kind == "assistant" for b in r.tool_uses()}
        if all(i in calls for r in tail if r.kind == "user" for i in r.tool_result_ids()):
            break
        position -= 1
    return starts[position]


@register
class ServerCompact(Strategy):
    """``compact_20260112`` at its defaults: at 150k input tokens the whole context becomes one
    compaction block (summary by the same model; offline here)."""

    name = "server-compact"
    description = "Anthropic server-side compaction: at 150k input tokens replace everything by a compaction block."
    source = (
        "gpambrozio/ClaudeDocs docs-md/api/build-with-claude/compaction-threshold.md @ 0b87af04 "
        "(platform.claude.com/docs/en/build-with-claude/compaction-threshold, beta compact-2026-01-12)"
    )
    Config = ServerCompactConfig
    config: ServerCompactConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        return guarded(state, view, view.tokens >= self.config.trigger.value, self._compact)

    def _compact(self, view: ContextView) -> Compaction:
        from ..summarize.offline import OfflineSummarizer

        records = list(view.records)
        text = OfflineSummarizer().summarize(records, custom_instructions=self.config.instructions)
        boundary = compact_boundary("auto", view.tokens, records[-1] if records else None, kind="compact_20260112")
        summary = summary_message(text, boundary)
        start = len(records)
        if self.config.pause_after_compaction and self.config.keep_messages:
            thinking = any(b.kind in _THINKING for r in records if r.kind == "assistant" for b in r.blocks)
            start = reinserted_start(records, self.config.keep_messages)
            start = adjust_for_thinking(records, start, thinking=thinking)
        kept = records[start:]
        return Compaction(
            kind=self.name,
            trigger="input_tokens",
            records=(boundary, summary, *kept),
            dropped=tuple(r.uuid for r in records[:start]),
            added=(boundary, summary),
            start=start,
            summary=text,
            details={
                "pause_after_compaction": self.config.pause_after_compaction,
                "reinserted_records": len(kept),
                "compaction_usage": {
                    "reported_in": "usage.iterations",
                    "request": "same",
                    "input_tokens": view.tokens,
                    "output_tokens": rough_tokens(text),
                },
            },
        )
