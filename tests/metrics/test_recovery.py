"""Measured recovery after recorded compactions (`workbench.metrics.recovery`, `workbench recovery`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from cli_helpers import run_cli
from record_builders import assistant, result, say, tool_use, user

from workbench.metrics.recovery import RECOVERY_COLUMNS, recovery
from workbench.transcript import load_paths
from workbench.transcript.model import Block, Record, Session


def _boundary(uuid: str) -> Record:
    raw = {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto", "preTokens": 1000}}
    return Record(kind="system", subtype="compact_boundary", uuid=uuid, raw=raw, blocks=(Block.text_block("c"),))


def _tool(n: int, name: str, content: str, **inputs: object) -> list[Record]:
    return [assistant(tool_use(f"t{n}", name, **inputs), message_id=f"m{n}"), result(f"t{n}", content)]


def _session() -> Session:
    records = [
        user("go"),
        *_tool(1, "Read", "a" * 100, file_path="/r/a.py"),
        *_tool(2, "Read", "b" * 40, file_path="/r/b.py"),
        *_tool(3, "Bash", "ok", command="pytest"),
        *_tool(4, "AskUserQuestion", "yes", questions=[{"question": "Which  db?"}]),
        _boundary("b1"),
        user("summary", is_compact_summary=True),
        *_tool(5, "Read", "a" * 100, file_path="/r/a.py"),
        *_tool(6, "Edit", "done", file_path="/r/b.py", old_string="x", new_string="y"),
        *_tool(7, "Read", "b" * 40, file_path="/r/b.py"),
        *_tool(8, "Read", "a" * 100, file_path="/r/a.py", offset=10),
        *_tool(9, "Bash", "ok", command="pytest"),
        *_tool(10, "Bash", "ok", command="pytest 2>&1"),
        *_tool(11, "AskUserQuestion", "yes", questions=[{"question": "Which db?"}]),
        *_tool(12, "Read", "c", file_path="/r/c.py"),
        say("done", message_id="m13"),
    ]
    records = [replace(r, uuid=r.uuid or f"u{i}", line_no=i + 1) for i, r in enumerate(records)]
    return Session(id="hand", records=tuple(records), source="hand.jsonl", format="claude-code")


def test_worked_example():
    row = recovery([_session()]).iloc[0]
    assert (row["line"], row["trigger"], row["pre_tokens"]) == (10, "auto", 1000)
    assert (row["rereads"], row["reread_files"], row["rereads_unedited"]) == (3, 2, 2)
    assert row["reread_tokens"] == 25 + 10 + 25  # chars/4 of the three re-read results
    assert row["first_rereads_tokens"] == 25 + 10
    assert (row["rerun_commands"], row["repeated_questions"]) == (1, 1)  # "pytest 2>&1" is not "pytest"
    assert row["recovery_calls"] == 4 and row["reread_paths"] == ["/r/a.py", "/r/b.py"]
    assert row["calls_after"] == 9


def test_segments_end_at_the_next_boundary():
    s = _session()
    records = list(s.records)
    cut = next(i for i, r in enumerate(records) if r.kind == "assistant" and r.message_id == "m8")
    records.insert(cut, _boundary("b2"))
    frame = recovery([s.with_records(records)])
    assert len(frame) == 2
    first, second = frame.iloc[0], frame.iloc[1]
    assert first["rereads"] == 2  # a.py (t5), b.py (t7); t8 is after the second boundary
    # segment before the second boundary = t5..t7: a.py and b.py read there, re-read a.py once (t8)
    assert second["rereads"] == 1 and second["rerun_commands"] == 0


def test_no_boundary_no_rows_and_subagents_skipped():
    s = _session()
    plain = s.with_records(r for r in s.records if not r.is_compact_boundary)
    assert recovery([plain]).empty
    assert list(recovery([plain]).columns) == list(RECOVERY_COLUMNS)


def _hand_count(path: Path) -> list[tuple[int, str, str]]:
    """(line, tool, key) of every Read/Bash tool_use on the main chain, straight from the JSON lines."""
    out = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        obj = json.loads(text)
        if obj.get("isSidechain"):
            continue
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            out.append((number, "boundary", ""))
        if obj.get("type") != "assistant":
            continue
        for block in obj["message"].get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block["name"] in ("Read", "Bash"):
                key = block["input"].get("file_path") if block["name"] == "Read" else block["input"].get("command")
                out.append((number, block["name"], key))
    return out


def test_hand_count_on_two_real_compactions(corpus: Path):
    """Hand count, two compactions of the real corpus.

    Procedure: list every main-chain ``Read``/``Bash`` tool_use of the file with its line (`_hand_count`,
    plain ``json.loads`` of each line, no workbench code), split at the ``compact_boundary`` line, and mark
    a Read after it as a re-read when the same ``file_path`` was Read before it.

    * ``claude-code/marot-spotter/8463c716…jsonl``, boundary at line 714 (auto, preTokens 167,731).
      Re-reads at lines 793 (assets/build.js, read at 591), 882 (transcript_renderer_test.exs: 59, 168,
      212), 898 (session_live.ex: 365, 467, 683), 919 (assets/package.json: 640), 941
      (transcript_renderer.ex: 40, 137), 1195 (config/dev.exs: 587), 1359 (session_live.ex again, offset
      355): 7 re-reads of 6 files. No Bash command after the boundary equals one before (``git status``
      vs ``git status 2>&1``, ``bd ready`` vs ``bd ready 2>&1``): 0 re-runs.
    * ``claude-code-more/smartagent-pai/24a90d02…jsonl``, boundary at line 346 (auto, preTokens
      126,389). Re-reads at lines 364, 365, 366 (the three SESSION_general-work.md files read at 336,
      337, 307); the Reads at 393, 394, 400, 406, 442, 473 are of files not read before: 3 re-reads of
      3 files, 0 re-runs.
    """
    cases = {
        corpus / "claude-code/marot-spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": (
            714,
            [793, 882, 898, 919, 941, 1195, 1359],
            6,
        ),
        corpus / "claude-code-more/smartagent-pai/24a90d02-9724-4548-9f4f-97bcb9f93ef3.jsonl": (
            346,
            [364, 365, 366],
            3,
        ),
    }
    for path, (boundary, lines, files) in cases.items():
        calls = _hand_count(path)
        cut = next(n for n, tool, _ in calls if tool == "boundary")
        assert cut == boundary
        before = {(tool, key) for n, tool, key in calls if n < cut}
        rereads = [n for n, tool, key in calls if n > cut and tool == "Read" and (tool, key) in before]
        reruns = [n for n, tool, key in calls if n > cut and tool == "Bash" and (tool, key) in before]
        assert rereads == lines and reruns == []
        row = recovery([s for s in load_paths([path]) if not s.is_subagent]).iloc[0]
        assert (row["line"], row["rereads"], row["reread_files"], row["rerun_commands"]) == (
            boundary,
            len(lines),
            files,
            0,
        )
    # 8463c716: the re-read results are ~67k characters (the figure): chars/4 → ~16.9k tokens
    row = recovery(load_paths([next(iter(cases))])).iloc[0]
    assert 16_000 < row["reread_tokens"] < 17_500


def test_every_recorded_compaction_of_the_corpus_is_listed(corpus: Path):
    sessions = list(load_paths([corpus / "claude-code", corpus / "claude-code-more"]))
    frame = recovery(sessions)
    expected = {
        (s.id, r.line_no) for s in sessions if not s.is_subagent for r in s.conversation() if r.is_compact_boundary
    }
    assert set(zip(frame["session_id"], frame["line"], strict=True)) == expected
    assert len(frame) == 10
    assert sorted(frame["trigger"]) == ["auto"] * 8 + ["manual"] * 2


def test_cli_json(corpus: Path):
    out = run_cli("recovery", str(corpus / "claude-code"), "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert len(data["compactions"]) == 3
    assert {c["line"] for c in data["compactions"]} == {714, 754, 1256}
    bad = run_cli("recovery", str(corpus / "claude-code"), "--estimator", "nope")
    assert bad.exit_code == 2
