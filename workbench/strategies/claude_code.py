"""The whole Claude Code v2.1.88 pipeline, in the query loop's order (docs §4.4):

1. tool-result size budget (docs §3.7);
2. time-based microcompact (docs §3.3; disabled by default, as ``tengu_slate_heron`` ships);
3. auto-compact at the threshold: session-memory compaction first, full compaction when it returns
   nothing (docs §4.4). ``session_memory=False`` reproduces the reference's default gates
   (``tengu_session_memory``/``tengu_sm_compact`` both default false), i.e. full compaction only.

At most one compaction event is reported per step: the budget and microcompact rewrite outputs in
place, and the auto-compact check then sees the reduced size.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..tokens.estimators import get_estimator
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .full_compact import full_compaction
from .microcompact import TimeBasedConfig, ToolResultBudgetConfig, apply_tool_result_budget, time_based_microcompact
from .registry import register
from .sm_compact import SMCompactConfig, new_sm_state, observe_sm, sm_compaction

__all__ = ["ClaudeCode", "ClaudeCodeConfig"]


class ClaudeCodeConfig(StrategyConfig):
    session_memory: bool = True
    sm: SMCompactConfig = SMCompactConfig()
    microcompact: TimeBasedConfig = TimeBasedConfig()
    tool_result_budget: ToolResultBudgetConfig = ToolResultBudgetConfig()


def _resized(view: ContextView, compaction: Compaction) -> ContextView:
    """The view after an in-place rewrite: same records count, smaller outputs."""
    rough = get_estimator("claude-rough")
    padded = get_estimator("claude-padded")
    delta = sum(rough.count_many(compaction.added)) - sum(
        c for r, c in zip(view.records, view.rough, strict=True) if r.uuid in set(compaction.dropped)
    )
    return replace(
        view,
        records=compaction.records,
        tokens=view.tokens + delta,
        rough=tuple(rough.count_many(compaction.records)),
        padded=tuple(padded.count_many(compaction.records)),
    )


@register
class ClaudeCode(Strategy):
    name = "claude-code"
    description = "Claude Code v2.1.88: tool-result budget, microcompact, then auto-compact (SM first, then full)."
    Config = ClaudeCodeConfig

    def new_state(self) -> Any:
        return new_sm_state(self.config.sm)

    def observe(self, view: ContextView, state: Any) -> None:
        if self.config.session_memory:
            observe_sm(view, state)

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        first: Compaction | None = None
        for step in (apply_tool_result_budget, time_based_microcompact):
            config = self.config.tool_result_budget if step is apply_tool_result_budget else self.config.microcompact
            done = step(view, config)
            if done is not None:
                view = _resized(view, done)
                first = first or done
        if not self.config.sm.trigger.is_above_threshold(view.tokens):
            return first
        if self.config.session_memory:
            result = sm_compaction(view, state, self.config.sm, adjust=True)
        else:
            result = full_compaction(view, self.config.sm.full_compact, trigger="auto")
        if first is None:
            return result
        return replace(result, dropped=tuple(dict.fromkeys((*first.dropped, *result.dropped))))
