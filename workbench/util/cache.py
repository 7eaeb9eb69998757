"""Where the workbench keeps its on-disk caches (``WORKBENCH_CACHE_DIR``, default ``~/.cache/workbench``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CacheDirError", "cache_root"]


class CacheDirError(OSError):
    """The cache folder cannot be made (``WORKBENCH_CACHE_DIR`` names a file, a read-only place, ...);
    ``root`` is the folder."""

    root: Path | None = None


def cache_root() -> Path:
    """The cache folder, made when missing. `CacheDirError` names the folder and the variable that chose it."""
    configured = os.environ.get("WORKBENCH_CACHE_DIR")
    root = (
        Path(configured) if configured else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "workbench"
    )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        source = "WORKBENCH_CACHE_DIR" if configured else "the default cache folder"
        reason = "a file, not a folder" if root.exists() and not root.is_dir() else (exc.strerror or str(exc))
        error = CacheDirError(
            exc.errno, f"cache folder {root} ({source}): {reason}; point WORKBENCH_CACHE_DIR at a folder"
        )
        error.root = root
        raise error from None
    return root
