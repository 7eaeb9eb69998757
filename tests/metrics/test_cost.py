from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from workbench.metrics import calibrate_cost, cost_sessions, load_pricing, price_for, simulate_cache
from workbench.metrics.cost import SessionCallInfo, cost_steps, dollar_weighted_error, miss_causes
from workbench.replay import replay_frames, replay_sessions
from workbench.strategies import create
from workbench.transcript import Session, load_paths

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


def _info(n: int) -> SessionCallInfo:
    """claude-opus-4-6 (input $5, 5-minute write $6.25, read $0.50, output $25 per MTok), calls a minute
    apart, 100 output tokens each, nothing recorded, no static prefix."""
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
    info = replace(info, times=[0.0, 1000.0, 1010.0], rough_before={"u": 4_000})
    events = pd.DataFrame([{"kind": "microcompact", "step": 2, "keep_start": None, "dropped_uuids": ["u"]}])
    sim = simulate_cache(steps, events, info, static_prefix=1_000)
    assert sim["cache_read"].tolist() == [1_000, 0, 5_000]  # expired after 1000 s; edit at 1k + 4k


def _usage(read, write, inp=3):
    return {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}


def _steps(prompts, without=None):
    return pd.DataFrame(
        {
            "session_id": "x",
            "strategy": "s",
            "step": list(range(len(prompts))),
            "context_tokens": prompts,
            "tokens_without_compaction": without or prompts,
        }
    )


def test_uncached_input_is_priced_as_input():
    info = replace(_info(1), usage=[_usage(0, 0, 3_000)], caching=False)
    sim = simulate_cache(_steps([3_000]), None, info)
    assert sim[["input_tokens", "cache_read", "cache_write"]].iloc[0].tolist() == [3_000, 0, 0]
    # with caching on, only the recorded uncached tail is input, the rest a 5-minute write
    info = replace(_info(1), usage=[_usage(0, 2_990, 10)])
    sim = simulate_cache(_steps([3_000]), None, info)
    assert sim[["input_tokens", "cache_read", "cache_write"]].iloc[0].tolist() == [10, 0, 2_990]


def test_observed_misses_for_recorded_and_modelled_misses_for_others():
    # recorded: 10k, 20k (read 10k), then a miss that kept only 15k of the 20k prefix
    usage = [_usage(0, 10_000, 0), _usage(10_000, 10_000, 0), _usage(15_000, 9_000, 0)]
    info = replace(_info(3), usage=usage, static_prefix=0)
    recorded = simulate_cache(_steps([10_000, 20_000, 24_000]), None, info, observed=True)
    assert recorded["cache_read"].tolist() == [0, 10_000, 15_000]
    # another strategy's context is 8k smaller at step 2: the same 5k most recent tokens are invalidated
    other = simulate_cache(_steps([10_000, 12_000, 16_000]), None, info)
    assert other["cache_read"].tolist() == [0, 10_000, 12_000 - 5_000]
    # no miss modelled where the recorded usage shows none
    hit = replace(info, usage=[*usage[:2], _usage(20_000, 4_000, 0)])
    assert simulate_cache(_steps([10_000, 12_000, 16_000]), None, hit)["cache_read"].tolist() == [0, 10_000, 12_000]


def test_long_context_is_priced_in_the_simulation():
    info = replace(_info(1), models=["claude-sonnet-4-20250514"], output=[0])
    frame = cost_steps(_steps([300_000]), None, {"x": Session(id="x", records=())})
    assert frame["cost_usd"].iloc[0] == pytest.approx(300_000 * 6.25 / 1e6)  # Opus 4.6 (default): no tier
    import workbench.metrics.cost as cost

    original = cost.session_call_info
    cost.session_call_info = lambda session, strip=True: info
    try:
        frame = cost_steps(_steps([300_000]), None, {"x": Session(id="x", records=())})
    finally:
        cost.session_call_info = original
    assert frame["cost_usd"].iloc[0] == pytest.approx((200_000 * 3.75 + 100_000 * 7.50) / 1e6)


def test_compaction_is_priced_once():
    steps = pd.concat(
        [_steps([10_000, 12_000, 3_000]).assign(strategy=name) for name in ("recorded", "full-compact", "none")]
        + [_steps([165_000]).assign(session_id="x/agent-acompact-1", strategy=name) for name in ("recorded", "none")],
        ignore_index=True,
    )
    event = {"session_id": "x", "step": 2, "keep_start": 5, "dropped_uuids": [], "tokens_before": 14_000}
    events = pd.DataFrame(
        [
            {**event, "strategy": "recorded", "kind": "recorded-compact", "tokens_after": 3_000, "summary": "s" * 4000},
            {**event, "strategy": "full-compact", "kind": "full-compact", "tokens_after": 3_000, "summary": "s" * 4000},
        ]
    )
    out = cost_sessions(steps, events).set_index(["session_id", "strategy"])
    assert out.loc[("x", "recorded"), "summarizer_calls"] == 0  # its call is the compaction agent's session
    assert out.loc[("x", "full-compact"), "summarizer_calls"] == 1
    assert out.loc[("x", "none"), "summarizer_cost_usd"] == 0
    assert out.loc[("x/agent-acompact-1", "recorded"), "cost_usd"] > 0  # the real compaction call
    assert out.loc[("x/agent-acompact-1", "none"), "cost_usd"] == 0  # an artefact under any other strategy
    assert out.loc[("x/agent-acompact-1", "none"), "compaction_agent"]


def test_each_counted_summary_call_is_priced() -> None:
    """A strategy that counted its summary calls (Gemini CLI's verify turn is a second call; the API's
    compaction reports its own usage) is priced per call; one that did not gets one call estimated from the
    sizes before and after."""
    from workbench.replay.rows import summarizer_call_columns

    steps = pd.concat([_steps([10_000, 12_000, 3_000]).assign(strategy=n) for n in ("gemini-cli", "codex")])
    event = {"session_id": "x", "step": 2, "keep_start": 5, "dropped_uuids": [], "tokens_before": 14_000}
    counted = summarizer_call_columns(
        {"summarizer_input_tokens": [20_000, 24_000], "summarizer_output_tokens": [500, 700]}
    )
    events = pd.DataFrame(
        [
            {
                **event,
                "strategy": "gemini-cli",
                "kind": "gemini-cli",
                "tokens_after": 3_000,
                "summary": "s" * 2800,
                **counted,
            },
            {
                **event,
                "strategy": "codex",
                "kind": "codex",
                "tokens_after": 3_000,
                "summary": "s" * 2800,
                **summarizer_call_columns({}),
            },
        ]
    )
    out = cost_sessions(steps, events).set_index(["session_id", "strategy"])
    assert out.loc[("x", "gemini-cli"), "summarizer_calls"] == 2
    assert out.loc[("x", "codex"), "summarizer_calls"] == 1
    single = cost_sessions(
        steps[steps["strategy"] == "gemini-cli"],
        events.iloc[:1].assign(summarizer_input_tokens=[[44_000]], summarizer_output_tokens=[[1_200]]),
    ).set_index(["session_id", "strategy"])
    # priced per call: two calls cost what one call of their summed tokens costs (linear prices)
    assert out.loc[("x", "gemini-cli"), "summarizer_cost_usd"] == pytest.approx(
        single.loc[("x", "gemini-cli"), "summarizer_cost_usd"]
    )
    # and more than the estimate from the sizes (14,000 read), which the verify turn's second read exceeds
    assert out.loc[("x", "gemini-cli"), "summarizer_cost_usd"] > out.loc[("x", "codex"), "summarizer_cost_usd"]
    assert summarizer_call_columns({"compaction_usage": {"input_tokens": 150_000, "output_tokens": 900}}) == {
        "summarizer_input_tokens": [150_000],
        "summarizer_output_tokens": [900],
    }


@pytest.fixture(scope="module")
def all_claude_sessions(corpus):
    paths = [corpus / "claude-code", corpus / "claude-code-more", corpus / "same-task-three-agents"]
    return [s for s in load_paths(paths) if s.format == "claude-code"]


@pytest.fixture(scope="module")
def calibration(all_claude_sessions):
    frames = [replay_frames(replay_sessions(all_claude_sessions, create(name))) for name in ("none", "recorded")]
    steps = pd.concat([f[0] for f in frames], ignore_index=True)
    events = pd.concat([f[1] for f in frames], ignore_index=True)
    return calibrate_cost(steps, events, all_claude_sessions)


@pytest.mark.corpus
def test_cost_simulation_calibrated_on_the_recorded_bill(calibration):
    recorded = calibration[calibration["strategy"] == "recorded"]
    pooled = dollar_weighted_error(recorded)
    modelled = dollar_weighted_error(recorded, "modelled_cost_usd")
    none = dollar_weighted_error(calibration[calibration["strategy"] == "none"])
    print(
        json.dumps(
            {
                "recorded": pooled,
                "recorded_modelled_misses": modelled,
                "none": none,
                "median_cost_error": calibration.groupby("strategy")["cost_error"].median().round(4).to_dict(),
                "off_by_more_than_5pct": recorded[recorded["cost_error"] > 0.05][
                    ["session_id", "signed_error", "prompt_error"]
                ]
                .round(4)
                .to_dict("records"),
            },
            default=str,
        )
    )
    assert len(recorded) == 43  # every Claude Code session with usage, inline sub-agents included
    assert pooled["absolute"] <= 0.01  # the target: measured 0.72 % (signed -0.54 %)
    # every session within 5 % or explained in a column
    assert ((recorded["cost_error"] <= 0.05) | (recorded["explanation"] != "")).all()
    assert modelled["absolute"] < 0.03  # the counterfactual rule where the truth is known: measured 1.1 %


@pytest.mark.corpus
def test_miss_causes_on_the_corpus(all_claude_sessions):
    by_id = {s.id: s for s in all_claude_sessions}
    lines = miss_causes(by_id["258c7280-ae70-4798-800f-63464d01a85d"]).set_index("line")["cause"].to_dict()
    assert lines[498] == "rejected tool use + task-notification"
    assert lines[1261] == "compaction"
    assert miss_causes(by_id["d6e0bada-1959-4eec-a9d2-0bfade768d8f"])["cause"].tolist() == ["tool list changed (/mcp)"]


def test_models_the_table_lacks_are_priced_from_the_price_database() -> None:
    """GPT models of Codex rollouts and gateway ids come from genai-prices' shipped snapshot; the Claude rows
    stay the table's (equal to ccusage); a model neither knows stays unpriced."""
    from workbench.metrics.pricing import known_price, load_pricing, tokens_dollars

    table = load_pricing()
    assert known_price("claude-opus-4-6", table) is table["claude-opus-4-6"]
    codex = known_price("gpt-5-codex", table)
    assert codex is not None and codex.source.startswith("genai-prices")
    assert codex.output > codex.input > codex.cache_read > 0
    assert tokens_dollars(codex, input=1_000_000) == codex.input
    gateway = known_price("claude-opus-4.6-1m", table)
    assert gateway is not None and (gateway.input, gateway.output) == (5.0, 25.0)
    assert known_price("acme-internal-7b", table) is None


@pytest.mark.corpus
def test_cost_steps_of_many_cells_is_each_cells_own_simulation(all_claude_sessions) -> None:
    """`cost_steps` reads every cell's steps and events at once; each cell's rows are what `simulate_cache`
    gives that cell alone (its own steps and events, its session's call facts): over every Claude Code
    session of the corpus, through strategies that compact by summary, in place and not at all, and the
    ``recorded`` reference, whose recorded misses are observed."""
    import workbench as wb
    from workbench.metrics.cache_sim import session_call_info

    sessions = [s for s in all_claude_sessions if not s.is_subagent]
    strategies = ["recorded", "none", "sm-compact", "gemini-masking", create("sm-compact", {"min_tokens": 40_000})]
    runs = wb.replay(sessions, strategies, progress=False)
    steps, events = runs.steps, runs.events
    together = cost_steps(steps, events, sessions)
    by_id = {s.id: s for s in sessions}
    checked = 0
    for keys, mine in steps.groupby(["session_id", "strategy", "config_hash"], sort=True):
        cell_events = events[
            (events["session_id"] == keys[0]) & (events["strategy"] == keys[1]) & (events["config_hash"] == keys[2])
        ]
        recorded = keys[1] == "recorded"
        info = session_call_info(by_id[keys[0]], strip=not recorded)
        alone = simulate_cache(mine, cell_events, info, observed=recorded).reset_index(drop=True)
        rows = together[
            (together["session_id"] == keys[0])
            & (together["strategy"] == keys[1])
            & (together["config_hash"] == keys[2])
        ]
        pd.testing.assert_frame_equal(rows[list(alone.columns)].reset_index(drop=True), alone, check_dtype=False)
        checked += 1
    assert checked == len(sessions) * len(strategies)
    assert (events["kind"] == "recorded-compact").any() and len(events) > len(sessions)


def test_each_cells_step_cost_is_its_own_sum_or_nan_when_a_call_is_unpriced() -> None:
    """`cost_sessions` sums each cell's step dollars from one array (`Cells.own_sums`): the same float as
    the cell's own ``sum(min_count=len)``, NaN where one call could not be priced."""
    import numpy as np

    from workbench.metrics._common import KEYS, Cells

    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 60))
        frame = pd.DataFrame(
            {
                "session_id": rng.choice(["a", "b", "c", "d"], n),
                "strategy": rng.choice(["none", "sm-compact"], n),
                "config_hash": "x",
                "dollars": np.where(rng.random(n) < 0.05, np.nan, rng.random(n) * 10.0 ** rng.integers(-4, 2)),
            }
        )
        grouped = frame.groupby(KEYS, sort=True)
        expected = grouped["dollars"].agg(lambda c: c.sum(min_count=len(c))).tolist()
        got = Cells(frame).own_sums(frame["dollars"])
        assert [None if np.isnan(v) else v for v in got] == [None if np.isnan(v) else v for v in expected]
