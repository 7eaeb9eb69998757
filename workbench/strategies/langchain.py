"""LangChain context management (docs/peers.md §1.7): ``trim_messages`` and ``SummarizationMiddleware``.

Mapping: a LangChain **message** is an ``AIMessage`` per assistant response (all records sharing a
``message.id``, tool calls included), a ``ToolMessage`` per tool_result record, a ``HumanMessage`` per
other sent user record (types "ai", "tool", "human"). There is no "system" message among our records
(the system prompt is sent separately), so ``include_system`` changes nothing. The token counter is the
view's rough counts (chars/4, like ``count_tokens_approximately``).

``langchain-trim`` (``langchain_core.messages.utils.trim_messages``) [V]: ``max_tokens`` and
``token_counter`` are required upstream (100,000 here is ours), ``strategy="last"``,
``allow_partial=False``, ``end_on=None``, ``start_on=None``, ``include_system=False``; ``start_on`` and
``include_system`` raise with ``strategy="first"``. It is applied before every call once the messages
exceed ``max_tokens``. With its defaults the kept messages can start with a ToolMessage (orphan) or an
AIMessage, so the strategy is declared ``unsafe``; ``start_on="human"`` makes it API-valid.

``langchain-summarization`` (``SummarizationMiddleware``, current API [S]): ``trigger`` (a ContextSize
``("fraction"|"tokens"|"messages", value)`` or a list of them = OR) **default None = never**,
``keep=("messages", 20)``, ``trim_tokens_to_summarize=4000`` (the summariser input: the newest messages
within 4,000 tokens starting at a human message; if that is empty the last 15 messages), a
``summary_prompt`` (passed as custom instructions to the offline summariser). The cutoff never separates
an AIMessage from its ToolMessages (`safe_cut`, which also keeps a thinking-led tool loop); the output is
a HumanMessage "Here is a summary of the conversation to date:" + summary, then the kept messages.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ..request.normalize import is_sent
from ..transcript.steps import api_calls
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .recent_window import is_added, keep_newest, safe_cut, splice, user_note
from .registry import register

__all__ = ["LangChainSummarization", "LangChainTrim", "SummarizationConfig", "TrimConfig", "lc_messages"]

MessageType = Literal["human", "ai", "tool", "system"]
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"


def lc_messages(view: ContextView) -> list[tuple[int, int, str, int]]:
    """(first record, end record, type, tokens) of each LangChain message; unsent records join the one before."""
    records = view.records
    firsts = {c.first: c for c in api_calls(records)}
    members = {k for c in firsts.values() for k in c.indices}
    starts: list[tuple[int, str]] = []
    for i, record in enumerate(records):
        if i in firsts:
            starts.append((i, "ai"))
        elif i in members or not is_sent(record):
            continue
        elif record.kind == "user":
            starts.append((i, "tool" if record.tool_results() else "human"))
    out = []
    for n, (first, kind) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(records)
        if n == 0:
            first = 0
        out.append((first, end, kind, sum(view.rough[first:end])))
    return out


def _types(value: MessageType | tuple[MessageType, ...] | None) -> set[str] | None:
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)


class TrimConfig(StrategyConfig):
    max_tokens: int = Field(100_000, gt=0)
    strategy: Literal["last", "first"] = "last"
    allow_partial: bool = False
    end_on: MessageType | tuple[MessageType, ...] | None = None
    start_on: MessageType | tuple[MessageType, ...] | None = None
    include_system: bool = False

    @model_validator(mode="after")
    def _first_rules(self) -> TrimConfig:
        if self.strategy == "first" and (self.start_on is not None or self.include_system):
            raise ValueError("start_on and include_system are only valid with strategy='last'")
        return self


@register
class LangChainTrim(Strategy):
    """``trim_messages`` at its defaults (strategy last), max_tokens 100k (ours)."""

    name = "langchain-trim"
    description = "LangChain trim_messages (strategy=last, no start_on): keep the newest messages within 100k tokens."
    source = (
        "langchain-ai/langchain libs/core/langchain_core/messages/utils.py trim_messages @ langchain-core 1.x"
        " signature (reference docs; commit not pinned)"
    )
    unsafe = True
    Config = TrimConfig
    config: TrimConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        config = self.config
        messages = lc_messages(view)
        if sum(m[3] for m in messages) <= config.max_tokens:
            return None
        end_on, start_on = _types(config.end_on), _types(config.start_on)
        records = view.records
        if config.strategy == "first":
            kept, total = [], 0
            for m in messages:
                if total + m[3] > config.max_tokens:
                    break
                kept.append(m)
                total += m[3]
            while kept and end_on and kept[-1][2] not in end_on:
                kept.pop()
            end = kept[-1][1] if kept else 0
            new = tuple(records[:end])
            return Compaction(
                self.name,
                "tokens",
                new,
                tuple(r.uuid for r in records[end:]),
                (),
                None,
                details={"kept_messages": len(kept)},
            )
        if end_on:
            while messages and messages[-1][2] not in end_on:
                messages = messages[:-1]
        first = keep_newest([m[3] for m in messages], config.max_tokens)
        kept = messages[first:]
        start = kept[0][0] if kept else len(records)
        if config.allow_partial and first > 0:
            spare = config.max_tokens - sum(m[3] for m in kept)
            previous = messages[first - 1]
            start = previous[0] + keep_newest(view.rough[previous[0] : previous[1]], spare) if spare > 0 else start
            start = min(start, kept[0][0] if kept else len(records))
        if start_on:
            start = next((m[0] for m in messages if m[0] >= start and m[2] in start_on), len(records))
        end = messages[-1][1] if messages else 0
        if start <= 0 and end == len(records):
            return None
        new = tuple(records[start:end])
        return Compaction(
            self.name,
            "tokens",
            new,
            tuple(r.uuid for r in (*records[:start], *records[end:])),
            (),
            start,
            start,
            details={"kept_messages": len([m for m in messages if m[0] >= start])},
        )


ContextSize = tuple[Literal["fraction", "tokens", "messages"], float]


class SummarizationConfig(StrategyConfig):
    trigger: ContextSize | list[ContextSize] | None = None
    keep: ContextSize = ("messages", 20)
    trim_tokens_to_summarize: int | None = Field(4_000, gt=0)
    context_window: int = Field(200_000, gt=0, description="the model profile's max input tokens (for fractions)")
    summary_prompt: str | None = None

    @model_validator(mode="after")
    def _values(self) -> SummarizationConfig:
        sizes = [
            self.keep,
            *([] if self.trigger is None else [self.trigger] if isinstance(self.trigger, tuple) else self.trigger),
        ]
        for kind, value in sizes:
            if value <= 0 or (kind == "fraction" and value > 1):
                raise ValueError(f"invalid context size ({kind!r}, {value})")
        return self


@register
class LangChainSummarization(Strategy):
    """``SummarizationMiddleware`` at its defaults: no trigger (never runs), keep 20 messages."""

    name = "langchain-summarization"
    description = "LangChain SummarizationMiddleware (trigger None by default = off; keep the last 20 messages)."
    source = (
        "langchain-ai/langchain libs/langchain_v1/langchain/agents/middleware/summarization.py "
        "SummarizationMiddleware @ langchain 1.x API (reference docs; early v1 read at d1382304)"
    )
    Config = SummarizationConfig
    config: SummarizationConfig

    def _reached(self, size: ContextSize, view: ContextView, count: int) -> bool:
        kind, value = size
        if kind == "messages":
            return count >= value
        if kind == "tokens":
            return view.tokens >= value
        return view.tokens >= value * for_window(self.config, view).context_window

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        config = for_window(self.config, view)
        if config.trigger is None:
            return None
        messages = lc_messages(view)
        triggers = [config.trigger] if isinstance(config.trigger, tuple) else config.trigger
        if not any(self._reached(t, view, len(messages)) for t in triggers):
            return None
        records = view.records
        kind, value = config.keep
        if kind == "messages":
            first = max(0, len(messages) - int(value))
        else:
            budget = value if kind == "tokens" else value * config.context_window
            first = keep_newest([m[3] for m in messages], int(budget))
        naive = messages[first][0] if first < len(messages) else len(records)
        start = safe_cut(records, naive)
        if not any(is_sent(r) and not is_added(r) for r in records[:start]):
            return None
        old = [m for m in messages if m[1] <= start]
        chosen = old
        if config.trim_tokens_to_summarize is not None:
            i = keep_newest([m[3] for m in old], config.trim_tokens_to_summarize)
            i = next((k for k in range(i, len(old)) if old[k][2] == "human"), len(old))
            chosen = old[i:] or old[-15:]
        from ..summarize.offline import OfflineSummarizer

        text = SUMMARY_PREFIX + OfflineSummarizer().summarize(
            [r for m in chosen for r in records[m[0] : m[1]] if is_sent(r)], custom_instructions=config.summary_prompt
        )
        summary = user_note(text, self.name, str(view.step), event=True)
        return splice(
            view,
            start,
            kind=self.name,
            trigger="+".join(t[0] for t in triggers),
            added=(summary,),
            naive_start=naive,
            summary=text,
        )
