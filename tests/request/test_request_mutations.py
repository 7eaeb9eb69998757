"""Mutations of real sessions: each one must yield the expected rule with the API's exact wording.

The unmutated requests validate clean (`test_api_study.py`), so every violation here is caused by the
mutation. Each mutation is applied at up to ``SITES`` places per session and must apply somewhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import pytest

from workbench.request import normalize, validate
from workbench.request.invariants import adjust_to_api_invariants
from workbench.studies.naive_cut import cut_request
from workbench.transcript.model import Record, Session
from workbench.transcript.steps import ApiCall, api_calls

pytestmark = pytest.mark.corpus

SITES = 4
PAIRING = "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."


def _start(records: Sequence[Record], end: int) -> int:
    return next((i + 1 for i in range(end - 1, -1, -1) if records[i].is_compact_boundary), 0)


def steps(session: Session) -> Iterator[tuple[list[Record], ApiCall, int]]:
    """(records, call, first index of the call's request) for every call."""
    records = session.conversation()
    for call in api_calls(records):
        yield records, call, _start(records, call.first)


def _single(record: Record, kind: str) -> bool:
    return len(record.blocks) == 1 and record.blocks[0].kind == kind


def _check_sites(found: int) -> None:
    assert found > 0, "mutation applied nowhere: the test would pass vacuously"


def test_dropping_a_tool_use_record_orphans_its_result(main_sessions: list[Session]) -> None:
    found = 0
    for session in main_sessions:
        done = 0
        for records, call, start in steps(session):
            window = records[start : call.first]
            results = {i for r in window if r.kind == "user" for i in r.tool_result_ids()}
            target = next(
                (
                    k
                    for k in range(len(window) - 1, -1, -1)
                    if _single(window[k], "tool_use") and window[k].tool_use_ids()[0] in results
                ),
                None,
            )
            if target is None or done >= SITES:
                continue
            use_id = window[target].tool_use_ids()[0]
            violations = validate(normalize(window[:target] + window[target + 1 :]))
            assert [v.rule for v in violations] == ["tool_result_without_tool_use"]
            v = violations[0]
            assert (
                v.message
                == f"{v.location}: unexpected `tool_use_id` found in `tool_result` blocks: {use_id}. {PAIRING}"
            )
            done += 1
        found += done
    _check_sites(found)


def test_dropping_a_tool_result_leaves_tool_use_unanswered(main_sessions: list[Session]) -> None:
    found = 0
    for session in main_sessions:
        done = 0
        for records, call, start in steps(session):
            window = records[start : call.first]
            target = next((k for k in range(len(window) - 1, -1, -1) if _single(window[k], "tool_result")), None)
            if target is None or done >= SITES:
                continue
            result_id = window[target].tool_result_ids()[0]
            violations = validate(normalize(window[:target] + window[target + 1 :]))
            assert [v.rule for v in violations] == ["tool_use_without_tool_result"]
            v = violations[0]
            assert v.message == (
                f"{v.location}: `tool_use` ids were found without `tool_result` blocks immediately after: {result_id}. "
                "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
            )
            done += 1
        found += done
    _check_sites(found)


def _rename(record: Record, old: str, new: str) -> Record:
    blocks = []
    for b in record.blocks:
        if b.kind == "tool_use" and b.id == old:
            b = b.with_raw(id=new)
        elif b.kind == "tool_result" and b.tool_use_id == old:
            b = b.with_raw(tool_use_id=new)
        blocks.append(b)
    return record.with_blocks(blocks)


def test_duplicated_tool_use_id(main_sessions: list[Session]) -> None:
    found = 0
    for session in main_sessions:
        records = session.conversation()
        calls = api_calls(records)
        if len(calls) < 3:
            continue
        call = calls[-1]
        start = _start(records, call.first)
        window = records[start : call.first]
        uses = [(k, r.tool_use_ids()[0]) for k, r in enumerate(window) if _single(r, "tool_use")]
        if len(uses) < 2:
            continue
        (_, first_id), (_, last_id) = uses[0], uses[-1]
        mutated = [_rename(r, last_id, first_id) for r in window]
        violations = validate(normalize(mutated))
        assert [v.rule for v in violations] == ["duplicate_tool_use_id"]
        assert violations[0].message == f"{violations[0].location}: `tool_use` ids must be unique"
        found += 1
    _check_sites(found)


def _final_loop_thinking_sites(records: Sequence[Record], call: ApiCall, start: int) -> list[int] | None:
    """Indices of the thinking records of the response that opens the request's final tool loop."""
    request = normalize(records[start : call.first])
    messages = request.messages
    if (
        not messages
        or messages[-1].role != "user"
        or not all(b.get("type") == "tool_result" for b in messages[-1].content)
    ):
        return None
    n = len(messages) - 2
    while n - 2 >= 0 and all(b.get("type") == "tool_result" for b in messages[n - 1].content):
        n -= 2
    opener = messages[n]
    uuids = set(opener.record_uuids)
    sites = [k for k in range(start, call.first) if records[k].uuid in uuids and _single(records[k], "thinking")]
    return sites or None


def test_dropping_the_thinking_of_the_final_tool_loop_turn(main_sessions: list[Session]) -> None:
    found = 0
    for session in main_sessions:
        done = 0
        for records, call, start in steps(session):
            sites = _final_loop_thinking_sites(records, call, start)
            if sites is None or done >= SITES:
                continue
            window = [r for k, r in enumerate(records[start : call.first], start) if k not in sites]
            violations = validate(normalize(window), thinking=True)
            assert [v.rule for v in violations] == ["final_assistant_missing_thinking"]
            v = violations[0]
            assert v.location.endswith(".type")
            found_type = v.message.split("but found `")[1].split("`")[0]
            assert v.message.startswith(
                f"{v.location}: Expected `thinking` or `redacted_thinking`, but found `{found_type}`."
            )
            assert found_type in {"text", "tool_use"}
            done += 1
        found += done
    _check_sites(found)


def test_cut_inside_a_split_response(main_sessions: list[Session]) -> None:
    """Cutting between split siblings orphans results (or loses thinking); the adjustment repairs it."""
    found = 0
    for session in main_sessions:
        for records, call, _start_index in steps(session):
            siblings = list(call.indices)
            uses = [k for k in siblings if _single(records[k], "tool_use")]
            end = next((c.first for c in api_calls(records) if c.first > call.last), None)
            if len(uses) < 2 or end is None:
                continue
            cut = uses[-1]
            thinking = any(b.kind == "thinking" for k in siblings for b in records[k].blocks)
            violations = validate(cut_request(records, cut, end), thinking=thinking)
            rules = {v.rule for v in violations}
            assert "tool_result_without_tool_use" in rules
            assert rules <= {"tool_result_without_tool_use", "final_assistant_missing_thinking"}
            adjusted = adjust_to_api_invariants(records, cut)
            assert adjusted == siblings[0]
            assert validate(cut_request(records, adjusted, end), thinking=thinking) == []
            found += 1
            break
    _check_sites(found)


def _next_is_assistant(window: Sequence[Record], k: int) -> bool:
    """A following user message would merge and put a ``\\n`` seam into the blanked text."""
    return next((r.kind for r in window[k + 1 :] if r.kind in ("user", "assistant")), None) == "assistant"


def _blank(record: Record, value: str) -> Record:
    blocks = [b.with_raw(text=value) if b.kind == "text" else b for b in record.blocks]
    return replace(record.with_blocks(blocks), string_content=False)


@pytest.mark.parametrize(
    ("kind", "value", "rule", "wording"),
    [
        ("assistant", "", "empty_text", "messages: text content blocks must be non-empty"),
        ("user", "", "empty_text", "messages: text content blocks must be non-empty"),
        ("user", "  \n", "whitespace_text", "messages: text content blocks must contain non-whitespace text"),
    ],
)
def test_blanking_a_text_block(main_sessions: list[Session], kind: str, value: str, rule: str, wording: str) -> None:
    found = 0
    for session in main_sessions:
        records = session.conversation()
        calls = api_calls(records)
        if not calls:
            continue
        start = _start(records, calls[-1].first)
        window = records[start : calls[-1].first]
        target = next(
            (
                k
                for k, r in enumerate(window)
                if r.kind == kind and _single(r, "text") and r.blocks[0].text.strip() and _next_is_assistant(window, k)
            ),
            None,
        )
        if target is None:
            continue
        mutated = [*window[:target], _blank(window[target], value), *window[target + 1 :]]
        violations = validate(normalize(mutated))
        assert violations and {v.rule for v in violations} == {rule}
        assert all(v.message == wording for v in violations)
        assert any(window[target].uuid in v.record_uuids for v in violations)
        found += 1
    _check_sites(found)
