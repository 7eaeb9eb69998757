"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a missing anchor or a page
missing from the nav fails), its generated pages list what the code holds, and every ``docs §N`` the code
cites is a section of the reference page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

from pages import cli_page, strategies_page  # noqa: E402

from workbench.cli import build_parser  # noqa: E402
from workbench.strategies.registry import strategies  # noqa: E402


def _sections(page: Path) -> set[str]:
    """Section numbers of a page's headings (``## 2. …``, ``### 2.5 …``)."""
    return set(re.findall(r"^#{2,4} (?:PART )?(\d+(?:\.\d+)*)\.? ", page.read_text(encoding="utf-8"), re.M))


def _cited(pattern: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        for number in re.findall(pattern, path.read_text(encoding="utf-8")):
            found.setdefault(number.rstrip("."), []).append(path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    for page in (
        "index.html",
        "reference/strategies/index.html",
        "reference/cli/index.html",
        "reference/validation/index.html",
    ):
        assert (tmp_path / "site" / page).is_file(), page
    results = (tmp_path / "site" / "reference" / "results" / "index.html").read_text(encoding="utf-8")
    assert all(f"<td>{name}</td>" in results for name in ("none", "sm-compact", "codex"))


def test_the_strategies_page_lists_every_registered_strategy_with_its_source() -> None:
    page = strategies_page()
    for name, cls in strategies().items():
        assert f"| `{name}` |" in page
        if cls.source:
            assert cls.source.replace("|", "\\|") in page


def test_the_cli_page_holds_every_command() -> None:
    page = cli_page()
    assert all(f"## `workbench {name}`" in page for name in build_parser()[1])


def test_every_reference_section_the_code_cites_exists() -> None:
    sections = _sections(DOCS / "claude-code.md")
    missing = {n: files[:3] for n, files in _cited(r"docs §(\d+(?:\.\d+)*)").items() if n not in sections}
    assert not missing, missing


def test_every_peers_section_the_code_cites_exists() -> None:
    sections = _sections(DOCS / "peers.md")
    missing = {n: files[:3] for n, files in _cited(r"peers\.md §(\d+(?:\.\d+)*)").items() if n not in sections}
    assert not missing, missing
