"""`savings_sessions`, `validity_sessions` and `cost_sessions` count per cell on arrays (`Cells`): each
equals the grouped pandas computation (kept here as the reference: groupbys over `savings_steps`,
`validity_steps`, `cost_steps`, the extractions' previous calls by a shifted merge), value for value and
dtype for dtype, on replays of the corpus and on generated frames with null keys, counts and kinds."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.metrics import (
    cost_sessions,
    cost_steps,
    savings_events,
    savings_sessions,
    savings_steps,
    validity_events,
    validity_sessions,
    validity_steps,
)
from workbench.metrics._common import KEYS, Cells, ensure_keys, share
from workbench.metrics.cost import SESSION_COST_COLUMNS, _summarizer_rows, is_compaction_agent
from workbench.metrics.memory_cost import _extractions, _memory_rows
from workbench.metrics.pricing import DEFAULT_MODEL, load_pricing
from workbench.replay import replay_frames, replay_sessions
from workbench.strategies import create
from workbench.transcript import load_paths


def grouped_savings(steps, events=None, *, baseline=None):
    """The pandas reference: `savings_steps` summed by a groupby, events counted by another."""
    per_step = savings_steps(steps, baseline=baseline)
    out = (
        per_step.groupby(KEYS, sort=True)
        .agg(
            steps=("step", "size"),
            input_tokens=("context_tokens", "sum"),
            input_tokens_without=("tokens_without_compaction", "sum"),
            tokens_saved=("tokens_saved", "sum"),
            peak_context_tokens=("context_tokens", "max"),
            peak_without_compaction=("tokens_without_compaction", "max"),
            steps_over_window=("over_window", "sum"),
            steps_over_window_without=("over_window_without", "sum"),
            steps_blocked=("blocked", "sum"),
            steps_blocked_without=("blocked_without", "sum"),
        )
        .reset_index()
    )
    out["saved_share"] = share(out["tokens_saved"], out["input_tokens_without"], 0.0)
    per_event = savings_events(events)
    counts = per_event.groupby(KEYS).size().rename("compactions")
    kinds = (
        per_event.groupby(KEYS)["kind"]
        .agg(lambda kinds: ",".join(f"{k}:{n}" for k, n in sorted(pd.Series(kinds).value_counts().items())))
        .rename("compaction_kinds")
    )
    out = out.merge(counts.reset_index(), on=KEYS, how="left").merge(kinds.reset_index(), on=KEYS, how="left")
    out["compactions"] = out["compactions"].fillna(0).astype(int)
    out["compaction_kinds"] = out["compaction_kinds"].fillna("")
    for column in ("steps_over_window", "steps_over_window_without", "steps_blocked", "steps_blocked_without"):
        out[column] = out[column].astype(int)
    return out


def grouped_validity(steps, events=None):
    """The pandas reference: `validity_steps` and `validity_events` counted by groupbys and merged."""
    per_step = validity_steps(steps)
    per_step = per_step.assign(_repaired_step=per_step["repaired"] > 0)
    out = (
        per_step.groupby(KEYS, sort=True)
        .agg(
            steps=("step", "size"),
            violating_steps=("has_violation", "sum"),
            violations=("violations", "sum"),
            repairs=("repaired", "sum"),
            repaired_steps=("_repaired_step", "sum"),
        )
        .reset_index()
    )
    out["violation_rate"] = (out["violating_steps"] / out["steps"].where(out["steps"] > 0)).fillna(0.0)
    per_event = validity_events(events)
    names = ["compactions", "compaction_violations", "adjusted_compactions", "fallbacks", "fallback_reasons"]
    if per_event.empty:
        agg = pd.DataFrame(columns=[*KEYS, *names])
    else:
        per_event = per_event.assign(_violating=per_event["violations"] > 0)
        agg = (
            per_event.groupby(KEYS)
            .agg(
                compactions=("event", "size"),
                compaction_violations=("_violating", "sum"),
                adjusted_compactions=("adjusted", "sum"),
                fallbacks=("fallbacks", lambda f: sum(len([x for x in s.split(",") if x]) for s in f)),
                fallback_reasons=(
                    "fallbacks",
                    lambda f: ",".join(
                        f"{k}:{n}" for k, n in sorted(Counter(x for s in f for x in s.split(",") if x).items())
                    ),
                ),
            )
            .reset_index()
        )
    out = out.merge(agg, on=KEYS, how="left")
    for column in names[:4]:  # numbers first: with no event the merged columns hold only nulls
        out[column] = pd.to_numeric(out[column]).fillna(0).astype(int)
    out["fallback_reasons"] = out["fallback_reasons"].fillna("")
    out["compaction_violation_rate"] = (
        out["compaction_violations"] / out["compactions"].where(out["compactions"] > 0)
    ).fillna(0.0)
    for column in ("violating_steps", "violations", "repairs"):
        out[column] = out[column].astype(int)
    return out


def shifted_extractions(steps, per_step):
    """The extractions with each one's previous call found by a shifted, merged frame."""
    extracted = steps[steps["memory_extraction"].fillna(False).astype(bool)]
    previous = per_step[[*KEYS, "step", "prompt_tokens", "model", "ttl"]].sort_values([*KEYS, "step"], kind="stable")
    shifted = previous.groupby(KEYS, sort=False)[["prompt_tokens", "model", "ttl"]].shift(1)
    previous = previous[[*KEYS, "step"]].assign(
        previous_prompt=shifted["prompt_tokens"], previous_model=shifted["model"], previous_ttl=shifted["ttl"]
    )
    columns = [*KEYS, "step", "extraction_context_tokens", "extraction_prompt_tokens", "extraction_edit_tokens"]
    extracted = extracted.reindex(columns=columns)
    extracted[columns[-3:]] = extracted[columns[-3:]].apply(pd.to_numeric, errors="coerce").fillna(0)
    extracted["step"] = extracted["step"].astype(int)
    joined = extracted.merge(previous.assign(step=previous["step"].astype(int)), on=[*KEYS, "step"], how="inner")
    return joined[joined["previous_prompt"].notna()].to_dict("records")


#: The columns of `cost_sessions` counted per cell (the rest are derived from them, row by row).
COUNTED = SESSION_COST_COLUMNS[: SESSION_COST_COLUMNS.index("memory_cost_usd") + 1]


def grouped_cost(steps, events, sessions, per_step, pricing):
    """The pandas reference of `cost_sessions`' counted columns from its `cost_steps` rows: grouped sums
    and merges."""
    grouped = per_step.groupby(KEYS, sort=True)
    out = grouped.agg(
        steps=("step", "size"),
        input_tokens=("input_tokens", "sum"),
        cache_read=("cache_read", "sum"),
        cache_write=("cache_write", "sum"),
        output_tokens=("output_tokens", "sum"),
    )
    out["step_cost_usd"] = grouped["cost_usd"].agg(lambda c: c.sum(min_count=len(c))).to_numpy()
    out = out.reset_index()
    summ = _summarizer_rows(ensure_keys(events), sessions, pricing, DEFAULT_MODEL, "cache_read")
    summ = (
        summ.groupby(KEYS)
        .agg(summarizer_calls=("summarizer_calls", "sum"), summarizer_cost_usd=("summarizer_cost_usd", "sum"))
        .reset_index()
    )
    out = out.merge(summ, on=KEYS, how="left")
    out["summarizer_calls"] = out["summarizer_calls"].fillna(0).astype(int)
    out["summarizer_cost_usd"] = out["summarizer_cost_usd"].fillna(0.0)
    memory = (
        _memory_rows(ensure_keys(steps), per_step, pricing, DEFAULT_MODEL)
        .groupby(KEYS)
        .agg(
            memory_extractions=("memory_extractions", "sum"),
            memory_cost_usd=("memory_cost_usd", lambda c: c.sum(min_count=len(c))),
        )
        .reset_index()
    )
    out = out.merge(memory, on=KEYS, how="left")
    out["memory_extractions"] = out["memory_extractions"].fillna(0).astype(int)
    out["memory_cost_usd"] = out["memory_cost_usd"].where(out["memory_extractions"] > 0, 0.0)
    agent = pd.Series([is_compaction_agent(sid, sessions.get(sid)) for sid in out["session_id"]], index=out.index)
    out.loc[agent & (out["strategy"] != "recorded"), "step_cost_usd"] = 0.0  # as `cost_sessions` does
    return out[COUNTED]


def _same_records(got, expected):
    """The same rows in the same order, NaN equal to NaN, numbers of either width equal."""
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.keys() == theirs.keys()
        for key, value in mine.items():
            other = theirs[key]
            assert (pd.isna(value) and pd.isna(other)) if pd.isna(value) else value == other, (key, value, other)


def _same(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Equal frames; a text column is ``str`` (the merge gave ``object`` when no cell had an event)."""
    assert list(got.columns) == list(expected.columns)
    if expected.empty:  # every key null: no cell (the dtypes of no rows are not compared)
        assert got.empty
        return
    for column in ("compaction_kinds", "fallback_reasons"):
        if column in expected and expected[column].dtype == object:
            assert expected[column].map(type).eq(str).all()
            expected[column] = expected[column].astype("str")
    pd.testing.assert_frame_equal(got, expected, check_dtype=True, check_exact=True)


@pytest.fixture(scope="module")
def replayed(corpus):
    sessions = list(load_paths([corpus / "claude-code", corpus / "claude-code-more"]))
    by_id = {session.id: session for session in sessions}
    frames = [replay_frames(replay_sessions(sessions, create(name))) for name in ("none", "sm-compact", "recorded")]
    early = create("full-compact", {"trigger": {"auto_compact_window": 80_000}})  # compacts more sessions
    frames.append(replay_frames(replay_sessions(sessions, early)))
    steps = pd.concat([f[0] for f in frames], ignore_index=True)
    events = pd.concat([f[1] for f in frames], ignore_index=True)
    return steps, events, by_id


@pytest.mark.corpus
def test_counts_equal_the_groupby_on_corpus_replays(replayed):
    steps, events, by_id = replayed
    assert events["kind"].nunique() >= 2 and (events["strategy"] == "full-compact").sum() > 5
    _same(savings_sessions(steps, events), grouped_savings(steps, events))
    _same(validity_sessions(steps, events), grouped_validity(steps, events))
    baseline = steps[steps["strategy"] == "none"][["session_id", "step", "tokens_without_compaction"]]
    _same(savings_sessions(steps, events, baseline=baseline), grouped_savings(steps, events, baseline=baseline))
    pricing = load_pricing()
    per_step = cost_steps(steps, events, by_id, pricing=pricing)
    assert steps["memory_extraction"].fillna(False).astype(bool).sum() > 20
    _same(
        cost_sessions(steps, events, by_id, pricing=pricing, per_step=per_step)[COUNTED],
        grouped_cost(steps, events, by_id, per_step, pricing),
    )
    _same_records(_extractions(ensure_keys(steps), per_step), shifted_extractions(ensure_keys(steps), per_step))


KEY = st.sampled_from(["s1", "s2", "s10", "é", None])
STRATEGY = st.sampled_from(["none", "sm-compact", "full-compact"])
CONFIG = st.sampled_from(["a", "b", None])


@st.composite
def frames(draw):
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cells = [(draw(KEY), draw(STRATEGY), draw(CONFIG)) for _ in range(draw(st.integers(1, 5)))]
    picked = [cells[i] for i in rng.integers(0, len(cells), n)]
    violations = rng.integers(0, 3, n).astype(float)
    violations[rng.random(n) < 0.2] = np.nan
    steps = pd.DataFrame(
        {
            "session_id": [c[0] for c in picked],
            "strategy": [c[1] for c in picked],
            "config_hash": [c[2] for c in picked],
            "step": rng.integers(0, 50, n),
            "context_tokens": rng.integers(0, 250_000, n),
            "tokens_without_compaction": rng.integers(0, 250_000, n),
            "violations": violations,
            "violation_rules": [",".join(rng.choice(["a", "b"], int(k))) if k == k else None for k in violations],
            "repaired": rng.choice([0, 1, 2, np.nan], n),
        }
    )
    m = draw(st.integers(0, 8))
    chosen = [cells[i] for i in rng.integers(0, len(cells), m)] + [(draw(KEY), draw(STRATEGY), draw(CONFIG))] * (m > 0)
    events = pd.DataFrame(
        {
            "session_id": [c[0] for c in chosen],
            "strategy": [c[1] for c in chosen],
            "config_hash": [c[2] for c in chosen],
            "kind": [draw(st.sampled_from(["sm-compact", "full-compact", None])) for _ in chosen],
            "trigger": "auto",
            "step": rng.integers(0, 50, len(chosen)),
            "tokens_before": rng.integers(0, 250_000, len(chosen)),
            "tokens_after": rng.integers(0, 50_000, len(chosen)),
            "violations": rng.choice([0, 1, np.nan], len(chosen)),
            "violation_rules": "",
            "repaired": rng.choice([0, 1, np.nan], len(chosen)),
            "keep_start": rng.choice([3, 4, np.nan], len(chosen)),
            "naive_start": rng.choice([3, 5, np.nan], len(chosen)),
            "fallbacks": [
                draw(st.sampled_from([[], ["no-memory"], ["too-big", "no-memory"], ["a,b"], None])) for _ in chosen
            ],
        }
    )
    return steps, (events if m else None)


@settings(max_examples=200, deadline=None)
@given(frames())
def test_counts_equal_the_groupby_on_generated_frames(drawn):
    steps, events = drawn
    _same(savings_sessions(steps, events), grouped_savings(steps, events))
    _same(validity_sessions(steps, events), grouped_validity(steps, events))


def test_cells_number_cells_as_a_sorted_groupby_does():
    frame = pd.DataFrame(
        {
            "session_id": ["b", "a", None, "b", "a", "a"],
            "strategy": ["x", "y", "x", "x", "x", "y"],
            "config_hash": ["1", "1", "1", None, "2", "1"],
            "n": [1, 2, 3, 4, 5, 6],
        }
    )
    cells = Cells(frame)
    grouped = frame.groupby(KEYS, sort=True)["n"]
    assert cells.tuples() == list(grouped.sum().index)
    assert cells.sum(frame["n"]).tolist() == grouped.sum().tolist()
    assert cells.max(frame["n"]).tolist() == grouped.max().tolist()
    assert cells.size().tolist() == grouped.size().tolist()


@st.composite
def extraction_frames(draw):
    """`cost_steps`-like rows (duplicated steps, null keys, unknown models) and steps with extractions."""
    n = draw(st.integers(1, 25))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cells = [(draw(KEY), draw(STRATEGY), draw(CONFIG)) for _ in range(draw(st.integers(1, 4)))]
    picked = [cells[i] for i in rng.integers(0, len(cells), n)]
    keys = {
        "session_id": [c[0] for c in picked],
        "strategy": [c[1] for c in picked],
        "config_hash": [c[2] if c[2] is not None else "n/a" for c in picked],
        "step": rng.integers(0, 6, n),
    }
    per_step = pd.DataFrame(
        {
            **keys,
            "prompt_tokens": np.where(rng.random(n) < 0.15, np.nan, rng.integers(0, 200_000, n)),
            "model": rng.choice(["claude-opus-4-6", "claude-sonnet-4-5", "no-such-model"], n),
            "ttl": rng.choice(["5m", "1h"], n),
        }
    )
    steps = pd.DataFrame(
        {
            **keys,
            "memory_extraction": rng.choice([True, False, None], n),
            "extraction_context_tokens": rng.integers(0, 200_000, n),
            "extraction_prompt_tokens": rng.choice([1000, np.nan], n),
            "extraction_edit_tokens": rng.integers(0, 500, n),
        }
    )
    return steps, per_step


@settings(max_examples=200, deadline=None)
@given(extraction_frames())
def test_extractions_find_their_previous_call_as_a_shifted_merge_does(drawn):
    steps, per_step = drawn
    _same_records(_extractions(steps, per_step), shifted_extractions(steps, per_step))
