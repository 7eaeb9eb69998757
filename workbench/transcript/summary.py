"""What ``workbench ingest`` and sweep planning know of a transcript file without its records: a
`FileSummary` (lines, records, kinds, skips, warnings, the round trip) with one `SessionInfo` per session.
The parsed-session cache (`session_cache`) keeps one per file; split from it by concern."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import astuple, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a warm `ingest` reads summaries without importing the record model
    from .model import Session

__all__ = ["FileSummary", "SessionInfo", "file_summary", "summary_from_json", "summary_json"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What planning needs of a session without its records (`Session` has the same attributes)."""

    id: str
    source: str | None
    format: str
    fingerprint: str
    n_records: int
    is_subagent: bool
    is_inline: bool
    session_id: str | None = None
    parent_session_id: str | None = None

    @classmethod
    def of(cls, session: Session) -> SessionInfo:
        return cls(
            session.id,
            session.source,
            session.format,
            session.fingerprint,
            len(session.records),
            session.is_subagent,
            session.is_inline,
            session.session_id,
            session.parent_session_id,
        )


@dataclass(slots=True)
class FileSummary:
    """What ``workbench ingest`` reports of one file's sessions (inline sub-agent sessions are views of
    their main session's lines: counted as sessions, not as lines or records)."""

    lines: int = 0
    records: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)
    by_format: Counter[str] = field(default_factory=Counter)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    round_trip_checked: int = 0
    round_trip_different: list[str] = field(default_factory=list)
    sessions: list[SessionInfo] = field(default_factory=list)


def summary_json(summary: FileSummary) -> bytes | None:
    """``summary`` as JSON, when it reads back equal (`summary_from_json`); None when it would not (a
    value JSON cannot keep: a tuple, a non-string key, an object), which the cache then pickles. JSON
    because a warm ``ingest`` reads one summary per file and needs no pickle for it; lone surrogates
    survive (``ensure_ascii``)."""
    data = {f.name: getattr(summary, f.name) for f in fields(summary)}
    data["sessions"] = [list(astuple(info)) for info in summary.sessions]
    try:
        text = json.dumps(data, separators=(",", ":")).encode("ascii")
    except (TypeError, ValueError):
        return None
    return text if summary_from_json(json.loads(text)) == summary else None


def summary_from_json(data: dict[str, Any]) -> FileSummary:
    """The `FileSummary` `summary_json` wrote (its sessions as field lists)."""
    out = FileSummary(**{**data, "sessions": [SessionInfo(*fields) for fields in data["sessions"]]})
    out.by_kind, out.by_format = Counter(out.by_kind), Counter(out.by_format)
    return out


def file_summary(sessions: Iterable[Session]) -> FileSummary:
    """The `FileSummary` of sessions (one file's, or any)."""
    from .claude_code import KNOWN_TYPES
    from .export import round_trips

    out = FileSummary()
    for session in sessions:
        out.sessions.append(SessionInfo.of(session))
        out.by_format[session.format] += 1
        out.skipped += [skip.as_dict() for skip in session.skipped]
        identical = round_trips(session)
        if identical is not None:
            out.round_trip_checked += 1
            if not identical:
                out.round_trip_different.append(str(session.source))
        if session.is_inline:  # a view of lines its main session owns
            continue
        out.lines += session.lines
        out.records += len(session.records)
        out.warnings += session.metadata.get("warnings", [])
        for record in session.records:
            out.by_kind[record.kind] += 1
            if session.format == "claude-code" and record.kind not in KNOWN_TYPES:
                out.warnings.append(
                    {
                        "file": record.source,
                        "line": record.line_no,
                        "reason": f"unknown type {record.kind!r}, kept as is",
                    }
                )
    return out
