"""Loader registry: one module per transcript format, chosen by name or auto-detected.

A loader is any object with ``name``, ``suffixes``, ``sniff(path, head)`` and ``load(path)``. Adding a
format is one new module that calls `register`. `load_paths` walks files and folders, asks each
registered loader whether it recognises a file, and returns sessions plus a report of everything it
passed over, so nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from .model import Corpus, Session, Skip

__all__ = [
    "LoadReport",
    "Loader",
    "TranscriptError",
    "detect",
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


def detect(path: Path) -> Loader | None:
    """The first registered loader that recognises ``path``, or None."""
    _ensure_builtin()
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    for loader in _REGISTRY.values():
        if path.name.endswith(loader.suffixes) and loader.sniff(path, head):
            return loader
    return None


@dataclass
class LoadReport:
    """What a load saw: files read, files passed over (not transcripts), bad lines, totals."""

    files: list[str] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"files": list(self.files), "ignored": list(self.ignored), "errors": list(self.errors)}


def iter_files(paths: Iterable[Path | str], report: LoadReport) -> Iterator[Path]:
    """Files under ``paths`` in a stable order; a folder yields its files sorted by path."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            report.errors.append({"file": str(path), "reason": "path does not exist"})
            continue
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file())
            if not found:
                report.errors.append({"file": str(path), "reason": "folder holds no files"})
            yield from found
        else:
            yield path


def load_paths(
    paths: Iterable[Path | str], *, format: str | None = None, report: LoadReport | None = None
) -> Iterator[Session]:
    """Sessions from files and folders, auto-detecting each file's format unless ``format`` is given.

    Files no loader recognises are listed in ``report.ignored`` (a folder's README or LICENSE is not a
    transcript); an explicitly named file that no loader recognises is an error in ``report.errors``.
    """
    report = report if report is not None else LoadReport()
    explicit = {Path(p) for p in paths if Path(p).is_file()}
    forced = get_loader(format) if format else None
    for path in iter_files(paths, report):
        loader = forced or detect(path)
        if loader is None:
            entry = {"file": str(path), "reason": _why_not(path)}
            (report.errors if path in explicit else report.ignored).append(entry)
            continue
        try:
            sessions = loader.load(path)
        except OSError as exc:
            report.errors.append({"file": str(path), "reason": f"cannot read: {exc.strerror or exc}"})
            continue
        report.files.append(str(path))
        yield from sessions


def _why_not(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    if size == 0:
        return "empty file"
    return "not a recognised transcript format"


def load_corpus(paths: Iterable[Path | str], *, format: str | None = None) -> Corpus:
    """A lazy `Corpus` over ``paths`` (re-reads on each iteration)."""
    items = [Path(p) for p in paths]
    return Corpus(lambda: load_paths(items, format=format), description=", ".join(map(str, items)))


def skip(path: Path, line: int, reason: str, data: bytes = b"") -> Skip:
    return Skip(str(path), line, reason, data)
