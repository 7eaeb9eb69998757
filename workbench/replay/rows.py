"""The rows the engine emits for compaction events (one per compaction, and one per recorded one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..strategies.base import Compaction, Strategy
from ..transcript.model import Record, Session
from .sizes import UncompactedSize
from .validation import RequestCheck

__all__ = ["event_row", "recorded_events"]


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


def event_row(
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
        "file": session.source,
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
        "added_text": _added_text(compaction),
        "summary_source": compaction.details.get("summary_source"),
        "summary_note": compaction.details.get("summary_note"),
        "recorded_boundary": compaction.details.get("recorded_boundary"),
        "fallbacks": list(compaction.fallbacks),
        "violations": len(check.violations) if check else 0,
        "violation_rules": sorted({v.rule for v in check.violations}) if check else [],
        "repaired": check.repaired if check else 0,
    }


def recorded_events(
    session: Session, strategy: Strategy, records: Sequence[Record], calls: Sequence[Any], size: UncompactedSize
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
                "file": session.source,
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
                "added_text": None,
                "summary_source": "recorded",
                "summary_note": None,
                "recorded_boundary": record.uuid,
                "fallbacks": [],
                "violations": 0,
                "violation_rules": [],
                "repaired": 0,
            }
        )
    return events
