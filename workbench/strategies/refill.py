"""The refill stop: a summarising compaction that cannot bring the context under its trigger stops firing.

A compaction that summarises (and pays for a summary) but leaves the context at or above its own trigger
fires again before the next call, and the next: every call pays and nothing shrinks. Real sessions do
this when part of the request is out of a compaction's reach: a resumed session or a transcript fragment
whose first request already carries more than the trigger of history the file does not hold (the replay
counts it with the system prompt, `workbench.replay.sizes`), a kept tail or a single tool result larger
than the trigger, a fixed trigger (150k input tokens) on a 1M-window session that starts above it.

Claude Code 2.1.89 stops auto-compaction "after the context refills to the limit right after compacting
3 times in a row" (CHANGELOG 2.1.89). `RefillGuard` applies that rule to every summarising strategy
whose system documents no gentler one: a compaction made while the trigger has not stopped firing since
the strategy's previous compaction is a refill; after ``limit`` refills the strategy stops compacting
until its trigger stops firing (the context fell under it: a recorded compaction, a sub-agent's fresh
context), so an ineffective compaction is never made more than ``limit`` times in a row. A call where the
trigger fires but the strategy finds nothing to compact does not end the run.

Codex's own rule is stricter: a turn still above the limit right after an automatic summarisation ends
with an error (codex-rs ``core/tests/suite/compact.rs``, the ``STILL_TOO_BIG`` case); the replay cannot
end the recorded turn, so the same stop is used there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Compaction, ContextView

__all__ = ["REFILL_LIMIT", "RefillGuard", "guarded"]

#: Claude Code 2.1.89: auto-compaction stops after the context refills right after compacting this many times.
REFILL_LIMIT = 3


@dataclass
class RefillGuard:
    """One agent's refill count (see the module docstring). `guarded` asks `allows` when the strategy's
    trigger fires, calls `compacted` when it compacts and `below` when its trigger does not fire."""

    limit: int = REFILL_LIMIT
    refills: int = 0  # compactions since the trigger last stopped firing, less the first
    pending: bool = False  # the strategy compacted and its trigger has fired at every call since
    stopped: bool = False

    def allows(self) -> bool:
        """Whether the strategy may compact now (its trigger fires)."""
        if self.pending and not self.stopped:
            self.refills += 1
            self.stopped = self.refills >= self.limit
        return not self.stopped

    def compacted(self) -> None:
        self.pending = True

    def below(self) -> None:
        """The trigger does not fire: the context is under it, so the next compaction starts a new count."""
        self.refills, self.pending, self.stopped = 0, False, False


def guarded(
    guard: RefillGuard | None,
    view: ContextView,
    fires: bool,
    compact: Callable[[ContextView], Compaction | None],
) -> Compaction | None:
    """``compact(view)`` when the strategy's trigger ``fires`` and ``guard`` allows it, else None; the guard
    is told what happened. ``guard`` None (a caller that passed no state): a fresh one, as for a new agent."""
    guard = guard if guard is not None else RefillGuard()
    if not fires:
        guard.below()
        return None
    if not guard.allows():
        return None
    result = compact(view)
    if result is not None:
        guard.compacted()
    return result
