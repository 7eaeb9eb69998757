"""``openhands-observation-masking``: OpenHands V0's ``ObservationMaskingCondenser`` (docs/peers.md §1.1).

Every step, the observations older than the last ``attention_window`` events (default **100**; the
constructor's 5 is not the config's) become ``<MASKED>``. Events are `workbench.strategies.openhands.events`:
one action per API call and per tool_use past a call's first, one observation per tool_result, one message
per other sent user record with text.

Incremental (`EventState`): how many events each record starts is fixed once the record is read (a
response's later records add their tool_uses to its call; masking changes no event), so the state counts
them for the records added since the last call, moves the cutoff forward over the records whose first
observation falls before it, and rewrites only the records holding newly old tool_use ids (and any record
added since that answers an id already old: the whole walk masks every result of an old id). Another context
than the last one extended rebuilds the counts from the whole context. The decisions are the whole walk's
(``tests/strategies/test_masking_incremental.py``); before, every call listed and sorted every event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from ..request.normalize import is_sent
from ..transcript.model import Block, Record
from ..transcript.steps import is_real_assistant
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .openhands import MASKED
from .recent_window import is_added
from .registry import register
from .rewrite import extends, in_place, rewrite_at

__all__ = ["EventState", "OpenHandsObservationMasking"]


@dataclass
class EventState:
    """The events of ``context`` (the context last returned or seen; records shared): ``counts`` how many
    events each record starts and ``observations`` how many of them are observations (they come first);
    ``uses`` each API call's tool_uses so far (by `api_calls`' key); ``total`` every event; ``passed`` how
    many records the cutoff has gone past (``before`` the events before them); ``old`` the tool_use ids of
    the observations before it; ``results`` the positions of the records holding each id's tool_result."""

    context: list[Record] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    observations: list[int] = field(default_factory=list)
    uses: dict[str | int, int] = field(default_factory=dict)
    total: int = 0
    passed: int = 0
    before: int = 0
    old: set[str] = field(default_factory=set)
    results: dict[str, list[int]] = field(default_factory=dict)

    def reset(self) -> None:
        self.context, self.counts, self.observations, self.uses, self.results = [], [], [], {}, {}
        self.total = self.passed = self.before = 0
        self.old = set()

    def follow(self, records: Sequence[Record]) -> list[int]:
        """Bring the counts to ``records``; the positions of the records read that answer an old id."""
        start = len(self.context)
        if not extends(records, self.context):
            self.reset()  # another context: count it all again
            start = 0
        answering = []
        for index in range(start, len(records)):
            record = records[index]
            count = observations = 0
            if is_real_assistant(record):
                key = record.message_id if record.message_id is not None else index
                uses = len(record.tool_uses())
                known = self.uses.get(key)
                # the call's first record is its action; every tool_use past the call's first is one more
                count = max(1, uses) if known is None else (uses if known else max(0, uses - 1))
                self.uses[key] = (known or 0) + uses
            elif record.kind != "assistant" and is_sent(record) and (not is_added(record) or record.raw.get("event")):
                observations = len(record.tool_results())
                count = observations + (
                    any(b.kind != "tool_result" for b in record.blocks) and bool(record.text.strip())
                )
            if record.kind == "user":  # what a rewrite can touch: any user record's results, events or not
                ids = {b.tool_use_id for b in record.tool_results() if b.tool_use_id}
                for tool_use_id in ids:
                    self.results.setdefault(tool_use_id, []).append(index)
                if ids & self.old:
                    answering.append(index)
            self.counts.append(count)
            self.observations.append(observations)
            self.total += count
        self.context = list(records)
        return answering

    def newly_old(self, records: Sequence[Record], cutoff: int) -> set[str]:
        """The tool_use ids of the observations that fall before the first ``cutoff`` events now."""
        ids: set[str] = set()
        while self.passed < len(self.counts) and self.before < cutoff:
            if self.observations[self.passed]:
                ids.update(b.tool_use_id for b in records[self.passed].tool_results() if b.tool_use_id)
            self.before += self.counts[self.passed]
            self.passed += 1
        ids -= self.old
        self.old |= ids
        return ids


@register
class OpenHandsObservationMasking(Strategy):
    """V0 ``ObservationMaskingCondenser`` (§1.1): config default attention_window **100** (ctor 5)."""

    name = "openhands-observation-masking"
    source = (
        "OpenHands/OpenHands openhands/memory/condenser/impl/observation_masking_condenser.py @ 76483ad8; "
        "config defaults openhands/core/config/condenser_config.py @ d074f47c"
    )
    description = "OpenHands V0: every step, observations older than the last 100 events become <MASKED>."

    class Config(StrategyConfig):
        attention_window: int = Field(100, ge=1)
        placeholder: str = Field(MASKED, min_length=1)

    config: Config

    def new_state(self) -> EventState:
        return EventState()

    def compact(self, view: ContextView, state: EventState) -> Compaction | None:
        records = view.records
        answering = state.follow(records)
        cutoff = state.total - self.config.attention_window
        if cutoff <= 0:
            return None
        ids = state.newly_old(records, cutoff)
        positions = sorted({*answering, *(p for i in ids for p in state.results.get(i, ()))})

        def mask(block: Block) -> str | None:
            return None if block.content == self.config.placeholder else self.config.placeholder

        new, changed, at = rewrite_at(records, positions, mask, state.old)
        if not changed:
            return None
        state.context = new
        return in_place(self.name, "events", records, new, {"masked": changed}, changed_at=at)
