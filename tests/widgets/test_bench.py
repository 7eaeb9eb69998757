"""benchmarks/bench_widgets.py: a slider move on the largest corpus session stays far under 100 ms."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from workbench.transcript.model import Session

pytestmark = pytest.mark.corpus

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_widgets.py"


def test_update_time_on_the_largest_session(claude_sessions: list[Session]) -> None:
    spec = importlib.util.spec_from_file_location("bench_widgets", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    largest = max(claude_sessions, key=lambda s: len(s.conversation()))
    result = bench.measure(largest, settings=((10_000, 40_000, 5), (40_000, 80_000, 10)))
    print(f"\nper update: median {result['median_ms']} ms, max {result['max_ms']} ms over {result['updates']}")
    assert result["updates"] == 2 * result["steps"]
    assert result["median_ms"] < bench.TARGET_MS / 4  # generous: shared CI machines
