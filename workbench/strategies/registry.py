"""Strategy registry: one module per strategy registers its class by name; plugins register through an
entry point group.

Three ways in:

* built-in modules call `register` at import. `get_strategy` imports only the module of the name it is
  asked for (`_BUILTIN_MODULES`: a replay of one strategy does not build the other modules' configs);
  listing imports them all (`workbench.strategies.builtin`);
* a third-party package declares an entry point in the group ``workbench.strategies`` (as papermill's
  engines and inspect_ai's extensions do) whose object is a `Strategy` subclass, or a module that
  registers its strategies on import::

      [project.entry-points."workbench.strategies"]
      tiny = "tinystrat:TinyStrategy"

  Entry points are loaded lazily, on the first lookup or listing, once per process. One that fails to
  import, or names something that is not a strategy, or a name that is taken, is recorded in
  `broken_strategies` (name, entry point, error) and skipped: listing never crashes, and looking the
  name up raises with that error;
* a user calls `register` (e.g. on a class defined in a notebook cell). Re-running the cell defines a
  new class object of the same ``__main__`` qualname; it replaces the old one instead of raising.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .base import Strategy

__all__ = [
    "ENTRY_POINT_GROUP",
    "BrokenStrategy",
    "broken_strategies",
    "create",
    "describe_strategies",
    "get_strategy",
    "register",
    "strategies",
    "strategy_origin",
]

ENTRY_POINT_GROUP = "workbench.strategies"

#: Each built-in strategy's name and the module of this package that registers it, in the order listing
#: has always shown them (`_ensure_builtin` restores it, whichever module was imported first).
#: tests/strategies/test_lazy_registry.py checks the table against what the modules register.
_BUILTIN_MODULES: dict[str, str] = {
    "recent-window": "recent_window",
    "aider": "aider",
    "none": "baseline",
    "recorded": "baseline",
    "full-compact": "full_compact",
    "microcompact": "microcompact",
    "microcompact-truncate": "microcompact",
    "sm-compact": "sm_compact",
    "sm-compact-reference": "sm_compact",
    "sm-compact-naive": "sm_compact",
    "claude-code": "claude_code",
    "codex": "codex",
    "codex-remote": "codex_remote",
    "clear-tool-uses": "context_editing",
    "clear-thinking": "context_editing",
    "server-compact": "context_editing",
    "on-demand-compact": "api_compaction",
    "background-compact": "api_compaction",
    "sdk-compaction-control": "api_compaction",
    "gemini-cli": "gemini",
    "gemini-masking": "gemini_masking",
    "gemini-generalist": "gemini_generalist",
    "langchain-trim": "langchain",
    "langchain-summarization": "langchain",
    "openhands-observation-masking": "openhands_masking",
    "openhands-recent": "openhands",
    "openhands-amortized": "openhands",
    "openhands-llm": "openhands",
    "openhands-pipeline": "openhands",
    "openhands-sdk": "openhands_sdk",
    "goose": "goose",
    "letta": "letta",
    "observation-masking": "observation_masking",
    "opencode": "opencode",
    "opencode-prune": "opencode",
    "opencode-retry": "opencode",
    "truncate-oldest": "truncate_oldest",
}
_RANK = {name: rank for rank, name in enumerate(_BUILTIN_MODULES)}
_BUILTIN_IMPORTED = False

_REGISTRY: dict[str, type[Strategy]] = {}
_ORIGIN: dict[str, str] = {}
_BROKEN: dict[str, BrokenStrategy] = {}
_ENTRY_POINTS_LOADED = False


@dataclass(frozen=True)
class BrokenStrategy:
    """An entry point that could not be registered."""

    name: str
    entry_point: str
    distribution: str | None
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entry_point": self.entry_point,
            "distribution": self.distribution,
            "error": self.error,
        }


def _redefinition(old: type[Strategy], new: type[Strategy]) -> bool:
    """A notebook cell run again: same ``__main__`` qualname, new class object."""
    return old.__module__ == new.__module__ == "__main__" and old.__qualname__ == new.__qualname__


def register(cls: type[Strategy]) -> type[Strategy]:
    """Register ``cls`` under ``cls.name`` (usable as a class decorator). Raises ValueError when the
    name is missing or taken by another class."""
    if not isinstance(cls, type) or not issubclass(cls, Strategy):
        raise TypeError(f"register expects a Strategy subclass, got {cls!r}")
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    builtin = _BUILTIN_MODULES.get(cls.name)
    if builtin is not None and cls.__module__ != f"{__package__}.{builtin}":
        _import_builtin(cls.name)  # a built-in name is taken even before its module is imported
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls and not _redefinition(existing, cls):
        raise ValueError(
            f"a strategy named {cls.name!r} is already registered ({existing.__module__}.{existing.__qualname__})"
        )
    _REGISTRY[cls.name] = cls
    _ORIGIN.setdefault(
        cls.name, "builtin" if cls.__module__.startswith("workbench.") else f"registered ({cls.__module__})"
    )
    return cls


def _import_builtin(name: str) -> None:
    """Import the module that registers the built-in strategy ``name``."""
    importlib.import_module(f"{__package__}.{_BUILTIN_MODULES[name]}")


def _ensure_builtin() -> None:
    """Import every built-in strategy module, then load the entry points (once per process)."""
    global _BUILTIN_IMPORTED
    if not _BUILTIN_IMPORTED:
        from . import builtin  # noqa: F401  (imports every strategy module)

        _BUILTIN_IMPORTED = True
        # the built-ins in their order, then the rest as registered (sorted is stable)
        ordered = sorted(_REGISTRY.items(), key=lambda item: _RANK.get(item[0], len(_RANK)))
        _REGISTRY.clear()
        _REGISTRY.update(ordered)
    _load_entry_points()


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None)
        try:
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Strategy):
                register(obj)
                _ORIGIN[obj.name] = f"entry point {ep.value}" + (f" ({dist})" if dist else "")
            elif not hasattr(obj, "__path__") and not hasattr(obj, "__file__"):  # a module registers on import
                raise TypeError(f"{ep.value} is a {type(obj).__name__}, not a Strategy subclass or a module")
        except Exception as exc:  # a plugin's bug must not break listing: record it, skip it
            _BROKEN[ep.name] = BrokenStrategy(ep.name, ep.value, dist, f"{type(exc).__name__}: {exc}")


def strategies() -> dict[str, type[Strategy]]:
    """Every registered strategy by name (built-in, entry points, registered by the user)."""
    _ensure_builtin()
    return dict(_REGISTRY)


def broken_strategies() -> list[BrokenStrategy]:
    """Entry points of the ``workbench.strategies`` group that could not be registered, and why."""
    _ensure_builtin()
    return list(_BROKEN.values())


def strategy_origin(name: str) -> str:
    """``builtin``, ``entry point MODULE:ATTR (DIST)`` or ``registered (MODULE)``."""
    _ensure_builtin()
    return _ORIGIN.get(name, "unknown")


def describe_strategies() -> list[dict[str, Any]]:
    """One row per registered strategy, by name: ``name``, ``description``, ``source`` (what it models),
    ``unsafe``, ``origin`` and its config's ``defaults`` (what ``workbench strategies`` and
    ``wb.strategies()`` list)."""
    return [
        {
            "name": name,
            "description": cls.description,
            "source": cls.source,
            "unsafe": cls.unsafe,
            "origin": strategy_origin(name),
            "defaults": cls.Config().model_dump(mode="json"),
        }
        for name, cls in sorted(strategies().items())
    ]


def get_strategy(name: str) -> type[Strategy]:
    """The class registered as ``name``. A built-in name imports only its own module (no other strategy
    and no entry point: an entry point cannot take a built-in name); any other name loads them all."""
    if name in _BUILTIN_MODULES:
        _import_builtin(name)
        return _REGISTRY[name]
    _ensure_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        if name in _BROKEN:
            broken = _BROKEN[name]
            raise ValueError(
                f"strategy {name!r} (entry point {broken.entry_point}) is broken: {broken.error}"
            ) from None
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def create(name: str, config: dict[str, Any] | None = None) -> Strategy:
    """An instance of strategy ``name`` with ``config`` validated (bad keys or values raise)."""
    return get_strategy(name)(config or {})
