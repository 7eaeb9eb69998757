"""``letta``: Letta's sliding-window summariser (docs/peers.md §1.8, letta @56ba9c25) [V].

* Trigger: ``SUMMARIZATION_TRIGGER_MULTIPLIER = 0.9``: summarise when the step's context is above 0.9 ×
  the window.
* ``CompactionSettings`` mode ``sliding_window`` (default) with ``sliding_window_percentage = 0.30``:
  the goal is (1 − 0.30) × window = 70%; eviction starts at 0.30 + 0.10 of the messages and grows by
  0.10 until the post-summary count (system + kept messages) is under the goal. A cutoff must be an
  assistant message (the first kept message). Approximate counts get a **×1.3** safety margin.
  (The field's docstring says "percentage to keep", the code uses it as the eviction start: we follow the
  code, §1.8 note.)
* The evicted messages are summarised (recursively: an earlier summary is among them), clipped to
  ``clip_chars`` = 50,000 chars each [U: per message or in total is not stated; per message here], and the
  summary is put at index 1, right after the system message, as a *user* message.

Mapping: Letta's system message is our (unrecorded) system prompt: the view's ``overhead``. A Letta
**message** is an assistant response (all records sharing a ``message.id``), one tool return (a
tool_result record) or one user record. Cutoffs are response starts, then moved earlier with `safe_cut`
(tool pairs, thinking-led tool loop); when none reaches the goal everything is evicted. Tokens are rough
(chars/4) counts, so the ×1.3 margin applies.
"""

from __future__ import annotations

from pydantic import Field

from ..request.normalize import is_sent
from ..transcript.steps import api_calls
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .openhands import _clipped
from .recent_window import is_added, overhead, safe_cut, splice, user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = ["Letta", "LettaConfig"]


class LettaConfig(StrategyConfig):
    context_window: int = Field(200_000, gt=0)
    trigger_multiplier: float = Field(0.9, gt=0, le=1, description="SUMMARIZATION_TRIGGER_MULTIPLIER")
    sliding_window_percentage: float = Field(0.3, gt=0, lt=1)
    eviction_step: float = Field(0.1, gt=0, le=1)
    approx_safety_margin: float = Field(1.3, ge=1)
    clip_chars: int = Field(50_000, gt=0)


def letta_messages(view: ContextView) -> list[tuple[int, str]]:
    """(start record index, role) of each Letta message."""
    records = view.records
    firsts = {c.first for c in api_calls(records)}
    out = []
    for i, record in enumerate(records):
        if i in firsts:
            out.append((i, "assistant"))
        elif record.kind == "user" and is_sent(record):
            out.append((i, "tool" if record.tool_results() else "user"))
    return out


@register
class Letta(Strategy):
    """Letta sliding window: above 90% of the window evict the oldest messages until under 70%."""

    name = "letta"
    description = (
        "Letta sliding window: above 90% of the window summarise the oldest messages down to < 70% (×1.3 margin)."
    )
    source = (
        "letta-ai/letta letta/services/summarizer/summarizer_sliding_window.py, summarizer_config.py, "
        "letta/constants.py @ 56ba9c25"
    )
    Config = LettaConfig
    config: LettaConfig

    def post_tokens(self, view: ContextView, start: int) -> float:
        return (overhead(view) + sum(view.rough[start:])) * self.config.approx_safety_margin

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        return guarded(state, view, view.tokens > config.trigger_multiplier * config.context_window, self._compact)

    def _compact(self, view: ContextView) -> Compaction | None:
        config = for_window(self.config, view)
        records = view.records
        goal = (1 - config.sliding_window_percentage) * config.context_window
        messages = letta_messages(view)
        n = len(messages)
        start = len(records)
        naive = len(records)
        fraction = config.sliding_window_percentage + config.eviction_step
        tries = 0
        while fraction <= 1 + 1e-9:
            tries += 1
            index = round(fraction * n)
            first = next((i for i, role in messages[index:] if role == "assistant"), None)
            fraction += config.eviction_step
            if first is None:
                break
            candidate = safe_cut(records, first)
            if (
                any(is_sent(r) and not is_added(r) for r in records[:candidate])
                and self.post_tokens(view, candidate) < goal
            ):
                start, naive = candidate, first
                break
        from ..summarize.offline import OfflineSummarizer

        evicted = [_clipped(r, config.clip_chars) for r in records[:start] if is_sent(r)]
        text = OfflineSummarizer().summarize(evicted)
        summary = user_note(text, self.name, str(view.step), event=True)
        result = splice(
            view, start, kind=self.name, trigger="tokens", added=(summary,), naive_start=naive, summary=text
        )
        return Compaction(
            **{
                **result.__dict__,
                "details": {"tries": tries, "goal": goal, "post_tokens": self.post_tokens(view, start)},
            }
        )
