"""Per-session isolation: a session whose computation fails is reported, the other sessions finish.

Every command that works over sessions (``tokens``, ``export``, ``validate``, ``invariants``,
``replay``; ``ingest`` and ``report`` isolate per file and per run folder) goes through one of two
helpers instead of a try/except of its own:

* `each_session` maps a function over sessions one at a time (replay, export, calibration rows);
* `over_sessions` runs an aggregate over all sessions at once (a study that tallies across sessions).
  Only when the aggregate raises does it run it on each session alone to find the ones that fail, then
  once more on the others: a run without failures pays nothing extra.

A failure is a `SessionFailure` (file, session id, one-line reason ``ExceptionType: message``);
commands print it as ``error: FILE: session ID: REASON``, list it under ``failed`` in ``--json`` and
exit 0 when any session succeeded. ``WORKBENCH_DEBUG=1`` re-raises instead, for the traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .transcript.model import Session

__all__ = ["SessionFailure", "each_session", "over_sessions"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SessionFailure:
    """A session a computation failed on, and why (one line)."""

    file: str | None
    session_id: str
    reason: str

    @classmethod
    def of(cls, session: Session, exc: BaseException) -> SessionFailure:
        text = " ".join(str(exc).split())
        if len(text) > 300:
            text = f"{text[:297]}..."
        return cls(session.source, session.id, f"{type(exc).__name__}: {text}" if text else type(exc).__name__)

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "session_id": self.session_id, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.file or '-'}: session {self.session_id}: {self.reason}"


def _debug() -> bool:
    return bool(os.environ.get("WORKBENCH_DEBUG"))


def each_session(
    fn: Callable[[Session], T],
    sessions: Iterable[Session],
    failures: list[SessionFailure],
    *,
    progress: str | None = None,
) -> list[tuple[Session, T]]:
    """``(session, fn(session))`` for every session ``fn`` succeeds on; the others go to ``failures``.

    ``progress``: a tqdm description (a bar over the sessions), or None for no bar.
    """
    items: Sequence[Session] = list(sessions)
    if progress is not None:
        from tqdm.auto import tqdm

        items = tqdm(items, desc=progress, unit="session")
    done: list[tuple[Session, T]] = []
    for session in items:
        try:
            done.append((session, fn(session)))
        except Exception as exc:
            if _debug():
                raise
            failures.append(SessionFailure.of(session, exc))
    return done


def over_sessions(
    fn: Callable[[list[Session]], T], sessions: Iterable[Session], failures: list[SessionFailure]
) -> tuple[list[Session], T]:
    """``(sessions used, fn(sessions used))``: ``fn`` over all sessions, or over those it does not fail on
    alone (the others go to ``failures``). An exception that no single session explains propagates."""
    items = list(sessions)
    try:
        return items, fn(items)
    except Exception as exc:
        if _debug() or not items:
            raise
        error = exc
    found: list[SessionFailure] = []
    kept = [session for session, _ in each_session(lambda s: fn([s]), items, found)]
    if not found:
        raise error  # no session fails on its own: a failure of the aggregate itself
    failures.extend(found)
    return kept, fn(kept)
