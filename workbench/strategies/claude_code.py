"""The whole Claude Code v2.1.88 pipeline, in the query loop's order (docs §4.4):

1. tool-result size budget (docs §3.7);
2. time-based microcompact (docs §3.3; disabled by default, as ``tengu_slate_heron`` ships);
3. auto-compact at the threshold: session-memory compaction first, full compaction when it returns
   nothing (docs §4.4). ``session_memory=False`` reproduces the reference's default gates
   (``tengu_session_memory``/``tengu_sm_compact`` both default false), i.e. full compaction only.
   The SM step is v2.1.88's (``sm.thinking_aware=False``, as ``sm-compact-reference``): on the open corpus
   its cut opens the kept tool loop without thinking on all three auto-compactions (see sm_compact.py);
   ``--set sm.thinking_aware=true`` adds our fix.

At most one compaction event is reported per step: the budget and microcompact rewrite outputs in
place, and the auto-compact check then sees the reduced size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..tokens.estimators import get_estimator
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .full_compact import full_compaction
from .microcompact import TimeBasedConfig, ToolResultBudgetConfig, apply_tool_result_budget, time_based_microcompact
from .registry import register
from .sm_compact import SMCompactReferenceConfig, SMState, new_sm_state, observe_sm, sm_compaction

__all__ = ["ClaudeCode", "ClaudeCodeConfig", "ClaudeCodeState"]


@dataclass
class ClaudeCodeState:
    """SM-compact's module state plus how many leading context records the size budget has checked
    (only this strategy changes the context, so the checked prefix stays checked)."""

    sm: SMState
    budget_checked: int = 0


class ClaudeCodeConfig(StrategyConfig):
    session_memory: bool = True
    #: v2.1.88 as shipped (thinking_aware False); a class, not an instance default, so that a partial
    #: override such as ``{"sm": {"min_tokens": 20000}}`` keeps it
    sm: SMCompactReferenceConfig = SMCompactReferenceConfig()
    microcompact: TimeBasedConfig = TimeBasedConfig()
    tool_result_budget: ToolResultBudgetConfig = ToolResultBudgetConfig()


def _resized(view: ContextView, compaction: Compaction) -> ContextView:
    """The view after an in-place rewrite: same records count, smaller outputs."""
    rough = get_estimator("claude-rough")
    padded = get_estimator("claude-padded")
    kept = {id(r) for r in compaction.records}
    delta = sum(rough.count_many(compaction.added)) - sum(
        c for r, c in zip(view.records, view.rough, strict=True) if id(r) not in kept
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
    config: ClaudeCodeConfig
    compaction_only = frozenset(
        {"sm.min_tokens", "sm.max_tokens", "sm.min_text_block_messages", "sm.thinking_aware", "sm.full_compact"}
    )

    def new_state(self) -> ClaudeCodeState:
        return ClaudeCodeState(new_sm_state(self.config.sm))

    def observe(self, view: ContextView, state: ClaudeCodeState) -> None:
        if self.config.session_memory:
            observe_sm(view, state.sm)

    def compact(self, view: ContextView, state: ClaudeCodeState) -> Compaction | None:
        first: Compaction | None = None
        budget = apply_tool_result_budget(view, self.config.tool_result_budget, start=state.budget_checked)
        if budget is not None:
            view, first = _resized(view, budget), budget
        micro = time_based_microcompact(view, self.config.microcompact)
        if micro is not None:
            view, first = _resized(view, micro), first or micro
        state.budget_checked = len(view.records)
        if not self.config.sm.trigger.is_above_threshold(view.tokens):
            return first if first is None else replace(first, records=view.records)
        if self.config.session_memory:
            result = sm_compaction(view, state.sm, self.config.sm, adjust=True)
        else:
            result = full_compaction(view, self.config.sm.full_compact, trigger="auto")
        state.budget_checked = len(result.records)
        if first is None:
            return result
        return replace(result, dropped=tuple(dict.fromkeys((*first.dropped, *result.dropped))))
