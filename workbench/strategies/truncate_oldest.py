"""``truncate-oldest``: the naive sliding window by tokens (unsafe on purpose).

The "naive truncation" baseline of docs/peers.md (Implications: "Recent window"; §2.5 "Context Decay
Benchmark" compares file-backed state with naive truncation). Once the context reaches
``trigger_fraction`` of the window, the oldest records are dropped until the rest fits
``keep_fraction`` of it, wherever that cut falls: a tool_result can lose its tool_use, a streamed
response can be split, the request can start with an assistant message (peers.md §1.12 items 1-3, 5).
That is what `recent-window` fixes; this one is declared ``unsafe`` and exists to count the damage.

Mapping: the window unit is one record (one content block of a Claude Code transcript); tokens are the
view's per-record ``rough`` counts plus the view's overhead (system prompt, tools).
"""

from __future__ import annotations

from .base import Compaction, ContextView, Strategy, for_window
from .recent_window import WindowConfig, splice, window_fires, window_start
from .refill import RefillGuard, guarded
from .registry import register

__all__ = ["TruncateOldest"]


@register
class TruncateOldest(Strategy):
    """Drop the oldest records at 80% of a 200k window down to 50% (defaults ours, as `recent-window`)."""

    name = "truncate-oldest"
    description = "Naive token sliding window: drop the oldest records at 80% of the window down to 50%, no API safety."
    source = "workbench (own design): the naive token sliding window baseline (docs/peers.md, Implications)"
    unsafe = True
    Config = WindowConfig
    config: WindowConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        return guarded(state, view, window_fires(view, for_window(self.config, view)), self._compact)

    def _compact(self, view: ContextView) -> Compaction | None:
        start = window_start(view, for_window(self.config, view))
        if start is None or start <= 0:
            return None
        return splice(view, start, kind=self.name, trigger="tokens")
