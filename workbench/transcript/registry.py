"""Loader registry: one module per transcript format, chosen by name or auto-detected.

A loader is any object with ``name``, ``suffixes``, ``sniff(path, head)`` and ``load(path)``. Adding a
format is one new module that calls `register`. `load_paths` walks files and folders, asks each
registered loader whether it recognises a file, and returns sessions plus a report of everything it
passed over, so nothing is dropped silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import BOM, NotRegularFile, max_line_bytes, read_head, walk

if TYPE_CHECKING:  # the record model is imported where records are made: a warm `ingest` makes none
    from .loader_protocol import Loader
    from .model import Corpus, Session, Skip
    from .summary import FileSummary

__all__ = [
    "TRANSCRIPT_SUFFIXES",
    "LoadReport",
    "Loader",
    "TranscriptError",
    "custom_loaders",
    "detect",
    "file_summaries",
    "get_loader",
    "iter_files",
    "load_corpus",
    "load_paths",
    "loaders",
    "register",
]

HEAD_BYTES = 64 * 1024


class TranscriptError(Exception):
    """A path that cannot be read as any transcript (the message names the path and why)."""


def __getattr__(name: str) -> object:
    """`Loader` (the protocol, in `loader_protocol`: it needs `typing`, which a warm ``ingest`` does not
    import) on first use, as before it moved."""
    if name == "Loader":
        from .loader_protocol import Loader

        return Loader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_REGISTRY: dict[str, Loader] = {}
#: The built-in loader modules in detection order: gemini_session first (its .json objects carry
#: "sessionId", which the Claude Code sniffer would take). Imported on first need (`_ensure_builtin`), not
#: with the package: a warm ``ingest`` reads cached summaries and needs no loader.
_BUILTIN_MODULES = (
    "gemini_session",
    "claude_code",
    "anthropic_messages",
    "swe_agent",
    "openhands",
    "gemini_cli",
    "aider",
    "codex",
    "chat_jsonl",
    "hf",
)
_STATE = {"builtin": False, "custom": False}


def register(loader: Loader) -> Loader:
    """Add a loader; it is tried after the built-in ones (which are registered first)."""
    builtin = _builtin_rank(loader) < len(_BUILTIN_MODULES)
    if not builtin:
        _ensure_builtin()
        _STATE["custom"] = True
    if loader.name in _REGISTRY:
        raise ValueError(f"a loader named {loader.name!r} is already registered")
    _REGISTRY[loader.name] = loader
    return loader


def _builtin_rank(loader: Loader) -> int:
    """The loader's place in `_BUILTIN_MODULES` (their number for any other loader)."""
    package, _, module = type(loader).__module__.rpartition(".")
    if package == __package__ and module in _BUILTIN_MODULES:
        return _BUILTIN_MODULES.index(module)
    return len(_BUILTIN_MODULES)


def custom_loaders() -> bool:
    """Whether a loader other than the built-in ones was registered (detection is then not remembered:
    `workbench.transcript.session_cache.remembered_loader`)."""
    return _STATE["custom"]


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
    """Import the built-in loader modules (each registers itself), once; the registry then holds them in
    `_BUILTIN_MODULES` order, also when one of them was imported on its own before, and after them the
    other loaders in the order they were registered."""
    if _STATE["builtin"]:
        return
    _STATE["builtin"] = True
    import importlib

    for module in _BUILTIN_MODULES:
        importlib.import_module(f".{module}", __package__)
    ordered = sorted(_REGISTRY.items(), key=lambda item: _builtin_rank(item[1]))  # stable: the rest as registered
    _REGISTRY.clear()
    _REGISTRY.update(ordered)


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


@dataclass(slots=True)
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

    ``workers`` > 1: the files are read by that many processes (`workbench.util.pool.ordered_map`), each file
    alone; the summaries and the report come out as with one (the same order, the same entries)."""
    report = report if report is not None else LoadReport()
    forced = _prepare(format)
    if workers != 1:
        from .pooled_summaries import pooled_summaries

        yield from pooled_summaries(paths, format, report, keep_sessions, workers)
        return
    for path, named in iter_files(list(paths), report):
        found = _load_file(path, named, forced, report, summary="keep" if keep_sessions else True)
        if found is not None:
            yield path, found


def _prepare(format: str | None) -> Loader | None:
    forced = get_loader(format) if format else None
    max_line_bytes()  # a bad WORKBENCH_MAX_LINE_BYTES is a ValueError before any file is read
    return forced  # the loaders themselves are imported when a file needs detecting (`detect`)


def _load_file(
    path: Path, named: bool, forced: Loader | None, report: LoadReport, *, summary: bool | str = False
) -> Any:
    """One file's sessions (``summary``: its `FileSummary`), or None when it is not read (then it is
    in ``report.errors`` or ``report.ignored``).

    Which loader reads an unchanged file is remembered (`session_cache.remembered_loader`: the name
    detection gave, kept with the file's stamp), so a file whose summary or sessions are cached is neither
    read nor sniffed and no loader module is imported (a warm ``ingest`` of the 1x corpus: about a third of
    its time)."""
    from .session_cache import cached_sessions, cached_summary, file_stamp, remember_loader, remembered_loader

    name = forced.name if forced is not None else (None if custom_loaders() else remembered_loader(path))
    stamp = None
    if name is None:
        try:
            stamp, head = file_stamp(path), read_head(path, HEAD_BYTES)
        except OSError as exc:
            report.error(path, _unreadable(exc))
            return None
        loader = detect(path, head)
        if loader is None:
            if not head:
                (report.error if named else report.ignore)(path, "empty file")
            elif named or path.name.endswith(TRANSCRIPT_SUFFIXES):
                report.error(path, _why_not(head))
            else:
                report.ignore(path, "not a recognised transcript format")
            return None
        name = loader.name

    def load() -> list[Session]:
        from .sanitize import check_session

        return [check_session(s) for s in (forced or get_loader(name)).load(path)]

    result: FileSummary | list[Session]
    try:
        if summary:
            result = cached_summary(path, name, load, keep_sessions=summary == "keep")
        else:
            result = cached_sessions(path, name, load)
    except OSError as exc:
        report.error(path, _unreadable(exc))
        return None
    except Exception as exc:  # a loader bug on one file must not lose the others: report it
        report.error(path, f"the {name} loader failed: {type(exc).__name__}: {_one_line(exc)}")
        return None
    if stamp is not None and forced is None and not custom_loaders():
        remember_loader(path, name, stamp)
    report.files.append(str(path))
    return result


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
    from .model import Corpus

    items = [Path(p) for p in paths]
    return Corpus(lambda: load_paths(items, format=format), description=", ".join(map(str, items)))


def skip(path: Path, line: int, reason: str, data: bytes = b"") -> Skip:
    from .model import Skip

    return Skip(str(path), line, reason, data)
