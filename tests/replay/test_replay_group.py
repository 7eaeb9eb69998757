"""`replay_group` shares the replay prefix across configs and changes no result."""

from __future__ import annotations

import pytest

from workbench.replay import replay_group, replay_session
from workbench.strategies import create

CONFIGS = [
    {"min_tokens": 10_000, "max_tokens": 40_000},
    {"min_tokens": 5_000, "max_tokens": 20_000, "min_text_block_messages": 2},
    {"min_tokens": 30_000, "max_tokens": 60_000, "thinking_aware": True},
]


@pytest.mark.parametrize("name", ["sm-compact", "claude-code"])
def test_group_equals_independent_replays(main_sessions, name) -> None:
    def make(config):
        return create(name, config if name == "sm-compact" else {"sm": config})

    compacted = 0
    for session in main_sessions:
        grouped = replay_group(session, [make(c) for c in CONFIGS])
        alone = [replay_session(session, make(c)) for c in CONFIGS]
        for together, single in zip(grouped, alone, strict=True):
            assert together.steps == single.steps
            assert together.events == single.events
        compacted += bool(alone[0].events)
        # configs only differ in what is kept, so the first compaction happens at the same step
        firsts = {r.events[0]["step"] for r in alone if r.events}
        assert len(firsts) <= 1
    assert compacted == 3


def test_strategies_that_differ_before_compacting_are_refused(main_sessions) -> None:
    with pytest.raises(ValueError, match="prefix-equivalent"):
        replay_group(main_sessions[0], [create("sm-compact"), create("sm-compact", {"trigger": {"pct_override": 60}})])
    with pytest.raises(ValueError, match="prefix-equivalent"):
        replay_group(main_sessions[0], [create("sm-compact"), create("full-compact")])
