"""The Claude Code loader on the real corpus and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli

from workbench.transcript import Record, Skip, load_paths, session_bytes
from workbench.transcript.claude_code import parse_line
from workbench.transcript.steps import api_calls


def _ingest(*args: str) -> tuple[int, dict]:
    result = run_cli("ingest", *args, "--json")
    assert "Traceback" not in result.output
    start = result.stdout.find("{")
    return result.exit_code, json.loads(result.stdout[start:]) if start >= 0 else {}


def test_real_corpus_every_line_is_a_record_and_round_trips(corpus: Path) -> None:
    code, data = _ingest(str(corpus / "claude-code"))
    assert code == 0
    assert data["lines"] == data["records"] + len(data["skipped"])
    assert data["skipped"] == []
    assert data["files"] == 20 and data["sessions"] == 22  # + 2 inline v1.0 sub-agent chains (5c0375b4)
    assert data["round_trip"] == {"checked": 20, "identical": 20, "different": []}
    assert data["by_kind"]["assistant"] == 1096 and data["by_kind"]["progress"] == 3825


def test_streaming_splits_stay_separate_records_in_file_order(main_sessions) -> None:
    session = next(s for s in main_sessions if s.id.startswith("258c7280"))
    records = session.conversation()
    calls = api_calls(records)
    split = [c for c in calls if len(c.indices) > 1]
    assert len(split) > 50
    for call in split:
        assert all(records[i].message_id == call.message_id for i in call.indices)
        assert list(call.indices) == sorted(call.indices)
    # every sibling is a copy of message_start: same request-side usage, and (v2.1.39 writes lines
    # before message_delta) no stop_reason persisted on any of them
    for call in split:
        inputs = {records[i].usage["cache_read_input_tokens"] for i in call.indices}
        assert len(inputs) == 1
        assert all(records[i].stop_reason is None for i in call.indices)


def test_subagents_are_linked_to_their_parent(claude_sessions) -> None:
    by_id = {s.id: s for s in claude_sessions}
    compact_agent = by_id["258c7280-ae70-4798-800f-63464d01a85d/agent-acompact-fffbd0"]
    assert compact_agent.is_subagent and compact_agent.parent_session_id in by_id
    assert all(r.is_sidechain for r in compact_agent.conversation())


def test_old_main_files_keep_embedded_sidechain_lines_out_of_the_conversation(main_sessions) -> None:
    session = next(s for s in main_sessions if s.id.startswith("5c0375b4"))
    assert any(r.is_sidechain for r in session.records)
    assert not any(r.is_sidechain for r in session.conversation())


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


GOOD = b'{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","sessionId":"s"}'


@pytest.mark.parametrize(
    ("payload", "line", "reason"),
    [
        (GOOD + b"\n" + GOOD[:40], 2, "invalid JSON"),
        (GOOD + b"\n{not json}\n", 2, "invalid JSON"),
        (GOOD + b'\n{"type":"user","message":{"role":"user","content":"caf\xe9"}}\n', 2, "invalid UTF-8"),
        (GOOD + b'\n{"uuid":"x"}\n', 2, "missing 'type' field"),
        (GOOD + b'\n{"type":"assistant","uuid":"x"}\n', 2, "assistant record without a 'message' object"),
        (GOOD + b'\n{"type":"user","message":{"role":"user","content":3}}\n', 2, "content must be a string or a list"),
        (GOOD + b"\n[1,2]\n", 2, "expected a JSON object"),
        (GOOD + b"\n\n" + GOOD + b"\n", 2, "blank line"),
    ],
)
def test_bad_lines_are_reported_with_file_line_and_reason(
    tmp_path: Path, payload: bytes, line: int, reason: str
) -> None:
    path = _write(tmp_path, "s.jsonl", payload)
    code, data = _ingest(str(path))
    assert code == 0
    assert data["lines"] == data["records"] + len(data["skipped"])
    [skip] = data["skipped"]
    assert skip["file"] == str(path) and skip["line"] == line and reason in skip["reason"]
    [session] = load_paths([path])
    assert session_bytes(session) == payload


def test_unknown_type_is_kept_and_warned(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.jsonl", GOOD + b'\n{"type":"brand-new-thing","x":1}\n')
    code, data = _ingest(str(path))
    assert code == 0 and data["records"] == 2 and data["skipped"] == []
    assert data["warnings"] == [{"file": str(path), "line": 2, "reason": "unknown type 'brand-new-thing', kept as is"}]


def test_a_fifty_megabyte_line_loads(tmp_path: Path) -> None:
    big = json.dumps({"type": "user", "uuid": "b", "message": {"role": "user", "content": "x" * 50_000_000}})
    path = _write(tmp_path, "big.jsonl", GOOD + b"\n" + big.encode() + b"\n")
    [session] = load_paths([path])
    assert len(session.records) == 2 and len(session.records[1].blocks[0].text) == 50_000_000


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing.jsonl", "path does not exist"),
        (lambda p: _write(p, "empty.jsonl", b""), "empty file"),
        (lambda p: (p / "d").mkdir() or _write(p / "d", "notes.txt", b"hello"), "no transcript records could be read"),
        (lambda p: (p / "e").mkdir() or p / "e", "folder holds no files"),
    ],
)
def test_nothing_readable_exits_non_zero_with_a_message(tmp_path: Path, make, message: str) -> None:
    target = make(tmp_path)
    result = run_cli("ingest", str(target))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert message in result.output


def test_parse_line_never_raises_on_odd_json() -> None:
    for data in [b"null", b"1", b'"s"', b'{"type":""}', b'{"type":7}', b"{" * 100_000]:
        item = parse_line(data, source="f", line_no=1)
        assert isinstance(item, Skip) and item.reason
    assert isinstance(parse_line(GOOD, source="f", line_no=1), Record)
