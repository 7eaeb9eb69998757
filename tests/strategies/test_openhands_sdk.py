"""``openhands-sdk``: the OpenHands V1 SDK summarising condenser on synthetic sessions whose events can be
counted by hand.

make_session(turns, tools): per turn a prompt, ``tools`` calls of [thinking, tool_use] + a tool_result, then
a text-only reply: 2 + 2·tools events per turn. The SDK's view also holds the system prompt (event 0), so
a session of 7 turns × 5 tools is a view of 1 + 7·12 = 85 events; turn t covers view events 12t+1 … 12t+12.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.openhands import events
from workbench.strategies.openhands_sdk import manipulation_positions


def records(turns: int, tools: int, chars: int = 400):
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def compact(recs, config=None, tokens=None, window=None):
    strategy = create("openhands-sdk", config)
    view = view_of(recs, tokens=tokens)
    if window is not None:
        view = replace(view, window=window)
    return strategy.compact(view, strategy.new_state())


def view_events(recs) -> int:
    return 1 + len(events(recs))


def valid(result) -> bool:
    return check_request(list(result.records), thinking=True).violations == ()


def uuids(recs) -> list[str | None]:
    return [r.uuid for r in recs]


def test_defaults_are_the_default_agents_and_bad_sizes_raise() -> None:
    config = create("openhands-sdk").config
    assert (config.max_size, config.keep_first, config.max_tokens, config.minimum_progress) == (80, 4, None, 0.1)
    create("openhands-sdk", {"max_size": 240, "keep_first": 2})  # the bare class's defaults
    create("openhands-sdk", {"keep_first": 38})  # 80 // 2 − 38 − 1 = 1 event of tail
    with pytest.raises(ValidationError):
        create("openhands-sdk", {"keep_first": 39})
    with pytest.raises(ValidationError):
        create("openhands-sdk", {"minimum_progress": 1.0})


def test_fires_above_max_size_counting_the_system_prompt() -> None:
    recs = records(7, 5)
    at_80 = max(k for k in range(len(recs) + 1) if view_events(recs[:k]) == 80)
    at_81 = min(k for k in range(len(recs) + 1) if view_events(recs[:k]) == 81)
    assert compact(recs[:at_80]) is None  # 79 conversation events + the system prompt: not above 80
    result = compact(recs[:at_81])
    assert result is not None and result.trigger == "events"
    assert result.details == {"forgotten_events": 81 - 4 - 35, "view_events": 81}
    assert view_events(list(result.records)) == 40  # max_size // 2: head 4 + summary + tail 35
    assert compact(recs[:at_81], {"max_size": 120}) is None  # the older class default


def test_head_summary_and_tail_positions() -> None:
    recs = records(7, 5)  # 85 events: tail 35 starts at view event 50, turn 4's first call
    result = compact(recs)
    head, summary, tail = result.records[:4], result.records[4], result.records[5:]
    assert uuids(head) == ["u0", "a0.0.th", "a0.0.tu", "r0.0"]  # system prompt + 3 events = keep_first 4
    assert summary.kind == "user" and summary.text == result.summary and summary.raw["event"]
    assert tail == tuple(recs[recs.index(next(r for r in recs if r.uuid == "a4.0.th")) :])
    assert result.start == result.naive_start == recs.index(tail[0])
    assert list(result.dropped) == uuids(recs[4 : result.start])
    assert valid(result)


def test_the_tail_start_moves_later_inside_a_thinking_tool_loop() -> None:
    """max_size 78: tail 78 // 2 − 4 − 1 = 34, naive end at view event 51 = the observation of turn 4's first
    call, inside the loop its thinking opened: the first manipulation index after it is the next call (V0's
    ``openhands-llm`` moves the same kind of cut earlier)."""
    recs = records(7, 5)
    result = compact(recs, {"max_size": 78})
    assert recs[result.naive_start].uuid == "r4.0"
    assert recs[result.start].uuid == "a4.1.th" and result.records[5] is recs[result.start]
    assert result.details["forgotten_events"] == 52 - 4
    assert valid(result)


def test_a_previous_summary_is_summarised_again() -> None:
    recs = records(7, 5)
    first = compact(recs)
    grown = [*first.records, *records(12, 5)[len(recs) :]]  # five more turns on the compacted context
    second = compact(grown)
    assert first.records[4].uuid in second.dropped
    assert second.records[:4] == first.records[:4] and second.records[4].text == second.summary


def test_no_legal_range_skips_a_soft_condensation_and_resets_on_a_hard_one() -> None:
    """One thinking-led tool loop of 45 calls is atomic: no cut inside it, so the events trigger (soft) uses
    the view uncondensed; over the token cap (hard) the whole view becomes one summary."""
    recs = [r for r in records(1, 45) if not (r.uuid.endswith(".th") and r.uuid != "a0.0.th")]
    assert view_events(recs) == 1 + 1 + 45 * 2 + 1
    legal = manipulation_positions(recs)
    assert [recs[p].uuid for p in range(len(recs)) if legal[p]] == ["u0", "a0.0.th", "a0.txt"]
    assert compact(recs) is None
    hard = compact(recs, {"max_tokens": 1_000})
    assert hard.trigger == "hard-reset" and hard.records == (hard.added[0],)
    assert hard.records[0].text == hard.summary and len(hard.dropped) == len(recs)


def test_token_trigger_is_capped_at_the_window() -> None:
    recs = records(2, 2)  # 13 events: far under max_size
    assert compact(recs, tokens=200_000) is None
    result = compact(recs, tokens=200_001)  # above the window: keep what halves it, nothing here
    assert result.trigger == "tokens"
    assert uuids(result.records[:4]) == ["u0", "a0.0.th", "a0.0.tu", "r0.0"]
    assert len(result.records) == 5 and result.records[4].text == result.summary and valid(result)
    assert compact(recs, {"cap_by_window": False}, tokens=200_001) is None
    assert compact(recs, tokens=200_001, window=1_000_000) is None  # the recording proves a 1M window
    assert compact(recs, {"max_tokens": 50_000}, tokens=50_001).trigger == "tokens"


def test_token_trigger_keeps_the_suffix_that_halves_the_view() -> None:
    recs = records(4, 3, 4_000)  # each tool result ≈ 1,000 tokens
    view = view_of(recs)
    cap = view.tokens - 1
    result = compact(recs, {"max_tokens": cap})
    kept = sum(view.rough[result.start :])
    assert result.trigger == "tokens" and result.start >= result.naive_start
    assert 0 < kept <= cap // 2 < kept + sum(view.rough[4 : result.start])
    assert valid(result)


def test_unmatched_calls_and_observations_are_filtered() -> None:
    recs = records(7, 5)
    dangling = [r for r in recs if r.uuid != "r5.2"]  # toolu_5_2 never answered
    orphan = [*dangling[:-1], recs[recs.index(next(r for r in recs if r.uuid == "r5.2"))], dangling[-1]]
    assert check_request(dangling, thinking=True).violations
    result = compact(dangling)
    ids = {i for r in result.records for i in (*r.tool_use_ids(), *r.tool_result_ids())}
    assert "toolu_5_2" not in ids and result.details["unmatched_filtered"] == 1  # the tool_use record
    assert "a5.2.tu" in result.dropped and valid(result)
    late = compact([r for r in orphan if r.uuid != "a5.2.tu"])  # an observation whose call is gone
    assert "toolu_5_2" not in {i for r in late.records for i in r.tool_result_ids()}


def test_a_recorded_compact_is_a_request_for_half_the_view() -> None:
    recs = records(3, 5)  # 37 events: no trigger
    strategy = create("openhands-sdk")
    assert strategy.compact(view_of(recs), strategy.new_state()) is None
    result = strategy.compact_manual(view_of(recs), strategy.new_state())
    assert result.trigger == "request"
    assert view_events(list(result.records)) <= 37 // 2 and valid(result)


def test_a_compaction_that_cannot_shrink_stops_after_three() -> None:
    recs = records(2, 2)
    strategy = create("openhands-sdk")
    state = strategy.new_state()
    made = [strategy.compact(view_of(recs, tokens=300_000), state) is not None for _ in range(5)]
    assert made == [True, True, True, False, False]


def test_every_openhands_strategy_names_its_source() -> None:
    for name in ("openhands-recent", "openhands-amortized", "openhands-llm", "openhands-observation-masking"):
        assert "OpenHands/OpenHands openhands/memory/condenser/impl/" in create(name).source
        assert "@ 76483ad8" in create(name).source
    assert create("openhands-sdk").source.startswith("OpenHands/software-agent-sdk openhands-sdk/")
