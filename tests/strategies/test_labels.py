"""Readable config labels: strategy + parameters that differ from its defaults."""

from __future__ import annotations

import pytest

from workbench.metrics import config_hash
from workbench.strategies import create
from workbench.strategies.labels import config_label, format_value, short_key, unique_labels


def test_defaults_are_just_the_name():
    assert config_label("sm-compact") == "sm-compact"
    assert config_label("sm-compact", {}) == "sm-compact"
    resolved = create("sm-compact").config.model_dump(mode="json")
    assert config_label("sm-compact", resolved) == "sm-compact"


def test_partial_and_resolved_configs_give_the_same_label():
    passed = {"min_tokens": 20_000, "trigger": {"pct_of_window": 60}}
    resolved = create("sm-compact", passed).config.model_dump(mode="json")
    assert config_label("sm-compact", passed) == "sm-compact min_tokens=20k trigger=60%"
    assert config_label("sm-compact", resolved) == config_label("sm-compact", passed)


def test_nested_configs_of_claude_code():
    """claude-code nests sm.* (itself with sm.trigger.*) and microcompact.*; its sm default is the
    reference config (thinking_aware false), so setting it true is a difference and false is not."""
    label = config_label(
        "claude-code",
        {"sm": {"min_tokens": 20_000, "thinking_aware": True, "trigger": {"pct_override": 75}}},
    )
    assert label == "claude-code sm.min_tokens=20k sm.thinking_aware=true sm.trigger.pct_override=75%"
    assert config_label("claude-code", {"sm": {"thinking_aware": False}}) == "claude-code"
    assert config_label("claude-code", {"sm": {"trigger": {"pct_of_window": 60}}}) == "claude-code sm.trigger=60%"


def test_json_text_is_accepted():
    assert config_label("sm-compact", '{"max_tokens": 80000}') == "sm-compact max_tokens=80k"


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("min_tokens", 20_000, "20k"),
        ("min_tokens", 20_400, "20.4k"),
        ("min_tokens", 20_455, "20455"),
        ("context_window", 1_000_000, "1M"),
        ("context_window", 1_500_000, "1.5M"),
        ("keep_recent", 5, "5"),
        ("trigger.pct_of_window", 60.0, "60%"),
        ("pct_override", 72.5, "72.5%"),
        ("default_limit_percent", 90, "90%"),
        ("trigger_fraction", 0.8, "0.8"),
        ("thinking_aware", False, "false"),
        ("auto_compact_window", None, "none"),
        ("compactable_tools", ["Read", "Bash"], "[Read,Bash]"),
        ("placeholder", "x" * 40, "x" * 23 + "…"),
    ],
)
def test_values_are_compact(key, value, text):
    assert format_value(key, value) == text


def test_short_keys():
    assert short_key("trigger.pct_of_window") == "trigger"
    assert short_key("pct_of_window") == "trigger"
    assert short_key("sm.trigger.pct_of_window") == "sm.trigger"
    assert short_key("sm.min_tokens") == "sm.min_tokens"


def test_unknown_strategy_shows_every_parameter():
    assert config_label("not-registered", {"a": 2000, "b": {"c": True}}) == "not-registered a=2k b.c=true"


def test_colliding_labels_get_a_short_hash():
    a, b = config_hash("x", {"p": "a" * 30}), config_hash("x", {"p": "a" * 31})
    labels = unique_labels([(a, "x p=aaa…"), (b, "x p=aaa…"), ("c" * 12, "y")])
    assert labels[a] == f"x p=aaa… #{a[:6]}" and labels[b] == f"x p=aaa… #{b[:6]}" and labels["c" * 12] == "y"
