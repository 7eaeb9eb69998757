"""``observation-masking``: keep the tool output of the last M turns, mask the older ones.

The Complexity Trap's "Observation Masking" (docs/peers.md §2.1: keep the observations of the last
**M=10 turns**, reasoning and actions always kept; M=10 was best in their ablation) as implemented by
SWE-agent's ``LastNObservations`` (§1.10 [S]: older observations become "Old environment output: (N lines
omitted)"; ``polling`` batches the window for the prompt cache; the first observation, the instance
template, is never removed).

Mapping to our records: a SWE-agent **turn** is one API call (all assistant records sharing a
``message.id``) plus the tool_results answering its tool_uses; its **observation** is those tool_results.
The instance template is the first user message, which is not a tool_result and so is never masked.
Masking rewrites tool_result *contents* in place (same ids, same pairing), so the request stays valid.
It is checked before every API call; an event is reported whenever at least one more output is masked.

``polling`` [S, my reading of SWE-agent]: the number of masked turns moves in steps of ``polling``:
``max(0, floor(T / polling) × polling − M)`` of the T turns with tool output are masked.

Incremental (`MaskState`): the decision is `masked_turn_ids` over the whole context at every call, but the
state indexes the context it last returned or saw, so a call whose context extends it reads only the
records added since, and rewrites only the records holding the newly masked results (`rewrite_at`, reported
as ``changed_at``). Anything else (another context, a streamed record extending a call already counted)
rebuilds the index from the whole context: the same decisions, checked against the whole walk on every real
session (``tests/strategies/test_masking_incremental.py``). A replay that walked the whole context at every call
would be quadratic in the session's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from ..transcript.model import Block, Record
from ..transcript.steps import is_real_assistant
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .registry import register
from .rewrite import extends, in_place, index_results, rewrite_at

__all__ = ["MaskState", "ObservationMasking", "ObservationMaskingConfig", "line_count", "masked_turn_ids"]


def line_count(text: str) -> int:
    return text.count("\n") + 1 if text else 0


class ObservationMaskingConfig(StrategyConfig):
    keep_last_turns: int = Field(10, ge=1, description="M: turns whose tool output stays verbatim")
    polling: int = Field(1, ge=1, description="SWE-agent polling: move the window in steps of this many turns")
    placeholder: str = Field("Old environment output: ({lines} lines omitted)", min_length=1)


def masked_turn_ids(records: Sequence[Record], config: ObservationMaskingConfig) -> set[str]:
    """tool_use ids of the turns whose observations are masked."""
    calls: dict[str | int, list[str]] = {}  # the tool_use ids of each API call (`api_calls`'s grouping and order)
    for index, record in enumerate(records):
        if is_real_assistant(record):
            key = record.message_id if record.message_id is not None else index
            ids = calls.get(key)
            if ids is None:
                calls[key] = record.tool_use_ids()
            else:
                ids.extend(record.tool_use_ids())
    turns = [ids for ids in calls.values() if ids]
    masked = max(0, (len(turns) // config.polling) * config.polling - config.keep_last_turns)
    return {i for ids in turns[:masked] for i in ids}


@dataclass
class MaskState:
    """`ObservationMasking`'s state: the tool_use ids masked so far, and an index of ``context`` (the context
    it last returned or saw; records are shared, never copied).

    ``calls``: each API call's tool_use ids by its key (`masked_turn_ids`'s grouping, in order), ``order``
    where each key stands in that order; ``turns``: how many calls have ids; ``cursor``/``passed``: how many
    keys, and how many calls with ids among them, the masked prefix has taken (their ids are in ``masked``);
    ``results``: the positions of the user records holding each tool_use id's tool_result.
    """

    masked: set[str] = field(default_factory=set)
    context: list[Record] = field(default_factory=list)
    calls: dict[str | int, list[str]] = field(default_factory=dict)
    order: dict[str | int, int] = field(default_factory=dict)
    keys: list[str | int] = field(default_factory=list)
    turns: int = 0
    cursor: int = 0
    passed: int = 0
    results: dict[str, list[int]] = field(default_factory=dict)

    def reset(self) -> None:
        self.context, self.calls, self.order, self.keys, self.results = [], {}, {}, [], {}
        self.turns = self.cursor = self.passed = 0

    def read(self, records: Sequence[Record]) -> bool:
        """Index ``records``' records past ``context`` (True), or refuse (False: the caller rebuilds) when a
        record adds tool_uses to a call the masked prefix has already taken."""
        for index in range(len(self.context), len(records)):
            record = records[index]
            if is_real_assistant(record):
                key = record.message_id if record.message_id is not None else index
                ids = record.tool_use_ids()
                known = self.calls.get(key)
                if known is None:
                    self.order[key] = len(self.keys)
                    self.keys.append(key)
                    self.calls[key] = ids
                    self.turns += bool(ids)
                elif ids:
                    if self.order[key] < self.cursor:
                        return False
                    self.turns += not known
                    known.extend(ids)
            else:
                index_results(self.results, index, record)
        return True

    def newly_masked(self, records: Sequence[Record], config: ObservationMaskingConfig) -> set[str]:
        """``masked_turn_ids(records, config) - masked``, reading only what changed since the last call."""
        if not (extends(records, self.context) and self.read(records)):
            self.reset()
            self.read(records)  # from nothing, no call has been taken: it cannot refuse
        self.context = list(records)
        target = max(0, (self.turns // config.polling) * config.polling - config.keep_last_turns)
        ids: set[str] = set()
        while self.passed < target:
            turn = self.calls[self.keys[self.cursor]]
            self.cursor += 1
            if turn:
                ids.update(turn)
                self.passed += 1
        return ids - self.masked


@register
class ObservationMasking(Strategy):
    """Complexity Trap / SWE-agent observation masking, M=10 turns (peers.md §2.1, §1.10)."""

    name = "observation-masking"
    description = "Keep tool outputs of the last 10 turns (one turn = one API call + its results); mask older ones."
    source = (
        "JetBrains-Research/the-complexity-trap (arXiv 2508.21433 v3, M=10 turns) as SWE-agent "
        "sweagent/agent/history_processors.py LastNObservations implements it (commit not pinned)"
    )
    Config = ObservationMaskingConfig
    config: ObservationMaskingConfig

    def new_state(self) -> MaskState:
        return MaskState()

    def compact(self, view: ContextView, state: MaskState) -> Compaction | None:
        records = view.records
        ids = state.newly_masked(records, self.config)
        if not ids:
            return None

        def mask(block: Block) -> str:
            return self.config.placeholder.format(lines=line_count(block.result_text()))

        positions = sorted({p for i in ids for p in state.results.get(i, ())})
        new, changed, at = rewrite_at(records, positions, mask, ids)
        state.masked.update(ids)
        if not changed:
            return None
        state.context = new
        return in_place(self.name, "turns", records, new, {"masked": changed}, changed_at=at)
