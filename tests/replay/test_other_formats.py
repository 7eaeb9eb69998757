"""Replay works on SWE-agent and OpenHands recordings: several strategies, valid requests."""

from __future__ import annotations

import pytest

from workbench.replay import replay_session
from workbench.strategies import create
from workbench.transcript import load_paths
from workbench.transcript.steps import api_calls

TRIGGER = {"context_window": 8_000, "pct_of_window": 40}
STRATEGIES = {
    "none": {},
    "full-compact": {"trigger": TRIGGER},
    "observation-masking": {"keep_last_turns": 3},
    "recent-window": {"context_window": 8_000, "trigger_fraction": 0.4, "keep_fraction": 0.2},
}


@pytest.mark.parametrize("fmt", ["swe-agent", "openhands"])
def test_three_strategies_replay_other_formats(corpus, fmt) -> None:
    sessions = [s for s in load_paths([corpus / fmt]) if s.records]
    assert sessions and {s.format for s in sessions} == {fmt}
    compactions = {}
    for name, config in STRATEGIES.items():
        results = [replay_session(s, create(name, config)) for s in sessions]
        for session, result in zip(sessions, results, strict=True):
            assert len(result.steps) == len(api_calls(session.conversation()))
        compactions[name] = sum(len(r.events) for r in results)
        assert sum(e["violations"] for r in results for e in r.events) == 0, name
        assert sum(s["violations"] for r in results for s in r.steps) == 0, name
    assert compactions["none"] == 0
    assert compactions["full-compact"] > 0 and compactions["recent-window"] > 0
