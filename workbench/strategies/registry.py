"""Strategy registry: one module per strategy registers its class by name."""

from __future__ import annotations

from typing import Any

from .base import Strategy

__all__ = ["create", "get_strategy", "register", "strategies"]

_REGISTRY: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"a strategy named {cls.name!r} is already registered")
    _REGISTRY[cls.name] = cls
    return cls


def _ensure_builtin() -> None:
    from . import builtin  # noqa: F401  (imports every strategy module)


def strategies() -> dict[str, type[Strategy]]:
    _ensure_builtin()
    return dict(_REGISTRY)


def get_strategy(name: str) -> type[Strategy]:
    _ensure_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def create(name: str, config: dict[str, Any] | None = None) -> Strategy:
    """An instance of strategy ``name`` with ``config`` validated (bad keys or values raise)."""
    return get_strategy(name)(config or {})
