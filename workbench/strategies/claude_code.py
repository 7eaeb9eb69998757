"""The whole Claude Code pipeline, in the query loop's order (docs §4.4), for the version that ran:

1. tool-result size budget (docs §3.7; from v2.1.2, 100K chars until v2.1.50, then 50K);
2. microcompact: the time-based one (docs §3.3; disabled by default, as ``tengu_slate_heron`` ships) and,
   from v1.0.68 to v2.1.20, the automatic one those versions ran above the warning threshold (the auto-
   compact threshold − 20,000): keep the last 3 compactable results, clear older ones while more than
   40,000 tokens of them remain, only when that saves 20,000 (`workbench.strategies.microcompact.
   legacy_microcompact`; the range and its sources in `workbench.strategies.versions`; ``--set
   legacy_microcompact.enabled=false`` is ``DISABLE_MICROCOMPACT``);
3. auto-compact at the threshold: session-memory compaction first, full compaction when it returns
   nothing (docs §4.4), with the circuit breaker (3 consecutive failures within one user turn, from
   v2.1.76). ``session_memory=False`` reproduces the reference's default gates (``tengu_session_memory``/
   ``tengu_sm_compact`` both default false), i.e. full compaction only. The SM step is v2.1.88's
   (``sm.thinking_aware=False``, as ``sm-compact-reference``): on the open corpus its cut opens the kept
   tool loop without thinking on all three auto-compactions (see sm_compact.py); ``--set
   sm.thinking_aware=true`` adds our fix.

``version="recorded"`` (the default) takes the trigger constants, the measure the trigger compares
(v2.0.x: the last response's usage; v2.1.x: ``tokenCountWithEstimation``), the tool-result budget and
the circuit breaker from the row of `workbench.strategies.versions` for the version that made each API
call, and whether the legacy microcompact runs; ``--set version=2.1.88`` pins the reference. Explicitly set
config values always win.

A recorded ``/compact`` (manual boundary) is replayed as the user's command: SM-compact first without the
size check, then full compaction (docs §5.1 step 13). Module state is per process
(`workbench.strategies.process`): a sub-agent replayed with its main session (`workbench.replay.
replay_process`) shares the session memory and the post-compact cleanup follows ``runPostCompactCleanup``.

At most one compaction event is reported per step: the budget and microcompact rewrite outputs in
place, and the auto-compact check then sees the reduced size. Where the legacy microcompact ran before an
auto-compaction at the same call, its ``details`` stay in the compaction's, under ``microcompact``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace

from pydantic import Field, field_validator

from ..memory.fork import ExtractionCall
from ..tokens.estimators import get_estimator
from ..transcript.model import Record
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .full_compact import full_compaction, validate_version, version_row
from .microcompact import (
    LegacyMicrocompactConfig,
    TimeBasedConfig,
    ToolResultBudgetConfig,
    apply_tool_result_budget,
    legacy_microcompact,
    time_based_microcompact,
)
from .process import ProcessState, post_compact_cleanup
from .registry import register
from .sm_compact import SMCompactReferenceConfig, SMState, new_sm_state, observe_sm, sm_compaction
from .triggers import AutoCompactTrigger, for_version
from .versions import ClaudeCodeVersion

__all__ = ["ClaudeCode", "ClaudeCodeConfig", "ClaudeCodeState"]


@dataclass
class ClaudeCodeState:
    """One agent's state: the process it runs in (shared with its sub-agents), how many leading context
    records the size budget has checked (only this strategy changes the context, so the checked prefix
    stays checked), and the circuit breaker's failure count for the current user turn."""

    process: ProcessState
    budget_checked: int = 0
    failures: int = 0
    turn: str | None = None
    turn_at: tuple[int, Record | None] = (0, None)  # where `_turn` found the prompt: position, record
    not_turns: dict[int, Record] = field(default_factory=dict)  # records `_turn` passed, by id
    turn_tail: tuple[int, tuple[Record, ...]] = (0, ())  # the records after the prompt at `_turn`'s last call

    @property
    def sm(self) -> SMState:
        return self.process.sm  # type: ignore[no-any-return]


class ClaudeCodeConfig(StrategyConfig):
    version: str = Field("recorded", description="Claude Code version whose constants apply: recorded or e.g. 2.1.88")
    session_memory: bool = True
    #: v2.1.88 as shipped (thinking_aware False); a class, not an instance default, so that a partial
    #: override such as ``{"sm": {"min_tokens": 20000}}`` keeps it
    sm: SMCompactReferenceConfig = SMCompactReferenceConfig()
    microcompact: TimeBasedConfig = TimeBasedConfig()
    #: ``enabled`` from the version's row unless set explicitly
    legacy_microcompact: LegacyMicrocompactConfig = LegacyMicrocompactConfig()
    tool_result_budget: ToolResultBudgetConfig = ToolResultBudgetConfig()
    subagent_resets_last_summarized: bool = Field(
        True,
        description="a sub-agent's compaction clears the process-wide lastSummarizedMessageId (v2.1.88 as "
        "shipped); False keeps the main thread's session-memory state (the seed article's intent)",
    )

    @field_validator("version")
    @classmethod
    def _check_version(cls, value: str) -> str:
        return validate_version(value)


def _resized(view: ContextView, compaction: Compaction) -> ContextView:
    """The view after an in-place rewrite: same records count, smaller outputs."""
    rough = get_estimator("claude-rough")
    padded = get_estimator("claude-padded")
    kept = {id(r) for r in compaction.records}
    delta = sum(rough.count_many(compaction.added)) - sum(
        c for r, c in zip(view.records, view.rough, strict=True) if id(r) not in kept
    )
    usage = None if view.usage_tokens is None else max(0, view.usage_tokens + delta)
    return replace(
        view,
        records=compaction.records,
        tokens=view.tokens + delta,
        usage_tokens=usage,
        rough=tuple(rough.count_many(compaction.records)),
        padded=tuple(padded.count_many(compaction.records)),
    )


def _starts_turn(record: Record) -> bool:
    """A user prompt that starts a ``query()`` call: a user record with text that is not meta, not a compact
    summary and holds no tool_result (the cheap tests first: most records are assistants or tool results)."""
    return (
        record.kind == "user"
        and not record.is_meta
        and not record.is_compact_summary
        and not any(block.kind == "tool_result" for block in record.blocks)
        and record.has_text_blocks
    )


def _turn(view: ContextView, state: ClaudeCodeState) -> str | None:
    """The uuid of the user prompt that started the current ``query()`` call (the breaker's scope): the last
    record of the context that `_starts_turn`. Asked before every call, so what it learnt is kept in the
    state: where it found the prompt (while that record is still at that position nothing before it can be
    the last one: records are immutable, so it still qualifies), the records after it at the last call
    (none of them starts a turn: while they are still there, the same objects in the same places, only
    what was appended needs a look; one identity comparison of the whole tail, at C speed, tells) and
    which records are known not to start a turn (by identity; the state holds them, so no id is reused),
    for a tail that changed. A context where the prompt moved or was removed (a compaction) is scanned
    again in full."""
    records = view.records
    position, found = state.turn_at
    floor = position + 1 if found is not None and position < len(records) and records[position] is found else 0
    start, tail = state.turn_tail
    scan_to = floor
    if start == floor and tail:
        end = floor + len(tail)
        if end <= len(records) and all(map(operator.is_, records[floor:end], tail)):
            scan_to = end  # the tail is unchanged: only the records appended since need a look
    passed = state.not_turns
    for index in range(len(records) - 1, scan_to - 1, -1):
        record = records[index]
        if id(record) in passed:
            continue
        if _starts_turn(record):
            state.turn_at = (index, record)
            state.turn_tail = (index + 1, tuple(records[index + 1 :]))
            return record.uuid
        passed[id(record)] = record
    state.turn_tail = (floor, tuple(records[floor:]))
    if floor:
        return found.uuid  # type: ignore[union-attr]
    state.turn_at = (0, None)
    return None


@register
class ClaudeCode(Strategy):
    """Flagged unsafe: its SM step is v2.1.88's cut as shipped (``sm-compact-reference``), which makes
    requests the API rejects on the dev corpus's three real auto-compactions (the kept window opens the tool
    loop without thinking). ``--set sm.thinking_aware=true`` adds our fix."""

    name = "claude-code"
    source = (
        "Claude Code v2.1.88 source (docs §1–§5: tool-result budget, microcompact, session memory, auto-"
        "compact) with each recorded version's constants from anthropics/claude-code CHANGELOG.md to 2.1.240 "
        "(workbench/strategies/versions.py)"
    )
    unsafe = True
    description = (
        "Claude Code as the recorded version ran it: tool-result budget, microcompact, then auto-compact "
        "(SM first, then full); version=2.1.88 pins the reference."
    )
    Config = ClaudeCodeConfig
    config: ClaudeCodeConfig
    compaction_only = frozenset(
        {"sm.min_tokens", "sm.max_tokens", "sm.min_text_block_messages", "sm.thinking_aware", "sm.full_compact"}
    )

    def new_state(self) -> ClaudeCodeState:
        return ClaudeCodeState(ProcessState(new_sm_state(self.config.sm)))

    def new_agent_state(self, parent: ClaudeCodeState) -> ClaudeCodeState:
        """A sub-agent of ``parent``'s process: same module state, its own budget and breaker."""
        return ClaudeCodeState(parent.process)

    def observe(self, view: ContextView, state: ClaudeCodeState) -> ExtractionCall | None:
        return observe_sm(view, state.sm) if self.config.session_memory else None

    def row(self, view: ContextView) -> ClaudeCodeVersion:
        return version_row(self.config.version, view)

    def trigger_for(self, view: ContextView) -> AutoCompactTrigger:
        return for_version(self.config.sm.trigger, self.row(view), view.model, window=view.window)

    def _budget(self, row: ClaudeCodeVersion) -> ToolResultBudgetConfig:
        """The size budget in force for ``row``'s version: the row's constants where the config does not set
        them. Memoised per (enabled, max_result_chars): it is asked before every call, and copying the
        pydantic config each time was a few percent of a replay."""
        memo: dict[tuple[bool, int], ToolResultBudgetConfig] = self.__dict__.setdefault("_budgets", {})
        found = memo.get((row.tool_result_budget, row.max_result_chars))
        if found is not None:
            return found
        budget = self.config.tool_result_budget
        explicit = budget.model_fields_set
        update = {
            key: value
            for key, value in (("enabled", row.tool_result_budget), ("max_result_chars", row.max_result_chars))
            if key not in explicit
        }
        found = budget.model_copy(update=update) if update else budget
        memo[(row.tool_result_budget, row.max_result_chars)] = found
        return found

    def _legacy(self, view: ContextView, row: ClaudeCodeVersion) -> LegacyMicrocompactConfig:
        """The legacy microcompact's config for ``view``'s call: on where the version ran it, unless the
        config sets ``enabled`` explicitly."""
        config = self.config.legacy_microcompact
        if "enabled" in config.model_fields_set:
            return config
        version = view.version if self.config.version == "recorded" else self.config.version
        enabled = row.runs_legacy_microcompact(version)
        if enabled == config.enabled:
            return config
        memo: dict[bool, LegacyMicrocompactConfig] = self.__dict__.setdefault("_legacy_configs", {})
        found = memo.get(enabled)
        if found is None:
            found = memo[enabled] = config.model_copy(update={"enabled": enabled})
        return found

    def _microcompact(self, view: ContextView, row: ClaudeCodeVersion) -> Compaction | None:
        """The time-based microcompact, else the legacy one (the first that fires is the step's microcompact,
        as v2.1.88's ``microcompactMessages`` returns on the first, docs §3.2)."""
        micro = time_based_microcompact(view, self.config.microcompact)
        if micro is not None:
            return micro
        legacy = self._legacy(view, row)
        if not legacy.enabled:
            return None
        trigger = self.trigger_for(view)
        warning = trigger.threshold - trigger.warning_buffer_tokens
        return legacy_microcompact(view, legacy, warning_threshold=warning, size=trigger.size(view))

    def _rewrite(
        self, view: ContextView, state: ClaudeCodeState, row: ClaudeCodeVersion
    ) -> tuple[ContextView, Compaction | None]:
        first: Compaction | None = None
        budget = apply_tool_result_budget(view, self._budget(row), start=state.budget_checked)
        if budget is not None:
            view, first = _resized(view, budget), budget
        micro = self._microcompact(view, row)
        if micro is not None:
            view, first = _resized(view, micro), first or micro
            if first is not micro:  # the budget's event reports the step; the microcompact's figures stay
                first = replace(first, details={**first.details, "microcompact": micro.details})
        state.budget_checked = len(view.records)
        return view, first

    def _auto(
        self, view: ContextView, state: ClaudeCodeState, trigger: AutoCompactTrigger, kind: str
    ) -> Compaction | None:
        reset = not view.is_subagent or self.config.subagent_resets_last_summarized
        try:
            if self.config.session_memory:
                threshold = trigger.threshold if kind == "auto" else None
                result = sm_compaction(
                    view, state.sm, self.config.sm, adjust=True, threshold=threshold, trigger=kind, reset=reset
                )
            else:
                result = full_compaction(view, self.config.sm.full_compact, trigger=kind)
                if reset:
                    state.sm.trigger.after_compaction()
        except Exception:  # compactConversation failed: count it for the circuit breaker (docs §4.4)
            state.failures += 1
            return None
        state.failures = 0
        post_compact_cleanup(state.process, main_thread=not view.is_subagent)
        return result

    def compact(self, view: ContextView, state: ClaudeCodeState) -> Compaction | None:
        row = self.row(view)
        view, first = self._rewrite(view, state, row)
        trigger = self.trigger_for(view)
        turn = _turn(view, state)
        if turn != state.turn:  # a new query() call: the breaker is re-armed (docs §4.4)
            state.turn, state.failures = turn, 0
        breaker = trigger.max_consecutive_failures
        if not trigger.fires(view) or (breaker is not None and state.failures >= breaker):
            return first if first is None else replace(first, records=view.records)
        result = self._auto(view, state, trigger, "auto")
        if result is None:
            return first if first is None else replace(first, records=view.records)
        state.budget_checked = len(result.records)
        if first is None:
            return result
        details = result.details
        micro = first.details if first.kind == "microcompact" else first.details.get("microcompact")
        if micro is not None:
            details = {**details, "microcompact": micro}
        return replace(result, dropped=tuple(dict.fromkeys((*first.dropped, *result.dropped))), details=details)

    def compact_manual(self, view: ContextView, state: ClaudeCodeState) -> Compaction | None:
        """A recorded ``/compact``: SM first without the size check, then full (docs §5.1 step 13)."""
        result = self._auto(view, state, self.trigger_for(view), "manual")
        if result is not None:
            state.budget_checked = len(result.records)
        return result
