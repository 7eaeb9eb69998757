"""What the parsed-session cache stops using is removed, so it does not grow with every upgrade.

Every entry's key includes `session_cache.loader_version` (the package version and a hash of the loading
code), so after an upgrade, or any change to ``workbench/transcript``, no old entry is ever read again:
a heavy user's cache, about twice their history per version, would only grow. So the cache keeps each
loader version's entries in a folder of their own, ``<cache>/sessions/<loader version>/``, marks the
folder it uses (``.used``, its mtime refreshed at most once an hour), and a process that opens the cache
removes the *other* versions' folders not used for `KEEP_DAYS` days. The wait is for a second
installation sharing the cache folder (another virtualenv, a notebook kernel on an older release): its
entries stay while it runs at least once a week; when it runs after they were removed it parses again,
nothing else. Entries of the layout before version folders (two-hex-digit folders and ``paths/``
directly under ``sessions/``) are removed the same way, aged by their ``paths`` folder (written on
every new entry).

Removal never fails a load: whatever cannot be removed (permissions, a concurrent removal) is left for
the next time. A file of the current version's folder is never touched here (`session_cache` replaces
a changed file's entries itself).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

__all__ = ["KEEP_DAYS", "mark_used", "prune"]

#: Another loader version's entries are removed once its folder was not used for this many days.
KEEP_DAYS = 7
_MARK = ".used"
_REFRESH_S = 3600
_LEGACY = re.compile(r"[0-9a-f]{2}|paths")


def mark_used(folder: Path, *, now: float | None = None) -> None:
    """Create ``folder`` and record that it is in use (its ``.used`` mtime, refreshed hourly at most)."""
    now = time.time() if now is None else now
    mark = folder / _MARK
    try:
        if now - mark.stat().st_mtime < _REFRESH_S:
            return
    except OSError:
        folder.mkdir(parents=True, exist_ok=True)
        mark.touch()
    os.utime(mark, (now, now))


def prune(sessions: Path, current: str, *, now: float | None = None, keep_days: float = KEEP_DAYS) -> list[Path]:
    """Remove the loader-version folders under ``sessions`` other than ``current`` (and the old flat
    layout's entries) that were not used for ``keep_days`` days; the paths removed."""
    now = time.time() if now is None else now
    try:
        children = list(sessions.iterdir())
    except OSError:
        return []
    legacy_used = _mtime(sessions / "paths")
    removed = []
    for child in children:
        if child.name == current or child.name.startswith(".") or not child.is_dir() or child.is_symlink():
            continue
        if _LEGACY.fullmatch(child.name):
            used = legacy_used if legacy_used is not None else _mtime(child)
        else:
            used = _mtime(child / _MARK) or _mtime(child)
        if used is not None and now - used > keep_days * 86400:
            import shutil  # only when a folder is old enough to go

            shutil.rmtree(child, ignore_errors=True)
            if not child.exists():
                removed.append(child)
    return removed


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
