"""The repository speaks of the product (`scripts/check_process_talk.py`, also run by `make check`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_process_talk.py"


def _check(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths)], capture_output=True, text=True)


def test_the_repository_speaks_of_the_product() -> None:
    result = _check()
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.parametrize(
    "line",
    [
        "# measured in " + "stop" + " 35's full run",
        "The figures of " + "this" + " stop are medians.",
        "until " + "stops" + " 33 and 34 gave them an index",
        "Review" + " mend: one helper for both.",
        '"""' + "Issue" + ' #14: the report gives intervals."""',
        "see " + "issue" + " #41 item 3",
        "Target (" + "issue" + " 9): at most 100 ms",
        "fixed the cut (" + "#1" + "2)",
        "slower than before this change",
        '    """Before: a 30^5 grid planned for hours."""',
    ],
)
def test_each_kind_of_process_talk_is_found(tmp_path: Path, line: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(f"x = 1\n{line}\n", encoding="utf-8")
    result = _check(path)
    assert result.returncode == 1 and f"{path}:2:" in result.stdout, result.stdout


@pytest.mark.parametrize(
    "line",
    [
        "anthropics/claude-code#31806 says the override can only lower the threshold",
        "the refill stop after 3 compactions in a row",
        "stop_reason: null on the last line",
        "Before the first call the engine prepares the session.",
    ],
)
def test_upstream_references_and_ordinary_words_pass(tmp_path: Path, line: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(f"{line}\n", encoding="utf-8")
    assert _check(path).returncode == 0
