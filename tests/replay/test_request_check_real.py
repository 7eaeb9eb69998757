"""The engine's incremental request check gives the rows a check from scratch gives, on the real corpus.

Every Claude Code session (``claude-code`` and ``claude-code-more``) and every session of the other
formats (SWE-agent, OpenHands, Gemini CLI, Aider, Codex), replayed through the strategies that check before
every call (masking and clearing rewrite the context each time) and two that compact by cutting, one of
them producing violations and repairs: the step and event rows must be equal.
"""

from __future__ import annotations

import pytest

from workbench.replay import engine, replay_session
from workbench.replay.validation import check_request
from workbench.strategies import create


def _from_scratch(context, *, thinking, original_thinking, memo, incremental, fresh_responses, grown=None):  # type: ignore[no-untyped-def]
    return check_request(
        context, thinking=thinking, original_thinking=original_thinking, fresh_responses=fresh_responses
    )


@pytest.mark.corpus
@pytest.mark.parametrize(
    "name",
    [
        "none",
        "recorded",
        "observation-masking",
        "clear-tool-uses",
        "openhands-observation-masking",
        "sm-compact-naive",
        "claude-code",
    ],
)
def test_incremental_checks_give_the_rows_of_whole_checks(
    every_session: list, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = violations = 0
    for session in every_session:
        incremental = replay_session(session, create(name))
        with monkeypatch.context() as patch:
            patch.setattr(engine, "check_request", _from_scratch)
            whole = replay_session(session, create(name))
        assert incremental.steps == whole.steps, session.id
        assert incremental.events == whole.events, session.id
        checked += len(whole.steps)
        violations += sum(row["violations"] + row["repaired"] for row in whole.steps)
    assert checked > 1000
    if name == "sm-compact-naive":
        assert violations > 0  # the comparison covers requests that fail and get repaired
