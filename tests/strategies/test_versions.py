"""The Claude Code version table (`workbench.strategies.versions`) and per-version trigger resolution."""

from __future__ import annotations

import pytest
from helpers import view_of
from record_builders import say, user

from workbench.strategies import create
from workbench.strategies.triggers import AutoCompactTrigger, for_version
from workbench.strategies.versions import VERSIONS, parse_version, version_constants, version_table


def test_rows_are_ordered_and_cover_every_version() -> None:
    starts = [parse_version(row.since) for row in VERSIONS]
    assert starts == sorted(starts) and starts[0] == (0, 0, 0)
    assert version_constants("2.0.57").label == "1.0.x–2.0.57"
    assert version_constants("1.0.108").label == "1.0.x–2.0.57"
    assert version_constants("2.0.58").label == "2.0.58–2.0.x"
    assert version_constants("2.1.39").label == "2.1.21–2.1.50"
    assert version_constants("2.1.88").label == "2.1.88 (reference)"
    assert version_constants("2.1.89").refill_stop == 3 and version_constants("2.1.88").refill_stop is None
    assert version_constants("2.1.200") is version_constants("2.1.117")
    assert version_constants("2.1.240") is version_constants("2.1.223") is version_constants("3.0.0")
    assert version_constants(None) is version_constants("2.1.88")
    assert version_constants("2.1.20").output_reserve_cap is None
    assert version_constants("2.1.21").output_reserve_cap == 20_000


def test_every_row_names_its_sources() -> None:
    for row in VERSIONS:
        assert row.evidence, row.label
        for evidence in row.evidence:
            assert evidence.source
            assert not evidence.inferred or evidence.sessions, (row.label, evidence.constant)


@pytest.mark.parametrize(
    ("version", "model", "threshold", "blocking", "measure"),
    [
        ("2.0.57", "claude-opus-4-5-20251101", 123_000, 197_000, "usage"),  # 64k reserve (smartagent-pai)
        ("2.0.74", "claude-opus-4-5-20251101", 155_000, 197_000, "usage"),  # 32k: held-out 155,199–172,320
        ("2.0.5", "claude-sonnet-4-5-20250929", 155_000, 197_000, "usage"),  # 32k reserve (45k buffer)
        ("2.0.42", "claude-sonnet-4-5-20250929", 155_000, 197_000, "usage"),  # bestlove1211: 155,573–157,712
        ("2.1.10", "claude-opus-4-5-20251101", 155_000, 165_000, "estimate"),  # 2.1.7: effective − 3k
        ("2.1.10", "claude-opus-4-6", 155_000, 165_000, "estimate"),
        ("2.1.19", "claude-opus-4-5-20251101", 155_000, 197_000, "estimate"),  # 2.1.14: ~98%
        ("2.1.39", "claude-opus-4-6", 167_000, 197_000, "estimate"),  # 2.1.21: 20k cap
        ("2.1.88", "claude-opus-4-6", 167_000, 177_000, "estimate"),  # docs §4.2
        ("2.1.116", "claude-opus-4-7", 167_000, 177_000, "estimate"),  # against 200K before 2.1.117
        ("2.1.117", "claude-opus-4-7", 967_000, 977_000, "estimate"),  # native 1M
        ("2.1.219", "claude-opus-5", 967_000, 977_000, "estimate"),
        ("2.1.219", "claude-opus-4-8", 167_000, 177_000, "estimate"),  # no native window announced
    ],
)
def test_thresholds_by_version(version, model, threshold, blocking, measure) -> None:
    trigger = for_version(AutoCompactTrigger(), version_constants(version), model)
    assert (trigger.threshold, trigger.blocking_limit, trigger.measure) == (threshold, blocking, measure)


def test_explicit_config_values_win_over_the_version() -> None:
    row = version_constants("2.0.57")
    trigger = for_version(AutoCompactTrigger(pct_override=50, measure="estimate"), row, "claude-opus-4-5")
    assert trigger.measure == "estimate" and trigger.threshold == 68_000  # floor(136000 * 0.5)
    small = for_version(AutoCompactTrigger(context_window=60_000, max_output_tokens=20_000), row, "claude-opus-4-5")
    assert small.threshold == 27_000
    assert for_version(AutoCompactTrigger(), row, "claude-opus-4-5[1m]").threshold == 923_000
    assert for_version(AutoCompactTrigger(), row, "claude-sonnet-4", window=1_000_000).threshold == 955_000


def test_the_usage_measure_compares_the_last_response_not_the_estimate() -> None:
    strategy = create("full-compact", {"version": "2.0.57"})
    records = [user("q"), say("a")]
    view = view_of(records, tokens=150_000)
    view = type(view)(**{**view.__dict__, "usage_tokens": 122_000, "model": "claude-opus-4-5"})
    assert strategy.compact(view, None) is None  # 150k estimated, but the last usage is below 123,000
    view = type(view)(**{**view.__dict__, "usage_tokens": 123_000})
    assert strategy.compact(view, None) is not None
    pinned = create("full-compact", {"version": "2.1.88"})
    assert pinned.compact(view, None) is None  # 150k < 167k


def test_bad_versions_are_rejected() -> None:
    with pytest.raises(ValueError, match="not a Claude Code version"):
        create("claude-code", {"version": "latest"})
    with pytest.raises(ValueError, match="not a Claude Code version"):
        parse_version("")
    assert parse_version("2.1.88-beta.1") == (2, 1, 88)


def test_the_table_renders_for_the_docs() -> None:
    rows = version_table()
    assert [r["range"] for r in rows] == [row.label for row in VERSIONS]
    assert rows[0]["threshold_200k_opus_4_5"] == 123_000 and rows[1]["threshold_200k_opus_4_5"] == 155_000
    assert rows[-1]["threshold_200k_default"] == 167_000
    assert rows[-1]["until"] is None and rows[0]["until"] == "2.0.58"
    assert [r["refill_stop"] for r in rows[-4:]] == [None, 3, 3, 3]
    assert rows[-1]["native_1m"] == "claude-opus-4-7, fable, claude-sonnet-5, claude-opus-5"
    assert [r["unknown_models"] for r in rows[-2:]] == ["never auto-compact", "held to the assumed window"]


def test_a_trigger_equal_to_the_default_but_set_explicitly_is_resolved_apart() -> None:
    """pydantic equality ignores the explicitly set fields, so the memo must key on them too: resolving a
    trigger that pins the blocking base first must not leak into the default trigger's resolution."""
    row = version_constants("2.1.39")
    pinned = for_version(AutoCompactTrigger(blocking_base="effective"), row, "claude-opus-4-6")
    assert pinned.blocking_limit == 177_000
    assert for_version(AutoCompactTrigger(), row, "claude-opus-4-6").blocking_limit == 197_000


def test_the_size_budget_follows_each_calls_version_and_is_built_once_per_row() -> None:
    """``ClaudeCode._budget``: the row's constants where the config sets none, an explicit value wins; memoised
    per row constants (it is asked before every call), so one strategy replaying calls of several versions
    gets each version's budget, and the same object again for the same constants."""
    strategy = create("claude-code")
    early, persist, late = version_constants("2.1.1"), version_constants("2.1.2"), version_constants("2.1.88")
    assert not early.tool_result_budget and persist.max_result_chars == 100_000 and late.max_result_chars == 50_000
    budgets = [strategy._budget(row) for row in (late, early, persist, late, early)]
    assert [(b.enabled, b.max_result_chars) for b in budgets] == [
        (True, 50_000),
        (False, 50_000),
        (True, 100_000),
        (True, 50_000),
        (False, 50_000),
    ]
    assert budgets[3] is budgets[0] and budgets[4] is budgets[1]
    pinned = create("claude-code", {"tool_result_budget": {"max_result_chars": 7}})
    assert [(b.enabled, b.max_result_chars) for b in map(pinned._budget, (early, late, early))] == [
        (False, 7),
        (True, 7),
        (False, 7),
    ]


def test_unknown_models_compact_only_from_2_1_223() -> None:
    """CHANGELOG 2.1.223: sessions on unrecognised model ids were let grow past the assumed window (no
    auto-compaction); from 2.1.223 they are held inside it. A Claude id under any provider's naming is known."""
    view = view_of([user("q"), say("a")], tokens=190_000)
    for model in ("glm-4.6", "kimi-k2-thinking", "gpt-5-codex"):
        view = type(view)(**{**view.__dict__, "model": model})
        assert not create("full-compact", {"version": "2.1.222"}).trigger_for(view).fires(view)
        assert create("full-compact", {"version": "2.1.223"}).trigger_for(view).fires(view)
    for model in ("claude-sonnet-4-5-20250929", "us.anthropic.claude-opus-4-6-v1", "claude-opus-4-6@20260101", None):
        view = type(view)(**{**view.__dict__, "model": model})
        assert create("full-compact", {"version": "2.1.100"}).trigger_for(view).fires(view), model


def test_versions_newer_than_the_table_are_named() -> None:
    from workbench.strategies.versions import TABLE_THROUGH, newer_than_table

    assert not newer_than_table(TABLE_THROUGH) and not newer_than_table("2.1.88") and not newer_than_table(None)
    assert newer_than_table("2.1.241") and newer_than_table("2.2.0") and not newer_than_table("garbage")
