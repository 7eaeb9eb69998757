"""Cost: dollars per session × strategy under the prompt-cache simulation, and its calibration against the
recorded bill.

Three modules, one concern each: `workbench.metrics.pricing` (the dated price table, long-context tiers),
`workbench.metrics.bill` (the recorded bill, ``recorded_cost_usd``, equal to ccusage's), and
`workbench.metrics.cache_sim` (which prompt tokens are read, written or sent uncached, with the cache-miss
rule). This module prices the simulation and adds the compaction calls.

**Definitions.** ``cost_usd`` = Σ steps (input·p_in + write·p_write + read·p_read + output·p_out, long-context
tiers as in `workbench.metrics.pricing`) + the strategy's compaction calls (``summarizer_cost_usd``) + its
session-memory extractions (``memory_cost_usd``); ``cost_per_1k_steps`` = ``cost_usd / steps × 1000``;
``summarizer_share`` = ``summarizer_cost_usd / cost_usd``, ``memory_share`` = ``memory_cost_usd /
cost_usd``. Output tokens are the recorded ones (open-loop replay: the future is the same under every
strategy; the bill's output per response, see `workbench.metrics.bill` for the undercount and its estimate).

**Compaction calls, priced once.**

* ``recorded``: Claude Code's real compaction calls are in the corpus as their own sessions, the
  compaction agents (``agent-acompact-*`` transcripts: agent id prefix ``acompact``, the loader's
  ``metadata["query_source"] == "compact"``). Under ``recorded`` they are priced as they are (their own
  rows), and no summariser call is simulated for a ``recorded-compact`` event.
* every other strategy: the compaction agents are an artefact of what Claude Code did, so their rows
  cost 0 (``compaction_agent`` marks them), and each summary the strategy itself writes adds one simulated
  summariser call that reads the dropped context (``tokens_before − (tokens_after − summary_tokens)``, ≥ 0)
  and writes the summary (rough chars/4 tokens) as output. The read is priced as a cache read by default:
  Claude Code's compaction is a forked call that reuses the main conversation's prompt cache (the
  compaction agents record ~165k cache-read tokens per call); ``summarizer_input="input"`` prices it
  uncached instead.
* session-memory compaction (``summary_source == "session-memory"``; before that column, the kinds
  ``sm-compact``/``sm-compact-naive``) makes **no** API call: the summary is the notes file read from disk
  (docs §2.6 step 3), so it adds no summariser call. Its fallback to full compaction is a real summary
  call (its event's ``summary_source`` is ``offline``/``anthropic``/``recorded``) and is priced as above.
* ``none`` compacts nothing and carries no compaction cost.

**Session-memory extractions** are priced as Claude Code's forked call in `workbench.metrics.memory_cost`
(cache read of the shared prefix, the tail and the update prompt written, the Edit calls as output; its
docstring has the rule and a worked example); they add ``memory_cost_usd`` here.

Worked example (claude-opus-4-6: input $5, write $6.25, read $0.50, output $25 per MTok; no static
prefix; calls one minute apart; output 100 tokens each; recorded input_tokens 0): prompts 10k, 12k, then
a summary compaction leaves 3k (``tokens_before`` 14k, summary 1k tokens). Step 0 writes 10k; step 1 reads
10k, writes 2k; step 2 reads 0 (history head replaced), writes 3k. Steps: 15k·6.25 + 10k·0.50 + 300·25 =
$0.10625; summariser: reads 14k − (3k − 1k) = 12k ($0.006), writes 1k output ($0.025) → ``cost_usd`` =
$0.13725.

**Calibration** (`calibrate_cost`): for ``none``/``recorded`` replays, the simulated dollars of each session
are compared with its recorded bill (``recorded_cost_usd``); ``cost_error`` = |simulated − recorded| /
recorded, ``signed_error`` the same with its sign (``none`` only on sessions without recorded
compactions). ``modelled_cost_usd``/``modelled_error`` price the ``recorded`` replay with the
counterfactual rule (misses modelled, not observed): how well the rule every other strategy gets does
where the truth is known. `dollar_weighted_error` pools sessions by dollars, with a bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..transcript.model import Session
from ._common import KEYS, ensure_keys, session_map
from .bill import bill_sessions
from .cache_sim import TTL_1H, TTL_5M, SessionCallInfo, miss_causes, session_call_info, simulate_cache
from .memory_cost import MEMORY_COLUMNS as MEMORY_COLUMNS
from .memory_cost import _from_session_memory, with_memory_cost
from .pricing import DEFAULT_MODEL, Price, known_price, load_pricing, price_for, price_or_none, tokens_dollars

__all__ = [
    "TTL_1H",
    "TTL_5M",
    "Price",
    "SessionCallInfo",
    "calibrate_cost",
    "cost_sessions",
    "cost_steps",
    "dollar_weighted_error",
    "is_compaction_agent",
    "known_price",
    "load_pricing",
    "miss_causes",
    "price_for",
    "session_call_info",
    "simulate_cache",
]


def is_compaction_agent(session_id: str, session: Session | None = None) -> bool:
    """A Claude Code compaction agent's transcript (``agent-acompact-*``): the real compaction call."""
    if session is not None:
        return session.metadata.get("query_source") == "compact"
    return "/agent-acompact" in str(session_id)


def _step_dollars(frame: pd.DataFrame, pricing: Mapping[str, Price], default: str) -> pd.Series:
    def dollars(row: Mapping[str, Any]) -> float:
        price = price_or_none(row["model"], pricing, default)
        if price is None:
            return float("nan")
        hour = row["ttl"] == "1h"
        return tokens_dollars(
            price,
            input=row.get("input_tokens", 0),
            cache_write_5m=0 if hour else row["cache_write"],
            cache_write_1h=row["cache_write"] if hour else 0,
            cache_read=row["cache_read"],
            output=row["output_tokens"],
        )

    return frame.apply(dollars, axis=1) if len(frame) else pd.Series(dtype=float)


def _is_recorded(cell_events: pd.DataFrame, strategy: str) -> bool:
    """The ``recorded`` reference (keeps the recorded compactions): its context is the recorded one."""
    if len(cell_events):
        return bool((cell_events["kind"] == "recorded-compact").any()) or strategy == "recorded"
    return strategy == "recorded"


def cost_steps(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    sessions: Iterable[Session] | Mapping[str, Session] | None = None,
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
    misses: Literal["auto", "modelled"] = "auto",
) -> pd.DataFrame:
    """One row per session × strategy × config_hash × step: simulated tokens and dollars.

    ``misses="auto"``: the ``recorded`` strategy uses its observed misses, the others modelled ones;
    ``"modelled"``: every strategy gets the modelled rule (the calibration's counterfactual check).
    """
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    steps = ensure_keys(steps)
    events = ensure_keys(events)
    infos: dict[tuple[str, bool], SessionCallInfo] = {}
    frames = []
    for keys, group in steps.groupby(KEYS, sort=True):
        sid = keys[0]
        cell_events = events[
            (events["session_id"] == sid) & (events["strategy"] == keys[1]) & (events["config_hash"] == keys[2])
        ]
        recorded = _is_recorded(cell_events, keys[1])
        info = None
        if sid in by_id:
            if (sid, recorded) not in infos:
                infos[(sid, recorded)] = session_call_info(by_id[sid], strip=not recorded)
            info = infos[(sid, recorded)]
        sim = simulate_cache(group, cell_events, info, observed=recorded and misses == "auto")
        for key, value in zip(KEYS, keys, strict=True):
            sim.insert(KEYS.index(key), key, value)
        sim["cost_usd"] = _step_dollars(sim, table, default_model)
        frames.append(sim)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _summarizer_rows(
    events: pd.DataFrame,
    sessions: Mapping[str, Session],
    pricing: Mapping[str, Price],
    default: str,
    summarizer_input: str,
) -> pd.DataFrame:
    rows = []
    for event in ensure_keys(events).to_dict("records"):
        summary = event.get("summary")
        if not isinstance(summary, str) or not summary or event.get("kind") == "recorded-compact":
            continue  # a recorded compaction's call is its compaction agent's own session
        if _from_session_memory(event):
            continue  # its cost is the extractions that wrote the notes (`_memory_rows`)
        summary_tokens = round(len(summary) / 4)
        before = pd.to_numeric(event.get("tokens_before"), errors="coerce")
        after = pd.to_numeric(event.get("tokens_after"), errors="coerce")
        if pd.isna(before):
            continue
        after = 0 if pd.isna(after) else after
        read = max(int(before) - (int(after) - summary_tokens), 0)
        session = sessions.get(event["session_id"])
        model = session.models[0] if session is not None and session.models else None
        price = price_or_none(model, pricing, default)
        if price is None:
            continue
        tokens = {"cache_read": read} if summarizer_input == "cache_read" else {"input": read}
        rows.append(
            {
                **{k: event[k] for k in KEYS},
                "summarizer_calls": 1,
                "summarizer_input_tokens": read,
                "summarizer_output_tokens": summary_tokens,
                "summarizer_cost_usd": tokens_dollars(price, **tokens, output=summary_tokens),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            *KEYS,
            "summarizer_calls",
            "summarizer_input_tokens",
            "summarizer_output_tokens",
            "summarizer_cost_usd",
        ],
    )


SESSION_COST_COLUMNS = [
    *KEYS,
    "steps",
    "input_tokens",
    "cache_read",
    "cache_write",
    "output_tokens",
    "step_cost_usd",
    "summarizer_calls",
    "summarizer_cost_usd",
    "memory_extractions",
    "memory_cost_usd",
    "cost_usd",
    "cost_per_1k_steps",
    "summarizer_share",
    "memory_share",
    "priced_outputs",
    "compaction_agent",
]


def cost_sessions(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    sessions: Iterable[Session] | Mapping[str, Session] | None = None,
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
    summarizer_input: Literal["cache_read", "input"] = "cache_read",
) -> pd.DataFrame:
    """One row per session × strategy × config_hash: tokens by kind, dollars, dollars per 1k steps.

    Compaction agents cost 0 under every strategy but ``recorded`` (module docstring).
    """
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    per_step = cost_steps(steps, events, by_id, pricing=table, default_model=default_model)
    if per_step.empty:
        return pd.DataFrame(columns=SESSION_COST_COLUMNS)
    out = (
        per_step.groupby(KEYS, sort=True)
        .agg(
            steps=("step", "size"),
            input_tokens=("input_tokens", "sum"),
            cache_read=("cache_read", "sum"),
            cache_write=("cache_write", "sum"),
            output_tokens=("output_tokens", "sum"),
            step_cost_usd=("cost_usd", lambda c: c.sum(min_count=len(c))),  # any unpriced call: NaN
        )
        .reset_index()
    )
    summ = _summarizer_rows(ensure_keys(events), by_id, table, default_model, summarizer_input)
    summ = (
        summ.groupby(KEYS)
        .agg(summarizer_calls=("summarizer_calls", "sum"), summarizer_cost_usd=("summarizer_cost_usd", "sum"))
        .reset_index()
    )
    out = out.merge(summ, on=KEYS, how="left")
    out["summarizer_calls"] = out["summarizer_calls"].fillna(0).astype(int)
    out["summarizer_cost_usd"] = out["summarizer_cost_usd"].fillna(0.0)
    out = with_memory_cost(out, ensure_keys(steps), per_step, table, default_model)
    out["compaction_agent"] = [is_compaction_agent(sid, by_id.get(sid)) for sid in out["session_id"]]
    artefact = out["compaction_agent"] & (out["strategy"] != "recorded")
    out.loc[artefact, "step_cost_usd"] = 0.0
    out["cost_usd"] = out["step_cost_usd"] + out["summarizer_cost_usd"] + out["memory_cost_usd"]
    out["cost_per_1k_steps"] = out["cost_usd"] / out["steps"] * 1000
    priced = out["cost_usd"].where(out["cost_usd"] > 0)
    out["summarizer_share"] = (out["summarizer_cost_usd"] / priced).fillna(0.0)
    out["memory_share"] = (out["memory_cost_usd"] / priced).fillna(0.0)
    out["priced_outputs"] = out["session_id"].isin(by_id)
    return out[SESSION_COST_COLUMNS]


#: A calibrated session this far off the bill gets an ``explanation``.
EXPLAIN_ABOVE = 0.05


def _explain(cost_error: float, prompt_error: float, misses: int) -> str:
    if cost_error <= EXPLAIN_ABOVE:
        return ""
    why = [f"replay's prompt sizes {prompt_error:+.1%} off the recorded ones (estimated before each usage is known)"]
    if misses:
        why.append(f"{misses} observed cache misses")
    return "; ".join(why)


def calibrate_cost(
    steps: pd.DataFrame,
    events: pd.DataFrame | None,
    sessions: Iterable[Session] | Mapping[str, Session],
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """Per session × strategy: simulated vs recorded dollars (``none``/``recorded`` runs).

    ``none`` rows are only produced for sessions without recorded compactions (after a recorded
    compaction the recorded usage measures a context the ``none`` replay does not have). Columns:
    ``recorded_cost_usd`` (the bill, = ccusage), ``simulated_cost_usd``, ``cost_error``, ``signed_error``,
    ``modelled_cost_usd`` and ``modelled_error`` (``recorded`` rows: the counterfactual miss rule),
    recorded/simulated ``cache_read`` and ``cache_write`` with ``read_error``/``write_error``, and
    ``misses`` (observed cache misses) with their ``miss_causes``, ``prompt_error`` (Σ simulated prompt
    tokens vs Σ recorded) and, for sessions more than 5% off, an ``explanation``.
    """
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    steps = ensure_keys(steps)
    steps = steps[steps["strategy"].isin(["none", "recorded"]) & steps["session_id"].isin(by_id)]
    per_step = cost_steps(steps, events, by_id, pricing=table, default_model=default_model)
    if per_step.empty:
        return pd.DataFrame()
    modelled = cost_steps(
        steps[steps["strategy"] == "recorded"],
        events,
        by_id,
        pricing=table,
        default_model=default_model,
        misses="modelled",
    )
    modelled_by = modelled.groupby(KEYS)["cost_usd"].sum().to_dict() if len(modelled) else {}
    bills = bill_sessions([by_id[s] for s in per_step["session_id"].unique()], pricing=table).set_index("session_id")
    rows = []
    for keys, group in per_step.groupby(KEYS, sort=True):
        session = by_id[keys[0]]
        if keys[1] == "none" and any(r.is_compact_boundary for r in session.conversation()):
            continue
        bill = bills.loc[keys[0]]
        rec_cost = float(bill["recorded_cost_usd"])
        if not rec_cost or np.isnan(rec_cost):
            continue
        causes = miss_causes(session)
        sim_cost = float(group["cost_usd"].sum())
        rec_read = float(bill["cache_read"])
        rec_write = float(bill["cache_write_5m"] + bill["cache_write_1h"] + bill["input_tokens"])
        sim_read = float(group["cache_read"].sum())
        sim_write = float(group["cache_write"].sum() + group["input_tokens"].sum())
        model_cost = modelled_by.get(keys, float("nan"))
        rec_prompt = float(bill["input_tokens"] + bill["cache_write_5m"] + bill["cache_write_1h"] + bill["cache_read"])
        prompt_error = (float(group["prompt_tokens"].sum()) - rec_prompt) / rec_prompt if rec_prompt else 0.0

        def err(sim: float, rec: float) -> float:
            return abs(sim - rec) / rec if rec else 0.0

        rows.append(
            {
                **dict(zip(KEYS, keys, strict=True)),
                "steps": len(group),
                "recorded_cost_usd": rec_cost,
                "simulated_cost_usd": sim_cost,
                "cost_error": err(sim_cost, rec_cost),
                "signed_error": (sim_cost - rec_cost) / rec_cost,
                "modelled_cost_usd": model_cost,
                "modelled_error": (model_cost - rec_cost) / rec_cost,
                "recorded_cache_read": rec_read,
                "simulated_cache_read": sim_read,
                "read_error": err(sim_read, rec_read),
                "recorded_cache_write": rec_write,
                "simulated_cache_write": sim_write,
                "write_error": err(sim_write, rec_write),
                "misses": len(causes),
                "miss_causes": ", ".join(sorted(set(causes["cause"]))) if len(causes) else "",
                "prompt_error": prompt_error,
                "explanation": _explain(err(sim_cost, rec_cost), prompt_error, len(causes)),
            }
        )
    return pd.DataFrame(rows)


def dollar_weighted_error(
    calibration: pd.DataFrame,
    column: str = "simulated_cost_usd",
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """Pooled error of one strategy's calibration rows: ``signed`` = (Σ simulated − Σ recorded) / Σ recorded,
    ``absolute`` = Σ |simulated − recorded| / Σ recorded, each with a 95% bootstrap interval over sessions."""
    sim = calibration[column].to_numpy(dtype=float)
    rec = calibration["recorded_cost_usd"].to_numpy(dtype=float)

    def stats(index: np.ndarray) -> tuple[float, float]:
        total = rec[index].sum()
        return (sim[index].sum() - total) / total, np.abs(sim[index] - rec[index]).sum() / total

    signed, absolute = stats(np.arange(len(rec)))
    rng = np.random.default_rng(seed)
    draws = np.array([stats(rng.integers(0, len(rec), len(rec))) for _ in range(resamples)])
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return {
        "sessions": len(rec),
        "signed": float(signed),
        "signed_low": float(low[0]),
        "signed_high": float(high[0]),
        "absolute": float(absolute),
        "absolute_low": float(low[1]),
        "absolute_high": float(high[1]),
    }
