"""``wb.load``: sessions from files and folders, as a list you can index, filter and tabulate."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import pandas as pd

from ..transcript.model import Session
from ..transcript.registry import LoadReport, iter_files, load_paths

__all__ = ["PathLike", "Sessions", "as_sessions", "load"]

PathLike = str | Path


class Sessions(Sequence[Session]):
    """Loaded sessions (a sequence of `workbench.transcript.Session`) plus what the load passed over.

    Index by position, slice, or by session id (or an unambiguous id prefix)::

        corpus = wb.load("data")
        corpus[0], corpus[:3], corpus["e3e70682"]
        corpus.overview()          # one row per session
        corpus.largest()           # the main session with the most records
    """

    def __init__(
        self, sessions: Iterable[Session], *, report: LoadReport | None = None, paths: Sequence[PathLike] = ()
    ) -> None:
        self._items: tuple[Session, ...] = tuple(sessions)
        self.report: LoadReport = report if report is not None else LoadReport()
        self.paths: tuple[Path, ...] = tuple(Path(p) for p in paths)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, key: int) -> Session: ...
    @overload
    def __getitem__(self, key: str) -> Session: ...
    @overload
    def __getitem__(self, key: slice) -> Sessions: ...
    def __getitem__(self, key: int | str | slice) -> Session | Sessions:
        if isinstance(key, slice):
            return self._derive(self._items[key])
        if isinstance(key, str):
            exact = [s for s in self._items if s.id == key]
            found = exact or [s for s in self._items if s.id.startswith(key)]
            if len(found) != 1:
                what = "no session" if not found else f"{len(found)} sessions"
                raise KeyError(f"{what} with id {key!r} (of {len(self)})")
            return found[0]
        return self._items[key]

    def __iter__(self) -> Iterator[Session]:
        return iter(self._items)

    def _derive(self, items: Iterable[Session]) -> Sessions:
        return Sessions(items, report=self.report, paths=self.paths)

    def __repr__(self) -> str:
        where = ", ".join(map(str, self.paths)) or "memory"
        return f"Sessions({len(self)} sessions ({len(self.main)} main) from {where})"

    @property
    def main(self) -> Sessions:
        """The sessions that are not sub-agent transcripts (all of them when every one is)."""
        return self._derive([s for s in self._items if not s.is_subagent] or self._items)

    def filter(self, keep: Any) -> Sessions:
        """The sessions for which ``keep(session)`` is true."""
        return self._derive(s for s in self._items if keep(s))

    def largest(self) -> Session:
        """The main session with the most records on its chain (the first such in load order)."""
        if not self._items:
            raise ValueError("no sessions loaded")
        return max(self.main, key=lambda s: len(s.conversation()))

    def top(self, n: int) -> Sessions:
        """The ``n`` largest main sessions, largest first."""
        return self._derive(sorted(self.main, key=lambda s: len(s.conversation()), reverse=True)[:n])

    def overview(self) -> pd.DataFrame:
        """One row per session: id, format, records (own chain), API calls, sub-agent, models, file."""
        from ..transcript.steps import api_calls

        rows = []
        for s in self._items:
            conversation = s.conversation()
            rows.append(
                {
                    "session_id": s.id,
                    "format": s.format,
                    "records": len(conversation),
                    "api_calls": len(api_calls(conversation)),
                    "subagent": s.is_subagent,
                    "models": ",".join(s.models),
                    "skipped": len(s.skipped),
                    "source": s.source,
                }
            )
        columns = ["session_id", "format", "records", "api_calls", "subagent", "models", "skipped", "source"]
        return pd.DataFrame(rows, columns=columns)

    def skipped(self) -> pd.DataFrame:
        """Every line that was not read as a record: file, line, reason (nothing is dropped silently)."""
        rows = [skip.as_dict() for s in self._items for skip in s.skipped]
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["file", "line", "reason"])


def load(
    *paths: PathLike | Iterable[PathLike],
    format: str | None = None,
    max_sessions: int | None = None,
    progress: bool = True,
) -> Sessions:
    """Load transcripts from files and folders, auto-detecting each file's format.

    Any registered format (``workbench ingest`` lists them: Claude Code JSONL, Codex rollouts, Gemini CLI
    sessions, OpenHands, SWE-agent, Aider, chat JSONL, …). ``~`` is expanded. Files that are not
    transcripts are listed in ``.report.ignored``; bad lines are kept as skips (`Sessions.skipped`).

    Args:
        paths: files or folders (or lists of them).
        format: force one loader instead of auto-detection.
        max_sessions: stop after this many sessions.
        progress: a progress bar over the files.

    Example::

        corpus = wb.load("~/.claude/projects")
        corpus.overview().head()
    """
    flat: list[Path] = []
    for item in paths:
        if isinstance(item, (str, Path)):
            flat.append(Path(item).expanduser())
        else:
            flat.extend(Path(p).expanduser() for p in item)
    if not flat:
        raise ValueError("wb.load needs at least one file or folder")
    from tqdm.auto import tqdm

    report = LoadReport()
    total = sum(1 for _ in iter_files(flat, LoadReport()))
    sessions: list[Session] = []
    with tqdm(total=total, desc="load", unit="file", disable=not progress) as bar:
        for session in load_paths(flat, format=format, report=report):
            sessions.append(session)
            bar.n = len(report.files) + len(report.ignored)
            bar.refresh()
            if max_sessions is not None and len(sessions) >= max_sessions:
                break
        bar.n = max(bar.n, len(report.files) + len(report.ignored))
        bar.refresh()
    for error in report.errors:
        if error["reason"] == "path does not exist":
            raise FileNotFoundError(f"{error['file']}: path does not exist")
    return Sessions(sessions, report=report, paths=flat)


def as_sessions(corpus: Any) -> Sessions:
    """`Sessions` from whatever a verb was given: `Sessions`, one `Session`, sessions, or paths."""
    if isinstance(corpus, Sessions):
        return corpus
    if isinstance(corpus, Session):
        return Sessions([corpus])
    if isinstance(corpus, (str, Path)):
        return load(corpus, progress=False)
    items = list(corpus)
    if items and all(isinstance(i, (str, Path)) for i in items):
        return load(items, progress=False)
    if not all(isinstance(i, Session) for i in items):
        raise TypeError("expected sessions (wb.load), a Session, or paths")
    return Sessions(items)
