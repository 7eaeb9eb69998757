"""Shared fixtures. Real-data tests read the corpus in place from ``WORKBENCH_CORPUS``.

Default: ``../shared/corpus`` next to the repository when it exists. Without it the real-data tests are
skipped with the setting that enables them; when ``WORKBENCH_REQUIRE_CORPUS=1`` (set by ``.ci/run``) a
missing corpus fails them instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.transcript import Session, load_paths

ROOT = Path(__file__).resolve().parents[1]


def corpus_root() -> Path | None:
    configured = os.environ.get("WORKBENCH_CORPUS")
    path = Path(configured) if configured else ROOT.parent / "shared" / "corpus"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real corpus folder (skips locally when absent; fails under WORKBENCH_REQUIRE_CORPUS=1)."""
    path = corpus_root()
    if path is None:
        configured = os.environ.get("WORKBENCH_CORPUS")
        where = (
            f"WORKBENCH_CORPUS={configured} does not exist"
            if configured
            else f"{ROOT.parent / 'shared' / 'corpus'} is missing"
        )
        fix = "`export WORKBENCH_CORPUS=/path/to/shared/corpus` (or put the corpus at ../shared/corpus)"
        if os.environ.get("WORKBENCH_REQUIRE_CORPUS") == "1":
            pytest.fail(f"real corpus not available ({where}) but WORKBENCH_REQUIRE_CORPUS=1 requires it: {fix}")
        pytest.skip(f"real corpus not available ({where}): {fix}")
    return path


@pytest.fixture(scope="session")
def claude_sessions(corpus: Path) -> list[Session]:
    """Every Claude Code session of the real corpus, loaded once."""
    sessions = list(load_paths([corpus / "claude-code"]))
    assert len(sessions) >= 20
    return sessions


@pytest.fixture(scope="session")
def every_session(corpus: Path) -> list[Session]:
    """Every session of every format of the real corpus (each folder), loaded once."""
    sessions = [s for folder in sorted(p for p in corpus.iterdir() if p.is_dir()) for s in load_paths([folder])]
    assert len(sessions) > 60
    return sessions


@pytest.fixture(scope="session")
def main_sessions(claude_sessions: list[Session]) -> list[Session]:
    return [s for s in claude_sessions if not s.is_subagent]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the on-disk caches of a test run out of the user's home."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
