"""One-call widgets for the public API (``wb.widgets.keep_window(session)``, ``.memory``, ``.compare``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..transcript.model import Session
from ._compare import StrategyComparison
from ._keep_window import SessionIndex, keep_window_model
from ._keep_window_view import KeepWindowView
from ._memory import MemorySectionsView, replay_memory

__all__ = ["compare", "interesting_step", "keep_window", "memory"]


def interesting_step(index: SessionIndex) -> int | None:
    """The last API call at which the invariant adjustment moves the default keep window (something to
    explain), or None when it never does."""
    moved = [s for s in range(index.steps) if keep_window_model(index, s, validate_cuts=False).moved]
    return moved[-1] if moved else None


def keep_window(session: Session | SessionIndex, step: int | None = None, **config: Any) -> KeepWindowView:
    """SM-compact's keep window on ``session`` with sliders (see `KeepWindowView`).

    ``step`` defaults to `interesting_step` (else the last call); ``config`` sets the initial sliders
    (``min_tokens``, ``max_tokens``, ``min_text_block_messages``, ``summarized``).

    Example::

        view = wb.widgets.keep_window(corpus.largest())
        view.set(min_tokens=20_000).start
    """
    index = session if isinstance(session, SessionIndex) else SessionIndex.build(session)
    return KeepWindowView(index, step=interesting_step(index) if step is None else step, **config)


def memory(session: Session, config: Mapping[str, Any] | None = None) -> MemorySectionsView:
    """The session memory of ``session`` replayed through ``sm-compact`` (``config`` overrides), one
    extraction at a time against the section caps (see `MemorySectionsView`)."""
    return MemorySectionsView(replay_memory(session, config))


def compare(runs: Any) -> StrategyComparison:
    """Strategies side by side for a ``wb.replay`` result (or ``{label: [ReplayResult, …]}``)."""
    return StrategyComparison(runs)
