"""adjust_for_thinking: the thinking-aware extension of the §2.5 cut adjustment (not in Claude Code).

Hand-made tool loops, the keep-window cuts of the real corpus, and a property over sessions assembled from
real response shapes in which every tool loop opens with a thinking response (as with thinking on).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from record_builders import assistant, system, text, thinking, tool_result, tool_use, user
from test_request_invariants import _rename, _units

from workbench.request import adjust_for_thinking, adjust_to_api_invariants, normalize, validate
from workbench.request.invariants import _cut_sensitive_thinking_violation, _violates_thinking
from workbench.studies.naive_cut import _has_thinking, cut_request, keep_window_cuts
from workbench.transcript.model import Record, Session
from workbench.transcript.steps import api_calls

RULE = "final_assistant_missing_thinking"


def rules(records: Sequence[Record], cut: int) -> set[str]:
    return {v.rule for v in validate(cut_request(records, cut), thinking=True)}


def loop(*responses: list[Record]) -> list[Record]:
    """A prompt, then one response per argument, each answered by the results of its tool_uses."""
    records = [user("do it")]
    for response in responses:
        records += response
        ids = [b.id for r in response for b in r.blocks if b.kind == "tool_use"]
        records.append(user(*(tool_result(i) for i in ids)))
    return records


def test_mid_loop_cut_moves_back_to_the_nearest_thinking_response() -> None:
    """[summary, X[text, tool_use], result] is the request the reference cut leaves: rejected with thinking."""
    records = loop(
        [assistant(thinking(), message_id="A"), assistant(tool_use("a"), message_id="A")],  # 1, 2 (result 3)
        [assistant(text("next"), tool_use("b"), message_id="B")],  # 4 (5)
        [assistant(thinking(), message_id="C"), assistant(text("c"), tool_use("c"), message_id="C")],  # 6, 7 (8)
        [assistant(text("more"), tool_use("d"), message_id="D")],  # 9 (10)
        [assistant(text("again"), tool_use("e"), message_id="E")],  # 11 (12)
    )
    for cut in (11, 12):
        assert adjust_to_api_invariants(records, cut) == 11
        assert rules(records, 11) == {RULE}
        assert adjust_for_thinking(records, cut) == 6  # C, with its thinking sibling
        assert rules(records, 6) == set()
    # A cut on C's second record: the reference pulls back to its sibling, already fine.
    assert adjust_to_api_invariants(records, 7) == adjust_for_thinking(records, 7) == 6
    # Between B and C: B lacks thinking, A is the nearest earlier thinking response.
    assert adjust_for_thinking(records, 4) == adjust_for_thinking(records, 5) == 1
    # Thinking off: the reference result.
    assert adjust_for_thinking(records, 11, thinking=False) == 11


def test_whitespace_text_before_thinking_counts_as_opening_with_thinking() -> None:
    """v2.1.39 streams a "\\n\\n" text block before thinking; validate.py skips it, so does the adjustment."""
    records = loop(
        [
            assistant(text("\n\n"), message_id="A"),
            assistant(thinking(), message_id="A"),
            assistant(tool_use("a"), message_id="A"),
        ],  # 1-3 (4)
        [assistant(text("b"), tool_use("b"), message_id="B")],  # 5 (6)
    )
    assert adjust_for_thinking(records, 5) == 1
    assert rules(records, 1) == set()


def test_cut_after_the_loop_prompt_or_outside_a_loop_is_not_moved() -> None:
    records = [
        *loop(
            [assistant(thinking(), tool_use("a"), message_id="A")],
            [assistant(text("b"), tool_use("b"), message_id="B")],
        ),
        assistant(text("done"), message_id="C"),
        user("next question"),
        assistant(thinking(), tool_use("d"), message_id="D"),
        user(tool_result("d")),
        assistant(text("e"), tool_use("e"), message_id="E"),
        user(tool_result("e")),
    ]
    # The trailing loop starts at "next question" (6): cuts up to its first response D keep it whole.
    for cut in range(1, 8):
        assert adjust_for_thinking(records, cut) == adjust_to_api_invariants(records, cut)
    # Inside it, E lacks thinking and pulls back to D.
    assert adjust_for_thinking(records, 9) == adjust_for_thinking(records, 10) == 7
    # A request that does not end in tool_results is not subject to the rule.
    ended = [*records, assistant(text("finished"), message_id="F")]
    assert adjust_for_thinking(ended, 9) == 9


def test_without_a_thinking_response_in_the_loop_nothing_is_gained_so_nothing_moves() -> None:
    """Cutting at the loop's prompt would open with the loop's first response, itself thinking-less: the
    violation does not depend on the cut, so the reference cut is kept."""
    records = loop(
        [assistant(text("a"), tool_use("a"), message_id="A")], [assistant(text("b"), tool_use("b"), message_id="B")]
    )
    assert adjust_for_thinking(records, 3) == 3
    assert rules(records, 3) == rules(records, 0) == {RULE}


def test_never_past_the_last_compact_boundary() -> None:
    """The floor of the backward scan (docs §2.4) bounds the move: A lies before the boundary."""
    records = [
        *loop([assistant(thinking(), tool_use("a"), message_id="A")]),  # 0-2
        system("compact_boundary", "Conversation compacted"),  # 3
        assistant(text("b"), tool_use("b"), message_id="B"),  # 4
        user(tool_result("b")),
        assistant(thinking(), tool_use("c"), message_id="C"),  # 6
        user(tool_result("c")),
        assistant(text("d"), tool_use("d"), message_id="D"),  # 8
        user(tool_result("d")),
    ]
    assert adjust_for_thinking(records, 8) == 6
    # Nothing between the floor and the cut opens with thinking: the reference cut stays.
    no_thinking = [*records[:6], assistant(text("c"), tool_use("c"), message_id="C"), *records[7:]]
    assert adjust_for_thinking(no_thinking, 8) == 8


def test_keeping_nothing_or_everything_is_not_adjusted() -> None:
    records = loop([assistant(text("a"), tool_use("a"), message_id="A")])
    assert adjust_for_thinking(records, 0) == 0
    assert adjust_for_thinking(records, len(records)) == len(records)


# ---------------------------------------------------------------- real corpus
@pytest.mark.corpus
def test_keep_window_cuts_move_earlier_within_the_floor_and_validate(claude_sessions: list[Session]) -> None:
    moved = 0
    for session in claude_sessions:
        records = session.conversation()
        calls = api_calls(records)
        for step, offset, naive, start, end in keep_window_cuts(session):
            if naive < 0:
                continue
            window = records[offset:end]
            on = _has_thinking(records, calls[step].indices)
            cut = adjust_for_thinking(window, naive - offset, thinking=on)
            floor = 1 if window[0].is_compact_boundary else 0
            assert cut <= start - offset
            if cut != start - offset:
                moved += 1
                assert cut >= floor
            assert RULE not in {v.rule for v in validate(cut_request(window, cut), thinking=on)}
    assert moved > 0


# ---------------------------------------------------------------- property over real shapes
def _opens_with_thinking(unit: list[Record]) -> bool:
    first = next((m for m in normalize(unit).messages if m.role == "assistant"), None)
    if first is None:
        return False
    block = next((b for b in first.content if not (b.get("type") == "text" and not str(b.get("text")).strip())), {})
    return block.get("type") in ("thinking", "redacted_thinking")


def _continues_loop(unit: list[Record]) -> bool:
    last = normalize([user("start"), *unit]).messages[-1]
    return last.role == "user" and all(b.get("type") == "tool_result" for b in last.content)


@pytest.fixture(scope="module")
def shaped_units(claude_sessions: list[Session]) -> tuple[list[list[Record]], list[list[Record]]]:
    """All real units, and those whose response opens with thinking."""
    units = _units(claude_sessions)
    opening = [u for u in units if _opens_with_thinking(u)]
    assert len(opening) > 50 and sum(not _opens_with_thinking(u) and _continues_loop(u) for u in units) > 50
    return units, opening


@pytest.mark.corpus
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_thinking_cut_is_never_later_than_the_reference_and_validates(
    shaped_units: tuple[list[list[Record]], list[list[Record]]], data: st.DataObject
) -> None:
    """Random sessions (every loop opens with a thinking response, later ones may not) and random cuts."""
    units, opening = shaped_units
    records = [user("start")]
    loop_open = True
    for n in range(data.draw(st.integers(1, 12), label="units")):
        pool = opening if loop_open else units
        unit = pool[data.draw(st.integers(0, len(pool) - 1), label="unit")]
        records += _rename(unit, str(n))
        loop_open = not _continues_loop(unit)
    assert validate(cut_request(records, 0), thinking=True) == []
    cut = data.draw(st.integers(0, len(records) - 1), label="cut")
    reference = adjust_to_api_invariants(records, cut)
    adjusted = adjust_for_thinking(records, cut)
    assert 0 <= adjusted <= reference <= cut
    assert validate(cut_request(records, adjusted), thinking=True) == []
    assert adjust_for_thinking(records, cut, thinking=False) == reference


def _latest_passing_cut(records: Sequence[Record], start: int) -> int:
    """The rule stated as a search (the oracle): the reference cut ``a`` unless the thinking rule rejects
    it because of where it is cut; then the latest re-adjusted cut in ``[floor, a)`` that passes, else ``a``."""
    a = adjust_to_api_invariants(records, start)
    if a <= 0 or a >= len(records) or not _cut_sensitive_thinking_violation(records, a):
        return a
    floor = max((i + 1 for i in range(min(start, len(records))) if records[i].is_compact_boundary), default=0)
    for cut in range(a - 1, floor - 1, -1):
        candidate = adjust_to_api_invariants(records, cut)
        if candidate >= floor and not _violates_thinking(records, candidate):
            return candidate
    return a


@pytest.mark.corpus
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_thinking_cut_is_the_latest_cut_that_passes_the_rule(
    shaped_units: tuple[list[list[Record]], list[list[Record]]], data: st.DataObject
) -> None:
    """adjust_for_thinking equals a brute-force search over every earlier cut, on sessions of real
    response shapes where a loop may open with or without thinking, with compact boundaries between
    units and sessions that open with a response (no prompt above the floor)."""
    units, opening = shaped_units
    records: list[Record] = [] if data.draw(st.booleans(), label="no first prompt") else [user("start")]
    loop_open = True
    for n in range(data.draw(st.integers(1, 10), label="units")):
        if n and data.draw(st.integers(0, 5), label="boundary") == 0:
            records.append(system("compact_boundary", "Conversation compacted"))
        pool = opening if loop_open and data.draw(st.booleans(), label="opens with thinking") else units
        unit = pool[data.draw(st.integers(0, len(pool) - 1), label="unit")]
        records += _rename(unit, str(n))
        loop_open = not _continues_loop(unit)
    cut = data.draw(st.integers(0, len(records)), label="cut")
    assert adjust_for_thinking(records, cut) == _latest_passing_cut(records, cut)
