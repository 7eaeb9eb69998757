"""Writing a run folder: what `workbench replay --out` (and `Runs.save`) leaves for `workbench report`.

A run folder holds ``steps.parquet``, ``events.parquet`` and, optionally, ``manifest.json``
(`write_manifest`)::

    {"strategy": "sm-compact", "config": {...}, "config_hash": "…",   # config_hash optional
     "estimator": "claude-rough", "format": null,
     "inputs": ["/path/to/corpus", ...]}                           # the PATHS given to `replay`

Writing one is all or nothing (`commit_run`): the new files are written complete beside the folder's
contents first, so a full disk or a kill leaves the previous run as it was; then the old manifest goes,
the parquet files are renamed into place and the new manifest comes last. `run_in` says whether a folder
already holds a run (``replay --out`` asks ``--force`` to replace it). Reading run folders back is
`workbench.reporting.runs`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..strategies.base import config_hash

__all__ = ["RUN_FILES", "commit_run", "manifest_data", "run_in", "write_manifest"]

#: The files of a run folder.
RUN_FILES = ("steps.parquet", "events.parquet", "manifest.json")


def manifest_data(
    strategy: str,
    config: Mapping[str, Any],
    inputs: Sequence[str | Path],
    *,
    estimator: str = "claude-rough",
    fmt: str | None = None,
) -> dict[str, Any]:
    """What ``manifest.json`` holds (module docstring)."""
    return {
        "strategy": strategy,
        "config": dict(config),
        "config_hash": config_hash(strategy, config),
        "estimator": estimator,
        "format": fmt,
        "inputs": [str(Path(p).resolve()) for p in inputs],
    }


def _write_atomic(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file in the same folder and a rename (never half a file)."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_manifest(
    out: str | Path,
    strategy: str,
    config: Mapping[str, Any],
    inputs: Sequence[str | Path],
    *,
    estimator: str = "claude-rough",
    fmt: str | None = None,
) -> Path:
    """Write ``manifest.json`` next to a run's parquet files (what `report` reads), atomically."""
    path = Path(out) / "manifest.json"
    data = manifest_data(strategy, config, inputs, estimator=estimator, fmt=fmt)
    _write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def run_in(folder: str | Path) -> bool:
    """Whether ``folder`` already holds (part of) a run."""
    return any((Path(folder) / name).exists() for name in RUN_FILES)


def commit_run(out: str | Path, staged: Mapping[str, Path], manifest: Mapping[str, Any] | None) -> None:
    """Put a finished run in place in ``out`` (module docstring): ``staged`` maps ``steps.parquet`` and
    ``events.parquet`` to complete files in a folder inside ``out``; ``manifest`` None: no manifest (and an
    old one is removed, since it would describe another run)."""
    folder = Path(out)
    old = folder / "manifest.json"
    staged_manifest = None
    if manifest is not None:
        any_staged = next(iter(staged.values()))
        staged_manifest = any_staged.parent / "manifest.json"
        _write_atomic(staged_manifest, json.dumps(dict(manifest), indent=2, sort_keys=True) + "\n")
    old.unlink(missing_ok=True)  # from here until the new one is in place, the steps' columns are the truth
    for name, path in staged.items():
        os.replace(path, folder / name)
    if staged_manifest is not None:
        os.replace(staged_manifest, old)
