"""Per-session isolation: a session whose computation fails is reported, the other sessions finish.

Every command that works over sessions (``tokens``, ``export``, ``validate``, ``invariants``,
``replay``; ``ingest`` and ``report`` isolate per file and per run folder) goes through one of two
helpers instead of a try/except of its own:

* `each_session` maps a function over sessions one at a time (replay, export, calibration rows);
* `over_sessions` runs an aggregate over all sessions at once (a study that tallies across sessions).
  Only when the aggregate raises does it run it on each session alone to find the ones that fail, then
  once more on the others: a run without failures pays nothing extra.
* `stream_sessions` is `each_session` as a generator, and `fold_sessions` feeds sessions one at a time
  to an accumulator that commits a session's contribution only when all of it was computed: the
  commands read their inputs one session group at a time (`workbench.transcript.groups.load_groups`) through
  these, so memory is bounded by the largest group, not by the corpus.

A failure is a `SessionFailure` (file, session id, one-line reason ``ExceptionType: message``);
commands print it as ``error: FILE: session ID: REASON``, list it under ``failed`` in ``--json`` and
exit 0 when any session succeeded. ``WORKBENCH_DEBUG=1`` re-raises instead, for the traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .model import Session

__all__ = ["SessionFailure", "each_session", "fold_sessions", "over_sessions", "stream_groups", "stream_sessions"]

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


def stream_sessions(
    fn: Callable[[Session], T],
    sessions: Iterable[Session],
    failures: list[SessionFailure],
    *,
    progress: str | None = None,
) -> Iterator[tuple[Session, T]]:
    """`each_session`, lazily: ``(session, fn(session))`` as each session is computed (the sessions are
    not listed first, so a generator of sessions is read one at a time). ``progress``: a tqdm bar
    (without a total: the sessions are not counted first)."""
    return _stream(fn, sessions, failures, progress, "session", lambda session: session)


def stream_groups(
    fn: Callable[[list[Session]], T],
    groups: Iterable[list[Session]],
    failures: list[SessionFailure],
    *,
    progress: str | None = None,
) -> Iterator[tuple[list[Session], T]]:
    """`stream_sessions` over session groups (a main session and its sub-agents, computed together): a
    group ``fn`` fails on is reported under its main session (or its first session without one)."""
    return _stream(fn, groups, failures, progress, "group", _lead)


def _lead(group: list[Session]) -> Session:
    return next((s for s in group if not s.is_subagent), group[0])


def _stream(
    fn: Callable[[Any], T],
    items: Iterable[Any],
    failures: list[SessionFailure],
    progress: str | None,
    unit: str,
    session_of: Callable[[Any], Session],
) -> Iterator[tuple[Any, T]]:
    bar = None
    if progress is not None:
        from tqdm.auto import tqdm

        bar = tqdm(desc=progress, unit=unit)
    try:
        for item in items:
            try:
                value = fn(item)
            except Exception as exc:
                if _debug():
                    raise
                failures.append(SessionFailure.of(session_of(item), exc))
            else:
                yield item, value
                del value
            del item  # released before the next item is read: one session group in memory, not two
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def fold_sessions(
    add: Callable[[Session], object],
    sessions: Iterable[Session],
    failures: list[SessionFailure],
    *,
    progress: str | None = None,
) -> list[str]:
    """Call ``add(session)`` for every session, one at a time; the ids of those it succeeded on.

    ``add`` must leave its accumulator as it was when it raises (compute the session's part first, then
    merge it): a failing session then contributes nothing and is reported, the others are counted.
    """
    return [s.id for s, _ in stream_sessions(add, sessions, failures, progress=progress)]
