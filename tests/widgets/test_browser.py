"""One real browser test: JupyterLab + Chromium (Playwright) run 02_tune_keep_window and move a slider.

JupyterLab listens on 127.0.0.1 (a free port, token auth) with its own root, config, data and runtime
folders in a temporary directory; Chromium is Debian's (/usr/bin/chromium, or ``WORKBENCH_CHROMIUM``;
installed by ``scripts/install_browser.sh``; never ``playwright install``). The test runs all cells,
presses the ``End`` key on the ``min_tokens`` slider handle, and checks that the readout shows the keep
window the model computes for the new value. Screenshots: a temporary path (printed) and
/tmp/workbench-browser.png.

Without Chromium or Playwright the test is skipped with the command that installs them, before
JupyterLab starts; under ``WORKBENCH_REQUIRE_BROWSER=1`` (``.ci/run``) it fails instead.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import NOTEBOOKS, ensure_kernel

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "bash scripts/install_browser.sh"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT_COPY = Path("/tmp/workbench-browser.png")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unavailable(reason: str) -> None:
    if os.environ.get("WORKBENCH_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, but WORKBENCH_REQUIRE_BROWSER=1 requires the browser test: run `{INSTALL}`")
    pytest.skip(f"{reason}: run `{INSTALL}` (Debian's chromium; `make setup` installs playwright)")


@pytest.fixture
def chromium() -> Path:
    """Chromium's path (``WORKBENCH_CHROMIUM``, default /usr/bin/chromium); skips (CI: fails) without it."""
    path = Path(os.environ.get("WORKBENCH_CHROMIUM") or CHROMIUM)
    if not path.exists():
        _unavailable(f"{path} is missing")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed")
    return path


@pytest.fixture
def jupyterlab(tmp_path: Path) -> Iterator[dict]:
    """A JupyterLab server on 127.0.0.1 serving a copy of the notebook; stopped in teardown."""
    ensure_kernel()
    root, config, data, runtime = (tmp_path / d for d in ("root", "config", "data", "runtime"))
    for folder in (root, config, data, runtime):
        folder.mkdir()
    shutil.copy(NOTEBOOKS / "02_tune_keep_window.ipynb", root / "02_tune_keep_window.ipynb")
    offline = {
        "LabApp": {
            "news_url": None,
            "extension_manager": "readonly",
            "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "workspaces_dir": str(tmp_path / "workspaces"),
            "user_settings_dir": str(tmp_path / "settings"),
        }
    }
    for name in ("jupyter_server_config.json", "jupyter_lab_config.json"):
        (config / name).write_text(json.dumps(offline), encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(data),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    log = (tmp_path / "jupyterlab.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited ({process.returncode}): {(tmp_path / 'jupyterlab.log').read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start within 60 s")
            time.sleep(0.3)
        yield {
            "url": f"{base}/lab/tree/02_tune_keep_window.ipynb?token={token}",
            "root": root,
            "log": tmp_path / "jupyterlab.log",
        }
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        log.close()


def _run_all_cells(page, attempts: int = 3) -> None:
    """Run > Run All Cells, retried: a click landing while the kernel connection settles can be dropped."""
    for attempt in range(attempts):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        try:
            page.wait_for_selector(".wb-keep-readout", timeout=25_000)
            return
        except Exception:
            page.screenshot(path=str(SCREENSHOT_COPY))
            if attempt == attempts - 1:
                raise AssertionError(f"the keep-window readout never rendered (screenshot {SCREENSHOT_COPY})") from None
            page.keyboard.press("Escape")


def _readout(page) -> str:
    return page.locator(".wb-keep-readout").first.inner_text()


def test_keep_window_view_in_jupyterlab(chromium: Path, jupyterlab: dict, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from workbench.transcript import load_paths
    from workbench.widgets import SessionIndex, keep_window_model, resolve_corpus

    screenshot = tmp_path / "workbench-browser.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.set_default_timeout(60_000)
            page.goto(jupyterlab["url"])
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
            page.get_by_text(re.compile(r"\| Idle$")).first.wait_for(timeout=90_000)  # the kernel is connected
            _run_all_cells(page)
            page.wait_for_selector(".wb-min-tokens .noUi-handle", timeout=30_000)
            before = _readout(page)
            match = re.match(r"step (\d+) of", before)
            assert match, before
            step = int(match.group(1))
            assert "vs min 10,000" in before

            handle = page.locator(".wb-min-tokens .noUi-handle").first
            handle.scroll_into_view_if_needed()
            handle.focus()
            handle.press("End")  # noUiSlider: jump to the maximum (100,000)
            page.wait_for_function(
                "() => document.querySelector('.wb-keep-readout').innerText.includes('vs min 100,000')",
                timeout=30_000,
            )
            after = _readout(page)
            value = page.locator(".wb-min-tokens .widget-readout").first.inner_text().strip()
            assert value.replace(",", "") == "100000"

            # what the readout must say: the model, computed here for the same session, step and sliders
            corpus = resolve_corpus()
            session = max((s for s in load_paths([corpus]) if not s.is_subagent), key=lambda s: len(s.conversation()))
            index = SessionIndex.build(session)
            old = keep_window_model(index, step)
            new = keep_window_model(index, step, min_tokens=100_000)
            assert f"naive start #{old.naive_start} → adjusted start #{old.start}" in before
            assert f"naive start #{new.naive_start} → adjusted start #{new.start}" in after
            assert f"naive window: {new.tokens:,} tokens vs min 100,000" in after
            assert after != before
            no_news = page.get_by_role("button", name="No")
            if no_news.count():
                no_news.first.click()
            page.locator(".wb-keep-window-view").first.scroll_into_view_if_needed()
            page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    shutil.copy(screenshot, SCREENSHOT_COPY)
    print(f"\nscreenshot: {screenshot} (copy: {SCREENSHOT_COPY})")
