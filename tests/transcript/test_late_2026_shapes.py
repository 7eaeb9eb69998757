"""Record shapes of Claude Code 2.1.1xx–2.1.2xx transcripts: read as Claude Code wrote them, nothing warned
about that Claude Code itself writes, and the usage it under-recorded before 2.1.152 restored."""

from __future__ import annotations

import json
from pathlib import Path

from hostile import claude_lines

from workbench.metrics.bill import recorded_bill
from workbench.tokens.context import prompt_tokens
from workbench.transcript import load_paths
from workbench.transcript.claude_code import KNOWN_TYPES
from workbench.transcript.sanitize import ZERO_CACHE_WRITES

#: Entry types and system subtypes seen in real 2.1.x transcripts (docs/peers.md, "Late 2026").
LATE_TYPES = (
    "permission-mode",
    "ai-title",
    "last-prompt",
    "agent-name",
    "mode",
    "custom-title",
    "pr-link",
    "attachment",
    "queue-operation",
)
LATE_SUBTYPES = ("away_summary", "stop_hook_summary", "microcompact_boundary")


def _write(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n")  # as written
    return path


def test_late_record_types_are_known_and_not_warned_about(tmp_path: Path) -> None:
    assert set(LATE_TYPES) <= KNOWN_TYPES
    lines = [json.loads(line) for line in claude_lines("s1")]
    extra = [{"type": kind, "sessionId": "s1", "uuid": f"x-{kind}"} for kind in LATE_TYPES if kind != "attachment"]
    systems = [
        {"type": "system", "subtype": sub, "sessionId": "s1", "uuid": f"y-{sub}", "parentUuid": lines[-1]["uuid"]}
        for sub in LATE_SUBTYPES
    ]
    [session] = load_paths([_write(tmp_path, [*lines, *extra, *systems])])
    assert session.metadata.get("warnings", []) == [] and session.metadata.get("unknown_types", []) == []
    assert len(session.records) == len(lines) + len(extra) + len(systems)


def test_cache_writes_recorded_only_in_the_breakdown_are_restored(tmp_path: Path) -> None:
    """Before 2.1.152 a transcript could hold ``cache_creation_input_tokens: 0`` beside a nested breakdown
    with the real writes: the loader takes the breakdown's total (and says so), so the measured request
    size counts them; a recorded non-zero total is left alone. The recorded bill already priced the
    breakdown (ccusage's ``cost.rs`` reads it whenever it is there) and stays ccusage's figure."""
    lines = [json.loads(line) for line in claude_lines("s1")]
    calls = [line for line in lines if line["type"] == "assistant"]
    for n, line in enumerate(lines):
        line["timestamp"] = f"2026-03-01T10:00:0{n}.000Z"  # ccusage bills only timestamped lines
    calls[0]["message"]["usage"] |= {
        "cache_creation_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 4_000, "ephemeral_1h_input_tokens": 1_000},
    }
    calls[1]["message"]["usage"] |= {
        "cache_creation_input_tokens": 700,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
    }
    path = _write(tmp_path, lines)
    [session] = load_paths([path])
    usages = [r.usage for r in session.records if r.kind == "assistant"]
    assert usages[0]["cache_creation_input_tokens"] == 5_000 and usages[1]["cache_creation_input_tokens"] == 700
    [warning] = session.metadata["warnings"]
    assert warning["reason"] == ZERO_CACHE_WRITES and warning["line"] == 2 and warning["file"] == str(path)
    assert [r.raw["message"]["usage"]["cache_creation_input_tokens"] for r in session.records[1:2]] == [0]
    assert prompt_tokens(usages[0]) == 100 + 1_000 + 5_000
    first = recorded_bill(session)[0]
    assert (first.cache_write_5m, first.cache_write_1h) == (4_000, 1_000)  # from the line as written
