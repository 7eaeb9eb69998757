"""The repository speaks of the product, not of how it was developed: no development diary (numbered
work sessions, "review" mends), no citation of the project's own issues by number and no "before this
change" history in code, tests, docs, notebooks or comments. That history belongs in git and in
CHANGELOG.md (which is checked too: it says what changed for users, not how the work went). Upstream
references (``anthropics/claude-code#31806``) are fine.

Usage: ``python scripts/check_process_talk.py [PATH ...]`` (default: every file git tracks, plus new
files not ignored). Prints ``FILE:LINE: phrase`` for each hit and exits 1 when there is one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PATTERNS = [
    re.compile(r"\bstops?\s+\d+\b", re.IGNORECASE),
    re.compile(r"\b(this|previous|next)\s+stop\b", re.IGNORECASE),
    re.compile(r"\breview\s+mends?\b", re.IGNORECASE),
    re.compile(r"(?<![\w/.-])issues?\s+#\d+", re.IGNORECASE),
    re.compile(r"(?<![\w/.-])issues?\s+\d{1,2}\b", re.IGNORECASE),
    re.compile(r"\(#\d{1,2}\)"),
    re.compile(r"\bbefore this (change|commit|fix)\b", re.IGNORECASE),
    re.compile(r'(?:"""|#)\s*Before: '),
]
#: Binary and generated files, and this checker (its patterns name the phrases).
SKIP_SUFFIXES = {".png", ".jpg", ".gif", ".parquet", ".sqlite", ".whl", ".gz", ".ico", ".woff", ".woff2"}
SKIP_FILES = {"scripts/check_process_talk.py", "tests/test_process_talk.py"}


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [ROOT / line for line in out.splitlines() if line]


def hits(path: Path) -> list[tuple[int, str]]:
    """(line number, matched phrase) for every process-talk phrase in ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern in PATTERNS:
            match = pattern.search(line)
            if match:
                found.append((number, match.group(0)))
                break
    return found


def main(argv: list[str]) -> int:
    paths = [Path(p).resolve() for p in argv] or tracked_files()
    bad = 0
    for path in sorted(paths):
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        if path.suffix in SKIP_SUFFIXES or name in SKIP_FILES or not path.is_file():
            continue
        for number, phrase in hits(path):
            print(f"{name}:{number}: {phrase!r}")
            bad += 1
    if bad:
        print(f"{bad} line(s) speak of the development, not the product (see scripts/check_process_talk.py)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
