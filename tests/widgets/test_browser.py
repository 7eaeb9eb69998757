"""Real browser tests: JupyterLab + Chromium (Playwright) render the widgets, move sliders, check layout.

JupyterLab listens on 127.0.0.1 (a free port, token auth) with its own root, config, data and runtime
folders in a temporary directory, and is stopped by the fixture; Chromium is Debian's (/usr/bin/chromium,
or ``WORKBENCH_CHROMIUM``; installed by ``scripts/install_browser.sh``; never ``playwright install``).

* `test_keep_window_view_in_jupyterlab` runs 02_tune_keep_window, moves ``min_tokens`` above
  ``max_tokens`` (refused: the config's message, the window unchanged), then raises ``max_tokens`` and
  ``min_tokens`` to their maximum, and checks that the readout shows the keep window the model computes.
* `test_widget_layout_in_jupyterlab` renders the keep-window, comparison and session-memory views in a
  narrow page and measures them: no element wider than its output area (unless inside a box that
  scrolls), the strip's labels do not overlap, the memory diff's height is bounded.

Screenshots go to the test's temporary folder (paths printed) and are copied to /tmp/workbench-browser/.

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
SCREENSHOTS = Path("/tmp/workbench-browser")
SCREENSHOT_COPY = SCREENSHOTS / "keep-window-sliders.png"
LAYOUT_NOTEBOOK = "widget_layout.ipynb"
#: The layout notebook: the three views on the largest session, the memory with an oversized section
#: (the diff of 05_session_memory's last cell).
LAYOUT_CELLS = (
    "import workbench as wb\n"
    "corpus = wb.load(wb.widgets.resolve_corpus(None), progress=False)\n"
    "session = corpus.largest()",
    "keep = wb.widgets.keep_window(session)\nkeep",
    "strategies = ['none', 'sm-compact', 'sm-compact-naive', wb.strategy('sm-compact', min_tokens=20_000)]\n"
    "wb.widgets.compare(wb.replay(corpus.top(2), strategies, progress=False))",
    "contents = wb.widgets.SessionMemory.empty().contents()\n"
    "contents['# Worklog'] = '\\n'.join(f'- step {i}: ran the test suite and fixed one more failing case' "
    "for i in range(700))\n"
    "wb.widgets.MemorySectionsView(wb.widgets.SessionMemory.from_contents(contents))",
)


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
    _write_layout_notebook(root / LAYOUT_NOTEBOOK)
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
    notification = tmp_path / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}), encoding="utf-8")
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
            "layout_url": f"{base}/lab/tree/{LAYOUT_NOTEBOOK}?token={token}",
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


def _write_layout_notebook(path: Path) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell(source) for source in LAYOUT_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def _run_all_cells(page, ready: str = ".wb-keep-readout", attempts: int = 3) -> None:
    """Run > Run All Cells, retried: a click landing while the kernel connection settles can be dropped."""
    for attempt in range(attempts):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        try:
            page.wait_for_selector(ready, timeout=25_000)
            return
        except Exception:
            SCREENSHOTS.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "not-rendered.png"))
            if attempt == attempts - 1:
                raise AssertionError(
                    f"{ready} never rendered (screenshot {SCREENSHOTS / 'not-rendered.png'})"
                ) from None
            page.keyboard.press("Escape")


def _open_notebook(page, url: str) -> None:
    page.set_default_timeout(60_000)
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    page.get_by_text(re.compile(r"\| Idle$")).first.wait_for(timeout=90_000)  # the kernel is connected


def _dismiss_news(page) -> None:
    no_news = page.get_by_role("button", name="No")
    if no_news.count():
        no_news.first.click()


def _press(page, slider: str, key: str) -> None:
    handle = page.locator(f"{slider} .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    handle.press(key)


def _readout(page) -> str:
    return page.locator(".wb-keep-readout").first.inner_text()


def test_keep_window_view_in_jupyterlab(chromium: Path, jupyterlab: dict, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from workbench.transcript import load_paths
    from workbench.widgets import SessionIndex, keep_window_model, resolve_corpus

    screenshot = tmp_path / "keep-window-sliders.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            _open_notebook(page, jupyterlab["url"])
            _run_all_cells(page)
            page.wait_for_selector(".wb-min-tokens .noUi-handle", timeout=30_000)
            before = _readout(page)
            match = re.match(r"step (\d+) of", before)
            assert match, before
            step = int(match.group(1))
            assert "vs min 10,000" in before

            # min_tokens above max_tokens (40,000): refused with the config's message, nothing applied
            _press(page, ".wb-min-tokens", "End")  # noUiSlider: jump to the maximum (100,000)
            page.wait_for_selector(".wb-keep-refusal", timeout=30_000)
            refusal = page.locator(".wb-keep-refusal").first.inner_text()
            assert "min_tokens (100000) must not exceed max_tokens (40000)" in refusal, refusal
            page.wait_for_function(
                "() => document.querySelector('.wb-min-tokens .widget-readout').innerText.replace(/,/g, '')"
                ".trim() === '10000'",
                timeout=30_000,
            )
            assert _readout(page) == before

            _press(page, ".wb-max-tokens", "End")  # 200,000
            page.wait_for_function(
                "() => document.querySelector('.wb-keep-readout').innerText.includes('max 200,000')"
                " || document.querySelector('.wb-keep-readout').innerText.includes('max reached')",
                timeout=30_000,
            )
            assert not page.locator(".wb-keep-refusal").count()
            _press(page, ".wb-min-tokens", "End")  # 100,000, now below max_tokens
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
            new = keep_window_model(index, step, min_tokens=100_000, max_tokens=200_000)
            assert f"naive start #{old.naive_start} → adjusted start #{old.start}" in before
            assert f"naive start #{new.naive_start} → adjusted start #{new.start}" in after
            assert f"naive window: {new.tokens:,} tokens vs min 100,000" in after
            assert after != before
            _dismiss_news(page)
            page.locator(".wb-keep-window-view").first.scroll_into_view_if_needed()
            page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    SCREENSHOTS.mkdir(exist_ok=True)
    shutil.copy(screenshot, SCREENSHOT_COPY)
    print(f"\nscreenshot: {screenshot} (copy: {SCREENSHOT_COPY})")


#: Elements of a view that stick out of its output area, or whose content is cut or scrolls sideways
#: inside them; only the tables' own scroll boxes (``.wb-table-scroll``) may scroll.
_OVERFLOWING = """
(selector) => {
  const found = [];
  for (const view of document.querySelectorAll(selector)) {
    const area = view.closest('.jp-OutputArea-output');
    const limit = area.getBoundingClientRect();
    for (const el of [view, ...view.querySelectorAll('*')]) {
      if (el.parentElement && el.parentElement.closest('.wb-table-scroll')) continue;
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      const cut = !el.matches('.wb-table-scroll') && getComputedStyle(el).overflowX !== 'visible'
        && el.scrollWidth > el.clientWidth + 1;
      if (cut || box.right > limit.right + 1 || box.left < limit.left - 1) {
        const name = el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className.trim()
          ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
        found.push(`${name}${cut ? ' cut/scrolls: ' + el.scrollWidth + ' > ' + el.clientWidth : ''} `
                   + `[${Math.round(box.left)}, ${Math.round(box.right)}] in `
                   + `[${Math.round(limit.left)}, ${Math.round(limit.right)}]: ${(el.innerText || '').slice(0, 50)}`);
      }
    }
  }
  return found;
}
"""

#: Pairs of texts in the zoom strip whose boxes intersect.
_OVERLAPPING_LABELS = """
() => {
  const boxes = [...document.querySelectorAll('svg.wb-zoom text')]
    .map(t => [t.textContent, t.getBoundingClientRect()]);
  const hits = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, r] = boxes[i], [b, q] = boxes[j];
      if (r.left < q.right - 0.5 && q.left < r.right - 0.5 && r.top < q.bottom - 0.5 && q.top < r.bottom - 0.5) {
        hits.push(`${a} / ${b}`);
      }
    }
  }
  return [boxes.length, hits];
}
"""


def test_widget_layout_in_jupyterlab(chromium: Path, jupyterlab: dict, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from workbench.widgets._memory import DIFF_MAX_HEIGHT_PX

    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            # narrower than the strip's natural 960 px plus JupyterLab's margins
            page = browser.new_page(viewport={"width": 1000, "height": 1300})
            _open_notebook(page, jupyterlab["layout_url"])
            _run_all_cells(page, ready=".wb-memory-diff")
            for selector in (".wb-keep-readout", ".wb-compare-table", ".wb-strategy-comparison img"):
                page.wait_for_selector(selector, timeout=60_000)
            _dismiss_news(page)
            views = {
                "keep-window": ".wb-keep-window-view",
                "compare": ".wb-strategy-comparison",
                "memory": ".wb-memory-view",
            }
            for name, selector in views.items():
                view = page.locator(selector).first
                view.scroll_into_view_if_needed()
                view.screenshot(path=str(shots / f"{name}.png"))
            for name, selector in (("strip", "svg.wb-zoom"), ("memory-diff", ".wb-memory-diff")):
                part = page.locator(selector).first
                part.scroll_into_view_if_needed()
                part.screenshot(path=str(shots / f"{name}.png"))
            page.screenshot(path=str(shots / "page.png"))

            overflowing = {name: page.evaluate(_OVERFLOWING, selector) for name, selector in views.items()}
            assert overflowing == {name: [] for name in views}, overflowing

            count, overlaps = page.evaluate(_OVERLAPPING_LABELS)
            assert count >= 5 and overlaps == [], overlaps

            readout = page.locator(".wb-keep-readout").first
            assert "[tool_result_without_tool_use]" in readout.inner_text() or "would accept" in readout.inner_text()
            assert readout.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "the readout overflows sideways"

            diff = page.locator(".wb-memory-diff").first
            height = diff.evaluate("el => el.getBoundingClientRect().height")
            assert height <= DIFF_MAX_HEIGHT_PX + 2, height
            assert diff.evaluate("el => el.scrollHeight > el.clientHeight"), "the long diff should scroll"
            assert diff.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "diff lines should wrap"

            table = page.locator(".wb-table-scroll").first
            assert table.evaluate("el => getComputedStyle(el).overflowX") == "auto"
            rows = page.evaluate(
                "() => [...document.querySelectorAll('.wb-compare-table tr')]"
                ".map(r => r.getBoundingClientRect().height)"
            )
            assert len(rows) >= 2 and rows[0] <= min(rows[1:]) + 1, f"a column name wraps: row heights {rows}"
        finally:
            browser.close()
    SCREENSHOTS.mkdir(exist_ok=True)
    for shot in shots.iterdir():
        shutil.copy(shot, SCREENSHOTS / shot.name)
    print(f"\nscreenshots: {shots} (copies: {SCREENSHOTS})")
