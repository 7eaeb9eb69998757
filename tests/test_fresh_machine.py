"""A fresh clone without ``../shared`` or Chromium: the real-data and browser tests skip, with the command
that enables them, and fail only where CI requires them (``WORKBENCH_REQUIRE_CORPUS=1``,
``WORKBENCH_REQUIRE_BROWSER=1``, both set by ``.ci/run``). Each case runs pytest on one test in a
subprocess with the corpus or the browser pointed at a missing path (the browser test
called ``pytest.fail`` on any machine without /usr/bin/chromium, so ``make test`` failed on a fresh clone).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSER_TEST = "tests/widgets/test_browser.py::test_keep_window_view_in_jupyterlab"
CORPUS_TEST = "tests/transcript/test_claude_code_loader.py::test_real_corpus_every_line_is_a_record_and_round_trips"


def _pytest(test: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_REQUIRE_")}
    environment.update(env, WORKBENCH_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("required", [False, True], ids=["local", "ci"])
def test_missing_browser(tmp_path: Path, required: bool) -> None:
    env = {"WORKBENCH_CHROMIUM": str(tmp_path / "no-chromium")}
    if required:
        env["WORKBENCH_REQUIRE_BROWSER"] = "1"
    run = _pytest(BROWSER_TEST, tmp_path, **env)
    out = run.stdout + run.stderr
    assert "bash scripts/install_browser.sh" in out, out
    if required:
        assert run.returncode == 1 and ("1 error" in out or "1 failed" in out), out  # a failing fixture is an error
    else:
        assert run.returncode == 0 and "1 skipped" in out, out
    assert "JupyterLab" not in out  # decided before a server is started


@pytest.mark.parametrize("required", [False, True], ids=["local", "ci"])
def test_missing_corpus(tmp_path: Path, required: bool) -> None:
    env = {"WORKBENCH_CORPUS": str(tmp_path / "no-corpus")}
    if required:
        env["WORKBENCH_REQUIRE_CORPUS"] = "1"
    run = _pytest(CORPUS_TEST, tmp_path, **env)
    out = run.stdout + run.stderr
    assert "export WORKBENCH_CORPUS=" in out, out
    if required:
        assert run.returncode == 1 and ("1 error" in out or "1 failed" in out), out  # a failing fixture is an error
    else:
        assert run.returncode == 0 and "1 skipped" in out, out
