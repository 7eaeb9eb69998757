"""Run folders: what `workbench replay` writes and `workbench report` reads back.

A *results folder* holds one or more *run folders* (the folder itself, or any sub-folder), each written
by ``workbench replay PATHS --strategy NAME --out DIR``: ``steps.parquet``, ``events.parquet`` and,
optionally, ``manifest.json`` (written by `workbench.replay.run_folder`)::

    {"strategy": "sm-compact", "config": {...}, "config_hash": "…",   # config_hash optional
     "estimator": "claude-rough", "format": null,
     "inputs": ["/path/to/corpus", ...]}                           # the PATHS given to `replay`

`load_results` reads every run folder below a results folder. A run folder that cannot be read (a
damaged parquet or manifest, a steps table without its columns) is named with its reason and left out.
A session is (session id, file) (`workbench.metrics.identity`): the same session replayed with the same
strategy and config into two run folders keeps one session per run folder (its ``file`` names the folder
too, `_tag_reruns`); a run folder written before steps carried their ``file`` that holds copies of one
session cannot tell them apart and is left out like a damaged one (`_check_copies`), not merged.

A folder whose manifest names another strategy than its steps (what mixing two runs would leave) is left
out like a damaged one. Writing a run folder is `workbench.replay.run_folder`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..metrics._common import UNKNOWN_CONFIG, config_hash
from ..metrics.identity import FILE

__all__ = ["load_results", "with_labels"]

#: Columns every steps.parquet has (the metrics group by them).
_STEP_COLUMNS = ("session_id", "strategy", "step")


def _read_parquet(path: Path) -> pd.DataFrame:
    """One parquet file as a frame, read as a single file (`pd.read_parquet` imports Arrow's dataset layer
    first) on this thread (starting Arrow's thread pool cost more than a run folder's decoding: 30 of a
    report's 45 ms went to the two)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as part:
        return part.read(use_threads=False).to_pandas(use_threads=False)


def _read_run(folder: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """``(manifest, steps, events)`` of one run folder; ValueError/OSError naming what is wrong."""
    manifest: dict[str, Any] = {}
    if (folder / "manifest.json").is_file():
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"manifest.json: {exc}") from None
        if not isinstance(manifest, dict):
            raise ValueError("manifest.json is not a JSON object")
    tables = []
    for name in ("steps.parquet", "events.parquet"):
        path = folder / name
        if name == "events.parquet" and not path.is_file():
            tables.append(pd.DataFrame())
            continue
        try:
            tables.append(_read_parquet(path))
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise ValueError(f"{name}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    steps, events = tables
    missing = [c for c in _STEP_COLUMNS if len(steps) and c not in steps.columns]
    if missing:
        raise ValueError(f"steps.parquet has no {', '.join(missing)} column")
    named = manifest.get("strategy")
    recorded = sorted({str(s) for s in steps["strategy"].unique()}) if len(steps) else []
    if named and recorded and recorded != [named]:
        raise ValueError(
            f"manifest.json names strategy {named} but steps.parquet holds {', '.join(recorded)}: the folder mixes "
            "two runs (replay it again)"
        )
    return manifest, steps, events


def load_results(
    results_dir: str | Path, *, failed: list[dict[str, str]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    """All runs under ``results_dir``: concatenated ``(steps, events)`` with ``config_hash``, and the runs.

    A run folder that cannot be read is appended to ``failed`` as ``{"path", "reason"}`` and left out
    (without ``failed``, the first such folder raises ValueError); no readable run raises too.
    """
    root = Path(results_dir)
    if not any(root.rglob("steps.parquet")):
        raise FileNotFoundError(f"{root}: no replay results (steps.parquet) below this folder")
    steps_frames, event_frames, runs = [], [], []
    for steps_path in sorted(root.rglob("steps.parquet")):
        folder = steps_path.parent
        try:
            manifest, steps, events = _read_run(folder)
            _check_copies(steps_path, steps)
        except (OSError, ValueError) as exc:
            if failed is None:
                raise ValueError(f"{folder}: {exc}") from None
            failed.append({"path": str(folder), "reason": str(exc)})
            continue
        chash = manifest.get("config_hash") or (
            config_hash(manifest["strategy"], manifest.get("config")) if "strategy" in manifest else UNKNOWN_CONFIG
        )
        for frame in (steps, events):
            if len(frame) and "config_hash" not in frame.columns:
                frame["config_hash"] = chash
            if len(frame) and FILE not in frame.columns:
                frame[FILE] = None
        steps_frames.append(steps)
        event_frames.append(events)
        inputs = [str(p if Path(p).is_absolute() else (folder / p).resolve()) for p in manifest.get("inputs", [])]
        strategy = manifest.get("strategy") or (steps["strategy"].iloc[0] if len(steps) else None)
        runs.append(
            {
                "path": str(folder),
                "strategy": strategy,
                "label": _run_label(strategy, manifest, chash),
                "config_hash": chash,
                "config": manifest.get("config"),
                "inputs": inputs,
                "sessions": int(steps["session_id"].nunique()) if len(steps) else 0,
                "steps": len(steps),
            }
        )
    if not runs:
        first = failed[0] if failed else {"path": str(root), "reason": "unknown"}
        raise ValueError(f"{root}: no run folder could be read ({first['path']}: {first['reason']})")
    _tag_reruns(steps_frames, event_frames, [str(run["path"]) for run in runs])
    event_frames = [frame for frame in event_frames if len(frame)]
    steps = pd.concat(steps_frames, ignore_index=True) if steps_frames else pd.DataFrame()
    events = pd.concat(event_frames, ignore_index=True) if event_frames else pd.DataFrame()
    return steps, events, runs


def _run_label(strategy: str | None, manifest: Mapping[str, Any], chash: str) -> str:
    """The run's readable name (`workbench.strategies.labels`); without a manifest config, the strategy
    and the hash (there is nothing else to tell two such runs apart)."""
    from ..strategies.labels import config_label

    if strategy is None:
        return chash
    if "config" in manifest:
        return config_label(strategy, manifest.get("config") or {})
    return f"{strategy} #{chash[:6]}" if chash != UNKNOWN_CONFIG else strategy


def with_labels(frame: pd.DataFrame, runs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """``frame`` with a ``label`` column after ``strategy`` (from the runs' manifests, made unique)."""
    from ..strategies.labels import unique_labels

    if frame.empty or "label" in frame.columns:
        return frame
    names = unique_labels((run["config_hash"], run["label"]) for run in runs)
    out = frame.copy()
    fallback = out["strategy"].astype(str)
    out.insert(list(out.columns).index("strategy") + 1, "label", out["config_hash"].map(names).fillna(fallback))
    return out


def _check_copies(path: Path, steps: pd.DataFrame) -> None:
    """A run folder whose rows repeat (session, strategy, config, step) without a ``file`` to tell the
    copies apart cannot be reported honestly."""
    if steps.empty or "step" not in steps.columns or (FILE in steps.columns and steps[FILE].notna().all()):
        return
    keys = [c for c in ("session_id", FILE, "strategy", "config_hash", "step") if c in steps.columns]
    repeated = steps[steps.duplicated(keys, keep=False)]
    if len(repeated):
        sid = repeated["session_id"].iloc[0]
        raise ValueError(
            f"{path}: session {sid} appears more than once (copies of one session id, written before steps "
            "recorded their file): re-run `workbench replay` into this folder to report them separately"
        )


def _tag_reruns(steps_frames: list[pd.DataFrame], event_frames: list[pd.DataFrame], folders: list[str]) -> None:
    """Rows of one (session, file, strategy, config) found in several run folders: each folder's rows
    get ``<file> [run <folder>]`` in ``file``, so they stay separate sessions (not summed into one)."""
    columns = ["session_id", FILE, "strategy", "config_hash"]
    where: dict[tuple[Any, ...], set[int]] = {}
    for index, frame in enumerate(steps_frames):
        if len(frame):
            for key in frame[columns].astype(object).drop_duplicates().itertuples(index=False):
                where.setdefault(tuple(_none(v) for v in key), set()).add(index)
    repeated = {key for key, found in where.items() if len(found) > 1}
    if not repeated:
        return
    for index, (steps, events) in enumerate(zip(steps_frames, event_frames, strict=True)):
        for frame in (steps, events):
            if frame.empty or not set(columns) <= set(frame.columns):
                continue
            keys = frame[columns].astype(object).itertuples(index=False)
            mask = [tuple(_none(v) for v in key) in repeated for key in keys]
            if any(mask):
                frame[FILE] = frame[FILE].astype(object)
                frame.loc[mask, FILE] = [f"{_none(f) or ''} [run {folders[index]}]" for f in frame.loc[mask, FILE]]


def _none(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
