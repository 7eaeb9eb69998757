"""Repeated searches, fetches and sub-agent calls after a compaction: measured (`workbench.metrics.recovery`)
and predicted (`workbench.metrics.expected_recovery`), with the keys of `workbench.metrics.acquisitions`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from record_builders import assistant, result, say, tool_use, user

from workbench.metrics.acquisitions import acquisitions
from workbench.metrics.carried import mentions
from workbench.metrics.expected_recovery import expected_recovery_events
from workbench.metrics.recovery import recovery
from workbench.transcript.model import Block, Record, Session

HITS = "\n".join(f"/repo/lib/module_{n}.py:{n}: def parse_tokens_{n}(stream, options):" for n in range(6))


def _boundary() -> Record:
    raw = {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto", "preTokens": 9}}
    return Record(kind="system", subtype="compact_boundary", raw=raw, blocks=(Block.text_block("c"),))


def _tool(n: int, name: str, content: str, **inputs: Any) -> list[Record]:
    return [assistant(tool_use(f"t{n}", name, **inputs), message_id=f"m{n}"), result(f"t{n}", content)]


def _session(before: dict[str, Any], after: dict[str, Any], tool: str = "Grep", content: str = HITS) -> Session:
    records = [
        user("find the parser"),
        *_tool(1, tool, content, **before),
        _boundary(),
        user("summary of the work so far", is_compact_summary=True),
        *_tool(2, tool, content, **after),
        say("done", message_id="m3"),
    ]
    records = [replace(r, uuid=f"u{i}", line_no=i + 1) for i, r in enumerate(records)]
    return Session(id="hand", records=tuple(records), source="hand.jsonl", format="claude-code")


def _row(before: dict[str, Any], after: dict[str, Any], tool: str = "Grep") -> Any:
    return recovery([_session(before, after, tool)]).iloc[0]


def test_a_grep_repeated_with_the_same_pattern_counts():
    row = _row({"pattern": "def parse", "path": "/repo/lib"}, {"pattern": "def parse", "path": "/repo/lib/"})
    assert row["repeated_searches"] == 1
    assert row["repeated_search_tokens"] == pytest.approx(len(HITS) / 4, abs=2)
    assert row["recovery_calls"] == 1 and row["recovery_tokens"] == row["repeated_search_tokens"]
    assert row["first_reacquisitions_tokens"] == row["repeated_search_tokens"]
    assert row["rereads"] == 0 and row["first_rereads_tokens"] == 0


def test_a_grep_with_another_pattern_or_scope_does_not():
    assert _row({"pattern": "def parse"}, {"pattern": "def tokenize"})["repeated_searches"] == 0
    assert (
        _row({"pattern": "def parse", "path": "/repo/lib"}, {"pattern": "def parse", "path": "/repo/test"})[
            "repeated_searches"
        ]
        == 0
    )
    assert _row({"pattern": "parse", "glob": "*.py"}, {"pattern": "parse", "glob": "*.rs"})["repeated_searches"] == 0
    assert _row({"pattern": "parse"}, {"pattern": "parse", "-i": True})["repeated_searches"] == 0
    row = _row({"pattern": "def parse"}, {"pattern": "def tokenize"})
    assert row["recovery_calls"] == 0 and row["recovery_tokens"] == 0


def test_output_options_do_not_make_another_search():
    before = {"pattern": "def parse", "output_mode": "files_with_matches"}
    after = {"pattern": "def parse", "output_mode": "content", "-n": True, "-C": 3, "head_limit": 20}
    assert _row(before, after)["repeated_searches"] == 1
    assert _row({"pattern": "**/*.py"}, {"pattern": "**/*.py", "path": "."}, "Glob")["repeated_searches"] == 1
    assert _row({"pattern": "**/*.py"}, {"pattern": "**/*.ts"}, "Glob")["repeated_searches"] == 0


def test_web_fetches_and_searches():
    fetch = _row(
        {"url": "http://Docs.Example.com/api/#auth", "prompt": "auth"},
        {"url": "https://docs.example.com/api"},
        "WebFetch",
    )
    assert fetch["repeated_fetches"] == 1 and fetch["repeated_fetch_tokens"] > 0
    other = _row({"url": "https://docs.example.com/api"}, {"url": "https://docs.example.com/api?v=2"}, "WebFetch")
    assert other["repeated_fetches"] == 0
    search = _row({"query": "pydantic  frozen model"}, {"query": "Pydantic frozen model"}, "WebSearch")
    assert search["repeated_fetches"] == 1
    assert _row({"query": "pydantic frozen"}, {"query": "attrs frozen"}, "WebSearch")["repeated_fetches"] == 0


def test_sub_agent_calls():
    prompt = "Find every caller of parse_tokens and report their arguments."
    same = {"prompt": prompt + "  ", "subagent_type": "Explore", "description": "find callers"}
    row = _row({"prompt": prompt, "subagent_type": "Explore", "description": "callers"}, same, "Task")
    assert row["repeated_tasks"] == 1 and row["repeated_task_tokens"] > 0 and row["recovery_calls"] == 1
    assert _row({"prompt": prompt}, {"prompt": "Find every caller of tokenize."}, "Task")["repeated_tasks"] == 0
    assert (
        _row({"prompt": prompt, "subagent_type": "Explore"}, {"prompt": prompt, "subagent_type": "Plan"}, "Task")[
            "repeated_tasks"
        ]
        == 0
    )


def test_a_search_before_the_segment_before_is_not_compared():
    """Only the segment before the boundary counts; a repeat inside the segment after is not recovery."""
    session = _session({"pattern": "a"}, {"pattern": "b"})
    records = list(session.records)
    records.insert(-1, assistant(tool_use("t9", "Grep", pattern="b"), message_id="m9"))
    records.insert(-1, result("t9", HITS))
    row = recovery([session.with_records(records)]).iloc[0]
    assert row["repeated_searches"] == 0


def test_subjects_for_mentions():
    session = _session({"pattern": "parse_tokens", "path": "/repo"}, {"pattern": "x"})
    grep = acquisitions(list(session.records))[0]
    assert grep.kind == "search" and grep.named == "parse_tokens"
    assert mentions(grep.named, grep.kind, "searched for parse_tokens in lib/")
    assert not mentions(grep.named, grep.kind, "searched for the tokenizer")


def _event(**changes: Any) -> dict[str, Any]:
    return {
        "session_id": "hand",
        "strategy": "s",
        "config_hash": "c",
        "kind": "full-compact",
        "step": 1,
        "dropped_uuids": ["u0", "u1", "u2"],
        "summary": "Looked for the parser.",
        "added_text": None,
        **changes,
    }


def _strategy_session(before: dict[str, Any], after: dict[str, Any], tool: str = "Grep") -> Session:
    records = [
        user("find the parser"),
        *_tool(1, tool, HITS, **before),  # step 0; the compaction happens before step 1
        *_tool(2, tool, HITS, **after),  # step 1
        say("done", message_id="m3"),
    ]
    records = [replace(r, uuid=f"u{i}") for i, r in enumerate(records)]
    return Session(id="hand", records=tuple(records), format="claude-code")


def test_the_estimate_predicts_a_repeated_search():
    session = _strategy_session({"pattern": "def parse"}, {"pattern": "def parse", "output_mode": "content"})
    row = expected_recovery_events(session, [_event()]).iloc[0]
    assert row["lost_keys"] == 1 and row["expected_recovery_calls"] == 1 and row["expected_repeated_calls"] == 1
    assert row["expected_recovery_tokens"] == pytest.approx(len(HITS) / 4, abs=2)
    assert row["expected_recovery_files"] == 0  # a search is not a file


def test_the_estimate_counts_nothing_for_another_pattern_or_carried_hits():
    other = _strategy_session({"pattern": "def parse"}, {"pattern": "def tokenize"})
    assert expected_recovery_events(other, [_event()]).iloc[0]["expected_repeated_calls"] == 0
    same = _strategy_session({"pattern": "def parse"}, {"pattern": "def parse"})
    carried = expected_recovery_events(same, [_event(summary="Grep hits:\n" + HITS)]).iloc[0]
    assert carried["carried_keys"] == 1 and carried["expected_repeated_calls"] == 0
    kept = expected_recovery_events(same, [_event(dropped_uuids=["u0"])]).iloc[0]
    assert kept["lost_keys"] == 0 and kept["expected_repeated_calls"] == 0


def test_the_estimate_predicts_fetches_and_sub_agents():
    fetch = _strategy_session({"url": "https://example.com/a/"}, {"url": "https://example.com/a"}, "WebFetch")
    assert expected_recovery_events(fetch, [_event()]).iloc[0]["expected_repeated_calls"] == 1
    task = _strategy_session({"prompt": "map the parser"}, {"prompt": "map  the parser"}, "Task")
    row = expected_recovery_events(task, [_event(summary="Ran a sub-agent: map the parser")]).iloc[0]
    assert row["expected_repeated_calls"] == 1 and row["expected_recovery_mentioned_calls"] == 1
