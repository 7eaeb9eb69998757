"""Compaction strategies: one module per strategy, a frozen validated config each, one registry."""

from .base import Compaction, ContextView, Strategy, StrategyConfig
from .registry import create, get_strategy, register, strategies

__all__ = [
    "Compaction",
    "ContextView",
    "Strategy",
    "StrategyConfig",
    "create",
    "get_strategy",
    "register",
    "strategies",
]
