"""Every peer strategy at its default config over the three largest real main sessions (they reach
~210-257k uncompacted tokens of a 200k window): the exact number of compaction events (measured and
pinned; a change means the behaviour changed), and zero API violations for the safe strategies.

Pinned counts are (258c7280…, 4d5611e5…, 8463c716…). Zero counts are expected where the default trigger
is never crossed or no legal cut exists: ``openhands-pipeline`` (default NoOp), ``langchain-summarization``
(default trigger None), ``clear-thinking`` on 8463c716 (one user turn with thinking), ``opencode-prune``
(the output beyond the newest 40k sits in the protected last 2 turns).
"""

from __future__ import annotations

import pytest

from workbench.replay import replay_session
from workbench.strategies import create

SESSIONS = ("258c7280", "4d5611e5", "8463c716")
HYBRID = {
    "stages": [
        {"name": "observation-masking", "config": {"keep_last_turns": 10}},
        {"name": "openhands-llm", "config": {"unit": "turn", "max_size": 53, "keep_first": 1, "keep_last": 10}},
    ]
}

# name, config, events per session
CASES: list[tuple[str, dict | None, tuple[int, int, int]]] = [
    ("truncate-oldest", None, (1, 1, 1)),
    ("recent-window", None, (1, 2, 2)),
    ("observation-masking", None, (139, 127, 131)),
    ("openhands-observation-masking", None, (108, 92, 95)),
    ("openhands-recent", None, (37, 22, 18)),
    ("openhands-amortized", None, (7, 5, 7)),
    ("openhands-llm", None, (7, 5, 7)),
    ("openhands-pipeline", None, (0, 0, 0)),
    ("openhands-pipeline", HYBRID, None),
    ("clear-tool-uses", None, (105, 97, 120)),
    ("clear-thinking", None, (2, 1, 0)),
    ("server-compact", None, (1, 1, 1)),
    ("codex", None, (1, 1, 1)),
    ("gemini-cli", None, (2, 2, 2)),  # one tool output masking, then one compression
    ("gemini-masking", None, (1, 1, 1)),
    ("opencode", None, (1, 1, 2)),
    ("opencode-prune", None, (1, 0, 0)),
    ("opencode-retry", None, (1, 1, 1)),
    ("aider", None, (2, 1, 1)),
    ("langchain-trim", None, (11, 12, 15)),
    ("langchain-trim", {"start_on": "human"}, None),
    ("langchain-summarization", None, (0, 0, 0)),
    ("langchain-summarization", {"trigger": ("tokens", 150_000)}, None),
    ("letta", None, (1, 1, 1)),
]


@pytest.fixture(scope="module")
def big_sessions(main_sessions):
    chosen = [next(s for s in main_sessions if s.id.startswith(prefix)) for prefix in SESSIONS]
    return chosen


@pytest.mark.parametrize(("name", "config", "expected"), CASES, ids=[f"{c[0]}{'+cfg' if c[1] else ''}" for c in CASES])
def test_real_sessions(big_sessions, name, config, expected) -> None:
    strategy = create(name, config)
    counts = []
    violations = 0
    rules: set[str] = set()
    for session in big_sessions:
        result = replay_session(session, strategy)
        counts.append(len(result.events))
        violations += sum(e["violations"] for e in result.events) + sum(s["violations"] for s in result.steps)
        rules |= {rule for s in result.steps for rule in s["violation_rules"].split(",") if rule}
        if not strategy.unsafe and expected is None:
            assert result.peak_context_tokens < 200_000
    if expected is not None:
        assert tuple(counts) == expected
    else:
        assert all(c > 0 for c in counts)
    if strategy.unsafe and config is None:
        assert violations > 0  # the naive baselines do break the request
    elif name == "langchain-trim":
        # start_on=human keeps every tool pair, but on 8463c716 no window starts on a human message, the trim
        # keeps nothing, and the next recorded response opens the request (trim_messages returns [] there)
        assert rules == {"first_message_not_user"}
    else:
        assert violations == 0
