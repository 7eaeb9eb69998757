"""`workbench report --probes` end to end against the local fake API: the estimate first, the budget
refusal (nothing sent), the run with Claude's recorded compaction as the reference row, a cache hit that
makes no request, and the hard stop at the budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from fake_anthropic import FAKE_KEY, MESSAGES_PATH, FakeAnthropic
from test_online_probes import GENERATED, scripted

from workbench.replay import replay_frames, replay_sessions
from workbench.reporting.report import report, write_manifest
from workbench.strategies import create
from workbench.transcript import load_paths

MODEL = "claude-haiku-4-5"


def _line(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": "s-probe",
        "timestamp": f"2026-01-01T00:00:{n:02d}Z",
        **fields,
    }


def _assistant(n: int, content: dict[str, Any]) -> dict[str, Any]:
    message = {
        "id": f"m{n}",
        "role": "assistant",
        "model": MODEL,
        "content": [content],
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }
    return _line("assistant", n, message=message)


def _result(n: int, tool_id: str, text: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": tool_id, "content": text}]
    return _line("user", n, message={"role": "user", "content": content})


def _transcript(path: Path) -> Path:
    """A session with one recorded compaction (boundary + isCompactSummary) and a re-read after it."""
    code = "\n".join(f"def parse_{i}(value):  return value  # the date parser, part {i}" for i in range(40))
    lines = [
        _line("user", 0, message={"role": "user", "content": "Fix the failing date parser tests in utils"}),
        _assistant(1, {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/repo/utils/dates.py"}}),
        _result(2, "t1", code),
        _assistant(3, {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pytest tests"}}),
        _result(4, "t2", "FAILED tests/test_dates.py::test_iso - ValueError: bad month"),
        _assistant(5, {"type": "text", "text": "The month is not validated."}),
        _line(
            "system",
            6,
            subtype="compact_boundary",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 5000},
        ),
        _line(
            "user",
            7,
            isCompactSummary=True,
            message={"role": "user", "content": "Summary: fixing utils/dates.py; pytest tests fails on months."},
        ),
        _assistant(8, {"type": "tool_use", "id": "t3", "name": "Read", "input": {"file_path": "/repo/utils/dates.py"}}),
        _result(9, "t3", code),
        _assistant(10, {"type": "text", "text": "Fixed."}),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    source = _transcript(tmp_path / "s-probe.jsonl")
    sessions = list(load_paths([source]))
    root = tmp_path / "runs"
    for name, config in (("full-compact", {"trigger": {"pct_of_window": 0.5}}), ("recorded", {})):
        strategy = create(name, config)
        steps, events = replay_frames(replay_sessions(sessions, strategy, progress=False))
        folder = root / name
        folder.mkdir(parents=True)
        steps.to_parquet(folder / "steps.parquet")
        events.to_parquet(folder / "events.parquet")
        write_manifest(folder, name, strategy.config.model_dump(mode="json"), [source])
    return root


def _env(fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)


def test_budget_refusal_sends_nothing(fake: FakeAnthropic, results: Path, monkeypatch) -> None:
    _env(fake, monkeypatch)
    out = run_cli("report", str(results), "--probes", "--probe-budget-usd", "0.0001", "--probe-model", MODEL)
    assert out.exit_code == 2, out.output
    assert "probe estimate: $" in out.output and "upper bound" in out.output
    assert "above the budget $0.0001" in out.output and "nothing was sent" in out.output
    assert fake.calls() == []
    missing = run_cli("report", str(results), "--probes")
    assert missing.exit_code == 2 and "--probe-budget-usd" in missing.output


def test_run_reference_row_and_cache_hit(fake: FakeAnthropic, results: Path, monkeypatch) -> None:
    _env(fake, monkeypatch)
    fake.reply = scripted()
    out = run_cli("report", str(results), "--probes", "--probe-budget-usd", "5", "--probe-model", MODEL, "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output[out.output.index("{") :])
    run = data["probes"]["run"]
    sent = len(fake.calls(MESSAGES_PATH))
    assert run["events"] == run["events_probed"] == 2  # full-compact's compaction + Claude's recorded one
    assert run["requests"] == sent == 2 * (1 + 4 + 4) and run["not_probed"] == []
    assert 0 < run["spent_usd"] <= run["estimate_usd"] <= 5
    rows = {r["strategy"]: r for r in data["probes"]["strategies"]}
    assert set(rows) == {"full-compact", "claude-recorded"}  # the recorded run's event is the reference row
    assert rows["claude-recorded"]["probes"] == 4 and rows["claude-recorded"]["probe_score"] is not None
    # the reference row answers from Claude's recorded summary
    answers = [c["body"] for c in fake.calls(MESSAGES_PATH) if "pytest tests fails on months" in json.dumps(c["body"])]
    assert answers
    # again: every request is a cache hit; the estimate says so and nothing is sent
    again = run_cli("report", str(results), "--probes", "--probe-budget-usd", "0", "--probe-model", MODEL, "--json")
    assert again.exit_code == 0, again.output
    second = json.loads(again.output[again.output.index("{") :])["probes"]["run"]
    assert len(fake.calls(MESSAGES_PATH)) == sent
    assert second["estimated_requests"] == 0 and second["cached_requests"] == sent and second["spent_usd"] == 0
    assert second["events_probed"] == 2


def test_stops_at_the_budget(fake: FakeAnthropic, results: Path) -> None:
    """The first response reports a huge usage (more than the estimate foresaw): the run stops before
    the next request that could pass the budget and lists what was not probed."""
    body = {
        "id": "msg_big",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": GENERATED}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 600_000, "output_tokens": 10},
    }
    fake.enqueue(MESSAGES_PATH, 200, body)
    fake.reply = scripted()
    data = report(results, probes={"budget_usd": 0.5, "client": fake.client(), "model": MODEL})
    run = data["probes"]["run"]
    assert len(fake.calls(MESSAGES_PATH)) == 1 and run["requests"] == 1
    # Haiku 4.5 prices; the one response larger than its bound is the only overrun possible
    assert run["spent_usd"] == pytest.approx(600_000 * 1.0 / 1e6 + 10 * 5.0 / 1e6)
    assert run["events_probed"] == 0 and len(run["not_probed"]) == 2
    assert any("probe budget $0.50 reached" in n for n in data["notes"])


def test_sweep_probes(fake: FakeAnthropic, tmp_path: Path, monkeypatch) -> None:
    """`workbench sweep --report --probes`: refused above the budget (nothing sent), then run with
    Claude's recorded compaction of the embedded data as the reference row."""
    repo = Path(__file__).resolve().parents[2]
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f'name: probes\ncorpus: ["{repo / "data"}"]\nmetrics: [savings]\nstrategies:\n  - name: sm-compact\n',
        encoding="utf-8",
    )
    _env(fake, monkeypatch)
    fake.reply = scripted()
    base = [
        "sweep",
        str(spec),
        "--store",
        str(tmp_path / "s"),
        "--executor",
        "inline",
        "--report",
        str(tmp_path / "r"),
        "--probes",
        "--probe-model",
        MODEL,
    ]
    refused = run_cli(*base, "--probe-budget-usd", "0.0001")
    assert refused.exit_code == 2 and "above the budget" in refused.output and fake.calls() == []
    out = run_cli(*base, "--probe-budget-usd", "20")
    assert out.exit_code == 0, out.output
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    assert "## Judge probes" in summary and "claude-recorded" in summary and "sm-compact" in summary
    assert (tmp_path / "r" / "probes.csv").stat().st_size > 0 and fake.calls(MESSAGES_PATH)
