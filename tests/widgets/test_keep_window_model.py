"""The keep-window model: step-wise adjustment, reasons, readout, agreement with the study's cuts."""

from __future__ import annotations

import pytest

from workbench.request.invariants import adjust_to_api_invariants, explain_adjustment
from workbench.studies.naive_cut import keep_window_cuts
from workbench.transcript.model import Block, Record, Session
from workbench.widgets import (
    KeepWindowView,
    SessionIndex,
    keep_window_model,
    readout_lines,
    render_overview,
    render_zoom,
)


def _user(uuid: str, text: str) -> Record:
    return Record(
        kind="user", uuid=uuid, role="user", blocks=(Block.text_block(text),), string_content=True, has_content=True
    )


def _result(uuid: str, tool_id: str, text: str = "ok " * 400) -> Record:
    block = Block.from_raw({"type": "tool_result", "tool_use_id": tool_id, "content": text})
    return Record(kind="user", uuid=uuid, role="user", blocks=(block,), has_content=True)


def _assistant(uuid: str, mid: str, *blocks: dict) -> Record:
    return Record(
        kind="assistant",
        uuid=uuid,
        role="assistant",
        message_id=mid,
        model="claude-x",
        blocks=tuple(Block.from_raw(b) for b in blocks),
        has_content=True,
    )


def _thinking(text: str = "hmm") -> dict:
    return {"type": "thinking", "thinking": text, "signature": "sig"}


def _tool_use(tool_id: str) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "ls"}}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def split_thinking_then_tool_use() -> Session:
    """prompt, [thinking | tool_use] split over two records of one message.id, result, answer, prompt, reply."""
    records = (
        _user("u0", "please list the files " * 50),
        _assistant("a1", "msg_A", _thinking("let me look " * 100)),
        _assistant("a2", "msg_A", _tool_use("toolu_1")),
        _result("r3", "toolu_1"),
        _assistant("a4", "msg_B", _text("here they are " * 40)),
        _user("u5", "thanks, now run tests " * 20),
        _assistant("a6", "msg_C", _text("done " * 20)),
    )
    return Session(id="fixture", records=records)


def test_adjust_steps_names_the_split_response() -> None:
    records = list(split_thinking_then_tool_use().records)
    adjustment = explain_adjustment(records, 2)
    pair_start, start, moves = adjustment.pair_start, adjustment.start, adjustment.moves
    assert (pair_start, start) == (2, 1)
    assert start == adjust_to_api_invariants(records, 2)
    assert [(m.kind, m.key, m.dropped, m.kept) for m in moves] == [("split_response", "msg_A", 1, 2)]


def test_adjust_steps_names_the_tool_pair() -> None:
    records = list(split_thinking_then_tool_use().records)
    adjustment = explain_adjustment(records, 3)
    pair_start, start, moves = adjustment.pair_start, adjustment.start, adjustment.moves
    assert (pair_start, start) == (2, 1)
    assert [(m.kind, m.key, m.dropped, m.kept) for m in moves] == [
        ("tool_pair", "toolu_1", 2, 3),
        ("split_response", "msg_A", 1, 2),
    ]


def test_model_explains_and_validates_a_naive_cut() -> None:
    session = split_thinking_then_tool_use()
    index = SessionIndex.build(session)
    # the compaction before the last call (msg_C); a tiny window: keep from the tool_result on
    state = keep_window_model(
        index, index.steps - 1, min_tokens=500, max_tokens=900, min_text_block_messages=1, summarized="unset"
    )
    assert state.naive_start == 3
    assert state.pair_start == 2 and state.start == 1
    assert "tool pair toolu_1" in state.reason and "split response message.id msg_A" in state.reason
    assert [v.rule for v in state.naive_violations] == ["tool_result_without_tool_use"]
    assert "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1" in state.naive_violations[0].message
    assert state.adjusted_violations == ()
    assert state.tokens == index.tokens(3, state.end) and state.kept_tokens == index.tokens(1, state.end)
    lines = readout_lines(state)
    assert lines[1] == "naive start #3 → adjusted start #1 (moved 2 records earlier)"
    assert any(line.startswith("  [tool_result_without_tool_use]") for line in lines)
    assert lines[-2] == "adjusted cut: the API would accept it"
    assert lines[-1] == "as a config: sm-compact max_tokens=900 min_text_block_messages=1 min_tokens=500"


def test_minimums_drive_the_window() -> None:
    index = SessionIndex.build(split_thinking_then_tool_use())
    small = keep_window_model(index, index.steps - 1, min_tokens=0, min_text_block_messages=1, summarized="unset")
    big = keep_window_model(index, index.steps - 1, min_tokens=100_000, summarized="unset")
    assert small.naive_start == small.end - 1 and small.meets_min_tokens and small.meets_min_text
    assert big.naive_start == 0 and not big.meets_min_tokens  # expanded to the floor without reaching it
    with pytest.raises(ValueError, match="step must be in"):
        keep_window_model(index, index.steps)


def test_drawings_mark_the_starts() -> None:
    index = SessionIndex.build(split_thinking_then_tool_use())
    state = keep_window_model(
        index, index.steps - 1, min_tokens=500, max_tokens=900, min_text_block_messages=1, summarized="unset"
    )
    zoom = render_zoom(index, state)
    assert "naive start #3" in zoom and "adjusted start #1" in zoom and "step 1 start #2" in zoom
    assert "message.id msg_A" in zoom  # the bracket
    assert "toolu_1: tool_use #2 → tool_result #3" in zoom  # the arc
    assert 'stroke="#d62728"' in zoom  # the arc the naive cut breaks
    assert render_overview(index, state).startswith('<svg class="wb-overview"')


def test_view_recomputes_on_slider_moves() -> None:
    view = KeepWindowView(
        split_thinking_then_tool_use(), min_tokens=500, max_tokens=900, min_text_block_messages=1, summarized="unset"
    )
    assert view.state.naive_start == 3
    before = view.readout.value
    view.min_tokens.value = 0  # a real trait change, as the browser sends it
    assert view.state.min_tokens == 0 and view.state.naive_start == view.state.end - 1
    assert view.readout.value != before and "vs min 0 ✓" in view.readout.value
    assert view.set(min_tokens=500).naive_start == 3


@pytest.mark.corpus
def test_model_reproduces_the_study_cuts(claude_sessions: list[Session]) -> None:
    """Default config: the model's naive/adjusted starts are `keep_window_cuts`' for every call of the corpus."""
    compared = 0
    for session in claude_sessions:
        index = SessionIndex.build(session)
        for step, offset, naive, start, end in keep_window_cuts(session):
            state = keep_window_model(index, step, validate_cuts=False)
            assert (state.offset, state.naive_start, state.start, state.end) == (offset, naive, start, end)
            compared += 1
    assert compared >= 500
