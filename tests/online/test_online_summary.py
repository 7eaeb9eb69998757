"""OnlineSummarizer against the local fake API: request shape, raw text back, cache, PTL retries."""

from __future__ import annotations

import itertools

import pytest
from fake_anthropic import FAKE_KEY, MESSAGES_PATH, FakeAnthropic, sent_key
from online_records import SESSION, session
from record_builders import CWD, assistant, result, tool_use, user

from workbench.online import OnlineSummarizer, OnlineSummaryError, ResponseCache, RetryPolicy
from workbench.online.summarizer import COMPACT_SYSTEM_PROMPT, CONVERSATION_TOO_LONG, NO_SUMMARY_ERROR
from workbench.summarize.offline import Summarizer
from workbench.summarize.prompt import build_compact_prompt, format_compact_summary
from workbench.transcript.model import Block

RAW = (
    "<analysis>\nThe user wants the date parser fixed.\n</analysis>\n\n<summary>\n"
    "1. Primary Request and Intent:\n   Fix the failing date parser tests.\n\n"
    "9. Optional Next Step:\n   Add a leap-year test.\n</summary>"
)


def _summarizer(fake: FakeAnthropic, **kw: object) -> OnlineSummarizer:
    return OnlineSummarizer(
        model="claude-sonnet-4-6", client=fake.client(), retry=RetryPolicy(initial_delay=0.01), **kw
    )


def test_round_trip_request_shape_and_raw_text(fake: FakeAnthropic) -> None:
    fake.reply = lambda body: [{"type": "text", "text": RAW}]
    summarizer = _summarizer(fake)
    assert isinstance(summarizer, Summarizer)
    records = session()
    records.insert(
        4,
        result("t1b", [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]),
    )
    records.insert(4, assistant(tool_use("t1b", "Read", file_path=f"{CWD}/shot.png"), message_id="m1b"))
    text = summarizer.summarize(records, custom_instructions="Focus on tests.")
    assert text == RAW  # raw: the caller formats it
    assert format_compact_summary(text).startswith("Summary:\n1. Primary Request and Intent:")

    (request,) = fake.calls(MESSAGES_PATH)
    assert sent_key(request) == FAKE_KEY
    body = request["body"]
    assert body["system"] == COMPACT_SYSTEM_PROMPT
    assert body["max_tokens"] == 20000
    assert body["model"] == "claude-sonnet-4-6"
    assert body["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in body["tools"]] == ["Read"]
    messages = body["messages"]
    assert messages[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))
    last = messages[-1]
    assert last["role"] == "user"
    # the trailing Read had no result yet: pairing repair puts a synthetic result first
    assert last["content"][0]["type"] == "tool_result" and last["content"][0]["tool_use_id"] == "t4"
    assert last["content"][-1] == {"type": "text", "text": build_compact_prompt("Focus on tests.")}
    flat = str(messages)
    assert "[image]" in flat and "'type': 'image'" not in flat  # stripImages
    assert "thinking" not in {b["type"] for m in messages for b in m["content"]}


def test_max_tokens_capped_by_model() -> None:
    assert OnlineSummarizer(model="claude-3-5-haiku-20241022").max_tokens == 8192
    assert OnlineSummarizer(model="claude-opus-4-5").max_tokens == 20000
    assert OnlineSummarizer(model="x", max_tokens=123).max_tokens == 123


def test_second_call_is_a_cache_hit(fake: FakeAnthropic) -> None:
    fake.reply = lambda body: [{"type": "text", "text": RAW}]
    records = session()
    first = _summarizer(fake).summarize(records)
    again = _summarizer(fake)  # a fresh instance: the hit comes from disk
    assert again.summarize(records) == first
    assert len(fake.calls()) == 1
    assert again.stats.cache_hits == 1 and again.stats.requests == 0
    _summarizer(fake).summarize(records, custom_instructions="different")  # other prompt, other entry
    _summarizer(fake, max_tokens=1000).summarize(records)  # other parameter, other entry
    assert len(fake.calls()) == 3


def test_cache_can_be_disabled_or_relocated(fake: FakeAnthropic, tmp_path) -> None:
    fake.reply = lambda body: [{"type": "text", "text": RAW}]
    for _ in range(2):
        _summarizer(fake, cache=False).summarize(session())
    assert len(fake.calls()) == 2
    cache = ResponseCache(tmp_path / "c")
    _summarizer(fake, cache=cache).summarize(session())
    assert len(list((tmp_path / "c").rglob("*.json"))) == 1


def test_prompt_too_long_drops_oldest_rounds(fake: FakeAnthropic) -> None:
    fake.fail(MESSAGES_PATH, 400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
    fake.reply = lambda body: [{"type": "text", "text": RAW}]
    summarizer = _summarizer(fake)
    assert summarizer.summarize(session()) == RAW
    first, second = fake.calls(MESSAGES_PATH)
    assert len(second["body"]["messages"]) < len(first["body"]["messages"])
    assert second["body"]["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "[earlier conversation truncated for compaction retry]"}],
    }
    assert summarizer.ptl_retries == 1


def test_prompt_too_long_out_of_retries(fake: FakeAnthropic) -> None:
    for _ in range(4):  # no parsable gap: 20 % of the 6 API rounds (>= 1) dropped per retry
        fake.fail(MESSAGES_PATH, 400, "invalid_request_error", "prompt is too long")
    with pytest.raises(OnlineSummaryError, match="Conversation too long"):
        _summarizer(fake).summarize(session())
    sizes = [len(c["body"]["messages"]) for c in fake.calls()]
    assert len(sizes) == 4 and sizes == sorted(sizes, reverse=True) and sizes[-1] < sizes[0]
    firsts = [c["body"]["messages"][0]["content"][0]["text"] for c in fake.calls()]
    assert firsts[0].startswith("Fix the failing") and set(firsts[1:]) == {
        "[earlier conversation truncated for compaction retry]"
    }
    assert CONVERSATION_TOO_LONG.startswith("Conversation too long")


def test_no_text_is_an_error(fake: FakeAnthropic) -> None:
    fake.reply = lambda body: []
    with pytest.raises(OnlineSummaryError) as info:
        _summarizer(fake).summarize([user("hi", session_id=SESSION)])
    assert str(info.value) == NO_SUMMARY_ERROR


def test_thinking_can_be_kept(fake: FakeAnthropic) -> None:
    fake.reply = lambda body: [{"type": "text", "text": RAW}]
    records = [
        user("q", session_id=SESSION),
        assistant(
            Block("thinking", {"type": "thinking", "thinking": "t", "signature": "s"}),
            Block.text_block("a"),
            message_id="m",
        ),
    ]
    _summarizer(fake, drop_thinking=False).summarize(records)
    body = fake.calls()[0]["body"]
    assert body["messages"][1]["content"][0]["type"] == "thinking"


def test_sampling_parameters_reach_the_api_through_extra_body(fake) -> None:
    """SDK 2.x's ``messages.create`` names no ``temperature``; it is still sent, in the body."""
    fake.reply = lambda body: [{"type": "text", "text": "<summary>ok</summary>"}]
    summarizer = OnlineSummarizer("claude-sonnet-4-6", client=fake.client(), cache=False, temperature=0.2)
    summarizer.summarize(session())
    [request] = fake.calls(MESSAGES_PATH)
    assert request["body"]["temperature"] == 0.2
