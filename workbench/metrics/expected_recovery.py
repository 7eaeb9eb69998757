"""Counterfactual recovery: what the agent would have had to re-acquire under a strategy's compactions.

`workbench.metrics.recovery` measures what the agent re-read after Claude Code's *real* compactions. For a
replayed strategy we estimate the same from the recorded future (open loop): the later ``Read`` calls
(and repeated commands) whose content this strategy had dropped and did not carry in the compacted
context.

**The walk.** The acquisitions of the replayed record list (`workbench.metrics.acquisitions`: ``read``
keyed by path, ``command`` keyed by the exact command, ``search`` (``Grep``/``Glob``) by pattern and
scope, ``fetch`` (``WebFetch``/``WebSearch``) by normalised URL or query, ``task`` (a sub-agent) by its
prompt) and the strategy's events are walked in order.
Each key is *absent* (never acquired), *present* (some tool result of it is in the context), or *lost at
event e*. At event *e* (before API call *s*), a present key whose every result record so far is dropped
(``dropped_uuids`` of this or an earlier event; a tool result a compaction only rewrote — masked,
cleared, truncated — counts as dropped) is *lost at e* unless its content is **carried**:

* *kept verbatim*: a result record of the key that no event dropped;
* *re-attached or quoted*: the compaction's new text (its ``summary`` and ``added_text``: re-attached
  file contents of a full compaction, docs §5.4, and rewritten results) holds the result's content
  (`workbench.metrics.carried.content_carried`: at least half of its content lines).

A *mention* is not content: a summary naming ``lib/app/parser.py`` tells the agent the file exists, not
what it says, so the later Read still has to happen. Mentions are counted beside the estimate
(``expected_recovery_mentioned_calls``: recovery calls whose path, command, pattern, URL, query or
sub-agent description the summary names,
`workbench.metrics.carried.mentions`) so the rule can be checked against behaviour (docs/metrics.md,
"Which fidelity score to trust").

A later acquisition of a key lost at *e* is a **recovery call of e** (its result's tokens, per the run's
estimator, are ``expected_recovery_tokens``), after which the key is present again; those of the
``search``, ``fetch`` and ``task`` kinds are also counted apart (``expected_repeated_calls``, the
estimate of the measured ``repeated_searches + repeated_fetches + repeated_tasks``). Only the first
re-acquisition after a loss counts; a key present is not recovery (the agent re-read something it still
had). For ``recorded-compact`` events (the ``recorded`` strategy) everything before the recording's
``compact_boundary`` is dropped and the compacted context is the recorded summary and what follows the
boundary; that estimate is compared with the measured recovery of `workbench.metrics.recovery` (which
counts *every* re-read, also the second of a file) in the report's reference row.

**Open-loop assumptions.** (1) The recorded future is fixed: the agent under the strategy would have
made the same later calls; a strategy that drops a file the agent never reads again costs nothing, and
re-acquisitions the recorded agent did not need are not invented. (2) A re-acquisition would happen at
the recorded later call, not earlier. (3) The recorded future after Claude Code's own compactions
already contains Claude's re-reads; for a strategy that kept that content they are counted as redundant,
not as recovery (they are priced in ``cost_usd`` for every strategy alike, as every recorded call is).

**Price** (``recovery_cost_usd``, the session's model, `workbench.metrics.pricing`): a recovery call costs
one extra request round trip and its result's tokens in context: (a) the request that issues the call
re-reads the compacted context from the cache (``context_tokens`` of that step × cache-read price) and
generates the call (its tool_use tokens × output price); (b) the result enters the context once as a
cache write (× the session's cache-write price, 1 h or 5 min TTL as recorded) and (c) is re-read in
every later request until the strategy's next compaction or the session end (× cache-read price).
Estimated tokens are scaled by the session's real-tokens-per-estimated-token ratio (`session_scale`)
before pricing. ``total_cost_usd`` = ``cost_usd`` (requests + summariser, `workbench.metrics.cost`) +
``recovery_cost_usd`` is assembled by the report.

**Not available.** Sessions whose format records no tool calls with results (Aider's chat history,
Gemini CLI's model-side recordings: no ``tool_result`` block and not one of `TOOL_FORMATS`) get null
estimates, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..replay.engine import session_scale, strip_recorded_compactions
from ..tokens.cache import cached_estimator
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from ._common import KEYS, as_list, cell_events, cell_rows, ensure_keys, row_cells, session_map
from .acquisitions import REACQUIRED_KINDS, Acquisition, acquisitions, result_record
from .carried import content_carried, mentions
from .pricing import DEFAULT_MODEL, Price, load_pricing, price_or_none

__all__ = [
    "EVENT_COLUMNS",
    "SESSION_COLUMNS",
    "TOOL_FORMATS",
    "content_carried",
    "expected_recovery",
    "expected_recovery_events",
    "expected_recovery_sessions",
    "has_tool_calls",
    "mentions",
]

#: Per-event columns (besides the keys).
EVENT_COLUMNS = (
    "event",
    "kind",
    "step",
    "lost_keys",
    "carried_keys",
    "expected_recovery_calls",
    "expected_recovery_tokens",
    "expected_recovery_files",
    "expected_recovery_mentioned_calls",
    "expected_repeated_calls",
    "recovery_cost_usd",
)
#: Per-session columns (besides the keys).
SESSION_COLUMNS = (
    "expected_recovery_calls",
    "expected_recovery_tokens",
    "expected_recovery_files",
    "expected_recovery_mentioned_calls",
    "recovery_cost_usd",
)


@dataclass
class _Key:
    holders: list[Acquisition]
    lost_at: int | None = None  # event number
    carried_at: int | None = None  # event whose summary or added text carries the content


def _ttl_write_price(records: Sequence[Record], price: Price) -> float:
    one_hour = five = 0
    for record in records:
        written = ((record.usage or {}).get("cache_creation") or {}) if record.usage else {}
        one_hour += int(written.get("ephemeral_1h_input_tokens") or 0)
        five += int(written.get("ephemeral_5m_input_tokens") or 0)
    return price.cache_write_1h if one_hour > five else price.cache_write_5m


def _session_model(records: Sequence[Record], session: Session) -> str | None:
    if session.models:
        return session.models[0]
    return next((r.model for r in records if r.kind == "assistant" and r.model), None)


#: Formats whose transcripts record tool calls with their results whenever the agent made any.
TOOL_FORMATS = frozenset({"claude-code", "anthropic-messages", "swe-agent", "openhands", "codex", "chat-jsonl"})


def has_tool_calls(session: Session) -> bool:
    """Whether recovery can be estimated: the session records a tool result, or its format records tool
    calls with results (a Claude Code session without tool calls has nothing to re-acquire: 0). A format
    without them (Aider's chat history, Gemini CLI's model-side recordings) gives null."""
    if session.format in TOOL_FORMATS:
        return True
    return any(b.kind == "tool_result" for r in session.records for b in r.blocks)


def expected_recovery_events(
    session: Session,
    events: pd.DataFrame | Sequence[Mapping[str, Any]],
    steps: pd.DataFrame | None = None,
    *,
    estimator: str = "claude-rough",
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """One row per event of ``session`` (any strategies/configs in ``events``) with its expected recovery.

    ``steps`` (the replay's steps rows) gives the context size each recovery call's request re-reads and
    the session length; without it the round trip is priced at 0 context tokens.
    """
    frame = ensure_keys(pd.DataFrame(list(events)) if not isinstance(events, pd.DataFrame) else events)
    frame = frame[frame["session_id"] == session.id] if len(frame) else frame
    if frame.empty:
        return pd.DataFrame(columns=[*KEYS, *EVENT_COLUMNS])
    available = has_tool_calls(session)
    table = pricing or load_pricing()
    original = session.conversation()
    stripped, _ = strip_recorded_compactions(original)
    counter = cached_estimator(estimator)
    prepared: dict[bool, Any] = {}
    steps = ensure_keys(steps) if steps is not None and len(steps) else None
    # each cell's context size per step, read once as lists (a frame per cell was most of the cost)
    context_of: dict[tuple[Any, ...], tuple[dict[int, float], int]] = {}  # cell → (sizes by step, its rows)
    if steps is not None:
        step_values, context_values = steps["step"].tolist(), steps["context_tokens"].tolist()
        for key, positions in cell_rows(steps).items():
            context_of[key] = ({step_values[i]: context_values[i] for i in positions}, len(positions))
    rows: list[dict[str, Any]] = []
    for keys, group in cell_events(frame, READ_EVENT_FIELDS):  # by cell in key order, each cell's by step
        recorded = any(event.get("kind") == "recorded-compact" for event in group)
        if recorded not in prepared:
            records = original if recorded else stripped
            found = [a for a in acquisitions(records) if a.kind in REACQUIRED_KINDS]
            result_records = [result_record(a) for a in found]
            counted = iter(counter.count_fresh([r for r in result_records if r is not None]))
            sizes = [next(counted) if r is not None else 0 for r in result_records]
            blocks = _uses(records, found)
            uses = [Record(kind="assistant", role="assistant", blocks=(b,), has_content=True) for b in blocks]
            calls_sizes = counter.count_fresh(uses)
            scale = session_scale(records, counter.count_many(records))
            model = _session_model(records, session)
            price = price_or_none(model, table, default_model)
            ttl_price = _ttl_write_price(records, price) if price else None
            prepared[recorded] = (records, api_calls(records), found, sizes, calls_sizes, scale, price, ttl_price)
        records, calls, found, sizes, use_sizes, scale, price, ttl_price = prepared[recorded]
        context_by_step, step_rows = context_of.get(keys, ({}, 0))
        n_steps = max(len(calls), step_rows)
        rows.extend(
            _walk(
                keys,
                group,
                records,
                calls,
                found,
                sizes,
                use_sizes,
                scale,
                price,
                ttl_price,
                context_by_step,
                n_steps,
                available,
            )
        )
    return pd.DataFrame(rows, columns=[*KEYS, *EVENT_COLUMNS])


#: The event fields `_walk` reads (an event row has many more, some large), and the step fields read.
READ_EVENT_FIELDS = ("step", "kind", "dropped_uuids", "summary", "added_text")
READ_STEP_FIELDS = ("step", "context_tokens")


def _uses(records: Sequence[Record], found: Sequence[Acquisition]) -> list[Any]:
    by_id = {b.id: b for r in records for b in r.tool_uses()}
    return [by_id[a.tool_use_id] for a in found]


def _step_of(calls: Sequence[Any]) -> dict[int, int]:
    """Record index → the step (API call) whose response holds it."""
    out = {}
    for call in calls:
        for index in call.indices:
            out[index] = call.step
    return out


def _walk(
    keys: tuple[Any, ...],
    events: list[dict[str, Any]],
    records: Sequence[Record],
    calls: Sequence[Any],
    found: Sequence[Acquisition],
    sizes: Sequence[int],
    use_sizes: Sequence[int],
    scale: float,
    price: Price | None,
    write_price: float | None,
    context_by_step: Mapping[int, float],
    n_steps: int,
    available: bool,
) -> list[dict[str, Any]]:
    boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
    step_of = _step_of(calls)
    points = []
    recorded_seen = 0
    for event in events:
        step = int(event["step"])
        point = calls[step].first if step < len(calls) else len(records)
        if event["kind"] == "recorded-compact":
            cut = boundaries[recorded_seen] if recorded_seen < len(boundaries) else point
            recorded_seen += 1
            dropped = {r.uuid for r in records[:cut] if r.uuid is not None}
            carrier = "\n".join(r.text for r in records[cut + 1 : point] if r.text)
        else:
            dropped = {u for u in as_list(event.get("dropped_uuids")) if u is not None}
            summary = event.get("summary") if isinstance(event.get("summary"), str) else ""
            added = event.get("added_text") if isinstance(event.get("added_text"), str) else ""
            carrier = "\n".join(t for t in (summary, added) if t)
        # a new summary replaces the previous one (and what it carried); other events leave it in place
        replaces = event["kind"] == "recorded-compact" or bool(event.get("summary"))
        points.append((point, dropped, carrier, replaces))
    # the steps at which the strategy compacts: a recovered result stays in context until the next one
    event_steps = sorted(int(e["step"]) for e in events)
    state: dict[tuple[str, str], _Key] = {}
    dropped_so_far: set[str] = set()
    out = [
        {
            **dict(zip(KEYS, keys, strict=True)),
            "event": number,
            "kind": event["kind"],
            "step": int(event["step"]),
            "lost_keys": 0,
            "carried_keys": 0,
            "expected_recovery_calls": 0 if available else None,
            "expected_recovery_tokens": 0 if available else None,
            "expected_recovery_files": 0 if available else None,
            "expected_recovery_mentioned_calls": 0 if available else None,
            "expected_repeated_calls": 0 if available else None,
            "recovery_cost_usd": (0.0 if price else None) if available else None,
            "_files": set(),
        }
        for number, event in enumerate(events)
    ]
    position = 0

    def apply_event(number: int) -> None:
        _, dropped, carrier, replaces = points[number]
        dropped_so_far.update(dropped)
        for item in state.values():
            if item.lost_at is not None or (item.carried_at is not None and not replaces):
                continue
            if any(_uuid(records, h) not in dropped_so_far for h in item.holders):
                continue
            if content_carried(item.holders[-1].result_text, carrier):
                item.carried_at = number
                out[number]["carried_keys"] += 1
                continue
            item.carried_at = None
            item.lost_at = number
            out[number]["lost_keys"] += 1

    for index, acquisition in enumerate(found):
        while position < len(points) and points[position][0] <= acquisition.index:
            apply_event(position)
            position += 1
        key = (acquisition.kind, acquisition.key)
        item = state.get(key)
        if item is not None and item.lost_at is not None and available:
            row = out[item.lost_at]
            tokens = sizes[index]
            row["expected_recovery_calls"] += 1
            row["expected_recovery_tokens"] += tokens
            row["_files"].add(key)
            if mentions(acquisition.named, acquisition.kind, points[item.lost_at][2]):
                row["expected_recovery_mentioned_calls"] += 1
            if acquisition.kind not in ("read", "command"):
                row["expected_repeated_calls"] += 1
            if price is not None and write_price is not None:
                step = step_of.get(acquisition.index, 0)
                later = [s for s in event_steps if s > step + 1]
                until = later[0] if later else n_steps
                rereads = max(0, until - (step + 1) - 1)
                context = float(context_by_step.get(step, 0) or 0)
                row["recovery_cost_usd"] += (
                    context * price.cache_read
                    + scale * use_sizes[index] * price.output
                    + scale * tokens * (write_price + rereads * price.cache_read)
                ) / 1e6
            item.lost_at = None
            item.holders = [acquisition]
        elif item is not None and item.carried_at is not None:
            item.carried_at = None
            item.holders = [acquisition]
        elif item is None:
            state[key] = _Key([acquisition])
        else:
            item.holders.append(acquisition)
    while position < len(points):
        apply_event(position)
        position += 1
    for row in out:
        files = row.pop("_files")
        if available:
            row["expected_recovery_files"] = len({k for k in files if k[0] == "read"})
    return out


def _uuid(records: Sequence[Record], acquisition: Acquisition) -> str | None:
    index = acquisition.result_index
    return records[index].uuid if index is not None else None


def expected_recovery(
    sessions: Iterable[Session] | Mapping[str, Session],
    events: pd.DataFrame,
    steps: pd.DataFrame | None = None,
    **kwargs: Any,
) -> pd.DataFrame:
    """`expected_recovery_events` over every session in ``sessions`` that has events."""
    by_id = session_map(sessions)
    if events is None or events.empty:
        return pd.DataFrame(columns=[*KEYS, *EVENT_COLUMNS])
    frames = []
    # each session's rows looked up, not selected with a mask over every row per session
    steps_of = dict(tuple(steps.groupby("session_id", sort=False))) if steps is not None and len(steps) else {}
    for sid, mine in events.groupby("session_id", sort=True):
        if sid not in by_id:
            continue
        frames.append(expected_recovery_events(by_id[sid], mine, steps_of.get(sid), **kwargs))
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEYS, *EVENT_COLUMNS])


def expected_recovery_sessions(
    per_event: pd.DataFrame,
    steps: pd.DataFrame,
    sessions: Iterable[Session] | Mapping[str, Session],
    *,
    tool_calls: Mapping[str, bool] | None = None,
) -> pd.DataFrame:
    """Per session × strategy × config_hash: the events' estimates summed; 0 for cells without events
    (nothing dropped), null where the session records no tool calls or is not available.

    ``tool_calls`` (``{session id: has_tool_calls(session)}``) stands in for ``sessions`` for a caller
    that streamed the sessions and no longer holds them (`workbench.reporting.sessions`)."""
    if tool_calls is None:
        tool_calls = {sid: has_tool_calls(s) for sid, s in session_map(sessions).items()}
    cells = ensure_keys(steps)[KEYS].drop_duplicates().reset_index(drop=True)
    if per_event is not None and len(per_event):
        summed = per_event.groupby(KEYS, sort=True)[list(SESSION_COLUMNS)].sum(min_count=1).reset_index()
        out = cells.merge(summed, on=KEYS, how="left")
    else:
        out = cells.reindex(columns=[*KEYS, *SESSION_COLUMNS])
    has_calls = out["session_id"].map(lambda sid: tool_calls.get(sid, False))
    with_events = set(row_cells(per_event)) if per_event is not None and len(per_event) else set()
    had_events = pd.Series([cell in with_events for cell in row_cells(out)], index=out.index, dtype=bool)
    for column in SESSION_COLUMNS:
        values = out[column].astype(float)
        out[column] = values.where(had_events, 0.0).where(has_calls)  # unpriced events stay null
    return out
