"""Baselines: ``none`` (never compacts: measures overflow and blocking) and ``recorded`` (the reference:
what Claude Code really did, reproduced from the recorded boundaries and summaries)."""

from __future__ import annotations

from typing import Any

from .base import Compaction, ContextView, Strategy, StrategyConfig
from .registry import register

__all__ = ["NoCompaction", "Recorded"]


@register
class NoCompaction(Strategy):
    name = "none"
    description = "Never compact; the context grows with the recording (recorded compactions stripped)."
    source = "workbench (own design): the recording with its compactions removed, never compacting"
    Config = StrategyConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        return None


@register
class Recorded(Strategy):
    name = "recorded"
    description = "Reproduce the recording as is, including Claude Code's own compactions and summaries."
    source = "the recording itself (Claude Code's own compactions and summaries as written)"
    strips_recorded = False
    Config = StrategyConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        return None
