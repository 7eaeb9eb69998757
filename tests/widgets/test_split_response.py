"""On the real corpus, a naive start that splits a streamed response, fixed by step 2."""

from __future__ import annotations

import pytest

from workbench.transcript.model import Session
from workbench.widgets import SessionIndex, keep_window_model, readout_lines

pytestmark = pytest.mark.corpus


def test_naive_start_splitting_a_streamed_response_is_fixed(main_sessions: list[Session]) -> None:
    found = None
    for session in sorted(main_sessions, key=lambda s: len(s.conversation()), reverse=True):
        index = SessionIndex.build(session)
        for step in range(index.steps):
            state = keep_window_model(index, step)
            if state.split_message_ids and state.pair_start == state.naive_start and state.moved:
                found = (index, state)
                break
        if found:
            break
    assert found, "no default-config cut in the corpus splits a streamed response"
    index, state = found
    records = index.records
    mid = state.split_message_ids[0]
    # the naive start really splits it: records of that message.id on both sides
    before = [i for i in range(state.floor, state.naive_start) if records[i].message_id == mid]
    after = [i for i in range(state.naive_start, state.end) if records[i].message_id == mid]
    assert before and after
    # ... and the adjusted start keeps the whole response
    assert state.start <= min(before)
    assert not any(records[i].message_id == mid for i in range(state.floor, state.start))
    # what the view reports
    assert f"split response message.id {mid}" in state.reason
    assert state.reason.startswith(f"step 2 moved #{state.naive_start} → #{state.start}")
    lines = readout_lines(state)
    assert f"the naive start splits streamed response message.id {mid}" in lines
    assert lines[1].startswith(f"naive start #{state.naive_start} → adjusted start #{state.start}")
