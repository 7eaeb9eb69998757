"""``observation-masking``'s incremental state (`MaskState`) decides what the whole walk decides.

The reference is the strategy as it was before the index: `masked_turn_ids` over the whole context at every
call, `rewrite_tool_results` over every record, `in_place` comparing the whole context (no ``changed_at``,
so the engine compares too). Replays must give equal step and event rows: on every real session of every
format, with the default and with a polling window, and on contexts that do not extend the last one or
that stream tool_uses into a call already masked (the index is rebuilt).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from synthetic import make_session

from workbench.replay import replay_session
from workbench.strategies import create
from workbench.strategies.base import Compaction, ContextView
from workbench.strategies.observation_masking import (
    MaskState,
    ObservationMasking,
    line_count,
    masked_turn_ids,
)
from workbench.strategies.rewrite import in_place, rewrite_tool_results
from workbench.transcript import Block, Record, load_paths


class WholeWalk(ObservationMasking):
    """The strategy before the index (stop 32's code)."""

    def new_state(self) -> set[str]:  # type: ignore[override]
        return set()

    def compact(self, view: ContextView, state: set[str]) -> Compaction | None:  # type: ignore[override]
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


CONFIGS = [{}, {"keep_last_turns": 2, "polling": 3}]


@pytest.fixture(scope="module")
def every_session(corpus: Path) -> list:
    sessions = [s for folder in sorted(p for p in corpus.iterdir() if p.is_dir()) for s in load_paths([folder])]
    assert len(sessions) > 60
    return sessions


@pytest.mark.corpus
@pytest.mark.parametrize("config", CONFIGS)
def test_real_replays_equal_the_whole_walk(every_session: list, config: dict) -> None:
    events = 0
    for session in every_session:
        incremental = replay_session(session, create("observation-masking", config))
        whole = replay_session(session, WholeWalk(WholeWalk.Config(**config)))
        assert incremental.steps == whole.steps, session.id
        assert incremental.events == whole.events, session.id
        events += len(whole.events)
    assert events > 500


def _decisions(strategy: ObservationMasking, contexts: list[list[Record]]) -> list[tuple | None]:
    state = strategy.new_state()
    out: list[tuple | None] = []
    for context in contexts:
        result = strategy.compact(view_of(context), state)
        out.append(None if result is None else (result.records, result.dropped, result.added, result.details))
    return out


def _grown(records: list[Record], strategy: ObservationMasking, rng: random.Random) -> list[list[Record]]:
    """Contexts as an engine builds them (each the last result plus new records), sometimes replaced by
    another context (the unmasked history, one with a record swapped, one cut at the head): the index must
    notice."""
    contexts, context, pointer = [], [], 0
    state = strategy.new_state()
    while pointer < len(records):
        step = rng.randint(1, 4)
        context = [*context, *records[pointer : pointer + step]]
        pointer += step
        roll = rng.random()
        if roll < 0.1:
            context = list(records[:pointer])  # the unmasked history again
        elif roll < 0.2 and context:
            at = rng.randrange(len(context))
            context[at] = replace(context[at])  # an equal record, another object
        elif roll < 0.3 and len(context) > 1:
            context = context[rng.randrange(1, len(context)) :]  # cut at the head (a pipeline's earlier stage)
        contexts.append(context)
        result = strategy.compact(view_of(context), state)
        if result is not None:
            context = list(result.records)
    return contexts


@pytest.mark.parametrize("seed", range(20))
def test_grown_and_replaced_contexts_decide_as_the_whole_walk(seed: int) -> None:
    rng = random.Random(seed)
    records = list(make_session(turns=rng.randint(2, 6), tools=rng.randint(1, 4), result_chars=50).records)
    config = rng.choice(CONFIGS)
    contexts = _grown(records, WholeWalk(WholeWalk.Config(**config)), random.Random(seed))
    assert _decisions(create("observation-masking", config), contexts) == _decisions(
        WholeWalk(WholeWalk.Config(**config)), contexts
    )


def test_a_tool_use_streamed_into_a_masked_call_rebuilds_the_index() -> None:
    records = list(make_session(turns=1, tools=4, result_chars=50).records)
    calls = [i for i, r in enumerate(records) if r.kind == "assistant" and r.tool_use_ids()]
    first = records[calls[0]]
    late = replace(
        first,
        uuid="late",
        blocks=(Block.from_raw({"type": "tool_use", "id": "toolu_late", "name": "Bash", "input": {}}),),
    )
    answer = replace(
        records[calls[0] + 1],
        uuid="late-result",
        blocks=(Block.from_raw({"type": "tool_result", "tool_use_id": "toolu_late", "content": "x\ny"}),),
    )
    config = {"keep_last_turns": 1}
    strategy = create("observation-masking", config)
    state = strategy.new_state()
    assert isinstance(state, MaskState)
    result = strategy.compact(view_of(records), state)
    assert result is not None and state.cursor > 0  # the first call's turn is taken
    grown = [*result.records, late, answer]  # the same message id as the first, masked, call
    incremental = strategy.compact(view_of(grown), state)
    reference_state = WholeWalk(WholeWalk.Config(**config)).new_state()
    reference = WholeWalk(WholeWalk.Config(**config))
    reference.compact(view_of(records), reference_state)
    expected = reference.compact(view_of(grown), reference_state)
    assert expected is not None and incremental is not None
    assert incremental.records == expected.records and incremental.dropped == expected.dropped
    assert "toolu_late" in state.masked
    assert incremental.records[-1].tool_results()[0].content == "Old environment output: (2 lines omitted)"
