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


#: A grid whose configs often compact alike (``max_tokens`` rarely binds) and a trigger low enough to
#: compact several times per long session, so branches split, merge and split again.
BRANCHING = [
    {"min_tokens": 5_000, "max_tokens": 20_000},
    {"min_tokens": 10_000, "max_tokens": 40_000},
    {"min_tokens": 10_000, "max_tokens": 80_000},
    {"min_tokens": 40_000, "max_tokens": 80_000},
    {"min_tokens": 10_000, "max_tokens": 40_000, "thinking_aware": True},
]


def _claude_code_sessions(corpus, folder):
    """Every Claude Code session of the corpus, and long generated ones (one with a recorded compaction)."""
    from workbench.synthetic import generate_session
    from workbench.transcript import load_paths

    for seed in range(3):
        lines = generate_session(seed, target_tokens=420_000, compact_at=150_000 if seed == 0 else None)
        (folder / f"generated-{seed}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    folders = sorted(p for p in corpus.iterdir() if p.is_dir() and p.name.startswith("claude-code"))
    return [s for s in load_paths([*folders, folder]) if s.format == "claude-code"]


@pytest.mark.corpus
def test_branches_equal_independent_replays_on_every_session(corpus, monkeypatch, tmp_path) -> None:
    """Over every Claude Code session of the corpus and generated ones, with several compactions per
    session: each config's grouped replay equals its own replay, and configs whose compactions came out
    the same were replayed once (fewer calls stepped than the independent replays step)."""
    from workbench.replay import engine

    stepped = [0]
    original = engine._Cursor.step

    def counting(self, index):
        stepped[0] += 1
        return original(self, index)

    monkeypatch.setattr(engine._Cursor, "step", counting)
    sessions = _claude_code_sessions(corpus, tmp_path)
    assert sum(s.source is not None and "generated-" in s.source for s in sessions) == 3
    grouped_steps = alone_steps = splits = 0
    for session in sessions:
        strategies = [create("sm-compact", {**c, "trigger": {"pct_of_window": 40}}) for c in BRANCHING]
        stepped[0] = 0
        grouped = replay_group(session, strategies)
        grouped_steps += stepped[0]
        stepped[0] = 0
        alone = [replay_session(session, s) for s in strategies]
        alone_steps += stepped[0]
        for together, single in zip(grouped, alone, strict=True):
            assert together.steps == single.steps, session.id
            assert together.events == single.events, session.id
        splits += sum(len(r.events) > 1 for r in alone)
    assert splits > 0  # some sessions compact more than once, so branches split more than once
    assert grouped_steps < 0.6 * alone_steps
