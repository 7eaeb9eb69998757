"""Cost: dollars per session under a prompt-cache simulation, calibrated against recorded usage.

**Prices** come from the dated table ``workbench/data/pricing.csv`` (USD per million tokens: input,
5-minute cache write, 1-hour cache write, cache read, output; its header names date and source).
`price_for` matches a model exactly, then by family prefix (date suffix dropped).

**Cache simulation** (`simulate_cache`, one session × strategy). Each step's prompt is
``context_tokens`` (the replay's prompt size). Claude Code puts a cache breakpoint on the last
message, so a request reads from the cache the longest prefix it shares with the previous request and
writes the rest (the recorded usage shows exactly that: ``cache_read(k) ≈ prompt(k−1)``):

* no compaction before step *k*: ``read = min(prompt(k−1), prompt(k))``; ``write = prompt(k) − read``;
* a compaction (or content clearing) before step *k* invalidates from the first changed block:
  ``read = static prefix + the tokens before the first dropped record`` for edits in place (events
  without ``keep_start``, e.g. microcompact), or just the static prefix when the history head was
  replaced (summary-based compactions, recorded compactions);
* a gap longer than the cache TTL since the previous call (5 min, or 1 h when the session's recorded
  usage wrote 1-hour cache) expires everything: ``read = 0``;
* the first call reads the static prefix (system prompt and tools cached across sessions): the
  session's recorded first-call ``cache_read_input_tokens`` when known, else 0. The static prefix
  after a compaction is the same number.

Output tokens are the recorded ones (open-loop replay: the future is the same under every strategy).

**Summariser calls.** Each event with a summary adds one call that reads the dropped context
(``tokens_before − (tokens_after − summary_tokens)``, ≥ 0) and writes the summary (rough chars/4
tokens) as output. The read is priced as a cache read by default: Claude Code's compaction is a
forked call that reuses the main conversation's prompt cache (the corpus' ``agent-acompact-*``
transcripts record ~165k cache-read tokens per compaction call); ``summarizer_input="input"`` prices it
uncached instead.

**Definitions.** ``cost_usd`` = Σ steps (input·p_in + write·p_write + read·p_read + output·p_out) +
summariser calls; ``cost_per_1k_steps`` = ``cost_usd / steps × 1000``; ``summarizer_share`` = summariser
cost / ``cost_usd``.

Worked example (claude-opus-4-6: write $6.25, read $0.50, output $25 per MTok; no static prefix; calls
one minute apart; output 100 tokens each): prompts 10k, 12k, then a summary compaction leaves 3k
(``tokens_before`` 14k, summary 1k tokens). Step 0 writes 10k; step 1 reads 10k, writes 2k; step 2 reads
0 (history head replaced), writes 3k. Steps: 15k·6.25 + 10k·0.50 + 300·25 = $0.10625; summariser:
reads 14k − (3k − 1k) = 12k ($0.006), writes 1k output ($0.025) → ``cost_usd`` = $0.13725.

**Calibration** (`calibrate_cost`): for ``none``/``recorded`` replays, simulated per-call cache reads and
writes are compared with the recorded ``usage`` of the same calls; ``cost_error`` = |simulated −
recorded| / recorded dollars per session (``none`` only on sessions without recorded compactions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import pandas as pd

from ..replay.engine import strip_recorded_compactions
from ..tokens.cache import cached_estimator
from ..tokens.context import prompt_tokens
from ..transcript.model import Session
from ..transcript.steps import api_calls
from ._common import KEYS, as_list, ensure_keys, session_map
from .pricing import DEFAULT_MODEL, Price, known_price, load_pricing, price_for, price_or_none

__all__ = [
    "Price",
    "SessionCallInfo",
    "calibrate_cost",
    "cost_sessions",
    "cost_steps",
    "known_price",
    "load_pricing",
    "price_for",
    "session_call_info",
    "simulate_cache",
]

TTL_5M = 300.0
TTL_1H = 3600.0


@dataclass(frozen=True)
class SessionCallInfo:
    """What the cost simulation needs from a session, per step (aligned with its replay steps)."""

    models: list[str | None]
    times: list[float | None]
    output: list[int]
    usage: list[Mapping[str, Any] | None]
    static_prefix: int
    ttl: float
    rough_before: dict[str, int]
    scale: float


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def session_call_info(session: Session, *, strip: bool = True) -> SessionCallInfo:
    """Per-call model, time, recorded output and usage; the static prefix and cache TTL of the session."""
    records = session.conversation()
    if strip:
        records, _ = strip_recorded_compactions(records)
    calls = api_calls(records)
    usages = [c.usage(records) for c in calls]

    def written(usage: Mapping[str, Any] | None, key: str) -> int:
        return int(((usage or {}).get("cache_creation") or {}).get(key) or 0)

    one_hour = sum(written(u, "ephemeral_1h_input_tokens") for u in usages)
    five = sum(written(u, "ephemeral_5m_input_tokens") for u in usages)
    first = next((u for u in usages if u), None) or {}
    rough = cached_estimator("claude-rough").count_many(records)
    before: dict[str, int] = {}
    total = 0
    for record, count in zip(records, rough, strict=True):
        if record.uuid is not None and record.uuid not in before:
            before[record.uuid] = total
        total += count
    from ..replay.engine import session_scale

    # A call without a model name is priced as the session's model; a session of another format with
    # no model at all is "not priced" (its cost is NaN), not priced as Claude.
    fallback = session.models[0] if session.models else (None if session.format == "claude-code" else "unpriced")
    return SessionCallInfo(
        models=[records[c.first].model or fallback for c in calls],
        times=[_seconds(records[c.first].timestamp) for c in calls],
        output=[int((u or {}).get("output_tokens") or 0) for u in usages],
        usage=usages,
        static_prefix=int(first.get("cache_read_input_tokens") or 0),
        ttl=TTL_1H if one_hour > five else TTL_5M,
        rough_before=before,
        scale=session_scale(records, rough),
    )


def simulate_cache(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    info: SessionCallInfo | None = None,
    *,
    static_prefix: int | None = None,
    ttl: float | None = None,
) -> pd.DataFrame:
    """Per-step simulated ``cache_read``/``cache_write``/``output`` tokens for ONE session × strategy."""
    steps = steps.sort_values("step", kind="stable")
    static = static_prefix if static_prefix is not None else (info.static_prefix if info else 0)
    life = ttl if ttl is not None else (info.ttl if info else TTL_5M)
    changes: dict[int, int] = {}
    if events is not None and len(events):
        for event in events.sort_values("step", kind="stable").to_dict("records"):
            step = int(event["step"])
            in_place = event.get("keep_start") is None or pd.isna(event.get("keep_start"))
            reuse = static
            if in_place and event.get("kind") != "recorded-compact" and info is not None:
                dropped = as_list(event.get("dropped_uuids"))
                positions = [info.rough_before[u] for u in dropped if u in info.rough_before]
                if positions:
                    reuse = static + round(info.scale * min(positions))
            changes[step] = min(changes.get(step, reuse), reuse)
    rows = []
    previous: int | None = None
    previous_time: float | None = None
    saved_before = 0
    for row in steps.to_dict("records"):
        step = int(row["step"])
        prompt = int(row["context_tokens"])
        if previous is None and info is not None and step < len(info.usage) and info.usage[step]:
            # before the first response nothing measured the system prompt and tools; the replay's
            # estimate omits them, the recorded first request (identical under every strategy) has them
            prompt = max(prompt, prompt_tokens(info.usage[step]))
        when = info.times[step] if info and step < len(info.times) else None
        if previous is None:
            read = min(static, prompt)
        elif when is not None and previous_time is not None and when - previous_time > life:
            read = 0
        elif step in changes:
            read = min(max(changes[step] - saved_before, static), previous, prompt)
        else:
            read = min(previous, prompt)
        rows.append(
            {
                "step": step,
                "prompt_tokens": prompt,
                "cache_read": read,
                "cache_write": prompt - read,
                "output_tokens": info.output[step] if info and step < len(info.output) else 0,
                "model": info.models[step] if info and step < len(info.models) else None,
                "ttl": "1h" if life >= TTL_1H else "5m",
            }
        )
        saved_before = int(row.get("tokens_without_compaction", prompt)) - prompt
        previous, previous_time = prompt, when if when is not None else previous_time
    return pd.DataFrame(rows)


def _step_dollars(frame: pd.DataFrame, pricing: Mapping[str, Price], default: str) -> pd.Series:
    def dollars(row: Mapping[str, Any]) -> float:
        price = price_or_none(row["model"], pricing, default)
        if price is None:
            return float("nan")
        write = price.cache_write_1h if row["ttl"] == "1h" else price.cache_write_5m
        return (
            row["cache_write"] * write + row["cache_read"] * price.cache_read + row["output_tokens"] * price.output
        ) / 1e6

    return frame.apply(dollars, axis=1) if len(frame) else pd.Series(dtype=float)


def cost_steps(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    sessions: Iterable[Session] | Mapping[str, Session] | None = None,
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """One row per session × strategy × config_hash × step: simulated tokens and dollars."""
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
        strip = not (cell_events["kind"] == "recorded-compact").any() if len(cell_events) else keys[1] != "recorded"
        info = None
        if sid in by_id:
            if (sid, strip) not in infos:
                infos[(sid, strip)] = session_call_info(by_id[sid], strip=strip)
            info = infos[(sid, strip)]
        sim = simulate_cache(group, cell_events, info)
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
        if not isinstance(summary, str) or not summary:
            continue
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
        rate = price.cache_read if summarizer_input == "cache_read" else price.input
        rows.append(
            {
                **{k: event[k] for k in KEYS},
                "summarizer_calls": 1,
                "summarizer_input_tokens": read,
                "summarizer_output_tokens": summary_tokens,
                "summarizer_cost_usd": (read * rate + summary_tokens * price.output) / 1e6,
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


def cost_sessions(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    sessions: Iterable[Session] | Mapping[str, Session] | None = None,
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
    summarizer_input: Literal["cache_read", "input"] = "cache_read",
) -> pd.DataFrame:
    """One row per session × strategy × config_hash: tokens by kind, dollars, dollars per 1k steps."""
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    per_step = cost_steps(steps, events, by_id, pricing=table, default_model=default_model)
    columns = [
        *KEYS,
        "steps",
        "cache_read",
        "cache_write",
        "output_tokens",
        "step_cost_usd",
        "summarizer_calls",
        "summarizer_cost_usd",
        "cost_usd",
        "cost_per_1k_steps",
        "summarizer_share",
        "priced_outputs",
    ]
    if per_step.empty:
        return pd.DataFrame(columns=columns)
    out = (
        per_step.groupby(KEYS, sort=True)
        .agg(
            steps=("step", "size"),
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
    out["cost_usd"] = out["step_cost_usd"] + out["summarizer_cost_usd"]
    out["cost_per_1k_steps"] = out["cost_usd"] / out["steps"] * 1000
    out["summarizer_share"] = (out["summarizer_cost_usd"] / out["cost_usd"].where(out["cost_usd"] > 0)).fillna(0.0)
    out["priced_outputs"] = out["session_id"].isin(by_id)
    return out[columns]


def _recorded_dollars(usage: Mapping[str, Any] | None, price: Price, *, output: bool = True) -> float:
    if not usage:
        return 0.0
    split = usage.get("cache_creation") or {}
    one_hour = int(split.get("ephemeral_1h_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return (
        int(usage.get("input_tokens") or 0) * price.input
        + (written - one_hour) * price.cache_write_5m
        + one_hour * price.cache_write_1h
        + int(usage.get("cache_read_input_tokens") or 0) * price.cache_read
        + (int(usage.get("output_tokens") or 0) * price.output if output else 0)
    ) / 1e6


def calibrate_cost(
    steps: pd.DataFrame,
    events: pd.DataFrame | None,
    sessions: Iterable[Session] | Mapping[str, Session],
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """Per session × strategy: simulated vs recorded dollars and cache tokens (``none``/``recorded`` runs).

    ``none`` rows are only produced for sessions without recorded compactions (after a recorded
    compaction the recorded usage measures a context the ``none`` replay does not have).
    Columns: recorded/simulated ``cost_usd``, ``input_cost`` (without output), ``cache_read``,
    ``cache_write``, and relative errors ``cost_error``, ``input_cost_error``, ``read_error``,
    ``write_error``.
    """
    table = pricing or load_pricing()
    by_id = session_map(sessions)
    steps = ensure_keys(steps)
    steps = steps[steps["strategy"].isin(["none", "recorded"])]
    per_step = cost_steps(steps, events, by_id, pricing=table, default_model=default_model)
    rows = []
    for keys, group in per_step.groupby(KEYS, sort=True):
        session = by_id.get(keys[0])
        if session is None:
            continue
        compacted = any(r.is_compact_boundary for r in session.conversation())
        if keys[1] == "none" and compacted:
            continue
        info = session_call_info(session, strip=keys[1] != "recorded")
        rec_cost = rec_input = rec_read = rec_write = 0.0
        sim_input = 0.0
        for row in group.to_dict("records"):
            usage = info.usage[row["step"]] if row["step"] < len(info.usage) else None
            price = price_for(row["model"], table, default_model)
            rec_cost += _recorded_dollars(usage, price)
            rec_input += _recorded_dollars(usage, price, output=False)
            rec_read += int((usage or {}).get("cache_read_input_tokens") or 0)
            rec_write += int((usage or {}).get("cache_creation_input_tokens") or 0) + int(
                (usage or {}).get("input_tokens") or 0
            )
            sim_input += row["cost_usd"] - row["output_tokens"] * price.output / 1e6
        sim_cost = float(group["cost_usd"].sum())
        sim_read = float(group["cache_read"].sum())
        sim_write = float(group["cache_write"].sum())

        def err(sim: float, rec: float) -> float:
            return abs(sim - rec) / rec if rec else 0.0

        rows.append(
            {
                **dict(zip(KEYS, keys, strict=True)),
                "steps": len(group),
                "recorded_cost_usd": rec_cost,
                "simulated_cost_usd": sim_cost,
                "cost_error": err(sim_cost, rec_cost),
                "recorded_input_cost_usd": rec_input,
                "simulated_input_cost_usd": sim_input,
                "input_cost_error": err(sim_input, rec_input),
                "recorded_cache_read": rec_read,
                "simulated_cache_read": sim_read,
                "read_error": err(sim_read, rec_read),
                "recorded_cache_write": rec_write,
                "simulated_cache_write": sim_write,
                "write_error": err(sim_write, rec_write),
            }
        )
    return pd.DataFrame(rows)
