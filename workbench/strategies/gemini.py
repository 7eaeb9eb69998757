"""``gemini-cli``: Gemini CLI chat compression (docs/peers.md §1.4, ``chatCompressionService.ts`` @5411f113).

Defaults [V]: compress when the prompt reaches **0.5** × the model's token limit (the
``model.compressionThreshold`` setting; was 0.7 / 0.2 / 0.7 before, see the §1.4 history table); keep the
last ~**30%** of the history *by characters* (``COMPRESSION_PRESERVE_THRESHOLD``); before the split,
function responses beyond a reverse budget of **50,000 tokens** (newest first,
``COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET``) are truncated to their last **30 lines** (the full text
goes to a temp file). ``findCompressSplitPoint``: sizes are ``JSON.stringify`` lengths; the only legal
split points are user contents without a functionResponse; the first one at or past 70% of the
characters wins; with none past it, everything is compressed when the last content is a model turn
without a functionCall, otherwise the last legal split point is used. New history: [user: the
``<state_snapshot>``] + [model: "Got it. Thanks for the additional context!"] + the kept tail. A previous
snapshot lies in the compressed part and is merged (anchored summary; offline summariser here, no
verification probe). The result is dropped (status COMPRESSION_FAILED_INFLATED_TOKEN_COUNT) when it is
not smaller, and a split at 0 compresses nothing (NOOP): no event in both cases.

Mapping: a Gemini **Content** is one API message (`api_messages`: one response, or consecutive user
records merged), its size the JSON length of its records' content; a functionResponse part is a
tool_result block. The request being sent (the trailing user message, e.g. the pending tool results) is
not part of the history Gemini compresses: it is appended after compression, so it is never split off.
Tokens for the function-response budget are chars/4 (Gemini's own estimate is similar).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from ..tokens.estimators import get_estimator
from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .recent_window import api_messages, assistant_note, user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = ["GeminiCli", "GeminiConfig", "find_compress_split_point"]

ACK = "Got it. Thanks for the additional context!"


class GeminiConfig(StrategyConfig):
    context_window: int = Field(200_000, gt=0, description="tokenLimit(model)")
    compression_threshold: float = Field(0.5, gt=0, le=1)
    preserve_fraction: float = Field(0.3, ge=0, lt=1, description="COMPRESSION_PRESERVE_THRESHOLD")
    function_response_token_budget: int = Field(50_000, ge=0)
    truncate_lines: int = Field(30, ge=1)


def find_compress_split_point(
    sizes: Sequence[int], legal: Sequence[bool], last_is_plain_model: bool, fraction: float
) -> int:
    """``findCompressSplitPoint`` over content sizes; ``legal[i]``: user content without functionResponse."""
    target = sum(sizes) * fraction
    count = 0
    last_split = 0
    for i, size in enumerate(sizes):
        if legal[i]:
            if count >= target:
                return i
            last_split = i
        count += size
    return len(sizes) if last_is_plain_model else last_split


def truncate_function_responses(records: Sequence[Record], budget: int, lines: int) -> tuple[list[Record], int]:
    """Newest first, keep function responses whole within ``budget`` tokens; truncate older ones to
    their last ``lines`` lines. Returns the records and how many responses were truncated."""
    used = 0
    out: list[Record] = []
    truncated = 0
    for record in reversed(records):
        if record.kind != "user" or not record.tool_results():
            out.append(record)
            continue
        blocks = []
        for block in reversed(record.blocks):
            if block.kind != "tool_result":
                blocks.append(block)
                continue
            text = block.result_text()
            cost = rough_tokens(text)
            if used + cost <= budget:
                used += cost
                blocks.append(block)
                continue
            if text.count("\n") + 1 <= lines:
                blocks.append(block)  # already within the line limit
                continue
            tail = text.split("\n")[-lines:]
            note = f"[Output truncated; full output saved to a temp file. Last {lines} lines:]\n"
            blocks.append(Block(block.kind, {**block.raw, "content": note + "\n".join(tail)}))
            truncated += 1
        blocks.reverse()
        out.append(record.with_blocks(blocks) if blocks != list(record.blocks) else record)
    out.reverse()
    return out, truncated


class JsonSizes:
    """``len(record.content_json())`` of the records seen, by identity: one session's replay asks it for every
    record at every call past the threshold (json.dumps was half of that replay). Records are immutable and
    each entry holds its record, so an id is not reused while it is there; emptied past 4 entries per record
    asked about plus 1,000 (the truncated tool results are new records at every call)."""

    def __init__(self) -> None:
        self.sizes: dict[int, tuple[Record, int]] = {}

    def of(self, records: Sequence[Record]) -> list[int]:
        if len(self.sizes) > 4 * len(records) + 1_000:
            self.sizes.clear()
        out = []
        for record in records:
            hit = self.sizes.get(id(record))
            if hit is None:
                hit = self.sizes[id(record)] = (record, len(record.content_json()))
            out.append(hit[1])
        return out


@dataclass
class GeminiState:
    """The record sizes memo and the refill stop (`workbench.strategies.refill`)."""

    sizes: JsonSizes = field(default_factory=JsonSizes)
    refill: RefillGuard = field(default_factory=RefillGuard)


@register
class GeminiCli(Strategy):
    """Gemini CLI compression at 0.5 of the window, keeping the last 30% of characters."""

    name = "gemini-cli"
    description = "Gemini CLI compression at 50% of the window: snapshot + last ~30% by chars, split at a user turn."
    Config = GeminiConfig

    def new_state(self) -> GeminiState:
        return GeminiState()

    def compact(self, view: ContextView, state: GeminiState | None) -> Compaction | None:
        state = state if state is not None else GeminiState()
        config = for_window(self.config, view)
        fires = view.tokens >= config.compression_threshold * config.context_window
        return guarded(state.refill, view, fires, lambda v: self._compress(v, state.sizes))

    def _compress(self, view: ContextView, sizes: JsonSizes) -> Compaction | None:
        config = self.config
        records, truncated = truncate_function_responses(
            view.records, config.function_response_token_budget, config.truncate_lines
        )
        messages = api_messages(records)
        if messages and messages[-1].role == "user":
            history, pending = messages[:-1], messages[-1].first
        else:
            history, pending = messages, len(records)
        if not history:
            return None
        chars = sizes.of(records)
        sizes = [sum(chars[m.first : m.end]) for m in history]
        legal = [m.role == "user" and not m.has_tool_result for m in history]
        last = history[-1]
        split = find_compress_split_point(
            sizes, legal, last.role == "assistant" and not last.has_tool_use, 1 - config.preserve_fraction
        )
        if split <= 0:
            return None
        start = history[split].first if split < len(history) else pending
        from ..summarize.offline import OfflineSummarizer

        compressed = records[:start]
        text = f"<state_snapshot>\n{OfflineSummarizer().summarize(compressed)}\n</state_snapshot>"
        added = (user_note(text, self.name, str(view.step), event=True), assistant_note(ACK, self.name, str(view.step)))
        new = (*added, *records[start:])
        old_tokens = sum(view.rough)
        new_tokens = sum(get_estimator("claude-rough").count_many(new))
        if new_tokens >= old_tokens:
            return None
        originals = {id(r) for r in view.records}
        return Compaction(
            kind=self.name,
            trigger="tokens",
            records=new,
            dropped=tuple(r.uuid for r in view.records[:start])
            + tuple(r.uuid for r in records[start:] if id(r) not in originals),
            added=added + tuple(r for r in records[start:] if id(r) not in originals),
            start=start,
            summary=text,
            details={"split_content": split, "contents": len(history), "truncated_function_responses": truncated},
        )
