"""`KeptIndex` names what each event kept exactly as comparing the whole history does (`rows.kept_columns`).

Replays with the index and with every event named the whole way must give equal event rows: on every real
session of every format, through strategies that rewrite in place (the index's short path), cut, splice or
summarise (its rebuild), and on synthetic sessions whose records share uuids or have none (a uuid held by
a rewritten record and by a kept one was kept; one held only by rewritten records was not).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import make_session

from workbench.replay import kept as kept_module
from workbench.replay import replay_session
from workbench.replay.kept import KeptIndex
from workbench.replay.rows import kept_columns
from workbench.strategies import create
from workbench.strategies.base import Compaction, ContextView, Strategy
from workbench.strategies.rewrite import in_place
from workbench.transcript import Session

STRATEGIES = [
    ("observation-masking", {}),
    ("clear-tool-uses", {"trigger": {"type": "input_tokens", "value": 2_000}, "keep": {"value": 2}}),
    ("openhands-observation-masking", {"attention_window": 10}),
    ("microcompact-truncate", {"context_window": 20_000, "pct_of_window": 40, "keep_chars": 300}),
    ("claude-code", {}),
    ("sm-compact-naive", {}),
    ("openhands-recent", {"max_events": 30}),
]


def _whole(index: KeptIndex, context: Any, compaction: Any, kept: Any, history: Any, before: int) -> Any:
    return kept_columns(kept(), history())


def _both(sessions: list[Session], name: str, config: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(events, events the index named without the whole comparison), asserting equal rows."""
    whole_calls = []
    counted = kept_module.kept_columns

    def counting(*args: Any) -> Any:
        whole_calls.append(1)
        return counted(*args)

    events = 0
    for session in sessions:
        with monkeypatch.context() as patch:
            patch.setattr(kept_module, "kept_columns", counting)
            ours = replay_session(session, create(name, config))
        with monkeypatch.context() as patch:
            patch.setattr(KeptIndex, "event", _whole)
            theirs = replay_session(session, create(name, config))
        assert ours.events == theirs.events, session.id
        assert ours.steps == theirs.steps, session.id
        events += len(ours.events)
    return events, events - len(whole_calls)


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "config"), STRATEGIES)
def test_real_events_name_what_the_whole_comparison_names(
    every_session: list, name: str, config: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, short = _both(every_session, name, config, monkeypatch)
    assert events > 10
    if name in ("observation-masking", "clear-tool-uses", "openhands-observation-masking", "microcompact-truncate"):
        assert short > events / 2  # in place: mostly named from the index


def _shared_uuids(seed: int) -> Session:
    """A session where some records take an earlier record's uuid, and some have none."""
    session = make_session(turns=6, tools=4, result_chars=600)
    records = list(session.records)
    for i in range(3, len(records), 5):
        records[i] = replace(records[i], uuid=records[i - 1 - seed % 3].uuid)
    for i in range(4 + seed, len(records), 11):
        records[i] = replace(records[i], uuid=None)
    return replace(session, records=records)


@pytest.mark.parametrize("name", ["observation-masking", "clear-tool-uses", "openhands-observation-masking"])
def test_shared_and_missing_uuids_are_named_as_the_whole_comparison_names_them(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "observation-masking": {"keep_last_turns": 2},
        "clear-tool-uses": {"trigger": {"type": "tool_uses", "value": 3}, "keep": {"value": 1}},
        "openhands-observation-masking": {"attention_window": 6},
    }[name]
    _, short = _both([_shared_uuids(seed) for seed in range(6)], name, config, monkeypatch)
    assert short > 100  # the index's short path (a rebuild is what the real sessions' cutting strategies take)


class _Scripted(Strategy):
    """Before each call, at random: nothing, rewrite a few records in place (``changed_at``; sometimes under
    another uuid), or drop some records (a cut: the index is rebuilt)."""

    name = "scripted"

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        rng, old = self.rng, list(view.records)
        roll = rng.random()
        if roll < 0.25 or len(old) < 2:
            return None
        if roll < 0.8:
            at = sorted(rng.sample(range(len(old)), rng.randint(1, min(3, len(old)))))
            new = list(old)
            for i in at:
                new[i] = replace(old[i], uuid=f"n{rng.randrange(3)}") if rng.random() < 0.15 else replace(old[i])
            return in_place(self.name, "t", old, new, {}, changed_at=tuple(at))
        gone = set(rng.sample(range(len(old)), rng.randint(1, len(old) - 1)))
        return in_place(self.name, "t", old, [r for i, r in enumerate(old) if i not in gone], {})


@settings(max_examples=150, deadline=None)
@given(
    uuids=st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "e", "n0"])), min_size=40),
    seed=st.integers(0, 10**6),
)
def test_scripted_compactions_over_shared_uuids_name_what_the_whole_comparison_names(uuids: list, seed: int) -> None:
    session = make_session(turns=3, tools=3, result_chars=50)
    records = [replace(r, uuid=uuids[i % len(uuids)]) for i, r in enumerate(session.records)]
    session = replace(session, records=records)
    with pytest.MonkeyPatch.context() as patch:
        ours = replay_session(session, _Scripted(seed))
        patch.setattr(KeptIndex, "event", _whole)
        theirs = replay_session(session, _Scripted(seed))
    assert ours.events == theirs.events
