"""When to compact: Claude Code's auto-compact thresholds (docs §4) and plain %-of-window triggers.

Reproduced constants (docs §4.2): ``MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000`` reserved from the window
(``min(model max output, 20_000)``), ``AUTOCOMPACT_BUFFER_TOKENS = 13_000``, warning and error buffers
``20_000``, ``MANUAL_COMPACT_BUFFER_TOKENS = 3_000`` (blocking limit = effective − 3,000),
``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` semantics (can only lower the threshold: anthropics/claude-code#31806), and the
circuit breaker ``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3`` (docs §4.4). A 200k model with 32k default
output compacts at 167,000 tokens and blocks at 177,000.

Other versions (`workbench.strategies.versions`): `for_version` fills every field the config did not set
explicitly from the version's row and the model (e.g. v2.0.x reserved the whole max output, measured the
last response's usage and blocked at window − 3,000; from 2.1.117 Opus 4.7 and the later native-1M models
are measured against 1M; before 2.1.223 a model id Claude Code does not recognise never auto-compacts);
explicitly set fields always win.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from .base import ContextView, StrategyConfig

if TYPE_CHECKING:
    from .versions import ClaudeCodeVersion

__all__ = [
    "AUTOCOMPACT_BUFFER_TOKENS",
    "MAX_OUTPUT_TOKENS_FOR_SUMMARY",
    "AutoCompactTrigger",
    "context_window_for_model",
    "for_version",
]

MODEL_CONTEXT_WINDOW_DEFAULT = 200_000
MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000
AUTOCOMPACT_BUFFER_TOKENS = 13_000
WARNING_THRESHOLD_BUFFER_TOKENS = 20_000
ERROR_THRESHOLD_BUFFER_TOKENS = 20_000
MANUAL_COMPACT_BUFFER_TOKENS = 3_000
MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3


def context_window_for_model(model: str | None, default: int = MODEL_CONTEXT_WINDOW_DEFAULT) -> int:
    """``getContextWindowForModel`` without remote config: ``[1m]`` suffix → 1,000,000 (docs §4.1)."""
    if model and model.endswith("[1m]"):
        return 1_000_000
    return default


class AutoCompactTrigger(StrategyConfig):
    """Auto-compact trigger. ``pct_of_window`` replaces Claude Code's rule by a plain share of the
    window (the article's 60% / 80% staging); otherwise the threshold is Claude Code's."""

    #: What `for_version` takes from the version's row and the model when not set (`_resolved`).
    resolved_when_unset = frozenset(
        {
            "context_window",
            "max_output_tokens",
            "summary_output_reserve",
            "buffer_tokens",
            "warning_buffer_tokens",
            "manual_buffer_tokens",
            "blocking_base",
            "max_consecutive_failures",
            "measure",
            "auto_compact",
        }
    )

    context_window: int = Field(MODEL_CONTEXT_WINDOW_DEFAULT, gt=0)
    auto_compact_window: int | None = Field(None, gt=0, description="CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    max_output_tokens: int = Field(32_000, gt=0, description="the model's default max_tokens")
    summary_output_reserve: int = Field(MAX_OUTPUT_TOKENS_FOR_SUMMARY, ge=0)
    buffer_tokens: int = Field(AUTOCOMPACT_BUFFER_TOKENS, ge=0)
    pct_override: float | None = Field(None, gt=0, le=100, description="CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
    pct_of_window: float | None = Field(None, gt=0, le=100, description="plain trigger: % of the window")
    warning_buffer_tokens: int = Field(WARNING_THRESHOLD_BUFFER_TOKENS, ge=0)
    manual_buffer_tokens: int = Field(MANUAL_COMPACT_BUFFER_TOKENS, ge=0)
    blocking_limit_override: int | None = Field(None, gt=0)
    blocking_base: Literal["effective", "window"] = Field("effective", description="blocking limit = base − 3,000")
    max_consecutive_failures: int | None = Field(
        MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES, ge=1, description="circuit breaker (None: none, before v2.1.76)"
    )
    measure: Literal["estimate", "usage"] = Field(
        "estimate",
        description="estimate: tokenCountWithEstimation (v2.1.x); usage: the last response's usage total (v2.0.x)",
    )
    auto_compact: bool = Field(
        True,
        description="auto-compaction fires at all (off: DISABLE_AUTO_COMPACT, or a model id the version does not "
        "recognise before 2.1.223)",
    )

    @model_validator(mode="after")
    def _positive_effective(self) -> AutoCompactTrigger:
        if self.pct_of_window is None and self.effective_window <= self.buffer_tokens:
            raise ValueError(f"effective window {self.effective_window} must exceed buffer_tokens {self.buffer_tokens}")
        return self

    @property
    def effective_window(self) -> int:
        """``min(window, auto_compact_window) − min(max_output_tokens, 20_000)`` (docs §4.2)."""
        window = self.context_window
        if self.auto_compact_window is not None:
            window = min(window, self.auto_compact_window)
        return window - min(self.max_output_tokens, self.summary_output_reserve)

    @property
    def threshold(self) -> int:
        if self.pct_of_window is not None:
            return math.floor(self.context_window * self.pct_of_window / 100)
        base = self.effective_window - self.buffer_tokens
        if self.pct_override is not None:
            return min(math.floor(self.effective_window * self.pct_override / 100), base)
        return base

    @property
    def blocking_limit(self) -> int:
        if self.blocking_limit_override is not None:
            return self.blocking_limit_override
        base = self.context_window if self.blocking_base == "window" else self.effective_window
        return base - self.manual_buffer_tokens

    def size(self, view: ContextView) -> int:
        """What this trigger compares with the threshold: the estimate, or the last response's usage total
        (0 before any response of the current context, as ``tokenCountFromLastAPIResponse`` gives)."""
        if self.measure == "usage":
            return view.usage_tokens if view.usage_tokens is not None else view.tokens
        return view.tokens

    def fires(self, view: ContextView) -> bool:
        return self.auto_compact and self.is_above_threshold(self.size(view))

    def is_above_threshold(self, tokens: int) -> bool:
        return tokens >= self.threshold

    def is_at_blocking_limit(self, tokens: int) -> bool:
        return tokens >= self.blocking_limit

    def warning(self, tokens: int) -> bool:
        return tokens >= self.threshold - self.warning_buffer_tokens

    def percent_left(self, tokens: int) -> int:
        """``calculateTokenWarningState.percentLeft``: ``max(0, round((t − u)/t × 100))``."""
        threshold = self.threshold
        return max(0, math.floor((threshold - tokens) / threshold * 100 + 0.5))


def _resolved(
    trigger: AutoCompactTrigger, row: ClaudeCodeVersion, model: str | None, window: int | None
) -> AutoCompactTrigger:
    explicit = trigger.model_fields_set
    values = {
        "context_window": window or row.native_window(model) or context_window_for_model(model),
        "max_output_tokens": row.max_output_for(model),
        "summary_output_reserve": row.output_reserve(model),
        "buffer_tokens": row.autocompact_buffer,
        "warning_buffer_tokens": row.warning_buffer,
        "manual_buffer_tokens": row.blocking_buffer,
        "blocking_base": row.blocking_base,
        "max_consecutive_failures": row.circuit_breaker,
        "measure": row.measure,
        "auto_compact": row.auto_compacts(model),
    }
    update = {key: value for key, value in values.items() if key not in explicit}
    return trigger.model_copy(update=update)  # an empty update copies: the same values either way


def for_version(
    trigger: AutoCompactTrigger, row: ClaudeCodeVersion, model: str | None, *, window: int | None = None
) -> AutoCompactTrigger:
    """``trigger`` with every field it does not set explicitly taken from ``row`` and ``model``.

    ``window``: the context window the recording proves (1M when a recorded request exceeded 200k),
    else the model's (docs §4.1). Memoised: the replay asks once per API call, so each distinct (trigger,
    its explicit fields, row, model, window) is resolved once; the memo is emptied when a new key arrives
    while it holds more than 4,096 entries.
    """
    # pydantic equality ignores which fields were set explicitly, and `_resolved` depends on exactly that
    key = (trigger, frozenset(trigger.model_fields_set), id(row), model, window)
    hit = _RESOLVED.get(key)
    if hit is None or hit[0] is not row:
        if len(_RESOLVED) > 4096:
            _RESOLVED.clear()
        hit = _RESOLVED[key] = (row, _resolved(trigger, row, model, window))
    return hit[1]


#: (trigger, its explicit fields, id(row), model, window) → (row, resolved trigger); the row is kept to keep
#: its id valid.
_RESOLVED: dict[tuple[object, ...], tuple[ClaudeCodeVersion, AutoCompactTrigger]] = {}
