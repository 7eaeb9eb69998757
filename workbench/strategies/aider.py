"""``aider``: Aider's ``ChatSummary`` (docs/peers.md §1.6, ``aider/history.py`` @5dc9490b) [V].

* Budget: ``--max-chat-history-tokens`` or the model's ``max_chat_history_tokens = min(max(
  max_input_tokens / 16, 1024), 8192)``: 8,192 for a 200k model.
* Trigger: ``too_big`` when the done messages exceed the budget. Aider summarises in a background thread
  after an exchange and applies the result if the history did not change; the replay applies it at the
  first call after a new exchange started, at most once per exchange.
* Recursive split: ≤ 4 messages or depth > 3 → summarise everything; else the tail is the newest
  messages under budget/2, the head must end on an assistant message, the head given to the summariser
  is capped at ``max_input_tokens − 512``; if summary + tail < budget stop, else recurse on summary + tail.
* Output: one *user* message "I spoke to you previously about a number of things.\\n" + summary, then an
  assistant "Ok.". Only user/assistant *text* goes into the summariser (offline here, not the weak model).

Mapping: Aider's **done_messages** are everything before the current exchange, i.e. the records before
the last real user message (`is_prompt`); **cur_messages** (the current turn, however long its tool
loop) are never summarised. An Aider **message** is one API message (`api_messages`). Aider has no tool
results, so "the head ends on an assistant message" is taken together with our rule that the tail must
start at a user message without tool_results: the split lands on a real user turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from ..request.normalize import is_sent
from ..tokens.js import rough_tokens
from ..transcript.model import Record
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .recent_window import api_messages, assistant_note, prompt_indices, user_note
from .registry import register

__all__ = ["Aider", "AiderConfig"]

PREFIX = "I spoke to you previously about a number of things.\n"


class AiderConfig(StrategyConfig):
    max_input_tokens: int = Field(200_000, gt=0)
    max_chat_history_tokens: int | None = Field(None, gt=0)
    max_depth: int = Field(3, ge=0)
    min_split: int = Field(4, ge=0)

    @property
    def budget(self) -> int:
        if self.max_chat_history_tokens is not None:
            return self.max_chat_history_tokens
        return min(max(self.max_input_tokens // 16, 1024), 8192)


@dataclass
class _Item:
    records: tuple[Record, ...]
    tokens: int
    role: str
    clean_start: bool  # a user message without tool_results: a tail may start here


@dataclass
class AiderState:
    exchanges_summarized: int = -1


def _text_only(records: tuple[Record, ...]) -> list[Record]:
    out = []
    for record in records:
        if not is_sent(record):
            continue
        blocks = [b for b in record.blocks if b.kind == "text" and b.text.strip()]
        if blocks:
            out.append(
                record
                if len(blocks) == len(record.blocks)
                else record.with_blocks(blocks, string_content=record.string_content)
            )
    return out


@register
class Aider(Strategy):
    """Aider ChatSummary: done messages above min(max(window/16, 1k), 8k) tokens are summarised."""

    name = "aider"
    description = (
        "Aider ChatSummary: summarise done messages above max(1k, min(window/16, 8k)) tokens, recursive split."
    )
    source = "Aider-AI/aider aider/history.py, aider/models.py @ 5dc9490b"
    Config = AiderConfig
    config: AiderConfig

    def new_state(self) -> AiderState:
        return AiderState()

    def _summary_items(self, items: list[_Item], key: str) -> list[_Item]:
        from ..summarize.offline import OfflineSummarizer

        text = PREFIX + OfflineSummarizer().summarize(_text_only(tuple(r for it in items for r in it.records)))
        user = user_note(text, self.name, key, event=True)
        ok = assistant_note("Ok.", self.name, key)
        return [_Item((user,), rough_tokens(text), "user", True), _Item((ok,), 1, "assistant", False)]

    def _summarize(self, items: list[_Item], depth: int, key: str) -> list[_Item]:
        config = self.config
        budget = config.budget
        if len(items) <= config.min_split or depth > config.max_depth:
            return self._summary_items(items, f"{key}.{depth}.all")
        split = len(items)
        tail = 0
        for i in range(len(items) - 1, -1, -1):
            if tail + items[i].tokens < budget // 2:
                tail += items[i].tokens
                split = i
            else:
                break
        while split > 1 and not (
            items[split - 1].role == "assistant" and (split == len(items) or items[split].clean_start)
        ):
            split -= 1
        if split <= config.min_split:
            return self._summary_items(items, f"{key}.{depth}.all")
        head, rest = items[:split], items[split:]
        cap = config.max_input_tokens - 512
        keep: list[_Item] = []
        total = 0
        for item in reversed(head):
            total += item.tokens
            if total > cap:
                break
            keep.append(item)
        keep.reverse()
        summary = self._summary_items(keep, f"{key}.{depth}")
        if sum(i.tokens for i in summary) + sum(i.tokens for i in rest) < budget:
            return summary + rest
        return self._summarize(summary + rest, depth + 1, key)

    def compact(self, view: ContextView, state: AiderState) -> Compaction | None:
        records = view.records
        prompts = prompt_indices(records)
        if not prompts or prompts[-1] == 0 or len(prompts) == state.exchanges_summarized:
            return None
        current = prompts[-1]
        messages = api_messages(records[:current])
        items = [
            _Item(
                tuple(records[m.first : m.end]),
                sum(view.rough[m.first : m.end]),
                m.role,
                m.role == "user" and not m.has_tool_result,
            )
            for m in messages
        ]
        if sum(i.tokens for i in items) <= self.config.budget:
            return None
        state.exchanges_summarized = len(prompts)
        result = self._summarize(items, 0, str(view.step))
        done = tuple(r for item in result for r in item.records)
        originals = {id(r) for r in records}
        added = tuple(r for r in done if id(r) not in originals)
        kept = {id(r) for r in done}
        summary = next((r.text for r in added if r.kind == "user"), None)
        return Compaction(
            kind=self.name,
            trigger="tokens",
            records=(*done, *records[current:]),
            dropped=tuple(r.uuid for r in records[:current] if id(r) not in kept),
            added=added,
            start=None,
            summary=summary,
            details={"budget": self.config.budget, "done_tokens": sum(i.tokens for i in items)},
        )
