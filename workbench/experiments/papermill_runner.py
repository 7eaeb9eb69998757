"""Run a sweep as parameterised notebooks: one executed copy of ``notebooks/sweep_template.ipynb`` per
(strategy, config), kept as the record, plus one aggregated table over all of them.

Each notebook gets only its group's parameters (spec path, strategy, config JSON, corpus, store and
output folder): never environment values, so secrets such as ``ANTHROPIC_API_KEY`` are neither passed
nor written into the executed notebooks (papermill records the parameters in the notebook metadata).
The notebook computes its cells through `run_group`, i.e. the same cells and store as ``workbench
sweep``: a config already in the store is read, not recomputed.

Notebooks execute with `workbench.experiments.kernel.StallFreeKernelManager` (the fix of the stall
where nbclient picks a reply up only at the cell timeout, or never without one).

The kernel is the venv's own ``python3`` (ipykernel's spec, whose ``python`` jupyter_client resolves
to ``sys.executable``); when no such spec is installed, `ensure_kernel` installs one into
``sys.prefix``, so ``make setup`` needs no extra step.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from .spec import GridPoint, load_spec
from .tables import cell_table, config_table, sweep_frames, write_parquet

__all__ = ["KERNEL_NAME", "TEMPLATE", "ensure_kernel", "run_group", "run_papermill"]

KERNEL_NAME = "python3"
TEMPLATE = Path(__file__).resolve().parents[2] / "notebooks" / "sweep_template.ipynb"


def ensure_kernel(name: str = KERNEL_NAME) -> str:
    """The kernel name to execute with; installs ipykernel's spec into ``sys.prefix`` if missing."""
    from jupyter_client.kernelspec import KernelSpecManager

    if name not in KernelSpecManager().find_kernel_specs():
        from ipykernel.kernelspec import install

        install(kernel_name=name, prefix=sys.prefix)
    return name


def run_group(
    spec_path: str | Path,
    strategy: str,
    config: Mapping[str, Any] | str,
    *,
    store: str | Path,
    corpus: str | Path | None = None,
) -> dict[str, Any]:
    """Compute (or read from ``store``) one (strategy, config) group of a spec; its cell and config tables."""
    from ..strategies import create
    from .run import plan_sessions, plan_sweep, run_sweep

    passed = json.loads(config) if isinstance(config, str) else dict(config)
    resolved = load_spec(spec_path)
    if corpus:
        resolved = dataclasses.replace(resolved, corpus=(Path(corpus).resolve(),), corpus_used_fallback=False)
    point = GridPoint(strategy, passed, create(strategy, passed).config.model_dump(mode="json"))
    plan = plan_sweep(resolved, [point])
    result = run_sweep(resolved, store=store, executor="inline", progress=False, plan=plan)
    from .store import ResultStore

    cells, steps, events = sweep_frames(ResultStore(store), result.cell_ids)
    table = cell_table(cells, steps, events, plan_sessions(plan), resolved.spec.metrics)
    return {
        "result": result,
        "plan": plan,
        "cells": table,
        "configs": config_table(table),
        "steps": steps,
        "events": events,
    }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def run_papermill(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    store: str | Path,
    workers: int = 1,
    template: str | Path = TEMPLATE,
    progress: bool = True,
) -> dict[str, Any]:
    """Execute the template once per grid point; write ``aggregated.parquet``/``.csv`` into ``out_dir``."""
    import papermill as pm
    from tqdm.auto import tqdm

    from ..metrics._common import config_hash
    from .kernel import client_kwargs

    spec = load_spec(spec_path)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    kernel = ensure_kernel()
    corpus = str(spec.corpus[0]) if len(spec.corpus) == 1 else ""
    jobs = []
    for index, point in enumerate(spec.points):
        group = f"{index:03d}-{_slug(point.strategy)}-{config_hash(point.strategy, point.resolved)}"
        parameters = {
            "spec_path": str(Path(spec_path).resolve()),
            "strategy": point.strategy,
            "config_json": json.dumps(dict(point.passed), sort_keys=True),
            "corpus": corpus,
            "store": str(Path(store).resolve()),
            "output_dir": str(out / group),
        }
        jobs.append((out / f"{group}.ipynb", out / group, parameters))

    def execute(job: tuple[Path, Path, dict[str, Any]]) -> Path:
        notebook, folder, parameters = job
        folder.mkdir(parents=True, exist_ok=True)
        pm.execute_notebook(
            str(template),
            str(notebook),
            parameters=parameters,
            kernel_name=kernel,
            progress_bar=False,
            cwd=str(folder),
            log_output=False,
            **client_kwargs(),  # no reply picked up only at the timeout (papermill's default: never)
        )
        return notebook

    bar = tqdm(total=len(jobs), desc=f"papermill {spec.name}", unit="notebook", disable=not progress)
    notebooks = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for path in pool.map(execute, jobs):
            notebooks.append(str(path))
            bar.update(1)
    bar.close()
    frames = [
        pd.read_parquet(folder / "cells.parquet") for _, folder, _ in jobs if (folder / "cells.parquet").is_file()
    ]
    cells = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    aggregated = config_table(cells)
    write_parquet(aggregated, out / "aggregated.parquet")
    aggregated.to_csv(out / "aggregated.csv", index=False)
    return {
        "notebooks": notebooks,
        "aggregated": str(out / "aggregated.parquet"),
        "groups": len(jobs),
        "cells": len(cells),
    }
