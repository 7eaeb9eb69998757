"""The SWE-agent, OpenHands, Gemini CLI, Aider, Codex and chat-JSONL loaders: real data and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.transcript import LoadReport, Session, detect, get_loader, load_paths

FOLDERS = {"swe-agent": "swe-agent", "openhands": "openhands", "gemini-cli": "gemini-cli", "aider": "aider"}


def _check(session: Session) -> None:
    assert session.lines == len(session.records) + len(session.skipped), session.id
    for skip in session.skipped:
        assert skip.file and skip.line >= 1 and skip.reason


def _tool_pairs_ok(session: Session) -> None:
    """Every tool_use id is unique and every tool_result answers an earlier tool_use."""
    seen: set[str] = set()
    for record in session.records:
        for block_id in record.tool_use_ids():
            assert block_id not in seen, (session.id, block_id)
            seen.add(block_id)
        for result_id in record.tool_result_ids():
            assert result_id in seen, (session.id, result_id)


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", sorted(FOLDERS))
def test_real_corpus_loads_without_skips(corpus: Path, fmt: str) -> None:
    report = LoadReport()
    sessions = list(load_paths([corpus / FOLDERS[fmt]], report=report))
    assert sessions and not report.errors
    assert {Path(i["file"]).name for i in report.ignored} <= {"LICENSE.source.txt"}
    for session in sessions:
        assert session.format == fmt
        _check(session)
        assert not session.skipped, session.skipped
        assert session.records
        _tool_pairs_ok(session)
        assert len({r.uuid for r in session.records}) == len(session.records)


@pytest.mark.corpus
def test_swe_agent_function_calling(corpus: Path) -> None:
    path = corpus / "swe-agent" / "trajectories__demonstrations__function_calling_simple.traj"
    (session,) = get_loader("swe-agent").load(path)
    kinds = [r.kind for r in session.records]
    assert kinds[:4] == ["system", "user", "assistant", "user"]
    use = session.records[2].tool_uses()[0]
    assert isinstance(use.input, dict) and use.name
    assert session.records[3].tool_result_ids() == [use.id]
    assert session.capabilities == frozenset()


@pytest.mark.corpus
def test_swe_agent_reused_ids_are_renamed(corpus: Path) -> None:
    paths = sorted((corpus / "swe-agent").glob("*function_calling_replace__install*.traj"))
    (session,) = get_loader("swe-agent").load(paths[0])
    assert session.metadata["renamed_tool_ids"] > 0
    assert any("#" in i for r in session.records for i in r.tool_use_ids())
    assert session.models == ("gpt-4o",)


@pytest.mark.corpus
def test_openhands_tool_calls_and_usage(corpus: Path) -> None:
    (session,) = get_loader("openhands").load(corpus / "openhands" / "basic_gui_mode.json")
    assert {"timestamps", "usage", "message_ids"} <= session.capabilities
    calls = [r for r in session.records if r.tool_uses()]
    assert calls and all(r.message_id and r.usage for r in calls)
    assert calls[0].usage["cache_creation_input_tokens"] == 3435
    assert next(r.subtype for r in session.records if r.kind == "event") == "agent_state_changed"
    assert session.models == ("claude-3-5-sonnet-20241022",)


@pytest.mark.corpus
def test_gemini_model_side_only(corpus: Path) -> None:
    (session,) = get_loader("gemini-cli").load(
        corpus / "gemini-cli" / "context-compress-interactive.compress.responses"
    )
    assert all(r.kind == "assistant" for r in session.records)
    assert session.records[0].stop_reason == "MALFORMED_FUNCTION_CALL"
    assert session.records[1].usage == {"input_tokens": 399, "cache_read_input_tokens": 11883, "output_tokens": 268}
    assert [r.is_compact_summary for r in session.records] == [False, False, True, True]
    assert session.metadata["model_side_only"]


@pytest.mark.corpus
def test_aider_runs_and_thinking(corpus: Path) -> None:
    sessions = get_loader("aider").load(corpus / "aider" / "aider.chat.history.md")
    assert len(sessions) == 19
    assert all(s.records[0].kind == "session_start" and s.records[0].timestamp for s in sessions)
    thinking = [r for s in sessions for r in s.records if any(b.kind == "thinking" for b in r.blocks)]
    assert len(thinking) == 1 and thinking[0].blocks[-1].text.startswith("You haven't shared")
    assert sessions[-1].models == ("gemini/gemini-2.5-pro-preview-05-06",)
    first_user = next(r for r in sessions[1].records if r.kind == "user")
    assert first_user.text == "What can you say about this package?"


# ---------------------------------------------------------------- hand-made fixtures, bad input

CODEX = [
    {
        "timestamp": "2025-09-01T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "0199-abc", "timestamp": "2025-09-01T10:00:00Z", "cwd": "/w", "cli_version": "0.36.0"},
    },
    {
        "timestamp": "2025-09-01T10:00:00.100Z",
        "type": "turn_context",
        "payload": {"cwd": "/w", "approval_policy": "on-request", "model": "gpt-5-codex", "summary": "auto"},
    },
    {
        "timestamp": "2025-09-01T10:00:01.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
    },
    {
        "timestamp": "2025-09-01T10:00:02.000Z",
        "type": "response_item",
        "payload": {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "**Listing**"}],
            "content": None,
            "encrypted_content": "gAAA",
        },
    },
    {
        "timestamp": "2025-09-01T10:00:02.500Z",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "call_1"},
    },
    {
        "timestamp": "2025-09-01T10:00:02.600Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {
                "last_token_usage": {
                    "input_tokens": 5000,
                    "cached_input_tokens": 4000,
                    "output_tokens": 50,
                    "total_tokens": 5050,
                }
            },
        },
    },
    {
        "timestamp": "2025-09-01T10:00:03.000Z",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "call_1", "output": '{"output":"a\\nb\\n"}'},
    },
    {
        "timestamp": "2025-09-01T10:00:04.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a and b"}]},
    },
    {
        "timestamp": "2025-09-01T10:04:30.000Z",
        "type": "response_item",
        "payload": {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}},
    },
    {"timestamp": "2025-09-01T10:05:00.000Z", "type": "compacted", "payload": {"message": "summary so far"}},
]


def test_codex_rollout(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2025-09-01T10-00-00-0199-abc.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in CODEX) + '\n{"truncated\n')
    assert detect(path).name == "codex"
    (session,) = load_paths([path])
    _check(session)
    _tool_pairs_ok(session)
    assert session.id == "0199-abc" and session.client_version == "0.36.0" and session.models == ("gpt-5-codex",)
    kinds = [r.kind for r in session.records]
    assert kinds == [
        "session_meta",
        "turn_context",
        "user",
        "assistant",
        "assistant",
        "event_msg",
        "user",
        "assistant",
        "response_item",
        "system",
    ]
    assert session.records[3].blocks[0].kind == "thinking"
    assert session.records[4].usage == {"input_tokens": 1000, "cache_read_input_tokens": 4000, "output_tokens": 50}
    assert session.records[4].tool_uses()[0].input == {"command": ["ls"]}
    assert session.records[-2].subtype == "ghost_snapshot" and not session.records[-2].has_content
    assert session.records[-1].is_compact_boundary and session.records[-1].is_compact_summary
    assert {"timestamps", "usage", "thinking", "compact_boundaries"} <= session.capabilities
    (skip,) = session.skipped
    assert skip.line == len(CODEX) + 1 and skip.reason.startswith("invalid JSON") and skip.file == str(path)


def test_chat_jsonl_message_per_line(tmp_path: Path) -> None:
    lines = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
        {"role": "assistant", "content": "Rain."},
        {"role": "wizard", "content": "?"},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert detect(path).name == "chat-jsonl"
    (session,) = load_paths([path])
    _check(session)
    _tool_pairs_ok(session)
    assert [r.kind for r in session.records] == ["system", "user", "assistant", "user", "assistant"]
    assert session.records[2].tool_uses()[0].input == {"city": "Oslo"}
    assert session.skipped[0].line == 6 and "unknown role" in session.skipped[0].reason


def test_chat_jsonl_conversations_forced(tmp_path: Path) -> None:
    conv = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        ]
    }
    path = tmp_path / "convs.jsonl"
    path.write_text(json.dumps(conv) + "\nnot json\n")
    assert detect(path).name == "anthropic-messages"  # not stolen from the Messages loader
    sessions = list(load_paths([path], format="chat-jsonl"))
    assert len(sessions) == 2
    for session in sessions:
        _check(session)
    assert sessions[0].records[1].text == "hello"
    assert sessions[1].skipped[0].line == 2


def test_anthropic_request_not_stolen(tmp_path: Path) -> None:
    body = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    for name in ("req.json", "req.jsonl"):
        path = tmp_path / name
        path.write_text(json.dumps(body) + "\n")
        assert detect(path).name == "anthropic-messages"


@pytest.mark.parametrize(
    ("name", "fmt", "data"),
    [
        ("run.traj", "swe-agent", b'{"history": [{"role": "system", "content": "x"}, {"role": "as'),
        ("events.json", "openhands", b'[{"id": 0, "source": "user", "action": "message", "args": {"content": "h'),
        ("x.responses", "gemini-cli", b'{"method":"generateContent","response":{"candidates":[]}}\n{"method":"gen'),
        ("rollout-x.jsonl", "codex", b'{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}\n\xff\xfe\n'),
        ("h.chat.jsonl", "chat-jsonl", b'{"role":"user","content":"hi"}\n{"role":"assistant","content":'),
    ],
)
def test_truncated_input_gives_skip(tmp_path: Path, name: str, fmt: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert detect(path).name == fmt
    sessions = list(load_paths([path]))
    skips = [s for session in sessions for s in session.skipped]
    assert skips and all(s.file == str(path) and s.line >= 1 and s.reason for s in skips)
    for session in sessions:
        _check(session)


def test_bad_items_inside_valid_files(tmp_path: Path) -> None:
    traj = tmp_path / "t.traj"
    traj.write_text(json.dumps({"history": [{"role": "system", "content": "s"}, 7, {"role": "alien"}]}))
    (session,) = load_paths([traj])
    _check(session)
    assert [s.line for s in session.skipped] == [2, 3]
    events = tmp_path / "e.json"
    events.write_text(
        json.dumps(
            [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}, {"id": 1, "source": "agent"}]
        )
    )
    (session,) = load_paths([events])
    _check(session)
    assert session.skipped[0].line == 2 and "neither" in session.skipped[0].reason


def test_aider_bad_utf8_and_blocks(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_bytes(
        b"\n# aider chat started at 2025-01-01 10:00:00\n\n> Model: gpt-4o with diff edit format  \n\n"
        b"#### hello  \n#### there\n\nHi!\n\nSecond paragraph \xff.\n\n> Tokens: 1k sent, 5 received.  \n"
    )
    (session,) = load_paths([path])
    _check(session)
    assert [r.kind for r in session.records] == ["session_start", "tool_output", "user", "tool_output"]
    assert session.records[2].text == "hello\nthere"
    assert session.skipped[0].line == 9 and "invalid UTF-8" in session.skipped[0].reason
    assert session.models == ("gpt-4o",)
