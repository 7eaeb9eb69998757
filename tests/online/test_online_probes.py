"""Judge probes against the local fake API: generate → answer → grade on a hand-made replayed session."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pandas as pd
import pytest
from fake_anthropic import FAKE_KEY, MESSAGES_PATH, FakeAnthropic, sent_key
from online_records import SESSION, session
from record_builders import user

from workbench.online import MissingAPIKeyError, OnlineAPIError, ResponseCache, RetryPolicy
from workbench.probes import PROBE_KINDS, generate_probes, grade, parse_json_reply, probe_event
from workbench.probes.generate import (
    ANSWER_SYSTEM,
    FRAME_COLUMNS,
    GENERATE_SYSTEM,
    JUDGE_SYSTEM,
    Answer,
    Probe,
    answer_probes,
    event_contexts,
)
from workbench.replay import replay_session
from workbench.strategies.base import Compaction, ContextView, Strategy
from workbench.transcript.model import Session

MODEL = "claude-haiku-4-5"
SUMMARY = "Summary: the user asked to fix the failing date parser tests; the agent is editing utils/dates.py."
FAST = RetryPolicy(initial_delay=0.01, max_attempts=2)

PROBES = {
    "recall": ("Which error did the date parser test fail with?", "ValueError: bad month (test_iso)"),
    "artifact": ("Which file did the agent read before running the tests?", "/repo/utils/dates.py"),
    "continuation": ("What should the agent do next?", "Make parse_iso validate the month, rerun the tests"),
    "decision": ("Why does parse_iso need changing?", "It returns the string unparsed, so bad months pass"),
}
ANSWERS = {
    "recall": "I don't know",
    "artifact": "It read /repo/utils/dates.py.",
    "continuation": "Fix the parser.",
    "decision": "Because it does not validate the month.",
}
FULL_ANSWERS = {kind: f"full: {ref}" for kind, (_, ref) in PROBES.items()}
#: Judge replies per kind: bare JSON, JSON with trailing prose, fenced block, score as a string.
VERDICTS = {
    "recall": '{"score": 0, "reason": "the candidate does not know"}',
    "artifact": '{"score": 1, "reason": "same file"} Hope this helps!',
    "continuation": 'Here is my grade:\n```json\n{"score": 0.5, "reason": "vague"}\n```\nDone.',
    "decision": '{"score": "0.75"}',
}
GENERATED = "Sure! Here are the probes:\n```json\n{}\n```\nLet me know if you need more.".format(
    json.dumps({"probes": [{"kind": k, "question": q, "reference": r} for k, (q, r) in PROBES.items()]})
)


def _prompt(body: dict[str, Any]) -> str:
    """All text of the (single) user message of a request."""
    (message,) = body["messages"]
    return "\n".join(block["text"] for block in message["content"])


def _kind_of(body: dict[str, Any]) -> str:
    text = _prompt(body)
    return next(kind for kind, (question, _) in PROBES.items() if question in text)


def scripted(verdicts: dict[str, str] = VERDICTS) -> Any:
    def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
        if body["system"] == GENERATE_SYSTEM:
            text = GENERATED
        elif body["system"] == ANSWER_SYSTEM:
            kind = _kind_of(body)
            text = FULL_ANSWERS[kind] if "ValueError: bad month" in _prompt(body) else ANSWERS[kind]
        elif body["system"] == JUDGE_SYSTEM:
            text = verdicts[_kind_of(body)]
        else:
            raise AssertionError(f"unexpected system prompt {body['system']!r}")
        return [{"type": "text", "text": text}]

    return reply


class _DropHead(Strategy):
    """Test-local: before step 3, drop the first 6 records and put a summary in front of the rest."""

    name = "test-drop-head"
    unsafe = True

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        if view.step != 3:
            return None
        head, kept = view.records[:6], view.records[6:]
        summary = replace(user(SUMMARY, session_id=SESSION), uuid="summary-1", is_compact_summary=True)
        return Compaction(
            kind="drop-head",
            trigger="auto",
            records=(summary, *kept),
            dropped=tuple(r.uuid for r in head),
            added=(summary,),
            start=6,
            naive_start=6,
            summary=SUMMARY,
        )


def hand_session() -> Session:
    records = [replace(r, uuid=f"u{i}") for i, r in enumerate(session())]
    return Session(id=SESSION, records=tuple(records), format="claude-code")


@pytest.fixture()
def replayed() -> tuple[Session, dict[str, Any]]:
    s = hand_session()
    (event,) = replay_session(s, _DropHead()).events
    return s, event


def _run(fake: FakeAnthropic, s: Session, event: dict[str, Any], **kw: Any) -> pd.DataFrame:
    return probe_event(s, event, model=MODEL, client=fake.client(), retry=FAST, **kw)


def test_round_trip_requests_and_frame(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    assert event["step"] == 3 and event["dropped_uuids"] == [f"u{i}" for i in range(6)]
    assert event["kept_uuids"] == ["u6", "u7"]
    fake.reply = scripted()
    frame = _run(fake, s, event)

    calls = fake.calls(MESSAGES_PATH)
    assert len(calls) == 1 + 4 + 4  # generate, one answer per probe, one judge call per probe
    assert all(sent_key(c) == FAKE_KEY for c in calls)
    bodies = [c["body"] for c in calls]
    assert all(b["model"] == MODEL and set(b) == {"model", "max_tokens", "system", "messages"} for b in bodies)
    assert [b["system"] for b in bodies] == [GENERATE_SYSTEM] + [ANSWER_SYSTEM] * 4 + [JUDGE_SYSTEM] * 4

    # generation: the dropped records (rendered), the requested kinds; not the kept records, not thinking
    gen = _prompt(bodies[0])
    assert gen.startswith("<dropped_content>\nUSER: Fix the failing date parser tests in utils")
    for dropped in (
        'TOOL CALL Read: {"file_path": "/repo/utils/dates.py"}',
        "def parse_iso(s):",
        '"command": "pytest tests/test_dates.py"',
        "TOOL RESULT Bash [error]: FAILED tests/test_dates.py::test_iso - ValueError: bad month",
    ):
        assert dropped in gen
    assert "let me look" not in gen  # thinking is not context the agent sees
    assert "TOOL CALL Edit" not in gen and SUMMARY not in gen
    assert all(f"- {kind}: " in gen for kind in PROBE_KINDS)
    assert bodies[0]["max_tokens"] == 4096

    # answers: the compacted context (summary + kept records) and one question each, not the dropped records
    for body, (question, _) in zip(bodies[1:5], PROBES.values(), strict=True):
        context, ask = body["messages"][0]["content"]
        assert context["cache_control"] == {"type": "ephemeral"}
        assert context["text"] == (
            f"<context>\nSUMMARY OF EARLIER CONVERSATION: {SUMMARY}\n\n"
            'TOOL CALL Edit: {"file_path": "/repo/utils/dates.py", "new_string": "b", "old_string": "a"}\n\n'
            "TOOL RESULT Edit: ok\n</context>"
        )
        assert ask["text"].startswith(f"Question about this session: {question}\n")
        for dropped in ("ValueError: bad month", "pytest tests/test_dates.py", "def parse_iso", "Fix the failing"):
            assert dropped not in _prompt(body)

    # judge: question, reference and candidate answer; no full-context answer in reference mode
    for body, kind in zip(bodies[5:], PROBES, strict=True):
        text = _prompt(body)
        question, reference = PROBES[kind]
        assert f"Probe kind: {kind}\nQuestion: {question}\n\nReference answer: {reference}\n" in text
        assert f"Candidate answer: {ANSWERS[kind]}\n" in text
        assert "full, uncompacted context" not in text
        assert body["max_tokens"] == 512

    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert frame["session_id"].tolist() == [SESSION] * 4
    assert frame["strategy"].tolist() == ["test-drop-head"] * 4
    assert frame["step"].tolist() == [3] * 4
    assert frame["event_kind"].tolist() == ["drop-head"] * 4
    assert frame["probe"].tolist() == [0, 1, 2, 3]
    assert frame["kind"].tolist() == list(PROBE_KINDS)
    assert frame["question"].tolist() == [q for q, _ in PROBES.values()]
    assert frame["reference"].tolist() == [r for _, r in PROBES.values()]
    assert frame["answer"].tolist() == list(ANSWERS.values())
    assert frame["score"].tolist() == [0.0, 1.0, 0.5, 0.75]
    assert frame["reason"].tolist()[:3] == ["the candidate does not know", "same file", "vague"]
    assert pd.isna(frame.loc[3, "reason"])
    assert frame["error"].isna().all() and frame["full_answer"].isna().all()
    assert set(frame["model"]) == {MODEL} and set(frame["judge_model"]) == {MODEL}


def test_second_run_is_all_cache_hits(fake: FakeAnthropic, replayed, tmp_path) -> None:
    s, event = replayed
    fake.reply = scripted()
    first = _run(fake, s, event)
    assert len(fake.calls()) == 9
    again = _run(fake, s, event)
    assert len(fake.calls()) == 9  # generation, answers and grades all from the on-disk cache
    pd.testing.assert_frame_equal(first, again)
    entries = list((tmp_path / "wb-cache").rglob("*.json"))
    assert len(entries) == 9
    _run(fake, s, event, judge_model="claude-sonnet-4-6")  # another judge: only the 4 grades are new
    assert len(fake.calls()) == 13


def test_against_full_context(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    fake.reply = scripted()
    frame = _run(fake, s, event, against="full", judge_model="judge-x")
    bodies = [c["body"] for c in fake.calls()]
    assert len(bodies) == 1 + 4 + 4 + 4
    full = bodies[5:9]
    for body in full:  # the full context: every record before the event, dropped ones included, no summary
        text = _prompt(body)
        assert "USER: Fix the failing date parser tests in utils" in text and "ValueError: bad month" in text
        assert "TOOL CALL Edit" in text and SUMMARY not in text
    assert frame["full_answer"].tolist() == list(FULL_ANSWERS.values())
    judge = [b for b in bodies if b["system"] == JUDGE_SYSTEM]
    assert {b["model"] for b in judge} == {"judge-x"}
    assert all(
        f"Answer given the full, uncompacted context (primary reference): {FULL_ANSWERS[_kind_of(b)]}\n" in _prompt(b)
        for b in judge
    )
    assert frame["score"].tolist() == [0.0, 1.0, 0.5, 0.75]


def test_malformed_judge_reply_is_an_error_row(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    verdicts = {
        **VERDICTS,
        "recall": "I would give this about 7/10.",  # no JSON at all
        "artifact": '{"score": 3}',  # out of range
        "decision": '```json\n{"reason": "no score"}\n```',
    }
    fake.reply = scripted(verdicts)
    frame = _run(fake, s, event)
    assert len(frame) == 4
    assert frame["score"].isna().tolist() == [True, True, False, True]
    assert frame.loc[2, "score"] == 0.5 and pd.isna(frame.loc[2, "error"])
    errors = frame["error"].tolist()
    assert errors[0].startswith("malformed judge reply: no JSON object in reply")
    assert errors[1] == "malformed judge reply: score 3 outside [0, 1]"
    assert errors[3] == "malformed judge reply: no 'score'"
    assert frame["answer"].tolist() == list(ANSWERS.values())  # the answers are kept on error rows


def test_malformed_generation_is_one_error_row(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    fake.reply = lambda body: [{"type": "text", "text": "I cannot write probes for this."}]
    frame = _run(fake, s, event)
    assert len(fake.calls()) == 1
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["error"].startswith("probe generation failed: no JSON object in reply")
    assert pd.isna(row["kind"]) and pd.isna(row["score"]) and row["step"] == 3


def test_generation_keeps_valid_probes_and_reports_the_rest(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    dropped, _, _ = event_contexts(s, event)
    items = [
        {"kind": "recall", "question": "q1", "reference": "r1"},
        {"kind": "recall", "question": "q2", "reference": "r2"},  # one per kind was asked for
        {"kind": "vibes", "question": "q", "reference": "r"},
        {"kind": "decision", "question": "q3"},
        "nonsense",
        {"kind": "Artifact", "question": " q4 ", "answer": "r4"},
    ]
    fake.reply = lambda body: [{"type": "text", "text": json.dumps(items) + "\ntrailing words"}]
    probes = generate_probes(dropped, kinds=["recall", "artifact", "decision"], model=MODEL, client=fake.client())
    assert probes.probes == (Probe("recall", "q1", "r1"), Probe("artifact", "q4", "r4"))
    assert probes.errors == (
        "probe 1: more than 1 recall probe(s), dropped",
        "probe 2: kind 'vibes' not requested",
        "probe 3: no reference answer",
        "probe 4: not an object",
    )
    assert "- continuation" not in _prompt(fake.calls()[0]["body"])
    with pytest.raises(ValueError, match="unknown probe kind"):
        generate_probes(dropped, kinds=["vibes"], client=fake.client())


def test_parse_json_reply() -> None:
    assert parse_json_reply('{"score": 1}') == {"score": 1}
    assert parse_json_reply('```json\n{"score": 0.5}\n```') == {"score": 0.5}
    assert parse_json_reply("```\n[1, 2]\n``` and more") == [1, 2]
    assert parse_json_reply('Score: {"score": 0.2, "reason": "a {brace}"} -- end {') == {
        "score": 0.2,
        "reason": "a {brace}",
    }
    assert parse_json_reply('{bad} then {"ok": true}') == {"ok": True}
    with pytest.raises(ValueError):
        parse_json_reply("score: 7/10")
    with pytest.raises(ValueError):
        parse_json_reply('"just a string"')


def test_grade_without_answer_skips_the_judge(fake: FakeAnthropic) -> None:
    fake.reply = scripted()
    probes = [Probe(kind, q, r) for kind, (q, r) in PROBES.items()][:2]
    grades = grade(probes, [Answer(None, error="empty answer"), ANSWERS["artifact"]], client=fake.client())
    assert grades[0].score is None and grades[0].error == "empty answer"
    assert grades[1].score == 1.0
    assert len(fake.calls()) == 1
    with pytest.raises(ValueError):
        grade(probes, ["one answer"], client=fake.client())


def test_answer_probes_accepts_text_context(fake: FakeAnthropic) -> None:
    fake.reply = scripted()
    probe = Probe("artifact", *PROBES["artifact"])
    (answer,) = answer_probes("a hand-written context", [probe], client=fake.client(), cache=False)
    assert answer == Answer(ANSWERS["artifact"])
    assert (
        fake.calls()[0]["body"]["messages"][0]["content"][0]["text"] == "<context>\na hand-written context\n</context>"
    )


def test_nothing_dropped_is_an_empty_frame(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    frame = _run(fake, s, {**event, "dropped_uuids": []})
    assert frame.empty and list(frame.columns) == list(FRAME_COLUMNS)
    assert fake.calls() == []


def test_the_key_never_leaks(fake: FakeAnthropic, replayed, tmp_path, monkeypatch) -> None:
    s, event = replayed
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    echo = f"invalid x-api-key: {FAKE_KEY}"

    # a normal run with the key from the environment (no explicit client)
    fake.reply = scripted()
    frame = probe_event(s, event, model=MODEL, retry=FAST)
    assert sent_key(fake.calls()[0]) == FAKE_KEY
    assert frame["score"].notna().all()
    assert FAKE_KEY not in frame.to_json()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert FAKE_KEY not in path.read_text(encoding="utf-8", errors="replace")

    # generation failing with an error that echoes the key: raised redacted, recorded redacted
    dropped, _, _ = event_contexts(s, event)
    fake.fail(MESSAGES_PATH, 401, "authentication_error", echo)
    with pytest.raises(OnlineAPIError) as info:
        generate_probes(dropped, model="other-model", retry=FAST)
    err = info.value
    assert FAKE_KEY not in str(err) and FAKE_KEY not in repr(err) and "[REDACTED]" in err.message
    assert err.__cause__ is None and err.__context__ is None
    fake.fail(MESSAGES_PATH, 401, "authentication_error", echo)
    failed = probe_event(s, event, model="other-model", retry=FAST)
    assert len(failed) == 1 and failed.iloc[0]["error"].startswith("probe generation failed: 401 authentication_error")
    assert FAKE_KEY not in failed.to_json() and "[REDACTED]" in failed.iloc[0]["error"]

    # a judge call failing the same way: that probe's error row, redacted
    probes = [Probe(kind, q, r) for kind, (q, r) in PROBES.items()]
    fake.fail(MESSAGES_PATH, 400, "invalid_request_error", echo)
    grades = grade(probes, list(ANSWERS.values()), model="judge-y", retry=FAST)
    assert grades[0].score is None and grades[0].error.startswith("judge call failed: 400 invalid_request_error")
    assert [g.score for g in grades[1:]] == [1.0, 0.5, 0.75]
    assert FAKE_KEY not in repr(grades) and FAKE_KEY not in str([g.error for g in grades])

    # no key and no client: the usual error, before any request
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    before = len(fake.calls())
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        probe_event(s, event, model="third-model", cache=ResponseCache(tmp_path / "empty"))
    assert len(fake.calls()) == before


def test_scores_are_finite_floats(fake: FakeAnthropic, replayed) -> None:
    s, event = replayed
    fake.reply = scripted()
    frame = _run(fake, s, event)
    assert all(isinstance(v, float) and math.isfinite(v) for v in frame["score"])
