"""Sweep cells: one (strategy, resolved config, session, estimator, code version), identified by a content hash.

A cell's id is a hash of what determines its result and which session it belongs to, so a re-run
computes exactly the cells whose inputs changed: the strategy name, its *resolved* config (defaults
filled in, so ``{}`` and the spelled-out defaults are the same cell), the session's content
fingerprint, its id and its ``file`` (the source path relative to the corpus folder it was found in,
so moving the corpus keeps the ids), the estimator, and the code version (package version plus a
hash of the modules that compute results; ``WORKBENCH_CODE_VERSION`` overrides it). A session is
(session id, file): two files with the same ``sessionId`` (a copied folder, a resumed session) are two
sessions with cells of their own, never one. Provenance that does not change the
result (absolute paths, git revision, timestamps) is recorded next to the result, not hashed.

`run_task` is what an executor runs: one session's cells. The worker process parses each source file
once (`_sessions_of`, cached per process) and takes token counts from the shared on-disk cache, which
the driver warms before dispatching, so the parsing and counting are paid once per worker, not per cell.
A cell that raises is returned as a failure (type and message as text, so nothing unpicklable crosses a
process boundary) and the task's other cells are still returned.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from ..transcript.files import printable_path
from ..transcript.model import Session, canonical_json
from ..util.code_version import code_digest, code_version

__all__ = [
    "Cell",
    "CellTask",
    "cell_summary",
    "code_digest",
    "code_version",
    "corpus_fingerprint",
    "file_key",
    "git_revision",
    "make_cells",
    "run_task",
]


@lru_cache(maxsize=1)
def git_revision() -> str | None:
    """The repository's HEAD (``-dirty`` when the working tree differs), or None outside a checkout."""
    root = Path(__file__).resolve().parent.parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def corpus_fingerprint(fingerprints: Sequence[str]) -> str:
    """Order-independent hash of the sessions' fingerprints."""
    digest = hashlib.blake2b(digest_size=16)
    for fp in sorted(fingerprints):
        digest.update(fp.encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Cell:
    strategy: str
    config: Mapping[str, Any]
    passed: Mapping[str, Any]
    session_id: str
    session_fingerprint: str
    source: str | None
    estimator: str
    code_version: str
    file: str | None = None

    @cached_property  # a cell is immutable; a sweep asks for these many times
    def config_json(self) -> str:
        return canonical_json(dict(self.config))

    @cached_property  # a cell is immutable; a sweep asks for these many times
    def config_hash(self) -> str:
        from ..strategies.base import config_hash  # not via workbench.metrics, which imports pandas

        return config_hash(self.strategy, self.config)

    @cached_property  # a cell is immutable; a sweep asks for these many times
    def id(self) -> str:
        key = {
            "strategy": self.strategy,
            "config": dict(self.config),
            "session": self.session_fingerprint,
            "session_id": self.session_id,
            "file": self.file,
            "estimator": self.estimator,
            "code": self.code_version,
        }
        return hashlib.blake2b(canonical_json(key).encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class CellTask:
    """What a worker needs: where to read the session, and the cells to compute on it."""

    source: str
    session_id: str
    fingerprint: str
    cells: tuple[Cell, ...]
    #: User strategies the worker cannot find by name, cloudpickled (`workbench.strategies.portable`).
    strategy_code: tuple[tuple[str, bytes], ...] = ()


@dataclass
class TaskResult:
    cells: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)


def strategy_code_version(name: str) -> str:
    """`code_version`, plus the fingerprint of the strategy's own code when it is not built in (a user's
    class in a notebook, a plugin's): editing it changes its cells' ids."""
    from ..strategies import get_strategy
    from ..strategies.portable import code_fingerprint

    extra = code_fingerprint(get_strategy(name))
    return f"{code_version()}+{name}:{extra}" if extra else code_version()


def file_key(source: str | None, roots: Sequence[str | Path] = ()) -> str | None:
    """``source`` relative to the corpus folder it was found in, prefixed by that folder's name
    (``claude-code/a/b.jsonl``); the file name for a corpus given as a file; else the path as given."""
    if source is None:
        return None
    path = Path(os.path.realpath(source))
    for root in roots:
        base = _resolved(str(root))
        if path == base:
            return printable_path(base.name)
        if base in path.parents:
            return printable_path(f"{base.name}/{path.relative_to(base).as_posix()}")
    return printable_path(str(source))


@lru_cache(maxsize=256)
def _resolved(root: str) -> Path:
    """A corpus folder, resolved once per process (planning asks for every session's file)."""
    return Path(root).resolve()


def make_cells(
    points: Sequence[Any], sessions: Sequence[Session], estimator: str, roots: Sequence[str | Path] = ()
) -> list[Cell]:
    versions = {name: strategy_code_version(name) for name in {p.strategy for p in points}}
    files = {id(s): file_key(s.source, roots) for s in sessions}
    return [
        Cell(
            p.strategy,
            dict(p.resolved),
            dict(p.passed),
            s.id,
            s.fingerprint,
            s.source,
            estimator,
            versions[p.strategy],
            files[id(s)],
        )
        for p in points
        for s in sessions
    ]


def cell_identity(cell: Cell) -> dict[str, Any]:
    """The columns that name a cell (shared by computed and failed cells)."""
    return {
        "cell_id": cell.id,
        "strategy": cell.strategy,
        "config_hash": cell.config_hash,
        "session_id": cell.session_id,
        "session_fingerprint": cell.session_fingerprint,
        "source": printable_path(cell.source),
        "file": cell.file,
        "estimator": cell.estimator,
        "code_version": cell.code_version,
        "config_json": cell.config_json,
        "passed_config_json": canonical_json(dict(cell.passed)),
    }


def failure_row(cell: Cell, exc: BaseException) -> dict[str, Any]:
    """A failed cell: its identity plus the error as text (one line, at most 2,000 characters)."""
    message = " ".join(str(exc).split()) or repr(exc)
    return {**cell_identity(cell), "error_type": type(exc).__name__, "error": message[:2000]}


_SESSIONS: dict[tuple[str, int, int], dict[str, Session]] = {}
#: Files a worker parsed itself, most recent last: only the last few stay in memory (a long sweep would
#: otherwise hold every session it ever ran; tasks come session by session, long sessions first).
_PARSED: list[tuple[str, int, int]] = []
_KEEP_PARSED = 4


def _sessions_of(source: str) -> dict[str, Session]:
    """Every session of one source file, parsed once per process (keyed by path, size and mtime; the
    parsed-session cache makes a repeat cheap) and kept while it is among the last `_KEEP_PARSED`."""
    from ..transcript import load_paths

    key = _key(source)
    if key not in _SESSIONS:
        _SESSIONS[key] = {s.id: s for s in load_paths([source])}
        _PARSED.append(key)
        while len(_PARSED) > _KEEP_PARSED:
            _SESSIONS.pop(_PARSED.pop(0), None)
    return _SESSIONS[key]


def _key(source: str) -> tuple[str, int, int]:
    stat = os.stat(source)
    return (source, stat.st_size, stat.st_mtime_ns)


def remember_sessions(sessions: Sequence[Session]) -> None:
    """Let this process's tasks use sessions the driver already parsed (workers forked afterwards
    inherit them). A task that does not find its session there parses the file itself."""
    by_source: dict[str, dict[str, Session]] = {}
    for session in sessions:
        if session.source is not None:
            by_source.setdefault(str(session.source), {})[session.id] = session
    for source, found in by_source.items():
        try:
            key = _key(source)
        except OSError:
            continue
        _SESSIONS[key] = {**_SESSIONS.get(key, {}), **found}


def _session(task: CellTask) -> Session:
    for attempt in range(2):
        session = _sessions_of(task.source).get(task.session_id)
        if session is not None and session.fingerprint == task.fingerprint:
            return session
        if attempt == 0:  # remembered sessions may be a sample of the file: parse it once more
            _SESSIONS.pop(_key(task.source), None)
    raise RuntimeError(f"{task.source}: session {task.session_id} changed since the sweep was planned")


def cell_summary(steps: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary columns of one replayed (session, config): what a sweep stores per cell and
    ``wb.replay`` computes per run, so both feed the same tables (`workbench.experiments.tables`)."""
    without = sum(int(r["tokens_without_compaction"]) for r in steps)
    used = sum(int(r["context_tokens"]) for r in steps)
    return {
        "steps": len(steps),
        "compactions": len(events),
        "peak_context_tokens": max((int(r["context_tokens"]) for r in steps), default=0),
        "peak_without_compaction": max((int(r["tokens_without_compaction"]) for r in steps), default=0),
        "input_tokens": used,
        "input_tokens_without": without,
        "tokens_saved": without - used,
        "saved_share": (without - used) / without if without else 0.0,
        "violating_steps": sum(1 for r in steps if r["violations"]),
        "violations": sum(int(r["violations"]) for r in steps),
        "compaction_violations": sum(1 for e in events if e.get("violations")),
        "repairs": sum(int(r["repaired"]) for r in steps),
        "fallbacks": sum(len(e.get("fallbacks") or ()) for e in events),
    }


def run_task(task: CellTask) -> TaskResult:
    """Replay one session through each of the task's cells (runs inside a worker).

    Cells whose strategies decide identically until their first compaction (`prefix_key`) are replayed
    together by `replay_group`: the shared prefix is computed once. ``elapsed_s`` is the group's time
    divided among its cells.
    """
    from ..replay import replay_group
    from ..strategies import create
    from ..strategies.base import prefix_key
    from ..strategies.portable import install

    install(task.strategy_code)
    out = TaskResult()
    try:
        session = _session(task)
    except Exception as exc:  # the file changed or vanished: every cell of the task fails with it
        out.failed.extend(failure_row(cell, exc) for cell in task.cells)
        return out
    groups: dict[tuple[str, str], list[tuple[Cell, Any]]] = {}
    for cell in task.cells:
        try:
            strategy = create(cell.strategy, dict(cell.config))
        except Exception as exc:
            out.failed.append(failure_row(cell, exc))
            continue
        groups.setdefault((cell.estimator, prefix_key(strategy)), []).append((cell, strategy))
    results: dict[str, Any] = {}
    elapsed: dict[str, float] = {}
    for (estimator, _), members in groups.items():
        started = time.time()
        try:
            replays = replay_group(session, [strategy for _, strategy in members], estimator=estimator)
        except Exception:
            replays = None  # one member failed: replay each on its own so the others still count
        if replays is not None:
            share = (time.time() - started) / len(members)
            for (cell, _), replay in zip(members, replays, strict=True):
                results[cell.id], elapsed[cell.id] = replay, share
            continue
        for cell, _ in members:
            started = time.time()
            try:
                fresh = create(cell.strategy, dict(cell.config))
                results[cell.id] = replay_group(session, [fresh], estimator=estimator)[0]
            except Exception as exc:
                out.failed.append(failure_row(cell, exc))
                continue
            elapsed[cell.id] = time.time() - started
    for cell in task.cells:
        if cell.id not in results:
            continue
        result = results[cell.id]
        started = time.time() - elapsed[cell.id]
        extra = {"cell_id": cell.id, "config_hash": cell.config_hash, "file": cell.file}
        out.steps.extend({**row, **extra} for row in result.steps)
        out.events.extend({**row, **extra} for row in result.events)
        out.cells.append(
            {
                **cell_identity(cell),
                **cell_summary(result.steps, result.events),
                "started_at": started,
                "elapsed_s": elapsed[cell.id],
            }
        )
    return out
