"""Prompt-cache simulation: per step, how much of the prompt is read from the cache, written to it, or sent
uncached, for one session × strategy.

Each step's prompt is ``context_tokens`` (the replay's prompt size). Claude Code puts a cache breakpoint on
the last message, so a request reads from the cache the longest prefix it shares with the previous request
and writes the rest (the recorded usage shows exactly that: ``cache_read(k) ≈ prompt(k−1)``):

* no compaction before step *k*: ``read = min(prompt(k−1), prompt(k))``;
* a compaction (or content clearing) before step *k* invalidates from the first changed block:
  ``read = static prefix + the tokens before the first dropped record`` for edits in place (events
  without ``keep_start``, e.g. microcompact), or just the static prefix when the history head was
  replaced (summary-based compactions, recorded compactions);
* a gap longer than the cache TTL since the previous call (5 min, or 1 h when the session's recorded
  usage wrote mostly 1-hour cache) expires everything: ``read = 0``;
* the first call reads the static prefix (system prompt and tools cached across sessions): the
  session's recorded first-call ``cache_read_input_tokens`` when known, else 0.

**Uncached input.** Of what is not read, the request's uncached tail (after the last breakpoint) is
priced as *input*, the rest as a cache *write*: the tail is the recorded ``input_tokens`` of that step
(1-10 tokens in most Claude Code calls); in a session whose recorded usage neither read nor wrote any
cache (the corpus' one-call sub-agents and warm-up calls) the whole prompt is uncached input.

**Cache misses (the rule).** Real sessions also miss *within* the TTL. Where the recorded usage exists a
miss is observable: ``cache_read(k)`` falls more than `MISS_TOLERANCE` tokens below
``min(prompt(k−1), prompt(k))`` (recorded sizes). The causes found on the corpus (`miss_causes` lists
them): the tool list changed (``/mcp`` reconnected, tool_heavy lines 21-27: the read falls to the part of
the prefix before the changed tool), the start of the prompt changed after a rejected tool use with a
``<task-notification>`` (258c7280 lines 494-498, 1848; 4d5611e5 line 1503: the read falls to the
system-prompt-and-tools prefix, ~21.5k), the TTL expired, or a compaction replaced the history head. The
simulation uses them in two modes:

* ``observed`` (the ``recorded`` strategy, whose context *is* the recorded one): at a step with recorded
  usage, the observation replaces the rules: a miss reads exactly the recorded ``cache_read(k)``, a hit
  is never expired by the TTL rule (the session may have kept its cache warm).
* ``modelled`` (every other strategy): TTL and the strategy's own compactions as above, plus every
  observed miss that the strategy does not change — one within the TTL and not at a recorded
  compaction (those two causes are the strategy's own). Such a miss invalidates the same *number of
  most recent tokens* in the strategy's context, ``read(k) ≤ prompt_s(k−1) − (prompt_rec(k−1) −
  cache_read_rec(k))``, or, when the recorded read fell to the static prefix (tools or system prompt
  changed), ``read(k) ≤ cache_read_rec(k)``.

Where no usage is recorded (other formats), only TTL and compactions apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import pandas as pd

from ..replay.sizes import session_scale, strip_recorded_compactions
from ..tokens.cache import cached_estimator
from ..tokens.context import prompt_tokens
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from ._common import as_list
from .bill import billed_outputs

__all__ = [
    "MISS_TOLERANCE",
    "TTL_1H",
    "TTL_5M",
    "SessionCallInfo",
    "miss_causes",
    "session_call_info",
    "simulate_cache",
]

TTL_5M = 300.0
TTL_1H = 3600.0
#: A recorded read this far below the shared prefix is a cache miss (prompt sizes jitter by a few tokens).
MISS_TOLERANCE = 1024
#: A miss whose read is within this of the static prefix invalidated the prompt's start (tools, system).
PREFIX_SLACK = 4096


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
    #: steps right after a recorded compaction boundary (their miss is that compaction's)
    boundary_steps: frozenset[int] = field(default_factory=frozenset)
    #: whether the recorded usage read or wrote any cache (False: every prompt token is uncached input)
    caching: bool = True

    def recorded(self, step: int) -> tuple[int, int, int] | None:
        """``(prompt, cache_read, input_tokens)`` recorded for ``step``, or None."""
        return self._recorded[step] if 0 <= step < len(self._recorded) else None

    @cached_property
    def _recorded(self) -> list[tuple[int, int, int] | None]:
        """`recorded` of every step, read once (every cell of a session's configs asks for each step)."""
        return [
            (prompt_tokens(u), int(u.get("cache_read_input_tokens") or 0), int(u.get("input_tokens") or 0))
            if u
            else None
            for u in self.usage
        ]

    def miss(self, step: int) -> tuple[int, int] | None:
        """An observed miss at ``step``: ``(recorded read, invalidated suffix)``, else None."""
        now, before = self.recorded(step), self.recorded(step - 1)
        if now is None or before is None:
            return None
        expected = min(before[0], now[0])
        if now[1] >= expected - MISS_TOLERANCE:
            return None
        return now[1], before[0] - now[1]


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _boundary_steps(records: Sequence[Record]) -> frozenset[int]:
    """Steps whose call is the first after a recorded ``compact_boundary``."""
    starts = [c.first for c in api_calls(records)]
    out = set()
    for index, record in enumerate(records):
        if record.is_compact_boundary:
            following = next((k for k, first in enumerate(starts) if first > index), None)
            if following is not None:
                out.add(following)
    return frozenset(out)


def session_call_info(session: Session, *, strip: bool = True) -> SessionCallInfo:
    """Per-call model, time, recorded output and usage; the static prefix and cache TTL of the session."""
    unstripped = session.conversation()
    records = unstripped
    if strip:
        records, _ = strip_recorded_compactions(records)
    calls = api_calls(records)
    usages = [c.usage(records) for c in calls]

    def written(usage: Mapping[str, Any] | None, key: str) -> int:
        return int(((usage or {}).get("cache_creation") or {}).get(key) or 0)

    one_hour = sum(written(u, "ephemeral_1h_input_tokens") for u in usages)
    five = sum(written(u, "ephemeral_5m_input_tokens") for u in usages)
    caching = any(
        int((u or {}).get("cache_read_input_tokens") or 0) or int((u or {}).get("cache_creation_input_tokens") or 0)
        for u in usages
    )
    first = next((u for u in usages if u), None) or {}
    rough = cached_estimator("claude-rough").count_many(records)
    before: dict[str, int] = {}
    total = 0
    for record, count in zip(records, rough, strict=True):
        if record.uuid is not None and record.uuid not in before:
            before[record.uuid] = total
        total += count
    # the output of a response is the bill's (its largest persisted usage), not its last line's
    billed = billed_outputs(session) if "usage" in session.capabilities else {}
    # A call without a model name is priced as the session's model; a session of another format with
    # no model at all is "not priced" (its cost is NaN), not priced as Claude.
    fallback = session.models[0] if session.models else (None if session.format == "claude-code" else "unpriced")
    return SessionCallInfo(
        models=[records[c.first].model or fallback for c in calls],
        times=[_seconds(records[c.first].timestamp) for c in calls],
        output=[
            billed.get(c.message_id, int((u or {}).get("output_tokens") or 0))
            for c, u in zip(calls, usages, strict=True)
        ],
        usage=usages,
        static_prefix=int(first.get("cache_read_input_tokens") or 0),
        ttl=TTL_1H if one_hour > five else TTL_5M,
        rough_before=before,
        scale=session_scale(records, rough),
        boundary_steps=_boundary_steps(unstripped),
        caching=caching or not any(usages),
    )


def miss_causes(session: Session) -> pd.DataFrame:
    """Every observed cache miss of a session's recorded usage, with its line, gap and likely cause."""
    info = session_call_info(session, strip=False)
    records = session.conversation()
    calls = api_calls(records)
    rows = []
    for call in calls[1:]:
        miss = info.miss(call.step)
        if miss is None:
            continue
        when, then = info.times[call.step], info.times[call.step - 1]
        gap = when - then if when is not None and then is not None else None
        between = records[calls[call.step - 1].last + 1 : call.first]
        text = " ".join(r.text for r in between if r.kind == "user")
        if call.step in info.boundary_steps:
            cause = "compaction"
        elif gap is not None and gap > info.ttl:
            cause = "ttl"
        elif "<command-name>/mcp</command-name>" in text:
            cause = "tool list changed (/mcp)"
        elif "tool use was rejected" in " ".join(b.result_text() for r in between for b in r.tool_results()):
            cause = "rejected tool use" + (" + task-notification" if "<task-notification>" in text else "")
        elif miss[0] <= info.static_prefix + PREFIX_SLACK:
            cause = "prompt start changed"
        else:
            cause = "mid-conversation change"
        rows.append(
            {
                "session_id": session.id,
                "step": call.step,
                "line": records[call.first].line_no,
                "gap_s": gap,
                "recorded_read": miss[0],
                "invalidated": miss[1],
                "cause": cause,
            }
        )
    return pd.DataFrame(rows, columns=["session_id", "step", "line", "gap_s", "recorded_read", "invalidated", "cause"])


#: The event fields the cache simulation reads.
EVENT_FIELDS = ("step", "keep_start", "kind", "dropped_uuids")


def _changes(events: pd.DataFrame | None, info: SessionCallInfo | None, static: int) -> dict[int, int]:
    if events is None or not len(events):
        return {}
    read = [c for c in EVENT_FIELDS if c in events.columns]
    return event_changes(events[read].sort_values("step", kind="stable").to_dict("records"), info, static)


def event_changes(events: Sequence[Mapping[str, Any]], info: SessionCallInfo | None, static: int) -> dict[int, int]:
    """Step → the prefix a compaction before it leaves cacheable, from one cell's events (by step, as dicts
    of `EVENT_FIELDS`)."""
    changes: dict[int, int] = {}
    for event in events:
        step = int(event["step"])
        in_place = event.get("keep_start") is None or pd.isna(event.get("keep_start"))
        reuse = static
        if in_place and event.get("kind") != "recorded-compact" and info is not None:
            dropped = as_list(event.get("dropped_uuids"))
            positions = [info.rough_before[u] for u in dropped if u in info.rough_before]
            if positions:
                reuse = static + round(info.scale * min(positions))
        changes[step] = min(changes.get(step, reuse), reuse)
    return changes


def simulate_cache(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    info: SessionCallInfo | None = None,
    *,
    static_prefix: int | None = None,
    ttl: float | None = None,
    observed: bool = False,
) -> pd.DataFrame:
    """Per-step simulated ``input_tokens``/``cache_read``/``cache_write``/``output`` for ONE session × strategy.

    ``observed=True`` is the mode for the ``recorded`` strategy (recorded misses replace the rules where
    usage exists); otherwise misses are modelled (module docstring).
    """
    return pd.DataFrame(
        simulated_columns(steps, events, info, static_prefix=static_prefix, ttl=ttl, observed=observed),
        columns=SIMULATED_COLUMNS,
    )


#: The columns `simulate_cache` returns, in order.
SIMULATED_COLUMNS = (
    "step",
    "prompt_tokens",
    "input_tokens",
    "cache_read",
    "cache_write",
    "output_tokens",
    "model",
    "ttl",
)


def simulated_columns(
    steps: pd.DataFrame,
    events: pd.DataFrame | None = None,
    info: SessionCallInfo | None = None,
    *,
    static_prefix: int | None = None,
    ttl: float | None = None,
    observed: bool = False,
) -> dict[str, list[Any]]:
    """`simulate_cache`'s columns as lists (a caller that joins many cells builds one frame at the end)."""
    steps = steps.sort_values("step", kind="stable")
    static = static_prefix if static_prefix is not None else (info.static_prefix if info else 0)
    prompts = steps["context_tokens"].to_numpy()
    withouts = steps["tokens_without_compaction"].to_numpy() if "tokens_without_compaction" in steps else prompts
    return simulated_arrays(
        steps["step"].to_numpy(), prompts, withouts, _changes(events, info, static), info, static, ttl, observed
    )


def simulated_arrays(
    step_values: Sequence[Any],
    prompts: Sequence[Any],
    withouts: Sequence[Any],
    changes: Mapping[int, int],
    info: SessionCallInfo | None,
    static: int,
    ttl: float | None,
    observed: bool,
) -> dict[str, list[Any]]:
    """`simulated_columns` of one cell given as arrays in step order: its steps, context and uncompacted
    sizes, and its compactions' `event_changes` (``static``: the static prefix in force)."""
    life = ttl if ttl is not None else (info.ttl if info else TTL_5M)
    out: dict[str, list[Any]] = {name: [] for name in SIMULATED_COLUMNS}
    previous: int | None = None
    previous_time: float | None = None
    saved_before = 0
    for step_value, prompt_value, without in zip(step_values, prompts, withouts, strict=True):
        step = int(step_value)
        prompt = int(prompt_value)
        recorded = info.recorded(step) if info is not None else None
        if previous is None and recorded is not None:
            # before the first response nothing measured the system prompt and tools; the replay's
            # estimate omits them, the recorded first request (identical under every strategy) has them
            prompt = max(prompt, recorded[0])
        when = info.times[step] if info and step < len(info.times) else None
        expired = when is not None and previous_time is not None and when - previous_time > life
        miss = info.miss(step) if info is not None and previous is not None else None
        if previous is None:
            read = min(static, prompt)
        elif observed and recorded is not None:
            read = min(miss[0], prompt) if miss is not None else min(previous, prompt)
        elif expired:
            read = 0
        elif step in changes:
            read = min(max(changes[step] - saved_before, static), previous, prompt)
        else:
            read = min(previous, prompt)
        if not observed and miss is not None and not expired and step not in info.boundary_steps:  # type: ignore[union-attr]
            bound = miss[0] if miss[0] <= static + PREFIX_SLACK else max(previous - miss[1], 0)  # type: ignore[operator]
            read = min(read, bound)
        caching = info.caching if info is not None else True
        uncached = prompt - read if not caching else min(recorded[2] if recorded else 0, prompt - read)
        out["step"].append(step)
        out["prompt_tokens"].append(prompt)
        out["input_tokens"].append(uncached)
        out["cache_read"].append(read)
        out["cache_write"].append(prompt - read - uncached)
        out["output_tokens"].append(info.output[step] if info and step < len(info.output) else 0)
        out["model"].append(info.models[step] if info and step < len(info.models) else None)
        out["ttl"].append("1h" if life >= TTL_1H else "5m")
        saved_before = int(without) - prompt
        previous, previous_time = prompt, when if when is not None else previous_time
    return out
