"""How widgets name sessions: a short id (its first 8 characters) with the full id as a tooltip, and
the file it was read from where known (`workbench.reporting.plots.short_session`, as plot titles do)."""

from __future__ import annotations

from html import escape

__all__ = ["SHORT_ID", "session_html", "session_text", "short_id"]

#: Characters of a session id shown (a UUID's first group: unique within any corpus we replay).
SHORT_ID = 8


def short_id(session_id: str) -> str:
    return session_id[:SHORT_ID]


def session_text(session_id: str, file: object = None) -> str:
    """``258c7280 · marot-spotter/258c7280….jsonl`` (plain text, e.g. a dropdown option)."""
    from ..reporting.plots import short_session

    return short_session(session_id, file)


def session_html(session_id: str, file: object = None) -> str:
    """The short id in ``<code>`` with the full id as its tooltip, then the file."""
    text = session_text(session_id, file)
    tail = text[len(short_id(session_id)) :]
    return (
        f"<code class='wb-session-id' title='{escape(session_id)}'>{escape(short_id(session_id))}</code>"
        f"<span class='wb-session-file'>{escape(tail)}</span>"
    )
