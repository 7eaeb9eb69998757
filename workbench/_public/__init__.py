"""The public API behind ``import workbench as wb`` (re-exported lazily by `workbench`).

A thin facade: every verb calls the engine the CLI uses (loaders, `workbench.replay`, the sweep engine,
`workbench.report`, `workbench.experiments.tune`); nothing here replays, measures or aggregates on its own.
"""

from .corpus import Sessions, load
from .runs import PlotAccessor, Runs, StrategyLike, replay, strategy
from .study import InvariantStudy, check, invariants
from .sweeps import Report, report, strategies, sweep
from .tuning import advise, tune

__all__ = [
    "InvariantStudy",
    "PlotAccessor",
    "Report",
    "Runs",
    "Sessions",
    "StrategyLike",
    "advise",
    "check",
    "invariants",
    "load",
    "replay",
    "report",
    "strategies",
    "strategy",
    "sweep",
    "tune",
]
