"""Recorded Codex compactions (``compacted`` rollout items, ``context_compacted`` events) read as recorded
compactions: boundaries for ``recovery`` and the reality checks, the summary as an ``isCompactSummary`` user
message for a replay that reproduces them. The corpus holds no Codex compaction; the rollout is built from
the documented shape (``RolloutItem::Compacted``: ``message``, ``replacement_history``, ``window_id``)."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.metrics.recovery import recovery_rows
from workbench.replay import replay_session
from workbench.replay.reproduction import recorded_compactions
from workbench.strategies.base import Strategy, StrategyConfig
from workbench.transcript import load_paths
from workbench.transcript.codex import compaction_summary
from workbench.transcript.steps import api_calls

SUMMARY = "Another language model started to solve this problem.\nRead a.py, tests pass."


def _message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _item(payload: dict) -> dict:
    return {"type": "response_item", "payload": payload}


def _shell(call_id: str, *command: str) -> list[dict]:
    usage = {"info": {"last_token_usage": {"input_tokens": 1_000, "cached_input_tokens": 0, "output_tokens": 10}}}
    return [
        _item(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": list(command)}),
                "call_id": call_id,
            }
        ),
        {"type": "event_msg", "payload": {"type": "token_count", **usage}},
        _item({"type": "function_call_output", "call_id": call_id, "output": "contents of " + " ".join(command)}),
    ]


def _event(kind: str) -> dict:
    return {"type": "event_msg", "payload": {"type": kind}}


LOCAL = {
    "type": "compacted",
    "payload": {
        "message": SUMMARY,
        "replacement_history": [_message("user", "read a.py and run the tests"), _message("user", SUMMARY)],
    },
}
REMOTE = {
    "type": "compacted",
    "payload": {
        "message": "",
        "replacement_history": [
            _message("user", "and now b.py"),
            {"type": "compaction", "encrypted_content": "gAAAAB"},
        ],
        "window_id": "w2",
    },
}


def _rollout(tmp_path: Path) -> tuple[Path, list[str]]:
    lines = [
        {"type": "session_meta", "payload": {"id": "s-compact", "cli_version": "0.130.0"}},
        {"type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        _item(_message("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")),
        _item(_message("user", "read a.py and run the tests")),
        *_shell("c1", "cat", "a.py"),
        *_shell("c2", "pytest"),
        LOCAL,  # a local compaction mid-turn, with the event legacy rollouts write beside it
        _event("context_compacted"),
        *_shell("c3", "cat", "a.py"),
        *_shell("c4", "pytest"),
        _item(_message("assistant", "done")),
        _item(_message("user", "and now b.py")),
        _event("context_compacted"),  # no compacted item in this gap: a compaction without its summary
        *_shell("c5", "cat", "a.py"),
        REMOTE,
        *_shell("c6", "cat", "b.py"),
    ]
    text = [json.dumps({"timestamp": f"2026-03-01T10:{i:02d}:00Z", **line}) for i, line in enumerate(lines)]
    path = tmp_path / "rollout-2026-03-01T10-00-00-s-compact.jsonl"
    path.write_text("\n".join(text) + "\n")
    return path, text


def test_compacted_items_and_lone_events_are_boundaries(tmp_path: Path) -> None:
    path, text = _rollout(tmp_path)
    [session] = load_paths([path])
    boundaries = [r for r in session.records if r.is_compact_boundary]
    assert [(r.line_no, r.is_compact_summary) for r in boundaries] == [(11, True), (21, False), (25, True)]
    local, lone, remote = boundaries
    assert local.text == SUMMARY and not lone.text
    assert remote.text == "and now b.py\n\n[compaction: 6 characters encrypted]"
    # the event beside the compacted item is the same compaction: it stays an event
    assert session.records[11].kind == "event_msg" and session.records[11].subtype == "context_compacted"
    assert "compact_boundaries" in session.capabilities
    # lossless: every record is its line, the re-labelled event included
    assert [r.to_line() for r in session.records] == text


def test_the_summary_reads_as_claude_codes_compact_summary(tmp_path: Path) -> None:
    [session] = load_paths([_rollout(tmp_path)[0]])
    local, lone, _ = [r for r in session.records if r.is_compact_boundary]
    summary = compaction_summary(local)
    assert summary is not None and summary.kind == "user" and summary.string_content and summary.is_compact_summary
    assert summary.text == SUMMARY and summary.uuid == f"{local.uuid}:summary"
    assert compaction_summary(lone) is None
    assert compaction_summary(session.records[3]) is None


def test_recovery_counts_what_was_run_again_after_each_codex_compaction(tmp_path: Path) -> None:
    [session] = load_paths([_rollout(tmp_path)[0]])
    rows = recovery_rows(session)
    assert [row["line"] for row in rows] == [11, 21, 25]
    assert [row["rerun_commands"] for row in rows] == [2, 1, 0]  # cat a.py + pytest; cat a.py; b.py is new
    assert all(row["trigger"] is None and row["pre_tokens"] is None for row in rows)  # Codex records neither
    assert [row["calls_after"] for row in rows] == [3, 1, 1]


def test_the_reality_checks_list_them_and_a_replay_sees_the_recorded_summary(tmp_path: Path) -> None:
    [session] = load_paths([_rollout(tmp_path)[0]])
    listed = recorded_compactions(session)
    assert [c.step for c in listed] == [2, 5, 6] and {c.model for c in listed} == {"gpt-5-codex"}
    assert len(api_calls(session.conversation())) == 7

    seen = []

    class Spy(Strategy):
        name = "spy-recorded"
        Config = StrategyConfig

        def compact(self, view, state):  # type: ignore[no-untyped-def]
            if view.recorded is not None:
                seen.append((view.step, view.recorded))
            return None

    replay_session(session, Spy())
    assert [step for step, _ in seen] == [2, 5, 6]
    (_, local), (_, lone), (_, remote) = seen
    assert local.summary is not None and local.summary.is_compact_summary and local.summary.text == SUMMARY
    assert lone.summary is None
    assert remote.summary is not None and remote.summary.text.startswith("and now b.py")
