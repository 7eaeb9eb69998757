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

**Calibration** against the recorded bill (`calibrate_cost`, `dollar_weighted_error`) is
`workbench.metrics.calibration`; both stay importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..transcript.model import Session
from ._common import KEYS, Cells, ensure_keys, row_cells, session_map
from .cache_sim import (
    EVENT_FIELDS,
    SIMULATED_COLUMNS,
    TTL_1H,
    TTL_5M,
    SessionCallInfo,
    event_changes,
    miss_causes,
    session_call_info,
    simulate_cache,
    simulated_arrays,
)
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
    "unpriced_count",
]


def is_compaction_agent(session_id: str, session: Session | None = None) -> bool:
    """A Claude Code compaction agent's transcript (``agent-acompact-*``): the real compaction call."""
    if session is not None:
        return session.metadata.get("query_source") == "compact"
    return "/agent-acompact" in str(session_id)


def _step_dollars(frame: pd.DataFrame, pricing: Mapping[str, Price], default: str) -> pd.Series:
    """Each step's dollars (a plain loop over the columns: ``DataFrame.apply`` built a Series per row)."""
    if not len(frame):
        return pd.Series(dtype=float)
    inputs = frame["input_tokens"] if "input_tokens" in frame else pd.Series(0, index=frame.index)
    columns = (  # as lists: iterating the columns themselves converted every value on the way
        frame["model"].tolist(),
        frame["ttl"].tolist(),
        inputs.tolist(),
        frame["cache_write"].tolist(),
        frame["cache_read"].tolist(),
        frame["output_tokens"].tolist(),
    )
    prices: dict[Any, Price | None] = {}
    out = []
    for model, ttl, inp, write, read, output in zip(*columns, strict=True):
        if model not in prices:
            prices[model] = price_or_none(model, pricing, default)
        price = prices[model]
        if price is None:
            out.append(float("nan"))
            continue
        hour = ttl == "1h"
        out.append(
            tokens_dollars(
                price,
                input=inp,
                cache_write_5m=0 if hour else write,
                cache_write_1h=write if hour else 0,
                cache_read=read,
                output=output,
            )
        )
    return pd.Series(out, index=frame.index, dtype=float)


def cost_steps(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    sessions: Iterable[Session] | Mapping[str, Session] | None = None,
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
    misses: Literal["auto", "modelled"] = "auto",
    call_infos: Mapping[tuple[str, bool], SessionCallInfo] | None = None,
) -> pd.DataFrame:
    """One row per session × strategy × config_hash × step: simulated tokens and dollars.

    ``misses="auto"``: the ``recorded`` strategy uses its observed misses, the others modelled ones;
    ``"modelled"``: every strategy gets the modelled rule (the calibration's counterfactual check).
    ``call_infos``: ``{(session id, strip): session_call_info(session, strip=strip)}`` computed before
    (the report keeps them, not the sessions); a session in neither it nor ``sessions`` is simulated
    without its recorded calls, as one not given.
    """
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    steps = ensure_keys(steps)
    events = ensure_keys(events)
    infos: dict[tuple[str, bool], SessionCallInfo] = dict(call_infos or {})
    columns: dict[str, list[Any]] = {name: [] for name in (*KEYS, *SIMULATED_COLUMNS)}
    # Every cell's events as dicts by step, and every cell's steps as arrays, each read once: the cells are
    # the stretches of the steps sorted by cell and step (a frame per cell was most of a tune's cost time).
    by_cell: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    if len(events):
        ordered = events.dropna(subset=KEYS).sort_values([*KEYS, "step"], kind="stable")
        read = ordered[[c for c in EVENT_FIELDS if c in ordered.columns]].to_dict("records")
        for key, event in zip(row_cells(ordered), read, strict=True):
            by_cell.setdefault(key, []).append(event)
    steps = steps.dropna(subset=KEYS).sort_values([*KEYS, "step"], kind="stable")
    cells = row_cells(steps)
    step_values, prompts = steps["step"].to_numpy(), steps["context_tokens"].to_numpy()
    withouts = steps["tokens_without_compaction"].to_numpy() if "tokens_without_compaction" in steps else prompts
    first = 0
    while first < len(cells):
        keys = cells[first]
        last = first
        while last < len(cells) and cells[last] == keys:
            last += 1
        sid = keys[0]
        cell_events = by_cell.get(keys, [])
        recorded = keys[1] == "recorded" or any(e.get("kind") == "recorded-compact" for e in cell_events)
        info = infos.get((sid, not recorded))
        if info is None and sid in by_id:
            info = infos[(sid, not recorded)] = session_call_info(by_id[sid], strip=not recorded)
        static = info.static_prefix if info else 0
        sim = simulated_arrays(
            step_values[first:last],
            prompts[first:last],
            withouts[first:last],
            event_changes(cell_events, info, static),
            info,
            static,
            None,
            recorded and misses == "auto",
        )
        first = last
        for column, value in zip(KEYS, keys, strict=True):
            columns[column].extend([value] * len(sim["step"]))
        for name, values in sim.items():
            columns[name].extend(values)
    if not columns["step"]:
        return pd.DataFrame()
    out = pd.DataFrame(columns)  # one frame for every cell (a frame per cell was most of a tune's cost time)
    out["cost_usd"] = _step_dollars(out, table, default_model)
    return out


def _counts(value: object) -> list[int] | None:
    """A list column's value (a list, or the array parquet reads back) as ints; None for a null."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return [int(n) for n in value] if isinstance(value, list | tuple) else None


def _counted_calls(event: Mapping[str, Any]) -> list[tuple[int, int]] | None:
    """(input, output) tokens of each summary call the strategy counted (`replay.rows.summarizer_call_columns`:
    Gemini CLI's verify turn is a second call, the API's compaction reports its own usage), or None."""
    inputs, outputs = _counts(event.get("summarizer_input_tokens")), _counts(event.get("summarizer_output_tokens"))
    if not inputs or outputs is None:
        return None  # not counted (null, or NaN where frames without the columns were joined)
    return list(zip(inputs, outputs, strict=False))


def _summarizer_rows(
    events: pd.DataFrame,
    sessions: Mapping[str, Session],
    pricing: Mapping[str, Price],
    default: str,
    summarizer_input: str,
) -> pd.DataFrame:
    rows = []
    events = ensure_keys(events)
    # the fields read (an event row also lists every record it kept or dropped: costly to turn into dicts)
    fields = [
        *KEYS,
        *(
            c
            for c in (
                "summary",
                "kind",
                "summary_source",
                "summarizer_input_tokens",
                "summarizer_output_tokens",
                "tokens_before",
                "tokens_after",
            )
            if c in events.columns
        ),
    ]
    for event in events[fields].to_dict("records"):
        summary = event.get("summary")
        if not isinstance(summary, str) or not summary or event.get("kind") == "recorded-compact":
            continue  # a recorded compaction's call is its compaction agent's own session
        if _from_session_memory(event):
            continue  # its cost is the extractions that wrote the notes (`_memory_rows`)
        calls = _counted_calls(event)
        if calls is None:  # one call, estimated: it read what the compaction replaced and wrote the summary
            summary_tokens = round(len(summary) / 4)
            before = pd.to_numeric(event.get("tokens_before"), errors="coerce")
            after = pd.to_numeric(event.get("tokens_after"), errors="coerce")
            if pd.isna(before):
                continue
            after = 0 if pd.isna(after) else after
            calls = [(max(int(before) - (int(after) - summary_tokens), 0), summary_tokens)]
        session = sessions.get(event["session_id"])
        model = session.models[0] if session is not None and session.models else None
        price = price_or_none(model, pricing, default)
        if price is None:
            continue
        dollars = 0.0
        for read, written in calls:
            tokens = {"cache_read": read} if summarizer_input == "cache_read" else {"input": read}
            dollars += tokens_dollars(price, **tokens, output=written)
        rows.append(
            {
                **{k: event[k] for k in KEYS},
                "summarizer_calls": len(calls),
                "summarizer_input_tokens": sum(read for read, _ in calls),
                "summarizer_output_tokens": sum(written for _, written in calls),
                "summarizer_cost_usd": dollars,
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
    per_step: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per session × strategy × config_hash: tokens by kind, dollars, dollars per 1k steps.

    Compaction agents cost 0 under every strategy but ``recorded`` (module docstring). ``per_step``: the
    `cost_steps` rows of ``steps``, when the caller computed them one session at a time
    (`workbench.reporting.sessions`); ``sessions`` then only give each session's model (the summariser's
    price) and whether it is a compaction agent, and may come without their records.
    """
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    if per_step is None:
        per_step = cost_steps(steps, events, by_id, pricing=table, default_model=default_model)
    if per_step.empty:
        return pd.DataFrame(columns=SESSION_COST_COLUMNS)
    cells = Cells(per_step)
    out = cells.keys()
    out["steps"] = cells.size()
    for column in ("input_tokens", "cache_read", "cache_write", "output_tokens"):
        out[column] = cells.sum(per_step[column].to_numpy())
    out["step_cost_usd"] = cells.own_sums(per_step["cost_usd"].to_numpy(dtype=float))
    summ = _summarizer_rows(ensure_keys(events), by_id, table, default_model, summarizer_input)
    summed: dict[tuple[Any, ...], tuple[int, float]] = {}
    if len(summ):  # grouped sums: pandas' compensated float sum, as before
        grouped = summ.groupby(KEYS).agg(
            summarizer_calls=("summarizer_calls", "sum"), summarizer_cost_usd=("summarizer_cost_usd", "sum")
        )
        pairs = zip(grouped["summarizer_calls"], grouped["summarizer_cost_usd"], strict=True)
        summed = dict(zip(grouped.index, pairs, strict=True))
    found = [summed.get(cell, (0, 0.0)) for cell in cells.tuples()]
    out["summarizer_calls"] = np.array([int(calls) for calls, _ in found], dtype=np.int64)
    out["summarizer_cost_usd"] = np.array([float(dollars) for _, dollars in found], dtype=float)
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


# Calibration has its own module, which uses `cost_steps`: imported last, so either module can load first.
from .calibration import calibrate_cost, dollar_weighted_error  # noqa: E402


def unpriced_count(column: pd.Series) -> int:
    """How many sessions a cost column leaves out of its sum (null: no price for the session's model)."""
    return int(pd.to_numeric(column, errors="coerce").isna().sum())
