"""Loader registry: one module per transcript format, chosen by name or auto-detected.

A loader is any object with ``name``, ``suffixes``, ``sniff(path, head)`` and ``load(path)``. Adding a
format is one new module that calls `register`. `load_paths` walks files and folders, asks each
registered loader whether it recognises a file, and returns sessions plus a report of everything it
passed over, so nothing is dropped silently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .files import BOM, NotRegularFile, max_line_bytes, read_head, walk
from .model import Corpus, Session, Skip

if TYPE_CHECKING:
    from .summary import FileSummary

__all__ = [
    "TRANSCRIPT_SUFFIXES",
    "LoadReport",
    "Loader",
    "TranscriptError",
    "detect",
    "file_summaries",
    "get_loader",
    "group_files",
    "iter_files",
    "load_corpus",
    "load_groups",
    "load_paths",
    "load_planned_group",
    "loaders",
    "plan_groups",
    "ranked_groups",
    "register",
]

HEAD_BYTES = 64 * 1024


class TranscriptError(Exception):
    """A path that cannot be read as any transcript (the message names the path and why)."""


@runtime_checkable
class Loader(Protocol):
    name: str
    suffixes: tuple[str, ...]

    def sniff(self, path: Path, head: bytes) -> bool:
        """True when this loader recognises the file from its name and first bytes."""
        ...

    def load(self, path: Path) -> list[Session]:
        """All sessions in the file; bad lines become `Skip`s inside the sessions, never exceptions."""
        ...


_REGISTRY: dict[str, Loader] = {}


def register(loader: Loader) -> Loader:
    if loader.name in _REGISTRY:
        raise ValueError(f"a loader named {loader.name!r} is already registered")
    _REGISTRY[loader.name] = loader
    return loader


def loaders() -> dict[str, Loader]:
    _ensure_builtin()
    return dict(_REGISTRY)


def get_loader(name: str) -> Loader:
    _ensure_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise TranscriptError(f"unknown format {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def _ensure_builtin() -> None:
    if not _REGISTRY:
        from . import gemini_session  # noqa: F401, I001  (first: see workbench.transcript)
        from . import claude_code, anthropic_messages, swe_agent, openhands, gemini_cli, aider, codex, chat_jsonl, hf  # noqa: F401  (modules register themselves)


#: Suffixes only transcripts use: such a file that no loader recognises is an error, not "ignored".
TRANSCRIPT_SUFFIXES = (".jsonl", ".traj", ".responses")
#: How many leading lines detection looks past (blank, whitespace, garbage) to find the first JSON line.
JUNK_LINES = 20


def _past_junk(head: bytes) -> bytes:
    """``head`` from its first line that looks like JSON (``{`` or ``[``), within `JUNK_LINES` lines."""
    position = 0
    for _ in range(JUNK_LINES):
        line_end = head.find(b"\n", position)
        line = head[position:] if line_end < 0 else head[position:line_end]
        if line.lstrip().startswith((b"{", b"[")):
            return head[position:]
        if line_end < 0:
            break
        position = line_end + 1
    return head


def _sniff(path: Path, head: bytes) -> Loader | None:
    for loader in _REGISTRY.values():
        if path.name.endswith(loader.suffixes) and loader.sniff(path, head):
            return loader
    return None


def detect(path: Path, head: bytes | None = None) -> Loader | None:
    """The first registered loader that recognises ``path`` (from ``head``, read when not given), or None.

    A UTF-8 byte-order mark is ignored, and when no loader recognises the file as it starts, detection
    looks past up to `JUNK_LINES` leading lines that are not JSON (blank, whitespace, garbage): one bad
    first line must not hide a whole transcript (its loader then reports that line as a skip).
    """
    _ensure_builtin()
    if head is None:
        try:
            head = read_head(path, HEAD_BYTES)
        except OSError:
            return None
    head = head.removeprefix(BOM)
    found = _sniff(path, head)
    if found is None:
        rest = _past_junk(head)
        if len(rest) != len(head):
            found = _sniff(path, rest)
    return found


@dataclass
class LoadReport:
    """What a load saw: files read, files passed over (not transcripts), bad lines, totals."""

    files: list[str] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"files": list(self.files), "ignored": list(self.ignored), "errors": list(self.errors)}

    def error(self, path: Path | str, reason: str) -> None:
        self.errors.append({"file": str(path), "reason": reason})

    def ignore(self, path: Path | str, reason: str) -> None:
        self.ignored.append({"file": str(path), "reason": reason})


def iter_files(paths: Iterable[Path | str], report: LoadReport) -> Iterator[tuple[Path, bool]]:
    """``(file, named)`` for the files under ``paths`` in a stable order (a folder's files sorted by
    path; ``named``: the file was given itself, not found in a folder). Paths that do not exist,
    dangling symlinks, unreadable sub-folders and symlink loops go to ``report.errors``."""
    for raw in paths:
        path = Path(raw)
        try:
            os.stat(path)
        except OSError as exc:
            if path.is_symlink():
                report.error(path, f"dangling symlink (-> {os.readlink(path)})")
            elif isinstance(exc, FileNotFoundError):
                report.error(path, "path does not exist")
            else:
                report.error(path, f"cannot read: {exc.strerror or exc}")
            continue
        if path.is_dir():
            before = len(report.errors)
            found = list(walk(path, report.error, report.ignore))
            if not found and len(report.errors) == before:
                report.error(path, "folder holds no files")
            yield from ((p, False) for p in found)
        else:
            yield path, True


def load_paths(
    paths: Iterable[Path | str], *, format: str | None = None, report: LoadReport | None = None
) -> Iterator[Session]:
    """Sessions from files and folders, auto-detecting each file's format unless ``format`` is given.

    Nothing is passed over silently: files no loader recognises are listed in ``report.ignored`` (a
    folder's README or LICENSE is not a transcript) unless they were named explicitly or carry a
    transcript suffix (`TRANSCRIPT_SUFFIXES`), which makes them ``report.errors``; so are files that
    cannot be read (with the reason: permission, not a regular file, ...) and a loader that fails on a
    file (the other files are still read). Every session passes `sanitize.check_session` (usage values
    and lone surrogates; problems become ``metadata["warnings"]``). Files are read one at a time (a
    generator: only the sessions the caller keeps stay in memory) through the parsed-session cache
    (`workbench.transcript.session_cache`).

    Raises:
        TranscriptError: ``format`` names no loader.
        ValueError: ``WORKBENCH_MAX_LINE_BYTES`` is not a positive number.
    """
    report = report if report is not None else LoadReport()
    forced = _prepare(format)
    for path, named in iter_files(list(paths), report):
        yield from _load_file(path, named, forced, report) or ()


def load_groups(
    paths: Iterable[Path | str], *, format: str | None = None, report: LoadReport | None = None
) -> Iterator[list[Session]]:
    """The sessions of `load_paths`, one *session group* at a time: a main session with its sub-agents
    (`group_files`), so a command can hold one group in memory, not the corpus. Groups come in the
    order of their first file; the sessions of a group in file order."""
    for group in ranked_groups(paths, format=format, report=report):
        sessions = [session for _, session in group]
        del group
        yield sessions
        del sessions  # released before the next group is read: one group in memory, not two


def ranked_groups(
    paths: Iterable[Path | str], *, format: str | None = None, report: LoadReport | None = None
) -> Iterator[list[tuple[tuple[int, int], Session]]]:
    """`load_groups` with each session's rank in `load_paths` order: ``((file position, index in its
    file), session)``. Groups put a file's sub-agents next to it, which is not `load_paths` order; a
    caller that streams groups and must give results in that order (the report's tables) sorts by rank.
    A file listed twice (overlapping inputs) is loaded twice, both times with its first position."""
    report = report if report is not None else LoadReport()
    forced = _prepare(format)
    for group in plan_groups(paths, report):
        ranked = load_planned_group(group, forced, report)
        if ranked:
            yield ranked
        del ranked  # released before the next group is read: one group in memory, not two


#: One file of a planned session group: ``(path, named, position)``: ``named``, the file was given itself
#: (not found in a folder); ``position``, where the file first comes in `load_paths` order.
PlannedFile = tuple[Path, bool, int]


def plan_groups(paths: Iterable[Path | str], report: LoadReport) -> list[list[PlannedFile]]:
    """The session groups of `ranked_groups` as files, nothing parsed (a sub-agent file's head is read
    for its ``sessionId``): a process pool hands each group to a worker that loads it with
    `load_planned_group` (`workbench.replay.parallel`). Path errors go to ``report`` as `load_paths`'s do."""
    files = list(iter_files(list(paths), report))
    first: dict[Path, int] = {}
    for position, (path, _) in enumerate(files):
        first.setdefault(path, position)
    return [[(path, named, first[path]) for path, named in group] for group in group_files(files)]


def load_planned_group(
    group: Sequence[PlannedFile], format: Loader | str | None, report: LoadReport
) -> list[tuple[tuple[int, int], Session]]:
    """The ranked sessions of one group of `plan_groups` (``format``: a loader, its name, or None to
    detect each file's); unreadable files and loader failures go to ``report`` as in `load_paths`."""
    forced = _prepare(format) if isinstance(format, str) else format
    return [
        ((position, index), session)
        for path, named, position in group
        for index, session in enumerate(_load_file(path, named, forced, report) or ())
    ]


def file_summaries(
    paths: Iterable[Path | str],
    *,
    format: str | None = None,
    report: LoadReport | None = None,
    keep_sessions: bool = False,
    workers: int = 1,
) -> Iterator[tuple[Path, FileSummary]]:
    """``(file, FileSummary)`` per transcript file, from the parsed-session cache when the file is
    unchanged (then nothing is parsed), with the same errors and ignored files as `load_paths`.
    ``keep_sessions``: a file that is parsed also gets its sessions cached (a sweep's workers read them).

    ``workers`` > 1: the files are read by that many processes (`workbench.pool.ordered_map`), each file
    alone; the summaries and the report come out as with one (the same order, the same entries)."""
    report = report if report is not None else LoadReport()
    forced = _prepare(format)
    if workers != 1:
        yield from _pooled_summaries(paths, format, report, keep_sessions, workers)
        return
    for path, named in iter_files(list(paths), report):
        found = _load_file(path, named, forced, report, summary="keep" if keep_sessions else True)
        if found is not None:
            yield path, found


def _pooled_summaries(
    paths: Iterable[Path | str], format: str | None, report: LoadReport, keep_sessions: bool, workers: int
) -> Iterator[tuple[Path, FileSummary]]:
    """`file_summaries` by worker processes. The walk's errors are put back where one process reports
    them: before the first file found after them."""
    from ..pool import check_workers, ordered_map

    check_workers(workers)
    walk = LoadReport()
    files: list[tuple[Path, bool, int, int]] = []  # with the walk's error and ignored counts before it
    for path, named in iter_files(list(paths), walk):
        files.append((path, named, len(walk.errors), len(walk.ignored)))
    done_errors = done_ignored = 0
    tasks = [(path, named, format, keep_sessions) for path, named, _, _ in files]
    for (path, _, errors, ignored), (found, part) in zip(
        files, ordered_map(_summary_task, tasks, max(1, min(workers, len(tasks)))), strict=True
    ):
        report.errors += walk.errors[done_errors:errors] + part.errors
        report.ignored += walk.ignored[done_ignored:ignored] + part.ignored
        report.files += part.files
        done_errors, done_ignored = errors, ignored
        if found is not None:
            yield path, found
    report.errors += walk.errors[done_errors:]
    report.ignored += walk.ignored[done_ignored:]


def _summary_task(task: tuple[Path, bool, str | None, bool]) -> tuple[FileSummary | None, LoadReport]:
    path, named, format, keep_sessions = task
    part = LoadReport()
    found = _load_file(path, named, _prepare(format), part, summary="keep" if keep_sessions else True)
    return found, part


def _prepare(format: str | None) -> Loader | None:
    forced = get_loader(format) if format else None
    max_line_bytes()  # a bad WORKBENCH_MAX_LINE_BYTES is a ValueError before any file is read
    _ensure_builtin()
    return forced


def _load_file(
    path: Path, named: bool, forced: Loader | None, report: LoadReport, *, summary: bool | str = False
) -> Any:
    """One file's sessions (``summary``: its `FileSummary`), or None when it is not read (then it is
    in ``report.errors`` or ``report.ignored``)."""
    from .sanitize import check_session
    from .session_cache import cached_sessions, cached_summary

    try:
        head = read_head(path, HEAD_BYTES)
    except OSError as exc:
        report.error(path, _unreadable(exc))
        return None
    loader = forced or detect(path, head)
    if loader is None:
        if not head:
            (report.error if named else report.ignore)(path, "empty file")
        elif named or path.name.endswith(TRANSCRIPT_SUFFIXES):
            report.error(path, _why_not(head))
        else:
            report.ignore(path, "not a recognised transcript format")
        return None
    found = loader

    def load() -> list[Session]:
        return [check_session(s) for s in found.load(path)]

    try:
        if summary:
            result = cached_summary(path, loader.name, load, keep_sessions=summary == "keep")
        else:
            result = cached_sessions(path, loader.name, load)
    except OSError as exc:
        report.error(path, _unreadable(exc))
        return None
    except Exception as exc:  # a loader bug on one file must not lose the others: report it
        report.error(path, f"the {loader.name} loader failed: {type(exc).__name__}: {_one_line(exc)}")
        return None
    report.files.append(str(path))
    return result


_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]{1,200})"')


def group_files(files: Sequence[tuple[Path, bool]]) -> list[list[tuple[Path, bool]]]:
    """``files`` in session groups: a Claude Code main session ``<dir>/<id>.jsonl`` with its sub-agent
    transcripts ``<dir>/<id>/subagents/*.jsonl`` (docs §7.1) and, in the older flat layout, the
    ``<dir>/agent-*.jsonl`` files whose first ``sessionId`` is ``<id>`` (or, when no file is named
    ``<id>.jsonl``, is the first ``sessionId`` of a main file of that folder); any other file is a group of
    its own. Groups come in the order of their first file, files keep their order within a group."""
    keys: list[Any] = []
    agents = [_is_flat_agent(path) for path, _ in files]
    for (path, _), agent in zip(files, agents, strict=True):
        key: Any = path
        if path.parent.name == "subagents":
            key = path.parent.parent.parent / path.parent.parent.name
        elif agent:
            sid = _first_session_id(path)
            key = path.parent / sid if sid else path
        elif path.suffix == ".jsonl":
            key = path.parent / path.stem
        keys.append(key)
    owned = {key for key, agent in zip(keys, agents, strict=True) if not agent}
    if orphans := {key for key, agent in zip(keys, agents, strict=True) if agent} - owned:
        # a flat sub-agent whose main file is not named by its id (renamed, copied): the first main file of
        # its folder whose first sessionId is the sub-agent's joins it
        folders = {orphan.parent for orphan in orphans}
        named: dict[Any, Any] = {}
        for (path, _), key, agent in zip(files, keys, agents, strict=True):
            if not agent and path.suffix == ".jsonl" and path.parent in folders and path.parent.name != "subagents":
                sid = _first_session_id(path)
                if sid and path.parent / sid in orphans:
                    named.setdefault(path.parent / sid, key)
        keys = [named.get(key, key) for key in keys]
    groups: dict[Any, list[tuple[Path, bool]]] = {}
    for item, key in zip(files, keys, strict=True):
        groups.setdefault(key, []).append(item)
    return list(groups.values())


def _is_flat_agent(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl" and path.parent.name != "subagents"


def _first_session_id(path: Path) -> str | None:
    try:
        match = _SESSION_ID.search(read_head(path, HEAD_BYTES))
    except OSError:
        return None
    return match.group(1).decode("utf-8", "replace") if match else None


def _unreadable(exc: OSError) -> str:
    """Why a file could not be read: what it is when it is not a regular file, else the OS's reason."""
    return exc.reason if isinstance(exc, NotRegularFile) else f"cannot read: {exc.strerror or exc}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else f"{text[:297]}..."


def _why_not(head: bytes) -> str:
    """Why a file that looks like a transcript matched no loader, with what its first JSON line holds."""
    import json

    first = _past_junk(head.removeprefix(BOM)).split(b"\n", 1)[0]
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        return "not a recognised transcript format (no JSON line near the top; --format NAME forces a loader)"
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))[:8])
        return f"not a recognised transcript format (first JSON line has keys: {keys}; --format NAME forces a loader)"
    return (
        f"not a recognised transcript format (first JSON line is a {type(value).__name__}; "
        "--format NAME forces a loader)"
    )


def load_corpus(paths: Iterable[Path | str], *, format: str | None = None) -> Corpus:
    """A lazy `Corpus` over ``paths`` (re-reads on each iteration)."""
    items = [Path(p) for p in paths]
    return Corpus(lambda: load_paths(items, format=format), description=", ".join(map(str, items)))


def skip(path: Path, line: int, reason: str, data: bytes = b"") -> Skip:
    return Skip(str(path), line, reason, data)
