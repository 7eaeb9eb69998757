"""Export sessions back to JSONL.

An unmodified Claude Code session exports byte-identical to its source: records' exact lines and the
bytes of skipped lines, in their original order, with the original trailing newline. Modified records
are written as compact JSON (``JSON.stringify`` style).
"""

from __future__ import annotations

from pathlib import Path

from .model import Session

__all__ = ["export_session", "session_bytes"]


def session_bytes(session: Session) -> bytes:
    """The session as JSONL bytes."""
    if session.format == "anthropic-messages":
        from .anthropic_messages import request_json

        return (request_json(session) + "\n").encode("utf-8")
    items: list[tuple[int, bytes]] = []
    for order, record in enumerate(session.records):
        key = record.line_no if record.line_no is not None else order
        items.append((key, record.to_line().encode("utf-8", "surrogatepass")))
    items.extend((skip.line, skip.data) for skip in session.skipped if skip.line)
    items.sort(key=lambda item: item[0])
    body = b"\n".join(data for _, data in items)
    if items and session.trailing_newline:
        body += b"\n"
    return body


def export_session(session: Session, out_dir: Path, *, root: Path | None = None) -> Path:
    """Write ``session`` under ``out_dir``, mirroring its path relative to ``root`` when given."""
    source = Path(session.source) if session.source else Path(f"{session.id}.jsonl")
    relative = source.relative_to(root) if root is not None and source.is_relative_to(root) else Path(source.name)
    if session.format == "anthropic-messages":
        relative = relative.with_name(f"{session.id.replace(':', '_')}.jsonl")
    target = out_dir / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(session_bytes(session))
    return target


def round_trips(session: Session) -> bool | None:
    """Whether the session exports byte-identical to its source file; None where that is not promised
    (formats whose export is not their source format, or sessions that do not own a whole file)."""
    if session.format != "claude-code" or not session.source or session.is_inline:
        return None
    try:
        original = Path(session.source).read_bytes()
    except OSError:
        return None
    return session_bytes(session) == original
