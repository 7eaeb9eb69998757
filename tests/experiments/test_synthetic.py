from __future__ import annotations

import json

from workbench.cli import ingest_report
from workbench.synthetic import generate_session, write_corpus
from workbench.transcript import LoadReport, load_paths

from .conftest import DATA


def test_embedded_corpus_loads_without_skips_and_is_small():
    report = LoadReport()
    sessions = list(load_paths([DATA], report=report))
    data = ingest_report(sessions, report)
    assert data["skipped"] == [] and data["errors"] == [] and data["warnings"] == []
    assert data["lines"] == data["records"] > 500
    assert data["subagent_sessions"] == 1
    assert data["round_trip"]["identical"] == data["round_trip"]["checked"] == data["files"]
    assert sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file()) < 2_000_000


def test_embedded_corpus_is_what_the_generator_writes(tmp_path):
    write_corpus(tmp_path)
    ours = sorted(p.relative_to(DATA) for p in DATA.rglob("*.jsonl"))
    assert ours == sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.jsonl"))
    for path in ours:
        assert (tmp_path / path).read_bytes() == (DATA / path).read_bytes()


def test_shapes_streaming_splits_parallel_tools_and_threshold():
    from workbench.tokens.context import get_token_usage, prompt_tokens
    from workbench.transcript.steps import api_calls

    sessions = list(load_paths([DATA]))
    records = [r for s in sessions for r in s.conversation()]
    calls = [c for s in sessions for c in api_calls(s.conversation())]
    assert any(len(c.indices) > 1 for c in calls)  # split responses
    by_session = {s.id: s.conversation() for s in sessions}
    parallel = interleaved = 0
    for s in sessions:
        recs = by_session[s.id]
        for call in api_calls(recs):
            uses = sum(len(recs[i].tool_uses()) for i in call.indices)
            parallel += uses > 1
            span = recs[call.first : call.last + 1]
            interleaved += any(r.kind == "user" and r.tool_results() for r in span)
    assert parallel and interleaved
    assert any(len(b.result_text()) > 5000 for r in records for b in r.tool_results())
    peak = max(prompt_tokens(get_token_usage(r)) for r in records if get_token_usage(r))
    assert peak > 160_000  # recorded usage climbs to the threshold ...
    boundaries = [r for r in records if r.is_compact_boundary]
    assert boundaries and boundaries[0].compact_metadata["preTokens"] >= 167_000  # ... and Claude Code compacts there
    from workbench.replay import replay_session
    from workbench.strategies import create

    longest = max(sessions, key=lambda s: len(s.records))
    assert max(r["context_tokens"] for r in replay_session(longest, create("none")).steps) >= 167_000


def test_generator_is_seeded():
    assert generate_session(7, target_tokens=30_000) == generate_session(7, target_tokens=30_000)
    assert generate_session(7, target_tokens=30_000) != generate_session(8, target_tokens=30_000)
    json.loads(generate_session(7, target_tokens=30_000)[0])
