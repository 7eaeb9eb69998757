"""The Anthropic API's compaction as modelled: threshold ``compact_20260112`` (``server-compact``), on-demand
``compact-2026-09-04`` (``on-demand-compact``, ``background-compact``) and the TypeScript SDK's
``CompactionControl`` (``sdk-compaction-control``); hand-built contexts with hand-computable outcomes, then
replays of generated sessions."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from record_builders import assistant, result, say, thinking, tool_use, user
from synthetic import make_session

from workbench.metrics.guarantees import longest_ineffective_run
from workbench.replay import replay_session
from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.api_compaction import (
    DEFAULT_SUMMARY_PROMPT_CHARS,
    INSTRUCTIONS_MAX_CHARS,
    SDK_SUMMARY_SECTIONS,
    BackgroundState,
)
from workbench.strategies.refill import REFILL_LIMIT
from workbench.strategies.registry import describe_strategies
from workbench.synthetic.shapes import Shape, shaped_session
from workbench.tokens.js import rough_tokens
from workbench.transcript import Record

NEW = ("on-demand-compact", "background-compact", "sdk-compaction-control")


def view(records, *, tokens=None, usage=None, step=0):
    return dataclasses.replace(view_of(records, tokens=tokens, step=step), usage_tokens=usage)


def loop(n: int, prefix: str = "") -> list[Record]:
    """A prompt, then ``n`` responses each with one tool call and its result, then a closing answer."""
    out = [user(f"{prefix}fix the parser")]
    for i in range(n):
        out += [
            assistant(thinking(f"plan {i}"), message_id=f"{prefix}m{i}"),
            assistant(tool_use(f"{prefix}t{i}", "Bash", command=f"run {i}"), message_id=f"{prefix}m{i}"),
            result(f"{prefix}t{i}", f"output {i} " + "x" * 400),
        ]
    return [*out, assistant(thinking("done?"), message_id=f"{prefix}end"), say("done", message_id=f"{prefix}end")]


def valid(records) -> bool:
    return check_request(list(records), thinking=True).violations == ()


def uuids(records):
    return [id(r) for r in records]


# ------------------------------------------------------------------ threshold compaction (server-compact)
def test_threshold_compaction_fires_at_the_configured_trigger_and_not_a_token_below() -> None:
    recs = loop(3)
    strategy = create("server-compact", {"trigger": {"value": 50_000}})
    assert strategy.compact(view(recs, tokens=49_999), strategy.new_state()) is None
    result_ = strategy.compact(view(recs, tokens=50_000), strategy.new_state())
    assert result_ is not None and len(result_.dropped) == len(recs)
    with pytest.raises(ValidationError):
        create("server-compact", {"trigger": {"value": 49_999}})


def test_threshold_compaction_cost_is_one_iteration_of_the_same_request_over_the_whole_input() -> None:
    recs = loop(3)
    strategy = create("server-compact")
    result_ = strategy.compact(view(recs, tokens=150_000), strategy.new_state())
    usage = result_.details["compaction_usage"]
    assert usage["reported_in"] == "usage.iterations" and usage["request"] == "same"
    assert usage["input_tokens"] == 150_000  # the compaction iteration reads everything the request sent
    assert usage["output_tokens"] == rough_tokens(result_.summary)


def test_pausing_lets_the_client_reinsert_the_last_messages_after_the_block() -> None:
    chat = [
        user("q0"),
        say("a0", message_id="m0"),
        user("q1"),
        say("a1", message_id="m1"),
        user("q2"),
        say("a2", message_id="m2"),
        user("q3"),
    ]
    strategy = create("server-compact", {"pause_after_compaction": True, "keep_messages": 3})
    result_ = strategy.compact(view(chat, tokens=150_000), strategy.new_state())
    kinds = [r.kind for r in result_.records]
    assert kinds[:2] == ["system", "user"] and result_.records[0].is_compact_boundary
    assert uuids(result_.records[2:]) == uuids(chat[-3:])  # the prior exchange + the current user message
    assert result_.start == 4 and len(result_.dropped) == 4
    assert result_.details["reinserted_records"] == 3
    # paused without re-inserting anything: the same context as not pausing
    plain = create("server-compact", {"pause_after_compaction": True})
    assert len(plain.compact(view(chat, tokens=150_000), plain.new_state()).records) == 2
    with pytest.raises(ValidationError):
        create("server-compact", {"keep_messages": 3})


def test_reinserted_messages_are_api_messages_not_records() -> None:
    chat = [
        user("q0"),
        assistant(thinking("t0"), message_id="m0"),
        say("a0", message_id="m0"),
        user("q1"),
        assistant(thinking("t1"), message_id="m1"),
        say("a1", message_id="m1"),
        user("q2"),
    ]
    strategy = create("server-compact", {"pause_after_compaction": True, "keep_messages": 3})
    result_ = strategy.compact(view(chat, tokens=150_000), strategy.new_state())
    assert uuids(result_.records[2:]) == uuids(chat[3:])  # q1, the two records of a1, q2


def test_reinserted_messages_never_start_with_a_result_whose_call_was_summarised() -> None:
    recs = loop(4)[:-2]  # ends with the last tool result: the request continues the loop
    strategy = create("server-compact", {"pause_after_compaction": True, "keep_messages": 1})
    result_ = strategy.compact(view(recs, tokens=150_000), strategy.new_state())
    tail = result_.records[2:]
    assert tail[0].kind == "assistant" and any(b.kind == "thinking" for b in tail[0].blocks)
    assert uuids(tail) == uuids(recs[-3:])  # moved back to the response whose result it is, thinking first
    assert valid(result_.records)


# ------------------------------------------------------------------ on-demand compaction
def test_on_demand_compacts_only_when_the_last_response_passes_the_limit() -> None:
    recs = loop(2)
    strategy = create("on-demand-compact", {"compact_at_tokens": 60_000})
    assert strategy.compact(view(recs, tokens=200_000, usage=60_000), strategy.new_state()) is None
    result_ = strategy.compact(view(recs, tokens=200_000, usage=60_001), strategy.new_state())
    assert result_ is not None and result_.start == len(recs)
    # before any response of the current context there is nothing to measure, whatever the size
    assert strategy.compact(view(recs, tokens=900_000, usage=0), strategy.new_state()) is None
    # a format without usage: the view's size stands in
    assert strategy.compact(view(recs, tokens=60_001, usage=None), strategy.new_state()) is not None


def test_on_demand_replaces_everything_sent_and_the_next_turn_follows_the_block() -> None:
    recs = [*loop(2), user("now the lexer")]
    strategy = create("on-demand-compact")
    result_ = strategy.compact(view(recs, usage=150_001), strategy.new_state())
    assert result_.records[0].is_compact_boundary and result_.records[1].is_compact_summary
    assert uuids(result_.records[2:]) == uuids(recs[-1:])  # the new prompt, not summarised
    assert len(result_.dropped) == len(recs) - 1 and result_.start == len(recs) - 1
    usage = result_.details["compaction_usage"]
    assert usage["top_level"] == {"input_tokens": 0, "output_tokens": 0}
    assert usage["reported_in"] == "usage.iterations" and usage["request"] == "separate"
    v = view(recs, usage=150_001)
    assert usage["input_tokens"] == v.tokens - v.rough[-1]  # the request held everything but the new prompt
    assert valid(result_.records)


def test_on_demand_waits_while_the_last_turn_ends_in_an_unanswered_tool_call() -> None:
    recs = loop(2)[:-3]  # ... the last response's tool_use, its result not yet appended
    assert recs[-1].kind == "assistant" and recs[-1].tool_uses()
    strategy = create("on-demand-compact")
    assert strategy.compact(view(recs, usage=200_000), strategy.new_state()) is None
    recs.append(result("t1", "ok"))
    assert strategy.compact(view(recs, usage=200_000), strategy.new_state()) is not None


def test_on_demand_instructions_are_non_blank_and_bounded() -> None:
    create("on-demand-compact", {"instructions": "x" * INSTRUCTIONS_MAX_CHARS})
    for bad in (" \n", "x" * (INSTRUCTIONS_MAX_CHARS + 1)):
        with pytest.raises(ValidationError):
            create("on-demand-compact", {"instructions": bad})


# ------------------------------------------------------------------ background compaction
def test_background_request_waits_for_its_block_and_swaps_exactly_what_it_held() -> None:
    strategy = create("background-compact")
    state = strategy.new_state()
    first = [*loop(2, "a"), user("and the lexer")]
    v = view(first, usage=150_001)
    assert strategy.compact(v, state) is None  # the conversation goes on in full
    assert state.sent is not None and uuids(state.sent) == uuids(first[:-1])  # the new prompt is not in it
    grown = [*first, *loop(1, "b")[1:]]
    result_ = strategy.compact(view(grown, usage=150_500, step=1), state)
    assert result_ is not None and state.sent is None
    sent = len(first) - 1
    assert uuids(result_.records[2:]) == uuids(grown[sent:])  # every turn since the request stays
    assert len(result_.dropped) == sent and result_.start == sent
    assert result_.details["compaction_usage"]["input_tokens"] == v.tokens - v.rough[-1]
    assert valid(result_.records)


def test_background_block_arrives_after_the_configured_calls_and_no_second_request_meanwhile() -> None:
    strategy = create("background-compact", {"arrives_after_calls": 2})
    state = strategy.new_state()
    first = loop(2, "a")
    strategy.compact(view(first, usage=150_001), state)
    sent = state.sent
    second = [*first, user("more")]
    assert strategy.compact(view(second, usage=160_000, step=1), state) is None
    assert state.sent is sent  # the limit is still passed: no new request while one is pending
    third = [*second, say("ok", message_id="c0"), user("again")]
    result_ = strategy.compact(view(third, usage=160_000, step=2), state)
    assert result_ is not None and uuids(result_.records[2:]) == uuids(third[len(first) :])


def test_background_block_is_dropped_when_the_history_was_rewritten_under_it() -> None:
    strategy = create("background-compact")
    state = strategy.new_state()
    first = loop(2, "a")
    strategy.compact(view(first, usage=150_001), state)
    assert strategy.compact(view(loop(2, "z"), usage=100), state) is None and state.sent is None


def test_background_block_is_not_swapped_in_front_of_a_response_without_thinking() -> None:
    strategy = create("background-compact")
    state = strategy.new_state()
    first = [*loop(2, "a")[:-2]]  # inside the tool loop, after a tool result
    strategy.compact(view(first, usage=150_001), state)
    bare = [*first, assistant(tool_use("u1", "Bash", command="ls"), message_id="bare"), result("u1", "ok")]
    assert strategy.compact(view(bare, usage=150_200, step=1), state) is None
    assert isinstance(state, BackgroundState) and state.discarded == 1 and state.sent is None
    # with thinking leading the first kept response the same swap is made
    state = strategy.new_state()
    strategy.compact(view(first, usage=150_001), state)
    led = [
        *first,
        assistant(thinking("next"), message_id="led"),
        assistant(tool_use("u1", "Bash", command="ls"), message_id="led"),
        result("u1", "ok"),
    ]
    result_ = strategy.compact(view(led, usage=150_200, step=1), state)
    assert result_ is not None and valid(result_.records)


# ------------------------------------------------------------------ SDK CompactionControl
def test_sdk_compaction_control_fires_at_the_threshold_and_not_a_token_below() -> None:
    recs = loop(2)
    strategy = create("sdk-compaction-control")
    assert strategy.compact(view(recs, usage=99_999), strategy.new_state()) is None
    assert strategy.compact(view(recs, usage=100_000), strategy.new_state()) is not None
    off = create("sdk-compaction-control", {"enabled": False})
    assert off.compact(view(recs, usage=10**9), off.new_state()) is None


def test_sdk_compaction_control_drops_the_response_that_triggered_it_and_summarises_what_came_before() -> None:
    recs = [
        *loop(2)[:-2],
        assistant(thinking("look at a.py"), message_id="last"),
        assistant(tool_use("t9", "Read", path="a.py"), message_id="last"),
        result("t9", "code"),
        user("also check b.py"),
    ]
    strategy = create("sdk-compaction-control", {"model": "claude-haiku-4-5"})
    v = view(recs, usage=120_000)
    result_ = strategy.compact(v, strategy.new_state())
    note, *kept = result_.records
    assert note.kind == "user" and uuids(kept) == uuids(recs[-1:])  # only the prompt written afterwards
    assert len(result_.dropped) == len(recs) - 1
    text = note.text
    assert text.startswith("<summary>") and text.rstrip().endswith("</summary>")
    positions = [text.index(f"{n}. {part}\n") for n, part in enumerate(SDK_SUMMARY_SECTIONS, 1)]
    assert positions == sorted(positions)
    usage = result_.details["compaction_usage"]
    first = len(recs) - 4  # the discarded response, its result and the prompt are not in the summary request
    assert usage["input_tokens"] == sum(v.rough[:first]) + round(DEFAULT_SUMMARY_PROMPT_CHARS / 4)
    assert usage["model"] == "claude-haiku-4-5" and usage["request"] == "separate"
    assert valid(result_.records)
    custom = create("sdk-compaction-control", {"summary_prompt": "Summarise in one line."})
    assert custom.compact(v, custom.new_state()).details["compaction_usage"]["input_tokens"] == sum(
        v.rough[:first]
    ) + rough_tokens("Summarise in one line.")


# ------------------------------------------------------------------ replays
@pytest.mark.parametrize("name", NEW)
def test_a_long_session_compacts_validly_and_shrinks(name: str) -> None:
    session = make_session(turns=6, tools=4, result_chars=60_000)
    result_ = replay_session(session, create(name))
    assert len(result_.events) >= 2
    assert all(e["tokens_after"] < e["tokens_before"] / 2 for e in result_.events)
    assert sum(row["violations"] for row in result_.steps) == 0


@pytest.mark.parametrize("name", ["on-demand-compact", "sdk-compaction-control"])
def test_a_session_resumed_above_the_trigger_compacts_at_most_three_times_in_a_row(name: str) -> None:
    session = shaped_session(Shape(calls=30, hidden_tokens=184_000, result_chars=200))
    result_ = replay_session(session, create(name))
    assert len(result_.events) == REFILL_LIMIT
    assert longest_ineffective_run(result_.events) == REFILL_LIMIT


def test_background_swaps_are_never_at_consecutive_calls() -> None:
    session = shaped_session(Shape(calls=40, hidden_tokens=184_000, result_chars=200))
    steps = [e["step"] for e in replay_session(session, create("background-compact")).events]
    assert steps and all(b - a >= 2 for a, b in itertools.pairwise(steps))


def test_each_anthropic_strategy_names_its_source() -> None:
    rows = {row["name"]: row["source"] for row in describe_strategies()}
    for name in (*NEW, "server-compact", "clear-tool-uses", "clear-thinking"):
        assert "@" in rows[name] and (".md" in rows[name] or ".ts" in rows[name]), name
