"""Auto-compact thresholds reproduce docs §4.2."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workbench.strategies.triggers import AutoCompactTrigger, context_window_for_model


def test_default_200k_model() -> None:
    trigger = AutoCompactTrigger()
    assert trigger.effective_window == 180_000
    assert trigger.threshold == 167_000  # 83.5% of 200k
    assert trigger.blocking_limit == 177_000
    assert not trigger.is_above_threshold(166_999) and trigger.is_above_threshold(167_000)
    assert trigger.warning(147_000) and not trigger.warning(146_999)


def test_one_million_window_and_model_suffix() -> None:
    assert context_window_for_model("claude-opus-4-6[1m]") == 1_000_000
    assert context_window_for_model("claude-opus-4-6") == 200_000
    assert AutoCompactTrigger(context_window=1_000_000).threshold == 967_000


def test_pct_override_can_only_lower_the_threshold() -> None:
    assert AutoCompactTrigger(pct_override=60).threshold == 108_000  # floor(180000 * 0.6)
    assert AutoCompactTrigger(pct_override=99).threshold == 167_000  # clamped


def test_output_reserve_is_capped_at_20k_and_plain_percent_trigger() -> None:
    assert AutoCompactTrigger(max_output_tokens=8_000).threshold == 200_000 - 8_000 - 13_000
    assert AutoCompactTrigger(max_output_tokens=64_000).threshold == 167_000
    assert AutoCompactTrigger(pct_of_window=80).threshold == 160_000


def test_percent_left_rounds_like_math_round() -> None:
    assert AutoCompactTrigger().percent_left(0) == 100
    assert AutoCompactTrigger().percent_left(200_000) == 0


@pytest.mark.parametrize("bad", [{"pct_override": 0}, {"pct_override": 101}, {"context_window": 20_000}, {"nope": 1}])
def test_bad_values_raise(bad) -> None:
    with pytest.raises(ValidationError):
        AutoCompactTrigger(**bad)


def test_a_plain_percent_trigger_works_on_small_windows() -> None:
    trigger = AutoCompactTrigger(context_window=16_000, pct_of_window=40)
    assert trigger.threshold == 6_400
    with pytest.raises(ValidationError):
        AutoCompactTrigger(context_window=16_000)  # Claude Code's rule: effective window below the buffer
