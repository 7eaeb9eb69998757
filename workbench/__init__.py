"""workbench: replay recorded agent transcripts through context-compaction strategies and measure them.

One import for notebooks and scripts (the engines stay importable from their modules)::

    import workbench as wb

    corpus = wb.load("~/.claude/projects")                  # any supported format; a progress bar
    runs = wb.replay(corpus, ["none", "sm-compact", wb.strategy("sm-compact", min_tokens=20_000)])
    runs.steps, runs.events, runs.summary()                  # tidy DataFrames with readable labels
    runs.plot.timeline(corpus.largest()), runs.plot.pareto() # matplotlib Figures
    wb.sweep("experiments/smoke.yaml")                       # the sweep engine (`workbench sweep`)
    wb.tune(corpus, "sm-compact", space={"min_tokens": [5_000, 20_000]})   # front + recommendation
    runs.save("results/mine"); wb.report("results/mine")     # `workbench report`
    wb.widgets.keep_window(corpus.largest())                 # notebook widgets
    wb.invariants(corpus).table                              # the naive-cut study (`workbench invariants`)
    wb.check("~/.claude/projects")                           # what can and cannot be modelled (`workbench check`)
    wb.advise("~/.claude/projects").render()                 # your Claude Code settings weighed (`workbench advise`)

Your own strategy: subclass `wb.Strategy` (a frozen `wb.StrategyConfig`, ``compact`` returning a
`wb.Compaction` or None), pass the class to `wb.replay`, or `wb.register` it to use its name in sweeps.

Names are resolved on first use, so ``import workbench`` stays cheap (no pandas, no matplotlib).

Two verbs share their name with a package of the workbench (``wb.replay`` / `workbench.replay`,
``wb.strategies`` / `workbench.strategies`). They are callables that
also stand for the module: calling one runs the verb, an attribute is looked up in the module
(``wb.replay.replay_session``), and ``from workbench.replay import …`` imports the module as always.
"""

from __future__ import annotations

import copyreg
import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .util.version import __version__

if TYPE_CHECKING:
    from . import widgets
    from ._public import (
        InvariantStudy,
        PlotAccessor,
        Report,
        Runs,
        Sessions,
        advise,
        check,
        invariants,
        load,
        replay,
        report,
        strategies,
        strategy,
        sweep,
        tune,
    )
    from .experiments.tune_result import TuneResult
    from .strategies.base import Compaction, ContextView, Strategy, StrategyConfig
    from .strategies.labels import config_label
    from .strategies.registry import register

__all__ = [
    "Compaction",
    "ContextView",
    "InvariantStudy",
    "PlotAccessor",
    "Report",
    "Runs",
    "Sessions",
    "Strategy",
    "StrategyConfig",
    "TuneResult",
    "__version__",
    "advise",
    "check",
    "config_label",
    "invariants",
    "load",
    "register",
    "replay",
    "report",
    "strategies",
    "strategy",
    "sweep",
    "tune",
    "widgets",
]

#: name → module it lives in (imported on first attribute access).
_LAZY = {
    "Compaction": "workbench.strategies.base",
    "ContextView": "workbench.strategies.base",
    "Strategy": "workbench.strategies.base",
    "StrategyConfig": "workbench.strategies.base",
    "register": "workbench.strategies.registry",
    "config_label": "workbench.strategies.labels",
    "TuneResult": "workbench.experiments.tune_result",
    **{name: "workbench._public" for name in ("PlotAccessor", "Report", "Runs", "Sessions", "load", "report")},
    **{name: "workbench._public" for name in ("strategy",)},
    **{name: "workbench._public" for name in ("InvariantStudy", "advise", "check", "invariants", "sweep", "tune")},
}


class _Verb:
    """A public verb that shares its name with a module of the package (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module = f"{__name__}.{name}"

    def _target(self) -> Any:
        return getattr(importlib.import_module(f"{__name__}._public"), self._name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target()(*args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute not in ("__path__", "__file__", "__all__"):
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._module), attribute)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        doc: str | None = self._target().__doc__
        return doc

    @property
    def __signature__(self) -> Any:
        import inspect

        return inspect.signature(self._target())

    @property
    def __wrapped__(self) -> Any:
        return self._target()

    def __dir__(self) -> list[str]:
        return sorted(set(dir(importlib.import_module(self._module))))

    def __repr__(self) -> str:
        return f"<workbench verb {self._name}() · module {self._module}>"


class _Package(types.ModuleType):
    """Keeps the verbs bound when the import system binds the same-named submodule on the package."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _VERBS and isinstance(value, types.ModuleType):
            return  # the verb resolves the module itself (sys.modules)
        super().__setattr__(name, value)


def _reduce_package(module: types.ModuleType) -> tuple[Any, tuple[str]]:
    """Pickle the package by reference, like any module (cloudpickle does so for user classes that
    mention ``wb``; it dispatches on the exact module type, so the subclass needs saying)."""
    return importlib.import_module, (module.__name__,)


copyreg.pickle(_Package, _reduce_package)

_VERBS = ("replay", "strategies")
for _name in _VERBS:
    globals()[_name] = _Verb(_name)
sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name == "widgets":
        return importlib.import_module(f"{__name__}.widgets")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
