"""The parsed-session cache removes what it no longer uses (`workbench.transcript.cache_prune`): entries live
in a folder per loader version, and other versions' folders (and the flat layout before them) unused for
`KEEP_DAYS` days are removed when a process opens the cache; recent ones, and the version in use, stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hostile import write_claude

from workbench.transcript import cache_prune, session_cache
from workbench.transcript.registry import load_paths

DAY = 86400


@pytest.fixture
def sessions_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder; the next load resolves (and prunes) it anew."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(session_cache.CACHE_ENV, raising=False)
    monkeypatch.setattr(session_cache, "_STATE", {"off": None, "warned_corrupt": False})
    monkeypatch.setattr(session_cache, "_ROOTS", {})
    return tmp_path / "cache" / "sessions"


def _entry(folder: Path, name: str, *, days_ago: float, mark: bool = True) -> Path:
    """An entry folder of another version (or of the flat layout) last used ``days_ago`` days ago."""
    path = folder / name
    (path / "ab").mkdir(parents=True)
    (path / "ab" / "abcd.sessions").write_bytes(b"old")
    stamp = time.time() - days_ago * DAY
    if mark:
        (path / ".used").touch()
        os.utime(path / ".used", (stamp, stamp))
    os.utime(path, (stamp, stamp))
    return path


def test_entries_live_in_the_loader_versions_folder_marked_used(tmp_path: Path, sessions_dir: Path) -> None:
    list(load_paths([write_claude(tmp_path / "a.jsonl", "s-a")]))
    current = sessions_dir / session_cache.loader_version()
    assert list(current.rglob("*.sessions")) and (current / ".used").is_file()
    assert time.time() - (current / ".used").stat().st_mtime < 60
    assert {p.name for p in sessions_dir.iterdir()} == {session_cache.loader_version()}


def test_other_versions_unused_for_a_week_are_removed_recent_ones_kept(tmp_path: Path, sessions_dir: Path) -> None:
    old = _entry(sessions_dir, "0.0.9+0123456789abcdef", days_ago=cache_prune.KEEP_DAYS + 1)
    recent = _entry(sessions_dir, "0.1.0+fedcba9876543210", days_ago=cache_prune.KEEP_DAYS - 1)
    unmarked = _entry(sessions_dir, "0.0.8+00000000000000ff", days_ago=30, mark=False)  # aged by its own mtime
    stray = sessions_dir / "notes.txt"
    stray.write_text("a user's file: not a cache folder")
    list(load_paths([write_claude(tmp_path / "a.jsonl", "s-a")]))
    assert not old.exists() and not unmarked.exists()
    assert recent.is_dir() and (recent / "ab" / "abcd.sessions").read_bytes() == b"old"
    assert stray.read_text().startswith("a user's")


def test_the_flat_layout_before_version_folders_is_removed_by_the_age_of_its_pointers(sessions_dir: Path) -> None:
    sessions_dir.mkdir(parents=True)
    (sessions_dir / "ab").mkdir()
    (sessions_dir / "ab" / "abcd.sessions").write_bytes(b"old")
    (sessions_dir / "paths").mkdir()
    (sessions_dir / "paths" / "p").write_text("{}")
    current = "0.2.0+0000000000000000"
    now = time.time()
    stale = now - (cache_prune.KEEP_DAYS + 1) * DAY
    os.utime(sessions_dir / "paths", (now, now))
    os.utime(sessions_dir / "ab", (stale, stale))
    assert cache_prune.prune(sessions_dir, current) == []  # pointers written lately: an old install still runs
    os.utime(sessions_dir / "paths", (stale, stale))
    removed = cache_prune.prune(sessions_dir, current)
    assert sorted(p.name for p in removed) == ["ab", "paths"] and not list(sessions_dir.iterdir())


def test_the_version_in_use_is_never_removed_and_its_mark_is_refreshed_hourly(tmp_path: Path) -> None:
    current = _entry(tmp_path, "0.1.0+aaaaaaaaaaaaaaaa", days_ago=365)
    assert cache_prune.prune(tmp_path, current.name) == [] and current.is_dir()
    now = time.time()
    cache_prune.mark_used(current, now=now)
    assert (current / ".used").stat().st_mtime == pytest.approx(now, abs=1)
    recent = now - 600
    os.utime(current / ".used", (recent, recent))
    cache_prune.mark_used(current, now=now)
    assert (current / ".used").stat().st_mtime == pytest.approx(recent, abs=1)  # within the hour: not rewritten


def test_a_cache_folder_that_cannot_be_used_loads_anyway(tmp_path: Path, sessions_dir: Path) -> None:
    sessions_dir.parent.mkdir(parents=True)
    sessions_dir.write_text("a file where the sessions folder should be")  # mkdir and iterdir fail
    with pytest.warns(session_cache.SessionCacheWarning):
        loaded = list(load_paths([write_claude(tmp_path / "a.jsonl", "s-a")]))
    assert [s.id for s in loaded] == ["s-a"]
