"""Writes the generated pages of the documentation site at build time (mkdocs-gen-files); the pages
themselves are functions in `docs/pages.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

import os  # noqa: E402

from pages import changelog_page, cli_page, results_page, strategies_page, validation_page  # noqa: E402

CORPUS = Path(os.environ.get("WORKBENCH_CORPUS") or DOCS.parent.parent / "shared" / "corpus")

for name, text in (
    ("reference/strategies.md", strategies_page()),
    ("reference/cli.md", cli_page()),
    ("reference/results.md", results_page(DOCS.parent / "data")),
    ("reference/validation.md", validation_page(CORPUS if CORPUS.is_dir() else None)),
    ("changelog.md", changelog_page(DOCS.parent / "CHANGELOG.md")),
):
    with mkdocs_gen_files.open(name, "w") as handle:
        handle.write(text)
