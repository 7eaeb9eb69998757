from __future__ import annotations

import json
from pathlib import Path

from workbench.transcript import load_paths


def test_a_messages_request_becomes_a_session(tmp_path: Path) -> None:
    request = {
        "model": "claude-sonnet-4-5",
        "system": "be brief",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a\nb"}]},
        ],
    }
    path = tmp_path / "req.json"
    path.write_text(json.dumps(request))
    [session] = load_paths([path])
    assert session.format == "anthropic-messages"
    assert [r.kind for r in session.records] == ["user", "assistant", "user"]
    assert session.records[0].string_content and session.records[0].text == "list files"
    assert session.records[1].tool_use_ids() == ["t1"] and session.records[2].tool_result_ids() == ["t1"]
    assert session.metadata["request"]["system"] == "be brief"
    assert "usage" not in session.capabilities and "message_ids" not in session.capabilities
    assert session.lines == len(session.records) + len(session.skipped)


def test_jsonl_of_requests_reports_bad_lines(tmp_path: Path) -> None:
    good = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}]})
    path = tmp_path / "reqs.jsonl"
    path.write_text(good + "\n" + '{"model": "m", "messages": 3}\n')
    sessions = list(load_paths([path]))
    assert len(sessions) == 2
    assert [s.reason for s in sessions[0].skipped] == ["messages.1: role must be 'user' or 'assistant', found 'bot'"]
    assert "no 'messages' list" in sessions[1].skipped[0].reason and sessions[1].skipped[0].line == 2
