"""Client factory, retries (529/429/500 then 200, bounded), error mapping, the cache, and the API key
never leaking into exceptions, reprs, logs or cache files."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import anthropic
import pytest
from fake_anthropic import COUNT_PATH, FAKE_KEY, MESSAGES_PATH, FakeAnthropic, sent_key
from online_records import SESSION, session
from record_builders import user

from workbench.online import (
    API_KEY_ENV,
    CountTokensEstimator,
    MissingAPIKeyError,
    OnlineAPIError,
    OnlineMemoryExtractor,
    OnlineSummarizer,
    ResponseCache,
    RetryPolicy,
    get_client,
    redact,
    request_key,
)
from workbench.online.client import call_api
from workbench.util.cache import cache_root

FAST = RetryPolicy(max_attempts=3, initial_delay=0.01, max_delay=0.05)


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(MissingAPIKeyError, match=API_KEY_ENV):
        get_client()
    summarizer = OnlineSummarizer()  # constructing needs no key
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        summarizer.summarize([user("hi", session_id=SESSION)])


def test_client_from_environment(fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    client = get_client()
    assert isinstance(client, anthropic.Anthropic) and client.max_retries == 0
    explicit = fake.client()
    assert get_client(explicit) is explicit
    fake.reply = lambda body: [{"type": "text", "text": "<summary>ok</summary>"}]
    assert OnlineSummarizer(cache=False).summarize([user("hi", session_id=SESSION)]) == "<summary>ok</summary>"
    assert sent_key(fake.calls()[0]) == FAKE_KEY


@pytest.mark.parametrize(("status", "kind"), [(529, "overloaded_error"), (429, "rate_limit_error"), (500, "api_error")])
def test_retry_then_success(fake: FakeAnthropic, status: int, kind: str) -> None:
    fake.fail(MESSAGES_PATH, status, kind, "try again", {"retry-after": "0"} if status == 429 else None)
    fake.reply = lambda body: [{"type": "text", "text": "<summary>fine</summary>"}]
    summarizer = OnlineSummarizer(client=fake.client(), retry=FAST)
    assert summarizer.summarize([user("hi", session_id=SESSION)]) == "<summary>fine</summary>"
    assert len(fake.calls()) == 2 and summarizer.stats.requests == 1


def test_retries_are_bounded_with_backoff(fake: FakeAnthropic) -> None:
    for _ in range(5):
        fake.fail(COUNT_PATH, 529, "overloaded_error", "Overloaded")
    sleeps: list[float] = []
    estimator = CountTokensEstimator(
        client=fake.client(), retry=RetryPolicy(max_attempts=3, initial_delay=0.1, jitter=0)
    )
    estimator._sleep = sleeps.append
    with pytest.raises(OnlineAPIError) as info:
        estimator.count(user("hi", session_id=SESSION))
    err = info.value
    assert err.status_code == 529 and err.error_type == "overloaded_error" and err.attempts == 3
    assert len(fake.calls()) == 3 and sleeps == [0.1, 0.2]


def test_client_errors_are_not_retried(fake: FakeAnthropic) -> None:
    fake.fail(MESSAGES_PATH, 400, "invalid_request_error", "messages.0: bad")
    with pytest.raises(OnlineAPIError) as info:
        call_api(fake.client(), "messages", {"model": "m", "max_tokens": 1, "messages": []}, FAST)
    assert info.value.status_code == 400 and "messages.0: bad" in str(info.value)
    assert len(fake.calls()) == 1


def _leaks(text: str) -> bool:
    return FAKE_KEY in text or "LEAKCANARY" in text


def test_api_key_never_leaks(fake: FakeAnthropic, caplog: pytest.LogCaptureFixture, monkeypatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, FAKE_KEY)  # also the env copy must be redacted
    caplog.set_level(logging.DEBUG)
    # the fake echoes the key back in its error messages, as a misconfigured proxy might
    fake.fail(MESSAGES_PATH, 401, "authentication_error", f"invalid x-api-key: {FAKE_KEY}")
    fake.fail(MESSAGES_PATH, 400, "invalid_request_error", f"bad request for key {FAKE_KEY}")
    fake.fail(COUNT_PATH, 529, "overloaded_error", f"overloaded ({FAKE_KEY})")
    fake.fail(COUNT_PATH, 529, "overloaded_error", f"overloaded ({FAKE_KEY})")
    fake.fail(COUNT_PATH, 529, "overloaded_error", f"overloaded ({FAKE_KEY})")
    client = fake.client()
    summarizer = OnlineSummarizer(client=client, retry=FAST)
    extractor = OnlineMemoryExtractor(client=client, retry=FAST)
    estimator = CountTokensEstimator(client=client, retry=FAST)
    errors: list[BaseException] = []
    for run in (
        lambda: summarizer.summarize(session()),
        lambda: extractor.extract(session()),
        lambda: estimator.count(user("hi", session_id=SESSION)),
    ):
        with pytest.raises(OnlineAPIError) as info:
            run()
        errors.append(info.value)
    assert [e.status_code for e in errors] == [401, 400, 529]  # type: ignore[attr-defined]
    assert all(sent_key(r) == FAKE_KEY for r in fake.calls())  # the key was sent…
    for err in errors:  # …but appears nowhere we produce
        assert "[REDACTED]" in str(err)
        assert err.__cause__ is None and err.__context__ is None
        for text in (str(err), repr(err), "".join(traceback.format_exception(err)), str(err.args)):
            assert not _leaks(text)
    # successful calls write the cache; check it too
    fake.reply = lambda body: [{"type": "text", "text": "<summary>s</summary>"}]
    summarizer.summarize([user("hi", session_id=SESSION)])
    estimator.count(user("hi", session_id=SESSION))
    for obj in (summarizer, extractor, estimator, client):
        assert not _leaks(repr(obj))
    files = list((cache_root() / "anthropic").rglob("*"))
    assert any(f.suffix == ".json" for f in files)
    for path in files:
        if path.is_file():
            assert not _leaks(path.read_text())
    assert not _leaks(caplog.text)
    assert any("retrying" in r.getMessage() for r in caplog.records)
    assert not _leaks(extractor.report_json())


def test_redact() -> None:
    assert redact(f"x {FAKE_KEY} y") == "x [REDACTED] y"
    assert redact("key sk-ant-api03-abcdefgh") == "key [REDACTED]"


def test_cache_files_are_atomic_and_keyed(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = request_key("messages", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert key != request_key("messages", {"model": "m2", "messages": [{"role": "user", "content": "hi"}]})
    assert key != request_key("messages/count_tokens", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert cache.get(key) is None
    path = cache.put(key, {"content": []}, endpoint="messages", model="m")
    assert cache.get(key) == {"content": []} and key in cache
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
    path.write_text("{not json")
    assert cache.get(key) is None  # a damaged entry is a miss


def test_sdk_retries_of_a_passed_client_are_switched_off(fake: FakeAnthropic) -> None:
    for _ in range(3):
        fake.fail(MESSAGES_PATH, 529, "overloaded_error", "Overloaded")
    client = anthropic.Anthropic(api_key=FAKE_KEY, base_url=fake.base_url, max_retries=2)
    with pytest.raises(OnlineAPIError):
        call_api(client, "messages", {"model": "m", "max_tokens": 1, "messages": []}, RetryPolicy(max_attempts=1))
    assert len(fake.calls()) == 1  # our policy alone decides how often a request is sent


@pytest.mark.parametrize("shape", ["hang", "drip"])
def test_a_server_that_never_finishes_is_bounded_and_says_so(
    fake: FakeAnthropic, shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that never answers, or drips one byte at a time (which no read timeout catches): each
    attempt ends at its total deadline, a warning says how long it has waited, and the error names the
    deadline (before: the SDK's 600 s per attempt × 5 attempts, silent; a drip never ended)."""
    import time

    caplog.set_level(logging.WARNING)
    if shape == "hang":
        fake.hang = 60.0
    else:
        fake.drip = 0.2
    policy = RetryPolicy(
        max_attempts=2, initial_delay=0.01, max_delay=0.01, read_timeout=5.0, total_timeout=1.0, progress_every=0.4
    )
    started = time.monotonic()
    with pytest.raises(OnlineAPIError, match=r"no complete response within 1 s") as info:
        call_api(fake.client(), "messages", {"model": "m", "max_tokens": 1, "messages": []}, policy)
    assert time.monotonic() - started < 6 and info.value.attempts == 2  # type: ignore[attr-defined]
    assert len(fake.calls()) == 2
    assert any("still waiting for the response" in r.getMessage() for r in caplog.records)


def test_a_key_echoed_in_a_reply_is_stored_nowhere(fake: FakeAnthropic, monkeypatch) -> None:
    """A proxy that echoes the key inside a successful reply: the summary, the cache and everything built
    from them hold ``[REDACTED]`` (before: the key was written to the response cache and the results)."""
    monkeypatch.setenv(API_KEY_ENV, FAKE_KEY)
    fake.reply = lambda body: [{"type": "text", "text": f"<summary>your key is {FAKE_KEY}</summary>"}]
    summarizer = OnlineSummarizer(client=fake.client(), retry=FAST)
    summary = summarizer.summarize([user("hi", session_id=SESSION)])
    assert not _leaks(summary) and "[REDACTED]" in summary
    files = [p for p in (cache_root() / "anthropic").rglob("*") if p.is_file()]
    assert files and not any(_leaks(p.read_text()) for p in files)
