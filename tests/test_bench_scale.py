"""benchmarks/bench_scale.py's report: the replay's time taken apart adds up to the replay's ratio."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_scale.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(wall: float, floor: float) -> dict[str, float]:
    return {"wall_s": wall, "x_floor": round(wall / floor, 2)}


def test_the_budget_parts_add_up_to_the_replay() -> None:
    floor = 0.5
    result = {
        "floor": _row(floor, floor),
        "start-up": _row(0.2, floor),
        "load warm": _row(0.7, floor),
        "replay none": _row(1.1, floor),
        "replay": _row(2.3, floor),
    }
    line = _bench()._budget(result)
    parts = [float(x) for x in re.findall(r"(-?\d+\.\d+)x", line)]
    assert parts == [0.4, 1.4, 0.4, 2.4]  # start-up, load, the engine (1.1 - 0.2 - 0.7), own work (2.3 - 1.1)
    assert abs(sum(parts) - result["replay"]["x_floor"]) < 0.02
