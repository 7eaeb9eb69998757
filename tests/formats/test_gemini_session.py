"""Gemini CLI's own saved sessions (``chats/session-*.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.transcript import detect, load_paths
from workbench.transcript.steps import api_calls

SAMPLE = "same-task-three-agents/gemini-cli-pomodoro-timer.json"


def _doc(messages: list) -> dict:
    return {
        "sessionId": "s-1",
        "projectHash": "ab" * 32,
        "startTime": "2025-10-21T20:04:20.819Z",
        "lastUpdated": "2025-10-21T20:08:49.642Z",
        "messages": messages,
    }


def test_real_sample_is_detected_and_every_message_kept(corpus: Path) -> None:
    path = corpus / SAMPLE
    assert detect(path).name == "gemini-cli-session"
    (session,) = load_paths([path])
    raw = json.loads(path.read_text())
    assert session.id == raw["sessionId"] and session.format == "gemini-cli-session"
    assert not session.skipped and session.lines == len(session.records)
    assert session.models == ("gemini-2.5-pro",)
    assert session.capabilities == {"uuids", "message_ids", "usage", "timestamps"}
    user = [r for r in session.records if r.kind == "user" and r.string_content]
    gemini = [r for r in session.records if r.kind == "assistant"]
    assert len(user) == sum(m["type"] == "user" for m in raw["messages"]) == 5
    assert len(gemini) == sum(m["type"] == "gemini" for m in raw["messages"]) == 14
    assert len(api_calls(session.records)) == 14  # one response = one API call
    calls = [c for m in raw["messages"] for c in m.get("toolCalls", [])]
    uses = [b for r in gemini for b in r.blocks if b.kind == "tool_use"]
    results = [b for r in session.records for b in r.blocks if b.kind == "tool_result"]
    assert [u.id for u in uses] == [c["id"] for c in calls] == [r.tool_use_id for r in results]
    assert uses[0].name == "write_file" and uses[0].input == calls[0]["args"]
    assert results[0].result_text().startswith("Successfully created and wrote to new file")
    failed = [r for r, c in zip(results, calls, strict=True) if c["status"] == "error"]
    assert len(failed) == 1 and failed[0].is_error and "0 occurrences found" in failed[0].result_text()


def test_tokens_become_usage_and_all_zero_tokens_are_not_recorded(corpus: Path) -> None:
    (session,) = load_paths([corpus / SAMPLE])
    gemini = [r for r in session.records if r.kind == "assistant"]
    assert gemini[0].usage is None  # the sample's first response: every count 0
    # second response: input 7269 (promptTokenCount, cached included), cached 5811, output 46, thoughts 58
    assert gemini[1].usage == {"input_tokens": 7269 - 5811, "cache_read_input_tokens": 5811, "output_tokens": 104}
    assert gemini[1].model == "gemini-2.5-pro" and gemini[1].timestamp == "2025-10-21T20:04:54.195Z"


def test_thought_summaries_are_kept_raw_not_as_thinking_blocks(corpus: Path) -> None:
    (session,) = load_paths([corpus / SAMPLE])
    first = next(r for r in session.records if r.kind == "assistant")
    assert first.raw["thoughts"][0]["subject"] == "Beginning the Build"
    assert all(b.kind != "thinking" for r in session.records for b in r.blocks)


def test_other_json_formats_are_not_stolen(corpus: Path) -> None:
    for path in sorted((corpus / "openhands").glob("*.json")):
        assert detect(path).name == "openhands", path
    for path in (corpus / "same-task-three-agents").glob("*.jsonl"):
        assert detect(path).name in ("claude-code", "codex"), path


def test_parts_content_other_types_missing_results_and_bad_messages(tmp_path: Path) -> None:
    doc = _doc(
        [
            {"id": "u1", "timestamp": "t", "type": "user", "content": [{"text": "fix it"}, {"text": "now"}]},
            {
                "id": "g1",
                "timestamp": "t",
                "type": "gemini",
                "content": "",
                "model": "gemini-2.5-flash",
                "tokens": {"input": 100, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 105},
                "toolCalls": [
                    {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "cancelled"}
                ],
            },
            {"id": "i1", "timestamp": "t", "type": "info", "content": "Request cancelled."},
            "not a message",
        ]
    )
    path = tmp_path / "session-2025-10-21T20-04-s1.json"
    path.write_text(json.dumps(doc, indent=2))
    assert detect(path).name == "gemini-cli-session"
    (session,) = load_paths([path])
    kinds = [(r.kind, r.uuid) for r in session.records]
    assert kinds == [("user", "u1"), ("assistant", "g1"), ("user", "g1/results"), ("event", "i1")]
    assert session.records[0].text == "fix it\nnow"
    result = session.records[2].blocks[0]
    assert result.is_error and result.tool_use_id == "c1" and "status cancelled" in result.result_text()
    assert [s.reason for s in session.skipped] == ["messages[3]: expected a message object, found str"]
    assert session.lines == len(session.records) + len(session.skipped)


def test_a_broken_file_is_one_skip(tmp_path: Path) -> None:
    path = tmp_path / "session-x.json"
    path.write_text('{"sessionId": "s", "projectHash": "p", "messages": [')
    (session,) = load_paths([path])
    assert not session.records and len(session.skipped) == 1 and "invalid JSON" in session.skipped[0].reason


@pytest.mark.parametrize("body", [{"history": []}, [{"id": 1, "action": "message"}], {"messages": [], "model": "m"}])
def test_lookalikes_are_not_gemini_sessions(tmp_path: Path, body) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(body))
    loader = detect(path)
    assert loader is None or loader.name != "gemini-cli-session"
