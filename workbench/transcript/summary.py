"""What ``workbench ingest`` and sweep planning know of a transcript file without its records: a
`FileSummary` (lines, records, kinds, skips, warnings, the round trip) with one `SessionInfo` per session.
The parsed-session cache (`session_cache`) keeps one per file; split from it by concern."""

from __future__ import annotations

import json
from collections import Counter

from ..util.value import FrozenValue, Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (README "Start-up")
if TYPE_CHECKING:  # a warm `ingest` reads summaries without importing the record model
    from collections.abc import Iterable
    from typing import Any

    from .model import Session

__all__ = ["FileSummary", "SessionInfo", "file_summary", "summary_from_json", "summary_json"]


class SessionInfo(FrozenValue):
    """What planning needs of a session without its records (`Session` has the same attributes)."""

    __match_args__ = (
        "id",
        "source",
        "format",
        "fingerprint",
        "n_records",
        "is_subagent",
        "is_inline",
        "session_id",
        "parent_session_id",
    )
    __slots__ = __match_args__
    id: str
    source: str | None
    format: str
    fingerprint: str
    n_records: int
    is_subagent: bool
    is_inline: bool
    session_id: str | None
    parent_session_id: str | None

    def __init__(
        self,
        id: str,
        source: str | None,
        format: str,
        fingerprint: str,
        n_records: int,
        is_subagent: bool,
        is_inline: bool,
        session_id: str | None = None,
        parent_session_id: str | None = None,
    ) -> None:
        self._set_fields(
            id, source, format, fingerprint, n_records, is_subagent, is_inline, session_id, parent_session_id
        )

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


class FileSummary(Value):
    """What ``workbench ingest`` reports of one file's sessions (inline sub-agent sessions are views of
    their main session's lines: counted as sessions, not as lines or records)."""

    __match_args__ = (
        "lines",
        "records",
        "skipped",
        "by_kind",
        "by_format",
        "warnings",
        "round_trip_checked",
        "round_trip_different",
        "sessions",
    )
    __slots__ = __match_args__

    def __init__(
        self,
        lines: int = 0,
        records: int = 0,
        skipped: list[dict[str, Any]] | None = None,
        by_kind: Counter[str] | None = None,
        by_format: Counter[str] | None = None,
        warnings: list[dict[str, Any]] | None = None,
        round_trip_checked: int = 0,
        round_trip_different: list[str] | None = None,
        sessions: list[SessionInfo] | None = None,
    ) -> None:
        self.lines = lines
        self.records = records
        self.skipped: list[dict[str, Any]] = [] if skipped is None else skipped
        self.by_kind: Counter[str] = Counter() if by_kind is None else by_kind
        self.by_format: Counter[str] = Counter() if by_format is None else by_format
        self.warnings: list[dict[str, Any]] = [] if warnings is None else warnings
        self.round_trip_checked = round_trip_checked
        self.round_trip_different: list[str] = [] if round_trip_different is None else round_trip_different
        self.sessions: list[SessionInfo] = [] if sessions is None else sessions


def summary_json(summary: FileSummary) -> bytes | None:
    """``summary`` as JSON, when it reads back equal (`summary_from_json`); None when it would not (a
    value JSON cannot keep: a tuple, a non-string key, an object), which the cache then pickles. JSON
    because a warm ``ingest`` reads one summary per file and importing pickle was ~4 ms of it; lone
    surrogates survive (``ensure_ascii``)."""
    data = {name: getattr(summary, name) for name in summary.__match_args__}
    data["sessions"] = [list(info._fields()) for info in summary.sessions]
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
