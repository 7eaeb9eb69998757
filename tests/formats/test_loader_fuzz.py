"""Property: type-confused fields never crash a loader, never lose an item, and leave only sane values.

Each format has a small valid seed covering its shapes (tool calls, usage, thinking, compaction, …).
Hypothesis replaces or deletes one to six fields anywhere in it (any depth, including a whole line)
with values of the wrong type: null, booleans, huge or negative integers, NaN, infinity, strings with
lone surrogates, lists, objects. Whatever it produces, the loader must return sessions whose
``lines == records + skipped``, the usage `load_paths` passes on must hold credible token counts only,
no loaded text may hold a lone surrogate, and export and the rough estimator must not fail. A
deterministic pass also swaps every single field of every seed to every JSON type (and deletes it),
which reliably finds the one-field bugs the random search may miss in a given run.
(Gemini ``parts: 5`` and SWE-agent ``tool_calls: true`` must not raise TypeError; the exhaustive pass
reaches ``candidates``, ``tool_calls`` and ``reasoning.summary`` of the Gemini, SWE-agent and Codex
loaders.)
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.cli import ingest_report
from workbench.tokens.estimators import get_estimator
from workbench.transcript import LoadReport, get_loader, load_paths, session_bytes
from workbench.transcript.export import ExportError
from workbench.transcript.hf import _foreign_sessions
from workbench.transcript.sanitize import MAX_TOKENS

CLAUDE = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s",
        "timestamp": "2025-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hi"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "x"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            ],
            "stop_reason": "tool_use",
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 5,
                "cache_read_input_tokens": 100,
                "output_tokens": 7,
                "cache_creation": {"ephemeral_5m_input_tokens": 5},
            },
        },
    },
    {
        "type": "user",
        "uuid": "u2",
        "parentUuid": "a1",
        "sessionId": "s",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    },
    {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": "auto", "preTokens": 1000},
    },
]

CODEX = [
    {"timestamp": "t", "type": "session_meta", "payload": {"id": "sid", "cli_version": "0.1"}},
    {"timestamp": "t", "type": "turn_context", "payload": {"model": "gpt-5"}},
    {
        "timestamp": "t",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    },
    {"timestamp": "t", "type": "response_item", "payload": {"type": "reasoning", "summary": [{"text": "r"}]}},
    {
        "timestamp": "t",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "shell", "arguments": '{"cmd": ["ls"]}', "call_id": "c1"},
    },
    {
        "timestamp": "t",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"last_token_usage": {"input_tokens": 10, "cached_input_tokens": 2, "output_tokens": 3}},
        },
    },
    {
        "timestamp": "t",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    },
    {"timestamp": "t", "type": "response_item", "payload": {"type": "custom_tool_call", "input": "x", "call_id": "c2"}},
    {"timestamp": "t", "type": "response_item", "payload": {"type": "local_shell_call", "action": {"command": ["ls"]}}},
    {"timestamp": "t", "type": "response_item", "payload": {"type": "web_search_call", "action": {"query": "q"}}},
    {"timestamp": "t", "type": "compacted", "payload": {"message": "summary"}},
    {"id": "old", "timestamp": "t", "instructions": "x"},
    {"record_type": "state"},
]

GEMINI = [
    {
        "method": "generateContentStream",
        "response": [
            {
                "candidates": [
                    {
                        "content": {
                            "parts": [
                                {"text": "think", "thought": True},
                                {"text": "a"},
                                {"functionCall": {"id": "f1", "name": "ls", "args": {"p": "."}}},
                                {"inlineData": {"mimeType": "x"}},
                            ]
                        },
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 10,
                    "cachedContentTokenCount": 2,
                    "candidatesTokenCount": 3,
                    "thoughtsTokenCount": 1,
                },
                "modelVersion": "gemini-2.5",
                "responseId": "r1",
            }
        ],
    },
    {
        "method": "generateContent",
        "response": {"candidates": [{"content": {"parts": [{"text": "<state_snapshot>x</state_snapshot>"}]}}]},
    },
    {"method": "countTokens", "response": {"totalTokens": 5}},
]

SWE = {
    "history": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task", "is_demo": False, "message_type": "observation"},
        {
            "role": "assistant",
            "content": "thought",
            "thinking_blocks": [{"type": "thinking", "thinking": "t"}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"c": 1}'}}],
            "agent": "main",
        },
        {"role": "tool", "content": [{"type": "text", "text": "out"}], "tool_call_ids": ["c1"]},
    ],
    "info": {"model_stats": {"tokens_sent": 10}},
    "replay_config": '{"agent": {"model": {"name": "gpt-4o"}}}',
    "trajectory": [{"response": "r", "observation": "o", "messages": []}],
}

OPENHANDS = [
    {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}, "timestamp": "t"},
    {
        "id": 1,
        "source": "agent",
        "action": "run",
        "args": {"command": "ls", "thought": "t"},
        "tool_call_metadata": {
            "function_name": "execute_bash",
            "tool_call_id": "c1",
            "model_response": {
                "id": "r1",
                "model": "claude",
                "choices": [
                    {
                        "message": {
                            "content": "text",
                            "tool_calls": [{"id": "c1", "function": {"name": "execute_bash", "arguments": "{}"}}],
                        }
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}},
            },
        },
        "timestamp": "t",
    },
    {"id": 2, "source": "agent", "observation": "run", "content": "out", "tool_call_metadata": {"tool_call_id": "c1"}},
    {"id": 3, "source": "agent", "action": "finish", "args": {"thought": "done"}},
    {"id": 4, "source": "agent", "observation": "agent_state_changed", "content": ""},
    {"id": 5, "source": "agent", "observation": "read", "content": "file"},
    {"id": 6, "source": "agent", "action": "browse", "args": {"thought": "look"}},
]

MESSAGES = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        "reasoning_content": "r",
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "cache_creation_input_tokens": 1},
        "model": "gpt",
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a"},
    {"role": "assistant", "content": [{"type": "text", "text": "done"}], "function_call": {"name": "f"}},
]

REQUEST = {
    "model": "claude",
    "system": "s",
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]},
    ],
}

GEMINI_SESSION = {
    "sessionId": "g1",
    "projectHash": "p",
    "startTime": "t",
    "messages": [
        {"id": "m0", "timestamp": "t", "type": "user", "content": "hi"},
        {
            "id": "m1",
            "type": "gemini",
            "content": [{"text": "a"}, {"inlineData": {}}],
            "model": "gemini-2.5-pro",
            "tokens": {"input": 10, "output": 2, "cached": 1, "thoughts": 1, "total": 14},
            "thoughts": [{"subject": "s", "description": "d"}],
            "toolCalls": [
                {
                    "id": "c1",
                    "name": "ls",
                    "args": {"p": "."},
                    "status": "success",
                    "result": [{"functionResponse": {"response": {"output": "a.py"}}}],
                },
                {
                    "id": "c2",
                    "name": "rm",
                    "args": {},
                    "status": "error",
                    "result": {"functionResponse": {"response": {"error": "no"}}},
                },
                {"id": "c3", "name": "x", "status": "cancelled"},
            ],
        },
        {"id": "m2", "type": "info", "content": "note"},
    ],
}

#: (format, file name, seed, "lines" = each top-level item is one JSONL line | "document")
CASES = [
    ("claude-code", "s.jsonl", CLAUDE, "lines"),
    ("codex", "rollout-1.jsonl", CODEX, "lines"),
    ("gemini-cli", "g.responses", GEMINI, "lines"),
    ("swe-agent", "t.traj", SWE, "document"),
    ("swe-agent", "steps.traj", {"trajectory": [{"response": "r", "observation": "o"}] * 2}, "document"),
    ("gemini-cli-session", "session-1.json", GEMINI_SESSION, "document"),
    ("openhands", "events.json", OPENHANDS, "document"),
    ("openhands", "wrapped.json", {"history": OPENHANDS, "instance_id": "i"}, "document"),
    ("anthropic-messages", "request.json", REQUEST, "document"),
    ("anthropic-messages", "requests.jsonl", [REQUEST, REQUEST], "lines"),
    ("chat-jsonl", "chat.jsonl", [{"id": "c", "messages": MESSAGES}, {"messages": MESSAGES[:2]}], "lines"),
    ("chat-jsonl", "messages.jsonl", MESSAGES, "lines"),
]

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**100),
    st.sampled_from([10**30, -1, 0, 2**63, 1.5, 12.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["\udc80", "a\ud800b", "", "user", "assistant", "tool_use", "text"]),
)
_KEYS = st.one_of(st.text(max_size=5), st.sampled_from(["type", "text", "content", "role", "id", "input_tokens"]))
#: One value of every JSON type (and the numbers and strings that broke things), drawn most of the time so
#: that a field's type is swapped often; arbitrary nested values otherwise.
_SWAPS = [None, True, False, 5, -1, 10**30, float("nan"), float("inf"), 1.5, "x", "", "\udc80", [], [5], {}, {"a": 5}]
_VALUES = st.one_of(
    st.sampled_from(_SWAPS),
    st.recursive(
        _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=6
    ),
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def _mutate(seed: Any, data: st.DataObject) -> Any:
    """Half of the picks are fields holding a list or an object: code iterates those, so swapping their
    type is what crashes a loader (a string where a string is checked rarely does)."""
    value = copy.deepcopy(seed)
    for _ in range(data.draw(st.integers(1, 6))):
        paths = [p for p in _paths(value) if p]
        if not paths:
            break
        containers = [p for p in paths if isinstance(_get(value, p), (dict, list))]
        pool = containers if containers and data.draw(st.booleans()) else paths
        path = data.draw(st.sampled_from(pool))
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(data.draw(_VALUES))
    return value


def _serialise(value: Any, layout: str) -> bytes:
    if layout == "lines" and isinstance(value, list):
        return "".join(json.dumps(item) + "\n" for item in value).encode("utf-8")
    return json.dumps(value).encode("utf-8")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _counts(usage: Any) -> Iterator[Any]:
    for key, value in usage.items():
        if isinstance(value, Mapping):
            yield from _counts(value)
        elif value is None or (isinstance(value, bool) and not key.endswith("_tokens")):
            continue  # None: a count the recording does not have; a boolean under another key is a flag
        elif key.endswith(("_tokens", "_requests")) or isinstance(value, (int, float)):
            yield value


def _check_sessions(sessions: list, report: LoadReport) -> None:
    rough = get_estimator("claude-rough")
    for session in sessions:
        assert session.lines == len(session.records) + len(session.skipped), session.id
        assert all(s.reason and s.line >= 1 for s in session.skipped)
        _exported_or_refused(session)
        for record in session.records:
            assert not any(_SURROGATE.search(s) for b in record.blocks for s in _strings(b.raw)), record
            if record.usage is not None:
                for count in _counts(record.usage):
                    assert type(count) is int and 0 <= count <= MAX_TOKENS, record.usage
            rough.count(record)
    ingest_report(sessions, report)


@pytest.mark.parametrize(("fmt", "name", "seed", "layout"), CASES, ids=[c[1] for c in CASES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_type_confused_fields(tmp_path_factory, fmt: str, name: str, seed: Any, layout: str, data) -> None:
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(_serialise(_mutate(seed, data), layout))
    direct = get_loader(fmt).load(path)  # the loader itself, no safety net: it must not raise
    assert direct and all(s.lines == len(s.records) + len(s.skipped) for s in direct)
    report = LoadReport()
    sessions = list(load_paths([path], format=fmt, report=report))
    assert not report.errors, report.errors
    _check_sessions(sessions, report)


#: The exhaustive pass: every field of every seed replaced by each of these (and deleted).
_EVERY_TYPE = [None, True, 7, 10**30, float("nan"), "x", "\udc80", [], [7], {}, {"a": 7}]


@pytest.mark.parametrize(("fmt", "name", "seed", "layout"), CASES, ids=[c[1] for c in CASES])
def test_every_field_swapped_to_every_type(tmp_path: Path, fmt: str, name: str, seed: Any, layout: str) -> None:
    """Deterministic complement of the property above: one field at a time, every field, every type."""
    loader = get_loader(fmt)
    path = tmp_path / name
    variants = 0
    for field_path in [p for p in _paths(seed) if p]:
        for swap in [*_EVERY_TYPE, "delete"]:
            value = copy.deepcopy(seed)
            parent = _get(value, field_path[:-1])
            if swap == "delete":
                if not isinstance(parent, dict):
                    continue
                del parent[field_path[-1]]
            else:
                parent[field_path[-1]] = copy.deepcopy(swap)
            path.write_bytes(_serialise(value, layout))
            try:
                sessions = loader.load(path)
            except Exception as exc:
                raise AssertionError(f"{name}: {field_path} = {swap!r}: {type(exc).__name__}: {exc}") from exc
            assert all(s.lines == len(s.records) + len(s.skipped) for s in sessions), (field_path, swap)
            variants += 1
    assert variants > 50


def test_seeds_load_cleanly(tmp_path: Path) -> None:
    """The seeds themselves are valid: every item is a record (so mutations start from real shapes)."""
    for fmt, name, seed, layout in CASES:
        path = tmp_path / name
        path.write_bytes(_serialise(seed, layout))
        sessions = get_loader(fmt).load(path)
        assert sessions and all(s.records and not s.skipped for s in sessions), (fmt, name, sessions)


PRESET_SEEDS = {
    "history": SWE["history"],
    "messages": MESSAGES,
    "trajectory": [{"role": "user", "content": "hi"}, {"role": "ai", "content": "a"}],
    "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "a"}],
}


@pytest.mark.parametrize("preset", sorted(PRESET_SEEDS))
def test_dataset_presets_every_field_swapped(preset: str) -> None:
    seed = {preset: PRESET_SEEDS[preset], "id": "r"}
    for field_path in [p for p in _paths(seed) if p]:
        for swap in _EVERY_TYPE:
            row = copy.deepcopy(seed)
            _get(row, field_path[:-1])[field_path[-1]] = copy.deepcopy(swap)
            for session in _foreign_sessions([row], list(row), preset, "fuzz", "fuzz.jsonl"):
                assert session.lines == len(session.records) + len(session.skipped), (field_path, swap)


@pytest.mark.parametrize("preset", sorted(PRESET_SEEDS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_dataset_presets_type_confused(preset: str, data) -> None:
    row = _mutate({preset: PRESET_SEEDS[preset], "id": "r"}, data)
    if preset not in row:
        row[preset] = None
    sessions = _foreign_sessions([row], list(row), preset, "fuzz", "fuzz.jsonl")
    for session in sessions:
        assert session.lines == len(session.records) + len(session.skipped), session.id
        _exported_or_refused(session)


def _exported_or_refused(session) -> None:
    """Export writes the session or refuses it with the reason (`ExportError`), never crashes."""
    try:
        session_bytes(session)
    except ExportError as exc:
        assert str(exc).startswith(f"session {session.id}: ")


_AIDER_LINES = [
    "# aider chat started at 2024-01-01 10:00:00",
    "#### hello  ",
    "#### /add file.py",
    "> Model: gpt-4o",
    "> Tokens: 1k sent",
    "",
    "reply text",
    "<thinking-content-7f>",
    "</thinking-content-7f>",
    "####",
    ">",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.one_of(st.sampled_from(_AIDER_LINES), st.text(max_size=10)), max_size=20),
    junk=st.binary(max_size=4),
)
def test_aider_markdown_fuzz(tmp_path_factory, lines: list[str], junk: bytes) -> None:
    path = tmp_path_factory.mktemp("aider") / ".aider.chat.history.md"
    text = "\n".join(lines).encode("utf-8", "surrogatepass")
    path.write_bytes(text + junk)
    sessions = get_loader("aider").load(path)
    assert sessions
    report = LoadReport()
    _check_sessions(list(load_paths([path], format="aider", report=report)), report)
