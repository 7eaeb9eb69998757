"""Experiments: specs (grids × corpus), content-addressed cells, executors, an append-only parquet store.

See `workbench.experiments.spec` for the YAML format, `workbench.experiments.run` for what a sweep does
and `workbench.experiments.store` for the on-disk layout and its crash guarantees.
"""

from .cells import Cell, code_version
from .run import SweepResult, plan_sweep, run_sweep
from .spec import ExperimentSpec, GridPoint, SpecError, load_spec
from .store import ResultStore

__all__ = [
    "Cell",
    "ExperimentSpec",
    "GridPoint",
    "ResultStore",
    "SpecError",
    "SweepResult",
    "code_version",
    "load_spec",
    "plan_sweep",
    "run_sweep",
]
