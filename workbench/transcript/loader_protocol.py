"""`Loader`: what a transcript format's loader is (`registry.register` takes any object with these
members). Its own module because a `typing.Protocol` needs `typing` at import time, which a warm
``ingest`` (the registry, the cache, the summaries) does not import; `registry.Loader` still names it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from .model import Session

__all__ = ["Loader"]


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
