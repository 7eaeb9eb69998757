"""When to compact: Claude Code's auto-compact thresholds (docs §4) and plain %-of-window triggers.

Reproduced constants (docs §4.2): ``MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000`` reserved from the window
(``min(model max output, 20_000)``), ``AUTOCOMPACT_BUFFER_TOKENS = 13_000``, warning and error buffers
``20_000``, ``MANUAL_COMPACT_BUFFER_TOKENS = 3_000`` (blocking limit = effective − 3,000),
``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` semantics (can only lower the threshold: issue #31806), and the
circuit breaker ``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3`` (docs §4.4). A 200k model with 32k default
output compacts at 167,000 tokens and blocks at 177,000.
"""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from .base import StrategyConfig

__all__ = [
    "AUTOCOMPACT_BUFFER_TOKENS",
    "MAX_OUTPUT_TOKENS_FOR_SUMMARY",
    "AutoCompactTrigger",
    "context_window_for_model",
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
    max_consecutive_failures: int = Field(MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES, ge=1)

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
        return self.effective_window - self.manual_buffer_tokens

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
