"""Claude Code's recorded ``content-replacement`` lines: the replay works on what the requests carried, so
a result the transcript keeps whole but Claude Code sent as a preview is not budgeted (and its saving not
subtracted) a second time (`workbench.transcript.replacements`)."""

from __future__ import annotations

import pytest

from workbench.replay import replay_session
from workbench.strategies import create
from workbench.synthetic.shapes import Shape, shaped_session
from workbench.transcript.export import session_bytes
from workbench.transcript.replacements import as_sent, recorded_replacements


def test_the_request_view_carries_the_recorded_preview() -> None:
    session = shaped_session(Shape(calls=10, batch=2, replaced_at=4))
    found = recorded_replacements(session.records)
    [(tool_use_id, preview)] = found.items()
    assert tool_use_id == "toolu_4_0" and preview.startswith("<persisted-output>")
    sent = as_sent(session.records)
    [whole] = [r for r in session.records if r.blocks and r.blocks[0].tool_use_id == tool_use_id]
    [replaced] = [r for r in sent if r.blocks and r.blocks[0].tool_use_id == tool_use_id]
    assert len(whole.blocks[0].result_text()) > 120_000 and replaced.blocks[0].result_text() == preview
    assert sum(a is b for a, b in zip(sent, session.records, strict=True)) == len(sent) - 1  # only that one
    assert as_sent(session.records, {}) == list(session.records)


def test_recorded_replacements_ignore_what_they_do_not_know() -> None:
    from workbench.transcript.model import Record

    lines = [
        Record(kind="content-replacement", raw={"replacements": "not a list"}),
        Record(kind="content-replacement", raw={"replacements": [{"kind": "image", "toolUseId": "a"}, 7]}),
        Record(kind="content-replacement", raw={"replacements": [{"toolUseId": "b", "replacement": "p"}]}),
    ]
    assert recorded_replacements(lines) == {"b": "p"}


@pytest.mark.parametrize("version", ["2.1.88", "2.1.140"])
def test_claude_code_does_not_budget_a_result_claude_code_already_replaced(version: str) -> None:
    """Without the recorded replacement the budget would persist the 120k result again and subtract its
    saving from a size whose recorded usage already counted only the preview: claude-code's estimate would
    fall ~15k tokens below the real context and it would compact that much later."""
    session = shaped_session(Shape(calls=14, batch=2, replaced_at=4, version=version))
    plain = replay_session(session, create("none"))
    ours = replay_session(session, create("claude-code"))
    assert [e["kind"] for e in ours.events] == []
    assert [s["context_tokens"] for s in ours.steps] == [s["context_tokens"] for s in plain.steps]


def test_the_session_itself_keeps_the_recorded_lines() -> None:
    session = shaped_session(Shape(calls=6, batch=2, replaced_at=2))
    before = session_bytes(session)
    replay_session(session, create("claude-code"))
    assert session_bytes(session) == before and all(not r.modified for r in session.records)
