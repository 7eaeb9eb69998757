"""``full-compact --set compact_by_hand_at=P``: the user's ``/compact`` between turns once the context passes
P% of the window (what `workbench advise` weighs as "by hand")."""

from __future__ import annotations

import pytest

from workbench.replay import replay_session
from workbench.request.normalize import is_sent
from workbench.strategies import create
from workbench.strategies.full_compact import FullCompact
from workbench.strategies.recent_window import is_prompt

RECORDED = {"summarizer": "recorded"}


@pytest.mark.corpus
def test_by_hand_compacts_between_turns_past_the_share(main_sessions, monkeypatch) -> None:
    """Every by-hand compaction comes before the first call of a user turn (the last sent record is the user's
    prompt, not a tool result), with the context past the share; it never adds a rejected request."""
    fired = []
    original = FullCompact.by_hand

    def watched(self, view, trigger):
        found = original(self, view, trigger)
        if found:
            fired.append((view, trigger))
        return found

    monkeypatch.setattr(FullCompact, "by_hand", watched)
    manual = violating = violating_before = 0
    for session in main_sessions:
        by_hand = replay_session(session, create("full-compact", {**RECORDED, "compact_by_hand_at": 40}))
        as_recorded = replay_session(session, create("full-compact", RECORDED))
        manual += sum(e["trigger"] == "manual" for e in by_hand.events) - sum(
            e["trigger"] == "manual" for e in as_recorded.events
        )
        violating += sum(r["violations"] > 0 for r in by_hand.steps)
        violating_before += sum(r["violations"] > 0 for r in as_recorded.steps)
    assert manual > 0 and fired  # the share is low enough to be passed: this can fail
    for view, trigger in fired:
        assert view.tokens >= trigger.context_window * 0.40
        sent = [r for r in view.records if is_sent(r) and not (r.kind == "user" and r.is_meta and not r.tool_results())]
        last = sent[-1]
        assert is_prompt(last) and not last.tool_results()
    assert violating <= violating_before


def test_the_share_is_a_percentage() -> None:
    with pytest.raises(ValueError):
        create("full-compact", {"compact_by_hand_at": 0})
    with pytest.raises(ValueError):
        create("full-compact", {"compact_by_hand_at": 120})
    assert create("full-compact", {"compact_by_hand_at": 55}).config.compact_by_hand_at == 55
