"""The replay engine: walk a recorded session one API call at a time through a strategy.

Open loop: the recorded future does not change when we compact differently. Before each recorded API
call (a *step*: all records sharing one ``message.id``) the engine first runs the strategy's
post-sampling hook for the previous response (`Strategy.observe` sees the context sent for that call
plus the response's assistant records, as Claude Code's hook does), then appends the records recorded
since, lets the strategy decide whether to compact, and validates the request the strategy's context
produces (`workbench.api`).

Recorded compactions (``compact_boundary`` lines and ``isCompactSummary`` messages) are data: the
default strips them and lets the strategy re-decide; a strategy with ``strips_recorded = False`` (the
``recorded`` reference) keeps them and the engine reports each as a ``recorded-compact`` event.

Token accounting (the ``token_source`` column):

* Before the first recorded usage of a segment (the session's first call, the first call after a
  recorded boundary), Claude Code's estimate is the rough size of the messages alone; the engine adds
  the session's measured overhead (system prompt, tools: first call's prompt size minus the rough size
  of its messages), so the first step reports exactly the recorded request size.
* ``recorded``: until the first compaction the context *is* the recorded one, so its size is Claude
  Code's own ``tokenCountWithEstimation`` (last recorded usage + rough estimate of what followed it).
  Where recorded compactions were stripped, the usage recorded after a boundary measured Claude Code's
  compacted context; the engine adds back what that compaction removed (``preTokens`` + the records
  between boundary and next call − that call's recorded prompt size) so the uncompacted size stays
  continuous.
* ``estimated``: after a compaction of ours, the size is the uncompacted size minus the estimated size of
  every record our compactions removed, plus that of every record they added. Both are measured with
  the replay's per-record estimator and scaled by the session's own tokens-per-estimated-token ratio
  (`session_scale`): chars/4 undercounts Claude's tokenizer by ~25% on the corpus (README calibration
  table), so an unscaled estimate would leave most of a compaction's saving uncounted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from ..api.validate import original_thinking_blocks
from ..strategies.base import Compaction, ContextView, Strategy
from ..tokens.cache import cached_estimator
from ..tokens.context import get_token_usage, prompt_tokens, usage_tokens
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .validation import RequestCheck, check_request

__all__ = ["ReplayResult", "replay_session", "session_scale", "strip_recorded_compactions"]


@dataclass
class ReplayResult:
    """Rows for the ``steps`` and ``events`` tables of one replayed session."""

    session_id: str
    source: str | None
    strategy: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def peak_context_tokens(self) -> int:
        return max((row["context_tokens"] for row in self.steps), default=0)


class _LazyCounts(Sequence[int]):
    """Per-record counts aligned with a context, computed on first access (then kept)."""

    def __init__(self, items: Sequence[Record], table: dict[int, int], name: str) -> None:
        self._items, self._table, self._name = items, table, name
        self._values: tuple[int, ...] | None = None

    def _resolve(self) -> tuple[int, ...]:
        if self._values is None:
            missing = [r for r in self._items if id(r) not in self._table]
            if missing:
                fresh = cached_estimator(self._name).count_many(missing)
                self._table.update(zip((id(r) for r in missing), fresh, strict=True))
            self._values = tuple(self._table[id(r)] for r in self._items)
        return self._values

    def __getitem__(self, index):  # type: ignore[no-untyped-def,override]
        return self._resolve()[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):  # type: ignore[no-untyped-def,override]
        return iter(self._resolve())


def strip_recorded_compactions(records: Sequence[Record]) -> tuple[list[Record], list[tuple[int, Record]]]:
    """Records without recorded boundaries/summaries, and each boundary with its position in the output."""
    kept: list[Record] = []
    boundaries: list[tuple[int, Record]] = []
    for record in records:
        if record.is_compact_boundary:
            boundaries.append((len(kept), record))
        elif record.is_compact_summary:
            continue
        else:
            kept.append(record)
    return kept, boundaries


class _UncompactedSize:
    """``tokenCountWithEstimation`` over the uncompacted record list in O(1) per query."""

    def __init__(
        self,
        records: Sequence[Record],
        rough: Sequence[int],
        boundaries: Sequence[tuple[int, Record]],
    ) -> None:
        self.prefix = [0, *accumulate(rough)]
        self.usage_at: list[int | None] = []
        self.anchor_at: list[int] = []
        self.segment_at: list[int] = []
        last: int | None = None
        anchor = segment = 0
        for index, record in enumerate(records):
            if record.is_compact_boundary:
                segment = index
            self.segment_at.append(segment)
            if get_token_usage(record) is not None:
                if last is None or record.message_id is None or records[last].message_id != record.message_id:
                    anchor = index
                last = index
            self.usage_at.append(last)
            self.anchor_at.append(anchor)
        self.records = records
        self.offsets = self._offsets(boundaries)
        self.overhead = self._overhead()

    def _overhead(self) -> int:
        """What the first request measured beyond the rough size of its messages: system prompt, tool
        definitions, CLAUDE.md (not in transcripts). 0 when the session has no usage."""
        first = next((i for i, r in enumerate(self.records) if get_token_usage(r) is not None), None)
        if first is None:
            return 0
        while first > 0 and self.records[first - 1].message_id == self.records[first].message_id:
            first -= 1
        return max(0, prompt_tokens(get_token_usage(self.records[first]) or {}) - self.prefix[first])

    def _offsets(self, boundaries: Sequence[tuple[int, Record]]) -> list[tuple[int, int]]:
        """(first index whose usage is post-boundary, tokens the recorded compaction removed)."""
        out = []
        for position, boundary in boundaries:
            pre = boundary.compact_metadata.get("preTokens")
            first_call = next(
                (i for i in range(position, len(self.records)) if get_token_usage(self.records[i]) is not None), None
            )
            if not isinstance(pre, int) or first_call is None:
                continue
            usage = get_token_usage(self.records[first_call]) or {}
            between = self.prefix[first_call] - self.prefix[position]
            out.append((first_call, pre + between - prompt_tokens(usage)))
        return out

    def before(self, index: int) -> int:
        """Context size just before ``records[index]`` is sent."""
        if index == 0:
            return 0
        last = self.usage_at[index - 1]
        segment = self.segment_at[index - 1]
        if last is None or last < segment:  # nothing measured yet in this segment: rough + overhead
            return self.overhead + self.prefix[index] - self.prefix[segment]
        anchor = self.anchor_at[index - 1]
        base = usage_tokens(get_token_usage(self.records[last]) or {})
        offset = sum(removed for first, removed in self.offsets if last >= first)
        return base + offset + self.prefix[index] - self.prefix[anchor + 1]


def session_scale(
    records: Sequence[Record],
    counts: Sequence[int],
    *,
    end: int | None = None,
    bounds: tuple[float, float] = (0.5, 3.0),
) -> float:
    """Real tokens per estimated token in this session, from its recorded usage.

    The first API call fixes the overhead transcripts do not record (system prompt, tools):
    ``overhead = prompt(first) − Σ estimate(before first)``. The ratio is then
    ``(prompt(last) − overhead) / Σ estimate(before last)`` at the last call before any recorded compact
    boundary (or before ``end``, where stripped boundaries were), the widest lever, clamped to
    ``bounds``; 1.0 where the session has no usage.
    """
    calls = [c for c in api_calls(records) if c.usage(records) is not None]
    boundary = next((i for i, r in enumerate(records) if r.is_compact_boundary), len(records))
    if end is not None:
        boundary = min(boundary, end)
    calls = [c for c in calls if c.first < boundary]
    if len(calls) < 2:
        return 1.0
    prefix = [0, *accumulate(counts)]
    first, last = calls[0], calls[-1]
    overhead = prompt_tokens(first.usage(records) or {}) - prefix[first.first]
    grown = prefix[last.first]
    if grown <= 0:
        return 1.0
    ratio = (prompt_tokens(last.usage(records) or {}) - overhead) / grown
    return min(max(ratio, bounds[0]), bounds[1])


def replay_session(session: Session, strategy: Strategy, *, estimator: str = "claude-rough") -> ReplayResult:
    """Replay one session through ``strategy``; see the module docstring for the semantics."""
    original = session.conversation()
    strip = strategy.strips_recorded
    records, boundaries = strip_recorded_compactions(original) if strip else (list(original), [])
    rough_all = cached_estimator("claude-rough").count_many(records)
    padded_all = cached_estimator("claude-padded").count_many(records)
    measure = cached_estimator(estimator)
    size = _UncompactedSize(records, rough_all, boundaries)
    scale = session_scale(records, measure.count_many(records), end=boundaries[0][0] if boundaries else None)
    rough_of = dict(zip((id(r) for r in records), rough_all, strict=True))
    padded_of = dict(zip((id(r) for r in records), padded_all, strict=True))

    result = ReplayResult(session.id, session.source, strategy.name)
    state = strategy.new_state()
    context: list[Record] = []
    pointer = 0
    removed = added = 0
    diverged = False
    last_check: RequestCheck | None = None
    previous_message_id: str | None = None
    calls = api_calls(records)
    originals = original_thinking_blocks(records)

    def counts(items: Sequence[Record], table: dict[int, int], name: str) -> _LazyCounts:
        return _LazyCounts(items, table, name)

    def view_of(items: Sequence[Record], tokens: int, step: int, record: Record) -> ContextView:
        return ContextView(
            tuple(items),
            tokens,
            counts(items, rough_of, "claude-rough"),
            counts(items, padded_of, "claude-padded"),
            step,
            record.timestamp,
            record.model,
            session.is_subagent,
        )

    # Recursion guard (docs §4.3): the compaction call itself (and a memory extraction) never compacts.
    guarded = session.metadata.get("query_source") in ("compact", "session_memory")
    sent_before: list[Record] = []  # the context as sent for the previous call
    for call_index, call in enumerate(calls):
        if call_index:
            # The post-sampling hook of the previous response (docs §1.3): it sees the context that was
            # sent plus that response's assistant records, not yet the tool results that followed.
            previous = calls[call_index - 1]
            response = [records[i] for i in previous.indices]
            hook_tokens = size.before(previous.last + 1) - removed + added
            strategy.observe(view_of([*sent_before, *response], hook_tokens, previous.step, response[-1]), state)
        context.extend(records[pointer : call.first])
        pointer = call.first
        none_tokens = size.before(call.first)
        tokens = none_tokens - removed + added
        view = view_of(context, tokens, call.step, records[call.first])
        compaction = None if guarded else strategy.compact(view, state)
        check_now = last_check is None or bool(last_check.violations) or compaction is not None
        if compaction is not None:
            before_tokens = tokens
            survivors = {id(r) for r in compaction.records}
            previous = {id(r) for r in context}
            removed += round(scale * sum(measure.count_many([r for r in context if id(r) not in survivors])))
            added += round(scale * sum(measure.count_many([r for r in compaction.records if id(r) not in previous])))
            tokens = none_tokens - removed + added
            kept = [r for r in compaction.records if id(r) in previous]
            context = list(compaction.records)
            diverged = True
        sent_before = list(context)
        if check_now:
            thinking = any(b.kind == "thinking" for i in call.indices for b in records[i].blocks)
            last_check = check_request(context, thinking=thinking, original_thinking=originals)
        if compaction is not None:
            result.events.append(
                _event(
                    session,
                    strategy,
                    call.step,
                    previous_message_id,
                    compaction,
                    before_tokens,
                    tokens,
                    last_check,
                    kept,
                )
            )
        result.steps.append(
            {
                "session_id": session.id,
                "strategy": strategy.name,
                "step": call.step,
                "message_id": call.message_id,
                "context_tokens": tokens,
                "tokens_without_compaction": none_tokens,
                "token_source": "estimated" if diverged else "recorded",
                "context_records": len(context),
                "compacted": compaction is not None,
                "violations": len(last_check.violations) if last_check else 0,
                "violation_rules": ",".join(sorted({v.rule for v in last_check.violations})) if last_check else "",
                "repaired": last_check.repaired if last_check else 0,
            }
        )
        previous_message_id = call.message_id
    if not strip:
        result.events.extend(_recorded_events(session, strategy, records, calls, size))
    return result


def _event(
    session: Session,
    strategy: Strategy,
    step: int,
    after_message_id: str | None,
    compaction: Compaction,
    before: int,
    after: int,
    check: RequestCheck | None,
    kept: Sequence[Record],
) -> dict[str, Any]:
    """One events row; ``kept`` are the records of the old context that survived unchanged."""
    return {
        "session_id": session.id,
        "strategy": strategy.name,
        "kind": compaction.kind,
        "trigger": compaction.trigger,
        "step": step,
        "after_message_id": after_message_id,
        "tokens_before": before,
        "tokens_after": after,
        "keep_start": compaction.start,
        "naive_start": compaction.naive_start,
        "kept_uuids": [r.uuid for r in kept],
        "dropped_uuids": list(compaction.dropped),
        "summary": compaction.summary,
        "fallbacks": list(compaction.fallbacks),
        "violations": len(check.violations) if check else 0,
        "violation_rules": sorted({v.rule for v in check.violations}) if check else [],
        "repaired": check.repaired if check else 0,
    }


def _recorded_events(
    session: Session, strategy: Strategy, records: Sequence[Record], calls: Sequence[Any], size: _UncompactedSize
) -> list[dict[str, Any]]:
    events = []
    for index, record in enumerate(records):
        if not record.is_compact_boundary:
            continue
        before_calls = [c for c in calls if c.first < index]
        after_call = next((c for c in calls if c.first > index), None)
        meta = record.compact_metadata
        events.append(
            {
                "session_id": session.id,
                "strategy": strategy.name,
                "kind": "recorded-compact",
                "trigger": meta.get("trigger"),
                "step": after_call.step if after_call else len(calls),
                "after_message_id": before_calls[-1].message_id if before_calls else None,
                "tokens_before": meta.get("preTokens"),
                "tokens_after": size.before(after_call.first) if after_call else None,
                "keep_start": None,
                "naive_start": None,
                "kept_uuids": [],
                "dropped_uuids": [],
                "summary": next((r.text for r in records[index:] if r.is_compact_summary), None),
                "fallbacks": [],
                "violations": 0,
                "violation_rules": [],
                "repaired": 0,
            }
        )
    return events
