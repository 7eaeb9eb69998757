"""Codex CLI compaction as openai/codex does it (`workbench.strategies.codex`, local; `workbench.strategies.
codex_remote`, remote v2): the trigger at the clamped 90% limit, which user messages survive the 20,000 /
64,000-token budgets, what is dropped, the overflow trim and the stream-retry cap, on hand-built records whose
token counts are computed by hand (Codex counts UTF-8 bytes / 4, rounded up)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import view_of
from pydantic import ValidationError
from record_builders import developer, text, user
from synthetic import make_session

from workbench.metrics.guarantees import longest_ineffective_run
from workbench.replay import replay_session
from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.codex import SUMMARY_PREFIX, approx_token_count, truncate_text
from workbench.strategies.refill import REFILL_LIMIT
from workbench.strategies.registry import _BUILTIN_MODULES
from workbench.synthetic.shapes import Shape, shaped_session
from workbench.transcript import Block, Record

BOTH = ["codex", "codex-remote"]


def words(tag: str, tokens: int) -> str:
    """An ASCII text of exactly ``tokens`` Codex tokens (4 bytes each) that starts with ``tag``."""
    return (tag + "x" * (tokens * 4))[: tokens * 4]


def session_records(turns: int = 3, tools: int = 2) -> list[Record]:
    return list(make_session(turns=turns, tools=tools, result_chars=400).records)


def run(name: str, recs, config=None, tokens=None, window=None):
    strategy = create(name, config)
    view = view_of(recs, tokens=tokens)
    if window is not None:
        view = replace(view, window=window)
    return strategy.compact(view, strategy.new_state())


def valid(result) -> bool:
    return check_request(list(result.records), thinking=True).violations == ()


# ------------------------------------------------------------------ shared pieces
def test_token_count_and_truncation_follow_the_upstream_tests() -> None:
    """compact_remote_v2.rs @ 009bd870: "middle1234" is 3 tokens and truncates to 2 as
    ``midd…1 tokens truncated…1234``; "uvwxyz" to 1 as ``uv…1 tokens truncated…yz``."""
    assert approx_token_count("middle1234") == 3 and approx_token_count("new") == 1
    assert truncate_text("middle1234", 2) == "midd…1 tokens truncated…1234"
    assert truncate_text("uvwxyz", 1) == "uv…1 tokens truncated…yz"
    assert truncate_text("fits", 1) == "fits"


@pytest.mark.parametrize("name", BOTH)
def test_fires_at_exactly_the_limit_and_not_one_below(name: str) -> None:
    recs = session_records()
    assert create(name).config.limit == 180_000
    assert run(name, recs, tokens=179_999) is None
    assert run(name, recs, tokens=180_000) is not None
    # a configured limit above 90% is clamped to it, one below is used as is
    assert run(name, recs, {"auto_compact_token_limit": 190_000}, tokens=189_999) is not None
    assert run(name, recs, {"auto_compact_token_limit": 100_000}, tokens=99_999) is None
    assert run(name, recs, {"auto_compact_token_limit": 100_000}, tokens=100_000) is not None
    # the older unclamped rule
    unclamped = {"auto_compact_token_limit": 190_000, "clamp_to_default": False}
    assert run(name, recs, unclamped, tokens=189_999) is None
    assert run(name, recs, unclamped, tokens=190_000) is not None
    # the window the recording proves (1M): 90% of it
    assert run(name, recs, tokens=899_999, window=1_000_000) is None
    assert run(name, recs, tokens=900_000, window=1_000_000) is not None


@pytest.mark.parametrize("name", BOTH)
def test_configs_are_validated(name: str) -> None:
    with pytest.raises(ValidationError):
        create(name, {"auto_compact_token_limit": 0})
    with pytest.raises(ValidationError):
        create(name, {"default_limit_percent": 101})
    with pytest.raises(ValidationError):
        create(name, {"no_such_key": 1})
    with pytest.raises(ValidationError):
        create(name, {"context_window": -1})
    budget = "user_message_max_tokens" if name == "codex" else "retained_message_max_tokens"
    with pytest.raises(ValidationError):
        create(name, {budget: -1})
    config = create(name).config
    with pytest.raises(ValidationError):
        config.context_window = 1  # frozen


@pytest.mark.parametrize("name", BOTH)
def test_tool_calls_and_assistant_messages_are_dropped(name: str) -> None:
    recs = session_records(turns=3, tools=2)
    result = run(name, recs, tokens=180_000)
    kept = result.records
    assert not any(r.tool_uses() or r.tool_results() for r in kept)
    assert [r.kind for r in kept] == ["user"] * len(kept)
    assert [r.uuid for r in kept[:-1]] == ["u0", "u1", "u2"]
    dropped = set(result.dropped)
    assert {r.uuid for r in recs if r.kind == "assistant" or r.tool_results()} <= dropped
    assert result.added == (kept[-1],) and valid(result)


# ------------------------------------------------------------------ local compaction (compact.rs)
def test_local_keeps_the_newest_user_messages_within_20k_and_truncates_the_one_at_the_edge() -> None:
    oldest, old, middle, newest = (
        user(text(words("OLDEST", 500)), uuid="u0"),
        user(text(words("OLD", 7_500)), uuid="u1"),
        user(text(words("MID", 10_000)), uuid="u2"),
        user(text(words("NEW", 4_000)), uuid="u3"),
    )
    result = run("codex", [oldest, old, middle, newest], tokens=180_000)
    first, *rest, summary = result.records
    assert [r.uuid for r in result.records[:-1]] == ["u1", "u2", "u3"]  # u0 is older than the edge: dropped
    assert rest == [middle, newest]  # untouched records
    # 20,000 - 4,000 - 10,000 = 6,000 tokens left for u1: 12,000 bytes of head, 12,000 of tail
    assert first.text == old.text[:12_000] + "…1500 tokens truncated…" + old.text[-12_000:]
    assert result.details["user_message_tokens"] == 20_000 and result.details["truncated_user_message"]
    assert summary.text.startswith(SUMMARY_PREFIX + "\n") and summary.kind == "user"
    assert result.dropped == ("u0", "u1") and result.added == (first, summary)  # u1 replaced by its truncation


def test_local_budget_exactly_spent_keeps_whole_messages_and_nothing_older() -> None:
    recs = [
        user(text(words("A", 1)), uuid="u0"),
        user(text(words("B", 12_000)), uuid="u1"),
        user(text(words("C", 8_000)), uuid="u2"),
    ]
    result = run("codex", recs, tokens=180_000)
    assert [r.uuid for r in result.records[:-1]] == ["u1", "u2"]
    assert result.records[0] is recs[1] and not result.details["truncated_user_message"]
    bigger = run("codex", recs, {"user_message_max_tokens": 20_001}, tokens=180_000)
    assert [r.uuid for r in bigger.records[:-1]] == ["u0", "u1", "u2"]


def test_local_keeps_the_initial_context_and_skips_context_messages_and_earlier_summaries() -> None:
    agents = user(text("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nuse pytest\n</INSTRUCTIONS>"), uuid="c0")
    env_old = user(text("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"), uuid="c1")
    recs = session_records(turns=2, tools=1)
    earlier = user(text(f"{SUMMARY_PREFIX}\nwhat happened before"), uuid="s0")
    env_new = user(text("<ENVIRONMENT_CONTEXT>\n  <cwd>/w/sub</cwd>\n</ENVIRONMENT_CONTEXT>"), uuid="c2")
    everything = [
        developer("<permissions instructions>", uuid="d0"),
        agents,
        env_old,
        *recs[:3],
        earlier,
        env_new,
        *recs[3:],
    ]
    result = run("codex", everything, tokens=180_000)
    assert [r.uuid for r in result.records[:-1]] == ["c0", "c2", "u0", "u1"]
    assert result.details["initial_context"] == 2 and result.details["user_messages"] == 2
    assert {"c1", "s0", "d0"} <= set(result.dropped) and valid(result)


def test_local_collects_user_messages_as_text() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    pic = Record(
        kind="user", role="user", uuid="p", blocks=(Block.text_block("look"), Block.from_raw(image)), has_content=True
    )
    local = run("codex", [pic], tokens=180_000)
    remote = run("codex-remote", [pic], tokens=180_000)
    assert [b.kind for b in local.records[0].blocks] == ["text"] and local.records[0].text == "look"
    assert remote.records[0] is pic


def test_local_overflow_drops_the_oldest_items_from_the_summary_input_and_retries() -> None:
    """A compaction request above the window loses its oldest item per retry; the user messages still come
    from the whole history; with one item left and still too big the compaction fails."""
    recs = [user(text(f"MARK{i} " + "y" * 9_590), uuid=f"u{i}") for i in range(5)]  # 2,400 rough tokens each
    config = {"context_window": 10_000}
    small = run("codex", recs[:4], config)  # 9,600 + the prompt fit: nothing trimmed
    assert small.details["trimmed_items"] == 0 and "MARK0" in small.summary
    result = run("codex", recs, config)  # 12,000 + the prompt: one item removed
    assert result.details["trimmed_items"] == 1
    assert "MARK0" not in result.summary and "MARK1" in result.summary
    assert "u0" in [r.uuid for r in result.records]  # still a kept user message
    assert run("codex", recs, config, tokens=40_000).details["trimmed_items"] == 4
    assert run("codex", recs, config, tokens=60_000) is None  # one item left, still too big
    assert run("codex", [recs[0]], {"context_window": 2_000}) is None


# ------------------------------------------------------------------ remote v2 (compact_remote_v2.rs)
def test_remote_retains_user_messages_within_64k() -> None:
    oldest, old, middle, newest = (
        user(text(words("OLDEST", 100)), uuid="u0"),
        user(text(words("OLD", 30_000)), uuid="u1"),
        user(text(words("MID", 30_000)), uuid="u2"),
        user(text(words("NEW", 10_000)), uuid="u3"),
    )
    result = run("codex-remote", [oldest, old, middle, newest], tokens=180_000)
    first, *rest, item = result.records
    assert [r.uuid for r in result.records[:-1]] == ["u1", "u2", "u3"] and rest == [middle, newest]
    # 64,000 - 10,000 - 30,000 = 24,000 tokens left for u1: 48,000 bytes of head, 48,000 of tail
    assert first.text == old.text[:48_000] + "…6000 tokens truncated…" + old.text[-48_000:]
    assert result.details["user_message_tokens"] == 64_000
    assert not item.text.startswith(SUMMARY_PREFIX) and item.kind == "user"
    # the same messages under the local 20,000 budget keep only the newest whole one and part of the next
    local = run("codex", [oldest, old, middle, newest], tokens=180_000)
    assert [r.uuid for r in local.records[:-1]] == ["u2", "u3"]


def test_remote_drops_developer_and_context_messages_from_the_retained_ones() -> None:
    recs = [developer("dev", uuid="d0"), user(text("<environment_context>cwd=/w</environment_context>"), uuid="c0")]
    recs += session_records(turns=2, tools=1)
    result = run("codex-remote", recs, tokens=180_000)
    assert [r.uuid for r in result.records[:-1]] == ["c0", "u0", "u1"]  # c0 re-injected as initial context
    assert result.details["user_messages"] == 2 and "d0" in result.dropped and valid(result)


def test_remote_retries_the_stream_at_most_twice() -> None:
    recs = session_records()
    assert run("codex-remote", recs, {"stream_failures": 2}, tokens=180_000).details["stream_retries"] == 2
    assert run("codex-remote", recs, {"stream_failures": 3}, tokens=180_000) is None
    assert run("codex-remote", recs, {"stream_failures": 3, "max_stream_retries": 3}, tokens=180_000) is not None
    assert run("codex-remote", recs, {"stream_failures": 1, "max_stream_retries": 0}, tokens=180_000) is None


# ------------------------------------------------------------------ registry and replay
def test_both_are_registered_with_their_source() -> None:
    assert _BUILTIN_MODULES["codex"] == "codex" and _BUILTIN_MODULES["codex-remote"] == "codex_remote"
    assert type(create("codex")).source.startswith("openai/codex codex-rs/core/src/compact.rs @ ")
    assert type(create("codex-remote")).source.startswith("openai/codex codex-rs/core/src/compact_remote_v2.rs @ ")
    assert not type(create("codex")).unsafe and not type(create("codex-remote")).unsafe


@pytest.mark.parametrize("name", BOTH)
def test_a_replay_compacts_and_a_resumed_session_stops_after_three_refills(name: str) -> None:
    session = shaped_session(Shape(calls=24, result_chars=60_000, hidden_tokens=15_000))
    events = replay_session(session, create(name, {"context_window": 200_000})).events
    assert events and all(e["kind"] == name for e in events)
    stuck = shaped_session(Shape(calls=30, hidden_tokens=184_000, result_chars=200))
    result = replay_session(stuck, create(name))
    assert len(result.events) == REFILL_LIMIT and longest_ineffective_run(result.events) == REFILL_LIMIT
