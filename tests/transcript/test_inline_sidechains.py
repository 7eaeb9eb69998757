"""Claude Code v1.0.x inline sub-agent chains (``isSidechain: true`` lines in the main file) become sub-agent
sessions, while the main session still owns (and exports) every line of the file."""

import json

import pytest

from workbench.replay import replay_sessions
from workbench.strategies import create
from workbench.transcript import load_paths
from workbench.transcript.export import round_trips, session_bytes
from workbench.transcript.steps import api_calls


def _write(path, lines):
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines), encoding="utf-8")


def _msg(kind, uuid, parent, *, side=False, mid=None, text="t"):
    message = {"role": kind, "content": [{"type": "text", "text": text}]}
    if kind == "assistant":
        message.update(id=mid, model="claude-sonnet-4-20250514", usage={"input_tokens": 5, "output_tokens": 5})
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": side,
        "sessionId": "main",
        "timestamp": "2025-09-07T09:52:09.443Z",
        "message": message,
    }


def test_inline_chains_become_sub_agent_sessions(tmp_path):
    path = tmp_path / "main.jsonl"
    lines = [
        _msg("user", "m1", None),
        _msg("assistant", "m2", "m1", mid="a"),
        _msg("user", "aaaaaaaa-1", None, side=True),  # chain 1 (Task prompt: no parent)
        _msg("assistant", "s2", "aaaaaaaa-1", side=True, mid="b"),
        _msg("user", "bbbbbbbb-1", None, side=True),  # chain 2
        _msg("assistant", "t2", "bbbbbbbb-1", side=True, mid="c"),
        _msg("user", "s3", "s2", side=True),  # back to chain 1, interleaved
        _msg("assistant", "s4", "s3", side=True, mid="d"),
        _msg("assistant", "m3", "m2", mid="e"),
    ]
    _write(path, lines)
    main, *inline = load_paths([path])
    assert [s.id for s in inline] == ["main/agent-aaaaaaaa", "main/agent-bbbbbbbb"]
    assert [len(api_calls(s.conversation())) for s in inline] == [2, 1]
    assert all(s.is_subagent and s.is_inline and s.parent_session_id == "main" for s in inline)
    assert len(api_calls(main.conversation())) == 2
    assert main.lines == len(main.records) + len(main.skipped) == 9  # the main session owns every line
    assert session_bytes(main) == path.read_bytes() and round_trips(main)
    assert all(round_trips(s) is None for s in inline)  # views: not exported on their own


@pytest.mark.corpus
def test_claude_code_viewer_inline_sub_agents_are_replayed(corpus):
    path = corpus / "claude-code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    sessions = list(load_paths([path]))
    assert [s.id.split("/")[-1] for s in sessions[1:]] == ["agent-6340ddef", "agent-83e2917c"]
    calls = [len(api_calls(s.conversation())) for s in sessions]
    assert sum(calls[1:]) == 10  # the 10 sub-agent API calls that were dropped before
    steps = [row for s in sessions for row in replay_sessions([s], create("none"))[0].steps]
    assert len(steps) == sum(calls)
    assert session_bytes(sessions[0]) == path.read_bytes()
    for name in ("claude-code-more/obra-episodic-memory/large-conversation.jsonl",):
        assert len(list(load_paths([corpus / name]))) == 1  # v1.0.117/120: no inline sidechains
