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
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from ..transcript.model import Block, Record
from ..transcript.steps import is_real_assistant
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .registry import register
from .rewrite import in_place, rewrite_tool_results

__all__ = ["ObservationMasking", "ObservationMaskingConfig", "line_count"]


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


@register
class ObservationMasking(Strategy):
    """Complexity Trap / SWE-agent observation masking, M=10 turns (peers.md §2.1, §1.10)."""

    name = "observation-masking"
    description = "Keep tool outputs of the last 10 turns (one turn = one API call + its results); mask older ones."
    Config = ObservationMaskingConfig

    def new_state(self) -> set[str]:
        return set()

    def compact(self, view: ContextView, state: set[str]) -> Compaction | None:
        records = list(view.records)
        ids = masked_turn_ids(records, self.config) - state
        if not ids:
            return None

        def mask(block: Block) -> str:
            return self.config.placeholder.format(lines=line_count(block.result_text()))

        new, changed = rewrite_tool_results(records, mask, ids)
        state.update(ids)
        if not changed:
            return None
        return in_place(self.name, "turns", records, new, {"masked": changed})
