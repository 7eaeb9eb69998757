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
    # Read-only members: a loader's plain class attributes (``suffixes = (".jsonl",)``, typed as a
    # fixed-length tuple) satisfy them, which mutable protocol attributes, being invariant, would not.
    @property
    def name(self) -> str:
        """The loader's unique name, by which ``format=`` selects it."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """File-name endings this loader may read; `sniff` decides among files that end so."""
        ...

    def sniff(self, path: Path, head: bytes) -> bool:
        """True when this loader recognises the file from its name and first bytes."""
        ...

    def load(self, path: Path) -> list[Session]:
        """All sessions in the file; bad lines become `Skip`s inside the sessions, never exceptions."""
        ...
