"""Session groups: a main session with its sub-agents (`group_files`), read one group at a time
(`load_groups`, `ranked_groups`) or planned as files and loaded apart (`plan_groups`,
`load_planned_group`: the parallel replay's workers load their group by path)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import registry
from .files import read_head
from .loader_protocol import Loader
from .model import Session
from .registry import HEAD_BYTES, LoadReport, _prepare, iter_files

__all__ = ["PlannedFile", "group_files", "load_groups", "load_planned_group", "plan_groups", "ranked_groups"]


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
    load = registry._load_file  # looked up on the module (tests wrap it)
    return [
        ((position, index), session)
        for path, named, position in group
        for index, session in enumerate(load(path, named, forced, report) or ())
    ]


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
