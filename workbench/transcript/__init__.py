"""Transcripts: the canonical model, one loader per format, export.

The names below are imported on first use (PEP 562), and the loaders register themselves when a file
first needs detecting (`workbench.transcript.registry`): a warm ``workbench ingest`` reads cached
summaries and imports no loader, no export code and no JSON decoder.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .export import export_session, session_bytes
    from .model import BLOCK_KINDS, Block, Corpus, Record, Session, Skip, canonical_json
    from .registry import LoadReport, TranscriptError, detect, get_loader, load_corpus, load_paths, loaders, register

__all__ = [
    "BLOCK_KINDS",
    "Block",
    "Corpus",
    "LoadReport",
    "Record",
    "Session",
    "Skip",
    "TranscriptError",
    "canonical_json",
    "detect",
    "export_session",
    "get_loader",
    "load_corpus",
    "load_paths",
    "loaders",
    "register",
    "session_bytes",
]

_WHERE = {
    **dict.fromkeys(("export_session", "session_bytes"), "export"),
    **dict.fromkeys(("BLOCK_KINDS", "Block", "Corpus", "Record", "Session", "Skip", "canonical_json"), "model"),
    **dict.fromkeys(
        ("LoadReport", "TranscriptError", "detect", "get_loader", "load_corpus", "load_paths", "loaders", "register"),
        "registry",
    ),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
