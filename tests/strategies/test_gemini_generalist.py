"""Gemini CLI's ContextManager with the Generalist profile as its source has it (google-gemini/gemini-cli
@5411f113, ``context/config/profiles.ts``): the backstop above 150k (not at it) keeps the nodes within the
newest 65k, request strings over 8k tokens are masked, request texts over 15k tokens distilled, drafts
coalesce by 5k of deficit and splice in only while their nodes are all aged out, the snapshot state is
held to 4k tokens and 5 arc entries, and no old node is ever truncated or distilled."""

from __future__ import annotations

import json

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.gemini_generalist import GeneralistState, aged_out, merge_state
from workbench.strategies.gemini_masking import MASKED_TAG
from workbench.transcript import Block
from workbench.transcript.model import Record

NO_CLIENT_MASKING = {"tool_output_masking": False}


def records(turns: int, tools: int, chars: int) -> list[Record]:
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def until(recs: list[Record], uuid: str) -> list[Record]:
    """The context sent with record ``uuid`` as the request (the last record)."""
    return recs[: next(i for i, r in enumerate(recs) if r.uuid == uuid) + 1]


def with_output(recs: list[Record], uuid: str, text: str) -> list[Record]:
    return [
        r.with_blocks([Block(b.kind, {**b.raw, "content": text}) for b in r.blocks]) if r.uuid == uuid else r
        for r in recs
    ]


def with_text(recs: list[Record], uuid: str, text: str) -> list[Record]:
    return [r.with_blocks([Block.text_block(text)], string_content=True) if r.uuid == uuid else r for r in recs]


def renamed(recs: list[Record], uuid: str, name: str) -> list[Record]:
    return [
        r.with_blocks([Block(b.kind, {**b.raw, "name": name}) for b in r.blocks]) if r.uuid == uuid else r for r in recs
    ]


def total(recs: list[Record]) -> int:
    return view_of(recs).tokens


def sized(recs: list[Record], target: int, uuid: str = "r2.0") -> list[Record]:
    """``recs`` with the tool result ``uuid`` padded so that their rough total is exactly ``target``."""
    base = next(r for r in recs if r.uuid == uuid).tool_results()[0].result_text()
    extra = (target - total(recs)) * 4
    for pad in range(max(0, extra - 12), extra + 12):
        out = with_output(recs, uuid, base + "p" * pad)
        if total(out) == target:
            return out
    raise AssertionError(f"no padding gives {target}")


def valid(result) -> bool:  # type: ignore[no-untyped-def]
    return check_request(list(result.records), thinking=True).violations == ()


def big_context() -> list[Record]:
    """About 112k tokens: 10 turns of 4 tool calls of 11k characters, the request a tool result."""
    return until(records(10, 4, 11_000), "r9.2")


# ------------------------------------------------------------------ the backstop
def test_the_backstop_fires_above_150k_and_not_at_it() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    recs = until(records(14, 4, 11_000), "r13.0")
    at_max, above = sized(recs, 150_000), sized(recs, 150_001)
    assert strategy.compact(view_of(at_max), strategy.new_state()) is None
    result = strategy.compact(view_of(above), strategy.new_state())
    assert result is not None and result.trigger == "gc_backstop" and result.summary is not None
    assert result.details["status"] == "SNAPSHOT" and valid(result)
    state = json.loads(result.records[0].text)
    assert set(state) == {"active_tasks", "discovered_facts", "constraints_and_preferences", "recent_arc"}


def test_the_backstop_keeps_exactly_the_nodes_within_the_newest_65k() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    view = view_of(sized(until(records(14, 4, 11_000), "r13.0"), 150_001))
    result = strategy.compact(view, strategy.new_state())
    cut = result.naive_start
    rough = list(view.rough)
    assert sum(rough[cut + 1 :]) <= 65_000 < sum(rough[cut:])  # its first node had ≤65k newer, the last cut one >65k
    assert result.start <= cut
    kept = result.records[1:]
    assert [r.uuid for r in kept] == [r.uuid for r in view.records[result.start :]]
    assert sum(view.rough[: result.start]) > 80_000  # everything older went into the snapshot


def test_a_65k_budget_change_moves_the_cut() -> None:
    view = view_of(sized(until(records(14, 4, 11_000), "r13.0"), 150_001))
    default = create("gemini-generalist", NO_CLIENT_MASKING).compact(view, GeneralistState())
    wider = create("gemini-generalist", {**NO_CLIENT_MASKING, "retained_tokens": 90_000})
    result = wider.compact(view, GeneralistState())
    assert result.naive_start < default.naive_start
    assert sum(list(view.rough)[result.naive_start + 1 :]) <= 90_000 < sum(list(view.rough)[result.naive_start :])


def test_no_old_node_is_truncated_or_distilled_between_65k_and_150k() -> None:
    """Normalization (NodeDistillation 3k, NodeTruncation 4k per node) listens to ``retained_exceeded``,
    which nothing emits: a 6k-token node far past the retained window stays whole."""
    recs = with_output(big_context(), "r0.1", "y" * 24_000)  # 6,000 tokens, aged out
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    state = strategy.new_state()
    assert 65_000 < total(recs) < 150_000
    assert strategy.compact(view_of(recs), state) is None
    assert state.in_flight is not None  # a draft was written, the history is untouched


# ------------------------------------------------------------------ immediate sanitization
def test_request_strings_over_8k_tokens_are_masked_and_not_one_character_below() -> None:
    strategy = create("gemini-generalist")
    recs = until(records(2, 2, 400), "r1.1")
    over = strategy.compact(view_of(with_output(recs, "r1.1", "z" * 32_001)), strategy.new_state())
    assert strategy.compact(view_of(with_output(recs, "r1.1", "z" * 32_000)), strategy.new_state()) is None
    text = over.records[-1].tool_results()[0].result_text()
    assert text.startswith(f"<{MASKED_TAG}>\n[Tool observation string (0.03MB, 1 lines) masked")
    assert over.details["request_strings_masked"] == 1 and over.summary is None and valid(over)


def test_only_the_request_is_masked_at_once_and_exempt_tools_never() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    recs = with_output(until(records(2, 2, 400), "r1.1"), "r0.0", "o" * 40_000)  # older: not the request
    assert strategy.compact(view_of(recs), strategy.new_state()) is None
    asked = renamed(with_output(recs, "r1.1", "z" * 40_000), "a1.1.tu", "AskUserQuestion")
    assert strategy.compact(view_of(asked), strategy.new_state()) is None


def test_the_masked_request_is_what_later_calls_hold() -> None:
    strategy = create("gemini-generalist")
    state = strategy.new_state()
    recs = with_output(records(2, 2, 400), "r1.0", "z" * 40_000)
    first = strategy.compact(view_of(until(recs, "r1.0")), state)
    later = [*first.records, *until(recs, "r1.1")[len(first.records) :]]
    assert strategy.compact(view_of(later), state) is None
    held = next(r for r in later if r.uuid == "r1.0").tool_results()[0].result_text()
    assert held.startswith(f"<{MASKED_TAG}>")


def test_a_request_text_over_15k_tokens_is_distilled_and_charged() -> None:
    strategy = create("gemini-generalist")
    recs = until(records(2, 1, 400), "u1")
    words = " ".join(f"word{i} in src/file{i}.py" for i in range(6_000))
    over = with_text(recs, "u1", (words * 2)[:60_001])
    at = with_text(recs, "u1", (words * 2)[:60_000])
    assert strategy.compact(view_of(at), strategy.new_state()) is None
    result = strategy.compact(view_of(over), strategy.new_state())
    assert result is not None and result.details["request_nodes_distilled"] == 1
    assert len(result.records[-1].text) < 60_000 and result.summary == result.records[-1].text
    assert result.details["summarizer_calls"] == 1 and result.details["summarizer_input_tokens"][0] > 15_000


def test_an_exempt_tool_output_over_15k_tokens_is_distilled_not_masked() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    recs = renamed(until(records(2, 2, 400), "r1.1"), "a1.1.tu", "AskUserQuestion")
    answer = " ".join(f"answer{i} about src/mod{i}.py" for i in range(4_000))
    assert strategy.compact(view_of(with_output(recs, "r1.1", answer[:60_000])), strategy.new_state()) is None
    result = strategy.compact(view_of(with_output(recs, "r1.1", answer[:60_001])), strategy.new_state())
    text = result.records[-1].tool_results()[0].result_text()
    assert set(json.loads(text)) == {"summary"} and f"<{MASKED_TAG}>" not in text
    assert result.details["request_nodes_distilled"] == 1 and result.details["summarizer_calls"] == 1


# ------------------------------------------------------------------ drafts
def test_drafts_need_5k_more_deficit_than_the_last_one() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    recs = big_context()
    state = strategy.new_state()
    assert strategy.compact(view_of(recs), state) is None and state.in_flight is not None
    first = state.in_flight
    deficit = state.last_deficit
    assert deficit == total(recs) - 65_000
    same = sized(recs, total(recs) + 5_000)
    assert strategy.compact(view_of(same), state) is None and state.in_flight is None and state.inbox == [first]
    more = sized(recs, total(recs) + 5_001)
    assert strategy.compact(view_of(more), state) is None
    assert state.inbox == [] and state.in_flight is not None  # it took the draft to accumulate on
    assert set(first.consumed) <= set(state.in_flight.consumed)
    assert len(state.uncharged) == 2


def test_no_draft_at_or_below_65k() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    recs = until(records(6, 4, 11_000), "r5.2")
    state = strategy.new_state()
    strategy.compact(view_of(sized(recs, 65_000)), state)
    assert state.in_flight is None and not state.uncharged
    strategy.compact(view_of(sized(recs, 65_001 + 5_000)), state)
    assert state.in_flight is not None


def test_a_draft_splices_in_when_its_nodes_are_aged_out_and_its_call_is_charged_there() -> None:
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    recs = until(records(14, 4, 11_000), "r12.3")
    state = strategy.new_state()
    strategy.compact(view_of(sized(recs, 146_000)), state)  # draft written in the background
    draft = state.in_flight
    result = strategy.compact(view_of(sized(recs, 150_001)), state)  # 4k more: no new draft
    assert result.details["snapshot_source"] == "inbox" and result.summary == draft.text
    assert result.details["consumed_nodes"] == len(draft.consumed) and valid(result)
    assert result.details["summarizer_calls"] == 1 and result.details["earlier_calls_charged"] == 1
    assert state.inbox == []


def test_after_a_snapshot_drafts_never_splice_in_again() -> None:
    """A draft accumulated after a snapshot carries consumed ids the graph no longer holds, so the next
    backstop writes its snapshot synchronously even though no new draft took the inbox's."""
    strategy = create("gemini-generalist", NO_CLIENT_MASKING)
    full = records(30, 4, 11_000)
    state = strategy.new_state()
    first_request = until(full, "r13.0")
    first = strategy.compact(view_of(sized(first_request, 150_001)), state)
    assert first.details["snapshot_source"] == "sync"
    middle = [*first.records, *until(full, "r17.0")[len(first_request) :]]
    assert strategy.compact(view_of(middle), state) is None  # the deficit falls: drafts may come again
    grown = [*first.records, *until(full, "r20.0")[len(first_request) :]]
    grown = sized(grown, 148_000, "r14.0")
    assert strategy.compact(view_of(grown), state) is None and state.in_flight is not None
    draft = state.in_flight
    over = [*grown, *until(full, "r20.1")[len(grown) - len(first.records) + len(first_request) :]]
    assert 150_000 < total(over) < 148_000 + 5_000
    result = strategy.compact(view_of(over), state)
    assert state.inbox == [draft]  # not taken: no new draft, and not spliced: its ids are gone
    assert result.details["snapshot_source"] == "sync" and valid(result)
    assert result.details["summarizer_calls"] == 2  # the unused draft is still paid for


def test_a_long_session_stays_valid_and_under_the_max_after_each_backstop() -> None:
    strategy = create("gemini-generalist")
    full = records(24, 4, 11_000)
    state = strategy.new_state()
    context: list[Record] = []
    snapshots = 0
    for i, record in enumerate(full):
        context.append(record)
        if record.kind != "user" or not record.tool_results():
            continue
        result = strategy.compact(view_of(context, step=i), state)
        if result is not None:
            context = list(result.records)
            assert valid(result)
            snapshots += result.trigger == "gc_backstop"
        assert total(context) <= 150_000 + 3_000
    assert snapshots >= 2


# ------------------------------------------------------------------ the snapshot state
def test_the_state_keeps_5_arc_entries_and_4k_tokens_dropping_the_oldest_facts_first() -> None:
    patch = {"new_facts": [], "new_constraints": [], "new_tasks": [], "chronological_summary": ""}
    text = None
    for i in range(7):
        text = merge_state(text, {**patch, "chronological_summary": f"step {i}"}, 5, 4_000, 4.0)
    assert json.loads(text)["recent_arc"] == [f"step {i}" for i in range(2, 7)]
    facts = [f"fact {i:04d} " + "f" * 90 for i in range(400)]
    big = json.loads(merge_state(text, {**patch, "new_facts": facts, "new_constraints": ["keep me"]}, 5, 4_000, 4.0))
    assert len(json.dumps(big, ensure_ascii=False)) / 4 <= 4_000
    assert big["discovered_facts"][-1] == facts[-1] and facts[0] not in big["discovered_facts"]
    assert big["constraints_and_preferences"] == ["keep me"] and len(big["recent_arc"]) == 5


def test_aged_out_is_the_prefix_with_more_than_the_budget_newer() -> None:
    assert aged_out([10, 10, 10, 10], 20, 4) == 1  # the second node has exactly 20 newer: kept
    assert aged_out([10, 10, 10, 10], 19, 4) == 2
    assert aged_out([10, 10, 10, 10], 19, 1) == 1  # the protected turn is never aged out


def test_invalid_configs_raise() -> None:
    with pytest.raises(ValidationError):
        create("gemini-generalist", {"retained_tokens": 150_000})
    with pytest.raises(ValidationError):
        create("gemini-generalist", {"profile": "generalist"})
