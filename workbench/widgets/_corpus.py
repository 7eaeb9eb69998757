"""Where the notebooks read sessions from: the real corpus when it is there, else the embedded ``data/``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_ROOT", "resolve_corpus"]

#: The repository checkout this package runs from (editable install).
REPO_ROOT = Path(__file__).resolve().parents[2]


def resolve_corpus(path: str | Path | None = None, *, fmt: str = "claude-code") -> Path:
    """The folder to load sessions from, decided at run time.

    ``path`` wins when given. Otherwise the real corpus (``WORKBENCH_CORPUS``, default
    ``../shared/corpus`` next to the repository), its ``fmt`` sub-folder when present, if it exists;
    else the repository's ``data/`` folder (the synthetic default corpus).
    """
    if path is not None:
        return Path(path)
    configured = os.environ.get("WORKBENCH_CORPUS")
    real = Path(configured) if configured else REPO_ROOT.parent / "shared" / "corpus"
    if real.is_dir():
        return real / fmt if (real / fmt).is_dir() else real
    return REPO_ROOT / "data"
