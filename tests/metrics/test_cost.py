import json

import pandas as pd
import pytest

from workbench.metrics import calibrate_cost, cost_sessions, load_pricing, price_for, simulate_cache
from workbench.metrics.cost import SessionCallInfo
from workbench.replay import replay_frames, replay_sessions
from workbench.strategies import create
from workbench.transcript import Session

CORPUS_MODELS = [
    "claude-opus-4-6",
    "claude-opus-4-5-20251101",
    "claude-sonnet-4-5-20250929",
    "claude-sonnet-4-20250514",
    "claude-haiku-4-5-20251001",
]


def test_pricing_table_covers_the_corpus_models():
    table = load_pricing()
    for model in CORPUS_MODELS:
        price = table[model]
        assert price.cache_write_5m == pytest.approx(1.25 * price.input)
        assert price.cache_write_1h == pytest.approx(2 * price.input)
        assert price.cache_read == pytest.approx(0.1 * price.input)
    assert price_for("claude-opus-4-6[1m]").model == "claude-opus-4-6"
    assert price_for("claude-haiku-4-5").model == "claude-haiku-4-5-20251001"


def _info(n):
    return SessionCallInfo(
        models=["claude-opus-4-6"] * n,
        times=[60.0 * i for i in range(n)],
        output=[100] * n,
        usage=[None] * n,
        static_prefix=0,
        ttl=300.0,
        rough_before={},
        scale=1.0,
    )


def test_worked_example():
    steps = pd.DataFrame(
        {
            "session_id": "x",
            "strategy": "s",
            "step": [0, 1, 2],
            "context_tokens": [10_000, 12_000, 3_000],
            "tokens_without_compaction": [10_000, 12_000, 14_000],
        }
    )
    events = pd.DataFrame(
        [
            {
                "session_id": "x",
                "strategy": "s",
                "kind": "full-compact",
                "step": 2,
                "keep_start": 5,
                "dropped_uuids": [],
                "tokens_before": 14_000,
                "tokens_after": 3_000,
                "summary": "x" * 4_000,
            }
        ]
    )
    sim = simulate_cache(steps, events, _info(3))
    assert sim["cache_read"].tolist() == [0, 10_000, 0]
    assert sim["cache_write"].tolist() == [10_000, 2_000, 3_000]
    import workbench.metrics.cost as cost

    original = cost.session_call_info
    cost.session_call_info = lambda session, strip=True: _info(3)
    try:
        row = cost_sessions(steps, events, {"x": Session(id="x", records=(), models=("claude-opus-4-6",))}).iloc[0]
    finally:
        cost.session_call_info = original
    assert row["step_cost_usd"] == pytest.approx((15_000 * 6.25 + 10_000 * 0.5 + 300 * 25) / 1e6)
    assert row["summarizer_cost_usd"] == pytest.approx((12_000 * 0.5 + 1_000 * 25) / 1e6)
    assert row["cost_usd"] == pytest.approx(0.13725)
    assert row["cost_per_1k_steps"] == pytest.approx(row["cost_usd"] / 3 * 1000)


def test_ttl_expiry_and_in_place_edit():
    steps = pd.DataFrame(
        {
            "session_id": "x",
            "strategy": "s",
            "step": [0, 1, 2],
            "context_tokens": [10_000, 12_000, 11_000],
            "tokens_without_compaction": [10_000, 12_000, 13_000],
        }
    )
    info = _info(3)
    info = SessionCallInfo(**{**info.__dict__, "times": [0.0, 1000.0, 1010.0], "rough_before": {"u": 4_000}})
    events = pd.DataFrame([{"kind": "microcompact", "step": 2, "keep_start": None, "dropped_uuids": ["u"]}])
    sim = simulate_cache(steps, events, info, static_prefix=1_000)
    assert sim["cache_read"].tolist() == [1_000, 0, 5_000]  # expired after 1000 s; edit at 1k + 4k


@pytest.fixture(scope="module")
def calibration(claude_sessions):
    frames = [replay_frames(replay_sessions(claude_sessions, create(name))) for name in ("none", "recorded")]
    steps = pd.concat([f[0] for f in frames], ignore_index=True)
    events = pd.concat([f[1] for f in frames], ignore_index=True)
    return calibrate_cost(steps, events, claude_sessions)


@pytest.mark.corpus
def test_cost_simulation_calibrated_on_recorded_usage(calibration):
    medians = calibration.groupby("strategy")["cost_error"].median()
    print(
        json.dumps(
            {
                "median_cost_error": medians.round(4).to_dict(),
                "per_session": calibration[["session_id", "strategy", "cost_error"]].round(4).to_dict("records"),
            },
            default=str,
        )
    )
    assert set(medians.index) == {"none", "recorded"}
    assert len(calibration[calibration["strategy"] == "recorded"]) == 20
    assert (medians < 0.05).all()  # measured 1.6 % (none, 17 sessions) and 1.7 % (recorded, 20 sessions)
    assert calibration["read_error"].median() < 0.05
