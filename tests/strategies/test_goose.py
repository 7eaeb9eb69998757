"""``goose``: Goose's auto-compaction on synthetic sessions (turn t: prompt ``ut``, tool calls, a text reply)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import context_before_last_call, view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.goose import CONTINUATION
from workbench.transcript import Block, Record


def records(turns: int, tools: int, chars: int = 400):
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def at_turn(turn: int, tools: int = 2) -> list[Record]:
    """The context before the first call of user turn ``turn``: everything up to its prompt."""
    recs = records(turn + 1, tools)
    return recs[: recs.index(next(r for r in recs if r.uuid == f"u{turn}")) + 1]


def compact(recs, config=None, tokens=None, usage=None, window=None):
    strategy = create("goose", config)
    view = replace(view_of(recs, tokens=tokens), usage_tokens=usage, window=window)
    return strategy.compact(view, strategy.new_state())


def test_fires_strictly_above_80_percent_of_the_window() -> None:
    context = at_turn(3)
    assert create("goose").config.auto_compact_threshold == 0.8
    assert compact(context, tokens=160_000) is None
    assert compact(context, tokens=160_001) is not None
    assert compact(context, tokens=10, usage=160_001) is not None  # the recorded total wins over the estimate
    assert compact(context, tokens=500_000, usage=160_000) is None
    assert compact(context, {"auto_compact_threshold": 0.6}, tokens=120_001) is not None
    assert compact(context, {"auto_compact_threshold": 0.6}, tokens=120_000) is None
    assert compact(context, tokens=160_001, window=1_000_000) is None  # a 1M window the recording proves


@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_zero_or_one_turns_it_off(threshold: float) -> None:
    assert compact(at_turn(3), {"auto_compact_threshold": threshold}, tokens=1_000_000) is None


def test_bad_thresholds_raise() -> None:
    with pytest.raises(ValidationError):
        create("goose", {"auto_compact_threshold": 1.5})
    with pytest.raises(ValidationError):
        create("goose", {"context_window": 0})


def test_only_before_a_user_turn_never_inside_a_tool_loop() -> None:
    recs = records(4, 3)
    mid_loop = context_before_last_call(recs[: recs.index(next(r for r in recs if r.uuid == "a3.2.th"))])
    assert mid_loop[-1].tool_results()
    assert compact(mid_loop, tokens=190_000) is None
    after_reply = recs[: recs.index(next(r for r in recs if r.uuid == "a2.txt")) + 1]
    assert compact(after_reply, tokens=190_000) is None  # no new prompt yet


def test_keeps_only_summary_continuation_and_the_turns_prompt() -> None:
    context = at_turn(3)
    result = compact(context, tokens=170_000)
    summary, reply, prompt = result.records
    assert summary.kind == "user" and summary.text == result.summary
    assert reply.kind == "assistant" and reply.text == CONTINUATION
    assert prompt is context[-1] and prompt.uuid == "u3"
    assert result.start == len(context) - 1 and list(result.dropped) == [r.uuid for r in context[:-1]]
    assert check_request(list(result.records), thinking=True).violations == ()


def test_meta_records_after_the_prompt_are_its_turn_context() -> None:
    context = at_turn(3)
    reminder = Record(
        kind="user",
        uuid="meta",
        role="user",
        blocks=(Block.text_block("<system-reminder>x</system-reminder>"),),
        has_content=True,
        is_meta=True,
    )
    result = compact([*context, reminder], tokens=170_000)
    assert [r.uuid for r in result.records[2:]] == ["u3", "meta"]


def test_a_prompt_with_more_than_text_is_copied_as_its_text() -> None:
    context = at_turn(3)
    image = Block.from_raw({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}})
    prompt = context[-1].with_blocks([Block.text_block("look at this"), image])
    result = compact([*context[:-1], prompt], tokens=170_000)
    copy = result.records[-1]
    assert copy is not prompt and [b.kind for b in copy.blocks] == ["text"] and copy.text == "look at this"
    assert result.start == len(context) and copy in result.added


def test_a_compaction_that_cannot_shrink_stops_after_three() -> None:
    strategy = create("goose")
    state = strategy.new_state()
    view = view_of(at_turn(3), tokens=184_000)
    assert [strategy.compact(view, state) is not None for _ in range(5)] == [True, True, True, False, False]


def test_source_names_the_files_read() -> None:
    source = create("goose").source
    assert "block/goose crates/goose/src/context_mgmt/mod.rs @ 331a8429" in source
