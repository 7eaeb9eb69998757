"""Where the workbench keeps its on-disk caches (``WORKBENCH_CACHE_DIR``, default ``~/.cache/workbench``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    configured = os.environ.get("WORKBENCH_CACHE_DIR")
    root = (
        Path(configured) if configured else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "workbench"
    )
    root.mkdir(parents=True, exist_ok=True)
    return root
