"""The online path through a whole replay: strategies configured for Claude call the local fake API."""

from __future__ import annotations

import sys
from pathlib import Path

from fake_anthropic import FAKE_KEY, MESSAGES_PATH

from workbench.replay import replay_session
from workbench.strategies import create

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay"))
from synthetic import make_session

SMALL = {"context_window": 60_000, "max_output_tokens": 20_000}
SUMMARY = "<analysis>a</analysis><summary>1. Primary Request and Intent:\n   fix the bugs</summary>"


def test_full_compact_with_the_anthropic_summarizer(fake, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.reply = lambda body: [{"type": "text", "text": SUMMARY}]
    strategy = create("full-compact", {"trigger": SMALL, "summarizer": "anthropic"})
    session = make_session(turns=8, tools=3, result_chars=6_000)
    result = replay_session(session, strategy)
    assert len(result.events) >= 1
    calls = fake.calls(MESSAGES_PATH)
    assert len(calls) == len(result.events)
    assert "Summary:\n1. Primary Request and Intent:\n   fix the bugs" in result.events[0]["summary"]
    assert result.events[0]["violations"] == 0
    # the same replay again: every summary comes from the response cache, no new request
    replay_session(session, create("full-compact", {"trigger": SMALL, "summarizer": "anthropic"}))
    assert len(fake.calls(MESSAGES_PATH)) == len(calls)
    assert FAKE_KEY not in repr(result.events)
