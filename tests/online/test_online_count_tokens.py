"""CountTokensEstimator against the local fake count_tokens endpoint."""

from __future__ import annotations

import json
from typing import Any

from fake_anthropic import COUNT_PATH, FAKE_KEY, FakeAnthropic, sent_key
from online_records import SESSION, session
from record_builders import assistant, result, say, tool_use, user

from workbench.online import CountTokensEstimator, RetryPolicy
from workbench.online.count_tokens import ESTIMATOR_NAME, baseline_messages, record_request
from workbench.tokens.estimators import Estimator, estimator_names, get_estimator
from workbench.transcript.model import Record


def chars(body: dict[str, Any]) -> int:
    return sum(len(json.dumps(m["content"], sort_keys=True)) for m in body["messages"])


def valid(messages: list[dict[str, Any]]) -> bool:
    """First turn user, roles alternate, every tool_use answered in the next turn and vice versa."""
    if messages[0]["role"] != "user":
        return False
    for i, message in enumerate(messages):
        if i and message["role"] == messages[i - 1]["role"]:
            return False
        uses = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if uses and [b["tool_use_id"] for b in messages[i + 1]["content"] if b.get("type") == "tool_result"] != uses:
            return False
        results = [b["tool_use_id"] for b in message["content"] if b.get("type") == "tool_result"]
        if results and [b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"] != results:
            return False
    return True


def _estimator(fake: FakeAnthropic, **kw: Any) -> CountTokensEstimator:
    return CountTokensEstimator(
        model="claude-sonnet-4-6", client=fake.client(), retry=RetryPolicy(initial_delay=0.01), **kw
    )


def test_registered_lazily_without_a_key() -> None:
    assert ESTIMATOR_NAME == "anthropic:count_tokens" in estimator_names()
    estimator = get_estimator("anthropic:count_tokens")  # no ANTHROPIC_API_KEY in the test env
    assert isinstance(estimator, CountTokensEstimator) and isinstance(estimator, Estimator)


def test_round_trip_difference_against_baseline(fake: FakeAnthropic) -> None:
    fake.count = chars
    estimator = _estimator(fake)
    records = session()
    counts = estimator.count_many(records)
    base = chars({"messages": baseline_messages()})
    for record, got in zip(records, counts, strict=True):
        messages = record_request(record)
        assert messages is not None and valid(messages)
        assert got == chars({"messages": messages}) - base
    assert all(c > 0 for c in counts)
    bodies = [c["body"] for c in fake.calls(COUNT_PATH)]
    assert all(sent_key(c) == FAKE_KEY for c in fake.calls())
    assert sum(b["messages"] == baseline_messages() for b in bodies) == 1  # baseline counted once
    assert all(b["model"] == "claude-sonnet-4-6" and [t["name"] for t in b["tools"]] == ["t"] for b in bodies)
    assert len(bodies) == len(records) + 1


def test_record_requests_pair_tool_blocks() -> None:
    use = assistant(tool_use("a1", "Read", file_path="/x"), tool_use("a2", "Grep", pattern="y"))
    messages = record_request(use)
    assert messages is not None and valid(messages)
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a1"},
        {"type": "tool_result", "tool_use_id": "a2"},
    ]
    res = result("a1", "content")
    messages = record_request(res)
    assert messages is not None and valid(messages)
    assert messages[1]["content"] == [{"type": "tool_use", "id": "a1", "name": "t", "input": {}}]
    assert record_request(say("  ")) is None  # nothing sendable


def test_unsent_records_cost_nothing(fake: FakeAnthropic) -> None:
    estimator = _estimator(fake)
    progress = Record(kind="progress")
    # Only an assistant that is both `<synthetic>` and an API error is left out of the request (docs §8.1).
    api_error = Record(
        kind="assistant",
        role="assistant",
        model="<synthetic>",
        blocks=say("x").blocks,
        has_content=True,
        is_api_error=True,
    )
    assert estimator.count_many([progress, api_error]) == [0, 0]
    assert fake.calls() == []


def test_a_synthetic_assistant_that_is_no_api_error_is_sent(fake: FakeAnthropic) -> None:
    synthetic = Record(
        kind="assistant",
        role="assistant",
        model="<synthetic>",
        blocks=say("No response requested.").blocks,
        has_content=True,
    )
    assert _estimator(fake).count_many([synthetic])[0] > 0
    assert len(fake.calls()) >= 1


def test_second_pass_is_free(fake: FakeAnthropic) -> None:
    records = [user("hello", session_id=SESSION), say("hi there")]
    first = _estimator(fake).count_many(records)
    n = len(fake.calls())
    again = _estimator(fake)
    assert again.count_many(records) == first
    assert len(fake.calls()) == n and again.stats.cache_hits == len(records) + 1
