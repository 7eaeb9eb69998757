"""The rows the engine emits for compaction events (one per compaction, and one per recorded one).

An event names the records of the old context that the compaction kept unchanged in one of two ways,
whichever lists fewer uuids (`kept_columns`; `kept_uuid_set` reads either back):

* ``kept_uuids``: the kept records (``not_kept_uuids`` is null): what a summarising compaction keeps, a
  recent window;
* ``not_kept_uuids``: the uuids of the session's records before the event's call that were *not* kept
  (``kept_uuids`` is null): an in-place compaction (masking, clearing tool results) keeps nearly every
  record and changes a few. Listing the kept ones made a strategy that compacts before every call write
  entries growing with the square of the session's length (a synthetic 1,000-call session: 947 events,
  2.35 million entries); its complement grows with what the compactions changed.

Both read back to the same set for every record of the history (`kept_uuid_set`; the history is a subset
of the records the engine replayed, recorded compactions stripped or not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from ..strategies.base import Compaction, Strategy
from ..transcript.files import printable_path
from ..transcript.model import Record, Session
from .sizes import UncompactedSize
from .validation import RequestCheck

__all__ = ["event_row", "kept_columns", "kept_uuid_set", "recorded_events", "uuid_set"]

_UUID = attrgetter("uuid")


def _added_text(compaction: Compaction) -> str | None:
    """The text of the records a compaction created besides its boundary and summary message (e.g. the
    re-attached files of a full compaction, docs §5.4; rewritten tool results): what
    `workbench.metrics.expected_recovery` checks for content still in context. None when there are none."""
    parts = []
    for record in compaction.added:
        if record.is_compact_boundary or record.is_compact_summary:
            continue
        for block in record.blocks:
            text = block.result_text() if block.kind == "tool_result" else block.text
            if text and text != compaction.summary:
                parts.append(text)
    return "\n".join(parts) or None


def kept_columns(kept: Sequence[Record], history: Sequence[str | None]) -> dict[str, list[str | None] | None]:
    """``kept_uuids`` and ``not_kept_uuids`` of an event that kept ``kept`` of the old context, ``history``
    being the uuids of the records before its call (see the module docstring: one of the two is null)."""
    listed = list(map(_UUID, kept))
    if listed:
        missing = set(history).difference(listed)
        missing.discard(None)
        if len(missing) < len(listed):  # in the history's order, each uuid at its first position (in C: every call)
            first = dict(zip(reversed(history), range(len(history) - 1, -1, -1), strict=True))
            return {"kept_uuids": None, "not_kept_uuids": sorted(missing, key=first.__getitem__)}
    return {"kept_uuids": listed, "not_kept_uuids": None}


def _missing(value: Any) -> bool:
    return value is None or isinstance(value, float)  # null, or NaN in a pandas frame


def uuid_set(value: Any) -> set[str]:
    """The strings of a uuid list column's value (a list, an array, one string, None or NaN)."""
    if _missing(value):
        return set()
    if isinstance(value, str):
        return {value} if value else set()
    return {u for u in value if isinstance(u, str)}


def kept_uuid_set(event: Mapping[str, Any], history: Sequence[Record]) -> set[str]:
    """The uuids of ``history`` (records before the event's call) that ``event`` kept, from whichever of
    ``kept_uuids`` and ``not_kept_uuids`` it lists (a row from a frame or store: lists may be arrays, a
    missing value None or NaN; an event with neither kept nothing)."""
    listed = event.get("kept_uuids")
    if _missing(listed):
        not_kept = event.get("not_kept_uuids")
        if _missing(not_kept):
            return set()
        excluded = uuid_set(not_kept)
        return {r.uuid for r in history if r.uuid is not None and r.uuid not in excluded}
    return uuid_set(listed) & {r.uuid for r in history if r.uuid is not None}


def event_row(
    session: Session,
    strategy: Strategy,
    step: int,
    after_message_id: str | None,
    compaction: Compaction,
    before: int,
    after: int,
    check: RequestCheck | None,
    kept: Mapping[str, list[str | None] | None],
) -> dict[str, Any]:
    """One events row; ``kept``: its ``kept_uuids`` and ``not_kept_uuids`` (`kept_columns` of the records
    of the old context that survived unchanged against the uuids of the session's records before the call,
    `workbench.replay.kept.KeptIndex` in a replay)."""
    return {
        "session_id": session.id,
        "file": printable_path(session.source),
        "strategy": strategy.name,
        "kind": compaction.kind,
        "trigger": compaction.trigger,
        "step": step,
        "after_message_id": after_message_id,
        "tokens_before": before,
        "tokens_after": after,
        "keep_start": compaction.start,
        "naive_start": compaction.naive_start,
        **kept,
        "dropped_uuids": list(compaction.dropped),
        "summary": compaction.summary,
        "added_text": _added_text(compaction),
        "summary_source": compaction.details.get("summary_source"),
        "summary_note": compaction.details.get("summary_note"),
        "recorded_boundary": compaction.details.get("recorded_boundary"),
        **summarizer_call_columns(compaction.details),
        "fallbacks": list(compaction.fallbacks),
        "violations": len(check.violations) if check else 0,
        "violation_rules": sorted({v.rule for v in check.violations}) if check else [],
        "repaired": check.repaired if check else 0,
    }


def summarizer_call_columns(details: Mapping[str, Any]) -> dict[str, list[int] | None]:
    """The summary calls a compaction made, as the strategy counted them: one input and one output token
    count per call (``summarizer_input_tokens`` / ``summarizer_output_tokens`` lists in its details, or the
    API's ``compaction_usage``); None when the strategy does not say, and the cost metric estimates one call
    from the sizes before and after."""
    inputs, outputs = details.get("summarizer_input_tokens"), details.get("summarizer_output_tokens")
    if isinstance(inputs, list) and isinstance(outputs, list) and len(inputs) == len(outputs):
        return {
            "summarizer_input_tokens": [int(n) for n in inputs],
            "summarizer_output_tokens": [int(n) for n in outputs],
        }
    usage = details.get("compaction_usage")
    if isinstance(usage, Mapping) and isinstance(usage.get("input_tokens"), int):
        return {
            "summarizer_input_tokens": [int(usage["input_tokens"])],
            "summarizer_output_tokens": [int(usage.get("output_tokens") or 0)],
        }
    return {"summarizer_input_tokens": None, "summarizer_output_tokens": None}


def recorded_events(
    session: Session, strategy: Strategy, records: Sequence[Record], calls: Sequence[Any], size: UncompactedSize
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for index, record in enumerate(records):
        if not record.is_compact_boundary:
            continue
        before_calls = [c for c in calls if c.first < index]
        after_call = next((c for c in calls if c.first > index), None)
        meta = record.compact_metadata
        events.append(
            {
                "session_id": session.id,
                "file": printable_path(session.source),
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
                "not_kept_uuids": None,
                "dropped_uuids": [],
                "summary": next((r.text for r in records[index:] if r.is_compact_summary), None),
                "added_text": None,
                "summary_source": "recorded",
                "summary_note": None,
                "recorded_boundary": record.uuid,
                "summarizer_input_tokens": None,
                "summarizer_output_tokens": None,
                "fallbacks": [],
                "violations": 0,
                "violation_rules": [],
                "repaired": 0,
            }
        )
    return events
