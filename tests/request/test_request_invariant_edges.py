"""Edges of the cut adjustment (docs §2.5) and of our thinking-aware extension that the mutation run of
found untested by the suite: each test is a small hand-made record sequence named after the behaviour
(docs/testing.md, "Mutation testing" lists the mutants each one kills and those judged equivalent)."""

from __future__ import annotations

from collections.abc import Sequence

from record_builders import assistant, system, text, thinking, tool_result, tool_use, user

from workbench.request import adjust_for_thinking, adjust_to_api_invariants, validate
from workbench.request.invariants import explain_adjustment
from workbench.studies.naive_cut import cut_request
from workbench.transcript.model import Record

RULE = "final_assistant_missing_thinking"


def rules(records: Sequence[Record], cut: int) -> set[str]:
    return {v.rule for v in validate(cut_request(records, cut), thinking=True)}


def boundary() -> Record:
    return system("compact_boundary", "Conversation compacted")


# ---------------------------------------------------------------- adjust_to_api_invariants (docs §2.5)
def test_a_kept_tool_use_pairs_its_result_even_when_an_earlier_response_reused_the_id() -> None:
    """Step 1 counts only the results whose tool_use is *not kept*: a kept use satisfies its kept result,
    so an earlier response that (invalidly) reused the id does not pull the start back."""
    records = [
        user("go"),
        assistant(tool_use("dup"), message_id="A"),  # 1: an earlier use of the same id
        user(tool_result("dup")),
        assistant(tool_use("dup"), message_id="B"),  # 3: the kept use
        user(tool_result("dup")),  # 4: its kept result
    ]
    assert adjust_to_api_invariants(records, 3) == 3
    assert explain_adjustment(records, 3).moves == ()
    # the use alone kept elsewhere still pulls: a result kept without its use
    assert adjust_to_api_invariants(records, 4) == 3


def test_a_result_whose_tool_use_is_nowhere_leaves_the_start_where_it_is() -> None:
    """A tool_result orphaned by an earlier compaction: the backward walk reaches index 0, finds nothing,
    and stops there (the reference walks while ``needed`` is non-empty *and* ``i >= 0``)."""
    records = [
        user("go"),
        assistant(text("a"), message_id="A"),
        user(tool_result("gone")),
        assistant(text("b"), message_id="B"),
    ]
    adjustment = explain_adjustment(records, 2)
    assert (adjustment.pair_start, adjustment.start, adjustment.moves) == (2, 2, ())


def test_only_kept_assistant_records_pull_their_message_id_siblings() -> None:
    """Step 2 collects the ``message.id`` of kept *assistant* records (docs §2.5); a kept user record that
    happens to carry an id pulls nothing back."""
    records = [
        user("go"),
        assistant(text("first part"), message_id="X"),  # 1
        user("more", message_id="X"),  # 2: a user record with the same id
        assistant(text("y"), message_id="Y"),
    ]
    assert adjust_to_api_invariants(records, 2) == 2
    # an assistant sibling of the same response does pull it back
    sibling = [*records[:2], assistant(text("second part"), message_id="X"), records[3]]
    assert adjust_to_api_invariants(sibling, 2) == 1


def test_a_start_past_the_end_keeps_nothing_and_is_returned_unchanged() -> None:
    records = [
        user("go"),
        assistant(thinking(), message_id="A"),
        assistant(tool_use("a"), message_id="A"),
        user(tool_result("a")),
    ]
    for start in (len(records), len(records) + 3):
        assert explain_adjustment(records, start) == explain_adjustment(records[:0], start)
        assert explain_adjustment(records, start).start == start
        assert adjust_for_thinking(records, start) == start


# ---------------------------------------------------------------- adjust_for_thinking: which rule moves a cut
def test_only_the_thinking_rule_moves_a_cut_not_another_rule_at_the_first_kept_message() -> None:
    """The extension acts on ``final_assistant_missing_thinking`` only: another rule located in the first
    kept message (here a tool_use id used twice, ``messages.1.content.2``) is not a reason to move."""
    records = [
        user("go"),
        assistant(thinking(), tool_use("a"), message_id="A"),  # 1
        user(tool_result("a")),
        assistant(text("b"), tool_use("b"), tool_use("b"), message_id="B"),  # 3
        user(tool_result("b")),
        user("please continue"),
        assistant(text("done"), message_id="C"),
    ]
    violations = validate(cut_request(records, 3), thinking=True)
    assert [(v.rule, v.location) for v in violations] == [("duplicate_tool_use_id", "messages.1.content.2")]
    assert adjust_for_thinking(records, 3) == 3


def test_a_tool_reference_beside_tool_results_does_not_make_a_loop_prompt() -> None:
    """A user record holding tool_results and a top-level ``tool_reference`` block (deferred tools) is
    normalised to tool_results only, so it stays inside the loop: the search for the loop's prompt goes
    on past it and the cut moves back to the thinking response T."""
    records = [
        user("do it"),
        assistant(thinking(), tool_use("t"), message_id="T"),  # 1
        user(tool_result("t")),
        assistant(text("a"), tool_use("a"), message_id="A"),  # 3
        user(tool_result("a"), {"type": "tool_reference", "tool_name": "mcp__x"}),  # 4
        assistant(text("b"), tool_use("b"), message_id="B"),  # 5
        user(tool_result("b")),
    ]
    assert rules(records, 5) == {RULE}
    assert adjust_for_thinking(records, 5) == 1
    assert rules(records, 1) == set()


def test_the_nearest_thinking_response_wins_even_when_the_loop_opens_without_thinking() -> None:
    """The candidate is judged by its own request: here the loop's first response B lacks thinking (the
    request from the loop's prompt is rejected too), yet the cut at C passes, so C is the answer."""
    records = [
        user("go"),
        assistant(text("b"), tool_use("b"), message_id="B"),  # 1
        user(tool_result("b")),
        assistant(thinking(), tool_use("c"), message_id="C"),  # 3
        user(tool_result("c")),
        assistant(text("d"), tool_use("d"), message_id="D"),  # 5
        user(tool_result("d")),
    ]
    assert rules(records, 0) == {RULE}
    assert adjust_for_thinking(records, 5) == 3
    assert rules(records, 3) == set()


def test_responses_without_message_id_are_each_their_own_response() -> None:
    """Id-less records (other formats) are not one response: the nearest thinking one is the cut."""
    records = [
        user("go"),
        assistant(thinking(), tool_use("x"), message_id=None),  # 1
        user(tool_result("x")),
        assistant(thinking(), tool_use("y"), message_id=None),  # 3
        user(tool_result("y")),
        assistant(text("z"), tool_use("z"), message_id=None),  # 5
        user(tool_result("z")),
    ]
    assert adjust_to_api_invariants(records, 5) == 5
    assert adjust_for_thinking(records, 5) == 3


# ---------------------------------------------------------------- adjust_for_thinking: the floor
def test_without_a_boundary_the_cut_may_move_to_index_zero() -> None:
    """The floor is 0 without a compact boundary: a context that opens with the loop's thinking response."""
    records = [
        assistant(thinking(), text("plan"), tool_use("a"), message_id="A"),  # 0
        user(tool_result("a")),
        assistant(text("b"), tool_use("b"), message_id="B"),  # 2
        user(tool_result("b")),
    ]
    assert rules(records, 2) == {RULE} and rules(records, 0) == set()
    assert adjust_for_thinking(records, 2) == 0


def test_a_boundary_right_before_the_cut_is_the_floor() -> None:
    records = [
        user("go"),
        assistant(thinking(), tool_use("a"), message_id="A"),  # 1
        user(tool_result("a")),
        boundary(),  # 3
        assistant(text("b"), tool_use("b"), message_id="B"),  # 4
        user(tool_result("b")),
    ]
    assert rules(records, 4) == {RULE} and rules(records, 1) == set()
    assert adjust_for_thinking(records, 4) == 4  # A lies before the boundary


def test_a_boundary_at_index_one_is_the_floor() -> None:
    """A boundary at index 1 bounds the move like any other (the floor search reaches index 0)."""
    records = [
        assistant(thinking(), tool_use("a"), message_id="A"),  # 0
        boundary(),  # 1
        user(tool_result("a")),  # 2: orphaned by a compaction without the pairing adjustment
        assistant(text("b"), tool_use("b"), message_id="B"),  # 3
        user(tool_result("b")),
    ]
    assert rules(records, 3) == {RULE} and rules(records, 0) == set()
    assert adjust_for_thinking(records, 3) == 3


def test_a_boundary_two_records_before_the_cut_is_the_floor() -> None:
    """The floor search visits every record before the cut, not every other one."""
    records = [
        user("go"),
        assistant(thinking(), tool_use("a"), message_id="A"),  # 1
        user(tool_result("a")),
        boundary(),  # 3
        assistant(text("b"), tool_use("b"), message_id="B"),  # 4
        user(tool_result("b")),
        assistant(text("c"), tool_use("c"), message_id="C"),  # 6
        user(tool_result("c")),
    ]
    assert rules(records, 1) == set()
    assert adjust_for_thinking(records, 7) == 6


def test_the_floor_is_the_record_after_the_boundary_not_before_it() -> None:
    """A thinking response just before the boundary stays out of reach."""
    records = [
        user("go"),
        assistant(thinking(), tool_use("a"), message_id="A"),  # 1
        boundary(),  # 2
        user(tool_result("a")),  # 3: orphaned
        assistant(text("b"), tool_use("b"), message_id="B"),  # 4
        user(tool_result("b")),
    ]
    assert rules(records, 4) == {RULE} and rules(records, 1) == set()
    assert adjust_for_thinking(records, 4) == 4


def _orphaned_after_boundary() -> list[Record]:
    """A context compacted without the pairing adjustment (``sm-compact-naive``): the result of Q's
    tool_use survived the boundary, its use did not."""
    return [
        assistant(thinking(), tool_use("q"), message_id="Q"),  # 0
        boundary(),  # 1
        assistant(thinking(), tool_use("f"), message_id="F"),  # 2: the first response after the floor
        user(tool_result("q")),  # 3: orphaned
        assistant(thinking(), tool_use("r"), message_id="R"),  # 4
        user(tool_result("f"), tool_result("r")),  # 5
        assistant(text("s"), tool_use("s"), message_id="S"),  # 6
        user(tool_result("s")),
    ]


def test_a_candidate_at_the_floor_is_accepted_and_one_past_it_never() -> None:
    """R's candidate is re-adjusted to F, exactly the floor (R's kept result f needs F's use), and passes:
    it is the answer, although F's own candidate and the floor itself, which keep the orphan, would be
    pulled back past the boundary."""
    records = _orphaned_after_boundary()
    assert adjust_to_api_invariants(records, 4) == 2
    assert adjust_to_api_invariants(records, 2) == 0
    assert adjust_for_thinking(records, 6) == 2
    # with the orphan kept by R's candidate, every candidate crosses the floor: the cut stays
    crossing = [*records[:3], user(tool_result("f")), assistant(thinking(), tool_use("r"), message_id="R"),
                user(tool_result("q"), tool_result("r")), *records[6:]]  # fmt: skip
    assert adjust_to_api_invariants(crossing, 4) == 0
    assert RULE not in rules(crossing, 0)  # crossing would pass the thinking rule: the floor alone forbids it
    assert adjust_for_thinking(crossing, 6) == 6
