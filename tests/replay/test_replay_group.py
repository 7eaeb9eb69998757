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
        replay_group(main_sessions[0], [create("sm-compact"), create("sm-compact", {"tool_calls_between_updates": 5})])
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
    sessions = _claude_code_sessions(corpus, tmp_path)
    assert sum(s.source is not None and "generated-" in s.source for s in sessions) == 3
    configs = [{**c, "trigger": {"pct_of_window": 40}} for c in BRANCHING]
    grouped_steps, alone_steps, replays = _grouped_and_alone(sessions, configs, monkeypatch)
    splits = sum(len(r.events) > 1 for alone in replays for r in alone)
    assert splits > 0  # some sessions compact more than once, so branches split more than once
    assert grouped_steps < 0.6 * alone_steps


def _grouped_and_alone(sessions, configs, monkeypatch):
    """``(calls the groups stepped, calls the replays alone stepped, [each session's replays alone])`` of
    `sm-compact` with ``configs`` over ``sessions``; each grouped replay is checked equal to its own."""
    from workbench.replay import engine

    stepped = [0]
    original = engine._Cursor.step

    def counting(self, index):
        stepped[0] += 1
        return original(self, index)

    monkeypatch.setattr(engine._Cursor, "step", counting)
    grouped_steps = alone_steps = 0
    replays = []
    for session in sessions:
        strategies = [create("sm-compact", c) for c in configs]
        stepped[0] = 0
        grouped = replay_group(session, strategies)
        grouped_steps += stepped[0]
        stepped[0] = 0
        alone = [replay_session(session, s) for s in strategies]
        alone_steps += stepped[0]
        for together, single in zip(grouped, alone, strict=True):
            assert together.steps == single.steps, session.id
            assert together.events == single.events, session.id
        replays.append(alone)
    return grouped_steps, alone_steps, replays


#: Triggers that fire at different calls (and one that never fires on short sessions), each with two keep
#: windows: the branch splits where the triggers disagree, and again where the windows do.
TRIGGERS = [
    {"trigger": {"pct_of_window": 40}},
    {"trigger": {"pct_of_window": 40}, "min_tokens": 40_000, "max_tokens": 80_000},
    {"trigger": {"pct_of_window": 60}},
    {"trigger": {"pct_of_window": 60}, "min_tokens": 40_000, "max_tokens": 80_000},
    {},  # Claude Code's own threshold
    {"trigger": {"pct_override": 50}, "min_tokens": 5_000, "max_tokens": 20_000},
]


@pytest.mark.corpus
@pytest.mark.parametrize("order", ["as listed", "reversed"])
def test_configs_with_other_triggers_share_the_replay_and_change_no_result(corpus, monkeypatch, tmp_path, order):
    """Configs differing in their trigger are one group (`trigger_only`): over every Claude Code session of
    the corpus and generated ones, each grouped replay equals its own, whichever config leads the group,
    the triggers did fire at different calls, and the group stepped fewer calls than the replays alone."""
    configs = TRIGGERS if order == "as listed" else TRIGGERS[::-1]
    sessions = _claude_code_sessions(corpus, tmp_path)
    grouped_steps, alone_steps, replays = _grouped_and_alone(sessions, configs, monkeypatch)
    first_compactions = {
        (session.id, r.events[0]["step"])
        for session, alone in zip(sessions, replays, strict=True)
        for r in alone
        if r.events
    }
    sessions_compacting = {sid for sid, _ in first_compactions}
    assert len(first_compactions) > len(sessions_compacting)  # the triggers fired at different calls
    assert grouped_steps < 0.6 * alone_steps


def test_trigger_keys_name_only_the_trigger() -> None:
    from workbench.strategies.base import prefix_key, trigger_key

    low, high = create("sm-compact", {"trigger": {"pct_of_window": 40}}), create("sm-compact")
    assert prefix_key(low) == prefix_key(high)
    assert trigger_key(low) != trigger_key(high)
    wider = create("sm-compact", {"min_tokens": 20_000})
    assert trigger_key(wider) == trigger_key(high)
    # a strategy whose trigger also shapes its state between compactions declares none: not grouped
    assert prefix_key(create("claude-code", {"sm": {"trigger": {"pct_override": 60}}})) != prefix_key(
        create("claude-code")
    )
