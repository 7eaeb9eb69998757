"""Pinned default behaviours of the window, masking and OpenHands strategies (docs/peers.md §1.1, §1.10,
§2.1), on synthetic sessions whose event and turn counts can be computed by hand.

make_session(turns, tools): per turn 1 prompt, ``tools`` calls of [thinking, tool_use] + a tool_result,
then one text-only reply; so per turn 1 + 2·tools + 1 OpenHands events and tools + 1 API calls.
"""

from __future__ import annotations

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.openhands import events


def records(turns: int, tools: int, chars: int = 400):
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def compact(name: str, recs, config=None, tokens=None):
    strategy = create(name, config)
    return strategy.compact(view_of(recs, tokens=tokens), strategy.new_state())


def test_truncate_oldest_cuts_naively_by_tokens() -> None:
    recs = records(4, 3, 4_000)
    view = view_of(recs)
    window = view.tokens  # at the trigger: 80% of the window
    config = {"context_window": int(window / 0.8) + 1, "trigger_fraction": 0.8, "keep_fraction": 0.3}
    assert compact("truncate-oldest", recs, config) is None  # just below
    config["context_window"] = int(window / 0.8)
    result = compact("truncate-oldest", recs, config)
    budget = int(0.3 * config["context_window"])
    kept = sum(view.rough[result.start :])
    assert kept <= budget < kept + view.rough[result.start - 1]
    assert result.records == tuple(recs[result.start :])
    assert create("truncate-oldest").unsafe


def test_recent_window_cuts_only_at_api_safe_points() -> None:
    recs = records(4, 3, 4_000)
    window = int(view_of(recs).tokens / 0.8)
    config = {"context_window": window, "keep_fraction": 0.3}
    naive = compact("truncate-oldest", recs, config)
    safe = compact("recent-window", recs, config)
    assert safe.naive_start == naive.start and safe.start <= naive.start
    assert safe.records[0].text.startswith("[Earlier conversation removed")
    assert safe.records[1:] == tuple(recs[safe.start :])
    assert check_request(list(safe.records), thinking=True).violations == ()


def test_observation_masking_keeps_the_last_ten_turns() -> None:
    recs = records(3, 5)  # 15 tool turns (and 3 text-only ones)
    result = compact("observation-masking", recs)
    masked = [b for r in result.records for b in r.tool_results() if b.content.startswith("Old environment output")]
    assert [b.tool_use_id for b in masked] == [f"toolu_0_{c}" for c in range(5)]
    assert masked[0].content == "Old environment output: (1 lines omitted)"
    assert result.start is None and len(result.records) == len(recs)


def test_observation_masking_polling_moves_in_steps() -> None:
    recs = records(3, 4)  # 12 tool turns
    result = compact("observation-masking", recs, {"polling": 5})  # floor(12/5)*5 - 10 = 0
    assert result is None
    result = compact("observation-masking", recs, {"polling": 4})  # 12 - 10 = 2
    assert result.details["masked"] == 2


def test_event_mapping() -> None:
    recs = records(2, 3)
    assert len(events(recs)) == 2 * (1 + 2 * 3 + 1)


def test_openhands_observation_masking_window_of_100_events() -> None:
    recs = records(9, 5)  # 9 × 12 = 108 events
    assert len(events(recs)) == 108
    result = compact("openhands-observation-masking", recs)
    masked = [b.tool_use_id for r in result.records for b in r.tool_results() if b.content == "<MASKED>"]
    assert masked == ["toolu_0_0", "toolu_0_1", "toolu_0_2"]  # observations among the oldest 8 events
    assert compact("openhands-observation-masking", records(8, 5)) is None  # 96 events


def test_openhands_recent_keeps_first_event_and_last_99() -> None:
    recs = records(9, 5)
    result = compact("openhands-recent", recs)
    assert result.records[0] is recs[0]  # the task
    kept = result.records[2:]
    assert kept[0].uuid == "a0.4.th"  # event 9 of 108: the 5th call of turn 0
    assert len(events(list(kept))) == 99
    assert check_request(list(result.records), thinking=True).violations == ()


@pytest.mark.parametrize(("name", "tail"), [("openhands-amortized", 49), ("openhands-llm", 48)])
def test_openhands_forgetting_down_to_half(name: str, tail: int) -> None:
    recs = records(9, 5)
    assert compact(name, records(8, 5)) is None  # 96 ≤ max_size
    result = compact(name, recs)
    assert result.records[0] is recs[0]
    assert len(events(list(result.records[2:]))) == tail
    assert len(events(list(result.records))) == 50  # max_size // 2 (a marker is not an event, a summary is)
    assert check_request(list(result.records), thinking=True).violations == ()
    if name == "openhands-llm":
        assert result.summary and result.records[1].text == result.summary


def test_pipeline_runs_masking_then_summary() -> None:
    hybrid = {
        "stages": [
            {"name": "observation-masking", "config": {"keep_last_turns": 10}},
            {"name": "openhands-llm", "config": {"unit": "turn", "max_size": 20, "keep_first": 1, "keep_last": 10}},
        ]
    }
    recs = records(4, 5)  # 24 API calls: turns 0..24 with the task as turn 0
    result = compact("openhands-pipeline", recs, hybrid)
    assert result.kind == "observation-masking+openhands-llm"
    assert result.records[0] is recs[0]
    assert check_request(list(result.records), thinking=True).violations == ()
    only_masking = compact("openhands-pipeline", records(2, 6), hybrid)  # 12 tool turns, 15 turns
    assert only_masking.kind == "observation-masking" and only_masking.start is None


def test_pipeline_rejects_unknown_stage() -> None:
    with pytest.raises(ValueError):
        create("openhands-pipeline", {"stages": [{"name": "nope"}]})
    with pytest.raises(ValueError):
        create("openhands-pipeline", {"stages": [{"name": "openhands-recent", "config": {"max_events": 0}}]})
