"""A session is (session id, file): copies of a folder and resumed sessions share a ``sessionId``.

The metric families key their frames by `KEYS` (``session_id``, ``strategy``, ``config_hash``) and look
sessions up by id, which is right as long as an id names one session. Two files with the same id used
to be merged by the report (their steps summed into one session, the cost simulated over both) and, at
ten copies, to crash it ("cannot handle a non-unique multi-index").

`SessionKeys` keeps the metric functions as they are: before they run, the rows of an id found in
more than one file get a per-file key in ``session_id`` (``<id> @ <file>``), and the sessions are
looked up by that key; afterwards `SessionKeys.restore` puts the recorded id back and adds a ``file``
column. Ids in one file only keep their id, so nothing changes for a corpus without duplicates.
Duplicates are reported (`SessionKeys.notes`), never merged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace  # a Session or (planning) a SessionInfo
from typing import Any, overload

import pandas as pd

from ..transcript.files import printable_path
from ..transcript.model import Session

__all__ = ["FILE", "SessionKeys"]

#: The column naming a row's source file.
FILE = "file"
_SEP = " @ "


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return str(value)


class SessionKeys:
    """Per-file keys for session ids that occur in more than one file (module docstring)."""

    def __init__(self, pairs: Iterable[tuple[str, str | None]]) -> None:
        pairs = [(sid, printable_path(file)) for sid, file in pairs]
        files: dict[str, set[str | None]] = defaultdict(set)
        for sid, file in pairs:
            files[sid].add(file)
        #: ``{session_id: [files]}`` of the ids found in more than one file.
        self.duplicates = {sid: sorted(f or "" for f in found) for sid, found in files.items() if len(found) > 1}
        self._origin: dict[str, tuple[str, str | None]] = {}

    @classmethod
    def of(cls, *frames: pd.DataFrame | None, file: str = FILE, sessions: Iterable[Session] = ()) -> SessionKeys:
        """Keys for the (session id, file) pairs of ``frames`` (column ``file``) and of ``sessions``."""
        pairs: list[tuple[str, str | None]] = [(s.id, printable_path(s.source)) for s in sessions]
        for frame in frames:
            if frame is None or frame.empty or "session_id" not in frame.columns:
                continue
            column = frame[file] if file in frame.columns else pd.Series([None] * len(frame), index=frame.index)
            pairs.extend((str(sid), _text(f)) for sid, f in zip(frame["session_id"], column, strict=True))
        return cls(pairs)

    def key(self, session_id: str, file: str | None) -> str:
        """``session_id``, or ``<session_id> @ <file>`` when the id is in several files (``file`` as a session's
        ``source`` or as a frame's printable ``file`` column: both name the same key)."""
        if session_id not in self.duplicates:
            return session_id
        file = printable_path(file)
        key = f"{session_id}{_SEP}{file or ''}"
        self._origin[key] = (session_id, file)
        return key

    @overload
    def relabel(self, frame: None, file: str = ...) -> None: ...
    @overload
    def relabel(self, frame: pd.DataFrame, file: str = ...) -> pd.DataFrame: ...
    def relabel(self, frame: pd.DataFrame | None, file: str = FILE) -> pd.DataFrame | None:
        """``frame`` with the per-file key in ``session_id`` (unchanged when there are no duplicates)."""
        if frame is None or frame.empty or not self.duplicates or file not in frame.columns:
            return frame
        out = frame.copy()
        out["session_id"] = [self.key(str(s), _text(f)) for s, f in zip(out["session_id"], out[file], strict=True)]
        return out

    def sessions(self, sessions: Iterable[Session] | Mapping[str, Session] | None) -> dict[str, Session]:
        """``{key: session}``; sessions of duplicated ids are copies whose ``id`` is their key."""
        items = sessions.values() if isinstance(sessions, Mapping) else (sessions or ())
        out: dict[str, Session] = {}
        for session in items:
            key = self.key(session.id, printable_path(session.source))
            out[key] = session if key == session.id else replace(session, id=key)
        return out

    @overload
    def restore(self, frame: None, file: str = ...) -> None: ...
    @overload
    def restore(self, frame: pd.DataFrame, file: str = ...) -> pd.DataFrame: ...
    def restore(self, frame: pd.DataFrame | None, file: str = FILE) -> pd.DataFrame | None:
        """``frame`` with the recorded ids back in ``session_id`` and a ``file`` column after it (filled
        from the keys where the frame has none)."""
        if frame is None or frame.empty or "session_id" not in frame.columns:
            return frame
        out = frame.copy()
        keys = list(out["session_id"])
        origin = [self._origin.get(str(k)) for k in keys]
        out["session_id"] = [o[0] if o else k for o, k in zip(origin, keys, strict=True)]
        if file not in out.columns:
            out.insert(int(out.columns.get_loc("session_id")) + 1, file, [o[1] if o else None for o in origin])
        return out

    def notes(self) -> list[str]:
        """One line per duplicated id."""
        return [
            f"session {sid} is in {len(files)} files, reported separately (never merged): {', '.join(files)}"
            for sid, files in sorted(self.duplicates.items())
        ]
