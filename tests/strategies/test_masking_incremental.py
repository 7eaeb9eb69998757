"""The incremental states of ``observation-masking`` (`MaskState`), ``clear-tool-uses`` (`ClearState`),
``openhands-observation-masking`` (`EventState`), ``microcompact-truncate`` (`TruncState`),
``clear-thinking`` (`ThinkState`) and ``opencode-prune`` (`PruneState`'s prompt count) decide what the whole
walk decides.

The references are the strategies as they were before the index (non-incremental): `masked_turn_ids` over the
whole context at every call and `rewrite_tool_results` over every record; clear-tool-uses' walk of every
record for uses, answers, sizes and the rewrite; OpenHands' masking listing and sorting every event;
`in_place` comparing the whole context (no ``changed_at``, so the engine compares too); the truncation over
the whole context (`truncate_old_outputs`, kept in the module as the reference); clear-thinking finding
every turn's thinking and rewriting every record before the kept turns; opencode-prune counting every prompt.
Replays must give equal step and event rows: on every real session of every format, with the defaults and
with other configs, and on contexts that do not extend the last one, are cut at the head or stream tool_uses
into a call already masked (the index is rebuilt).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from synthetic import make_session

from workbench.replay import replay_session
from workbench.request.normalize import is_sent
from workbench.strategies import create
from workbench.strategies.base import Compaction, ContextView, Strategy, for_window
from workbench.strategies.context_editing import ClearState, ClearThinking, ClearToolUses, cleared_record
from workbench.strategies.microcompact import MicrocompactTruncate, TruncState, truncate_old_outputs
from workbench.strategies.observation_masking import (
    MaskState,
    ObservationMasking,
    line_count,
    masked_turn_ids,
)
from workbench.strategies.opencode import OpenCodePrune, PruneState
from workbench.strategies.openhands import events
from workbench.strategies.openhands_masking import OpenHandsObservationMasking
from workbench.strategies.recent_window import prompt_indices
from workbench.strategies.rewrite import in_place, rewrite_tool_results
from workbench.tokens.js import rough_tokens
from workbench.transcript import Block, Record


class WholeWalk(ObservationMasking):
    """The strategy before the index (the earlier, non-incremental code)."""

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


class WholeClear(ClearToolUses):
    """clear-tool-uses before the index (the earlier, non-incremental code)."""

    def compact(self, view: ContextView, state: ClearState) -> Compaction | None:
        config = self.config
        records = list(view.records)
        uses = [(b.id, b.name) for r in records if r.kind == "assistant" and is_sent(r) for b in r.tool_uses() if b.id]
        if config.trigger.type == "input_tokens":
            if view.tokens + state.cleared_tokens < config.trigger.value:
                return None
        elif len(uses) < config.trigger.value:
            return None
        answered = {i for r in records if r.kind == "user" for i in r.tool_result_ids()}
        old = uses[: max(0, len(uses) - config.keep.value)]
        ids = {i for i, name in old if name not in config.exclude_tools and i in answered} - state.cleared
        if not ids:
            return None
        sizes = {
            b.tool_use_id: rough_tokens(b.result_text())
            for r in records
            for b in r.tool_results()
            if b.tool_use_id in ids
        }
        freed = sum(sizes.values()) - rough_tokens(config.placeholder) * len(ids)
        if config.clear_at_least is not None and state.cleared_tokens + freed < config.clear_at_least.value:
            return None
        new = [cleared_record(record, ids, config) for record in records]  # every record, as before
        state.cleared |= ids
        state.cleared_tokens += freed
        return in_place(
            self.name, config.trigger.type, records, new, {"cleared_tool_uses": len(ids), "cleared_input_tokens": freed}
        )


class WholeEvents(OpenHandsObservationMasking):
    """openhands-observation-masking before the index (the earlier, non-incremental code)."""

    def new_state(self) -> None:  # type: ignore[override]
        return None

    def compact(self, view: ContextView, state: None) -> Compaction | None:  # type: ignore[override]
        records = list(view.records)
        evs = events(records)
        cutoff = len(evs) - self.config.attention_window
        if cutoff <= 0:
            return None
        old = {i for i, kind in evs[:cutoff] if kind == "observation"}
        ids = {b.tool_use_id for i in old for b in records[i].tool_results() if b.tool_use_id}

        def mask(block: Block) -> str | None:
            return None if block.content == self.config.placeholder else self.config.placeholder

        new, changed = rewrite_tool_results(records, mask, ids)
        if not changed:
            return None
        return in_place(self.name, "events", records, new, {"masked": changed})


class WholeTruncate(MicrocompactTruncate):
    """microcompact-truncate before the index: the whole context at every call."""

    def new_state(self) -> None:  # type: ignore[override]
        return None

    def compact(self, view: ContextView, state: None) -> Compaction | None:  # type: ignore[override]
        return truncate_old_outputs(view, for_window(self.config, view))


class WholeThinking(ClearThinking):
    """clear-thinking before the index: every turn looked at, every record before the kept ones rewritten."""

    def new_state(self) -> None:  # type: ignore[override]
        return None

    def compact(self, view: ContextView, state: None) -> Compaction | None:  # type: ignore[override]
        if self.config.keep == "all":
            return None
        records = list(view.records)
        starts = [0, *prompt_indices(records)]
        thinking_turns = [
            s
            for n, s in enumerate(starts)
            if any(
                b.kind in ("thinking", "redacted_thinking")
                for r in records[s : starts[n + 1] if n + 1 < len(starts) else len(records)]
                if r.kind == "assistant"
                for b in r.blocks
            )
        ]
        keep = self.config.keep.value
        if len(thinking_turns) <= keep:
            return None
        limit = thinking_turns[-keep]
        new: list[Record] = []
        changed = 0
        for i, record in enumerate(records):
            thinking = any(b.kind in ("thinking", "redacted_thinking") for b in record.blocks)
            if i >= limit or record.kind != "assistant" or not thinking:
                new.append(record)
                continue
            changed += 1
            rest = [b for b in record.blocks if b.kind not in ("thinking", "redacted_thinking")]
            if rest:
                new.append(record.with_blocks(rest))
        if not changed:
            return None
        return in_place(self.name, "thinking_turns", records, new, {"cleared_thinking_records": changed})


class _Recount(PruneState):
    def count(self, records: Sequence[Record]) -> int:
        return len(prompt_indices(records))


class WholePrune(OpenCodePrune):
    """opencode-prune counting the whole context's prompts at every call (the earlier, non-incremental code)."""

    def new_state(self) -> PruneState:
        return _Recount()


CONFIGS = [{}, {"keep_last_turns": 2, "polling": 3}]
#: past the threshold early in most real sessions, with short outputs cut: most calls truncate something
TRUNCATE = {"context_window": 20_000, "pct_of_window": 40, "keep_chars": 300, "keep_recent": 3}
CLEAR = {
    "trigger": {"type": "tool_uses", "value": 4},
    "keep": {"value": 2},
    "exclude_tools": ["Read"],
    "clear_tool_inputs": True,
    "clear_at_least": {"type": "input_tokens", "value": 300},
}
#: (incremental, whole walk, config): each strategy with its defaults and with a config that exercises the rest
PAIRS = [
    *(("observation-masking", WholeWalk, config) for config in CONFIGS),
    ("clear-tool-uses", WholeClear, {}),
    ("clear-tool-uses", WholeClear, CLEAR),
    ("clear-tool-uses", WholeClear, {"trigger": {"type": "input_tokens", "value": 800}, "keep": {"value": 1}}),
    ("openhands-observation-masking", WholeEvents, {}),
    ("openhands-observation-masking", WholeEvents, {"attention_window": 7}),
    ("microcompact-truncate", WholeTruncate, {}),
    ("microcompact-truncate", WholeTruncate, TRUNCATE),
    ("clear-thinking", WholeThinking, {}),
    ("clear-thinking", WholeThinking, {"keep": {"value": 2}}),
    ("opencode-prune", WholePrune, {"protect_tokens": 4_000, "minimum_tokens": 1_000}),
    ("opencode-prune", WholePrune, {"mode": "every_step", "protect_tokens": 2_000, "minimum_tokens": 500}),
]


def _pair(name: str, whole: type[Strategy], config: dict) -> tuple[Strategy, Strategy]:
    return create(name, config), whole(whole.Config(**config))


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "whole", "config"), PAIRS)
def test_real_replays_equal_the_whole_walk(every_session: list, name: str, whole: type, config: dict) -> None:
    events = 0
    for session in every_session:
        incremental, reference = _pair(name, whole, config)
        ours = replay_session(session, incremental)
        theirs = replay_session(session, reference)
        assert ours.steps == theirs.steps, session.id
        assert ours.events == theirs.events, session.id
        events += len(theirs.events)
    assert events > 90  # the fewest: microcompact-truncate with its defaults (98)


def _decisions(strategy: Strategy, contexts: list[list[Record]]) -> list[tuple | None]:
    state = strategy.new_state()
    out: list[tuple | None] = []
    for context in contexts:
        result = strategy.compact(view_of(context), state)
        out.append(None if result is None else (result.records, result.dropped, result.added, result.details))
    return out


def _grown(records: list[Record], strategy: Strategy, rng: random.Random) -> list[list[Record]]:
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


@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_grown_and_replaced_contexts_decide_as_the_whole_walk(pair: int) -> None:
    name, whole, config = PAIRS[pair]
    if name == "microcompact-truncate":  # the synthetic sessions are small: a window to match
        config = {"context_window": 4_000, "pct_of_window": 30, "keep_chars": 60 if config else 120}
        config["keep_recent"] = 1 if config["keep_chars"] == 60 else 5
    elif name == "opencode-prune":
        config = {**config, "protect_tokens": 300, "minimum_tokens": 100}
    elif not config and name not in ("observation-masking", "clear-thinking"):
        config = (
            {"trigger": {"type": "input_tokens", "value": 600}}
            if name == "clear-tool-uses"
            else {"attention_window": 20}
        )
    decisions = 0
    for seed in range(12):
        rng = random.Random(seed)
        records = list(make_session(turns=rng.randint(4, 8), tools=rng.randint(3, 5), result_chars=400).records)
        contexts = _grown(records, _pair(name, whole, config)[1], random.Random(seed))
        ours, theirs = _pair(name, whole, config)
        decided = _decisions(theirs, contexts)
        assert _decisions(ours, contexts) == decided, seed
        decisions += sum(d is not None for d in decided)
    assert decisions > 12


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


def test_a_result_added_later_for_an_old_id_is_masked_as_the_whole_walk_masks_it() -> None:
    records = list(make_session(turns=3, tools=3, result_chars=50).records)
    first = next(r for r in records if r.tool_results())
    again = replace(first, uuid="again", blocks=(Block.from_raw({**first.tool_results()[0].raw, "content": "rerun"}),))

    def run(strategy: Strategy) -> list[tuple[Record, ...]]:
        state = strategy.new_state()
        masked = strategy.compact(view_of(records), state)
        assert masked is not None and masked.records[records.index(first)].tool_results()[0].content == "<MASKED>"
        later = strategy.compact(view_of([*masked.records, again]), state)  # the id is old already
        assert later is not None
        return [masked.records, later.records]

    ours, theirs = _pair("openhands-observation-masking", WholeEvents, {"attention_window": 6})
    decided = run(theirs)
    assert decided[1][-1].tool_results()[0].content == "<MASKED>"
    assert run(ours) == decided


def test_truncation_looks_at_results_that_arrived_below_the_threshold_or_late() -> None:
    """Outputs that became old while the context was under the threshold, and a result for an old id that
    arrives after its id was taken, are truncated as the whole context's walk truncates them."""
    records = list(make_session(turns=4, tools=3, result_chars=400).records)
    first = next(r for r in records if r.tool_results())
    late = replace(first, uuid="late", blocks=(Block.from_raw({**first.tool_results()[0].raw, "content": "y" * 500}),))
    config = {"context_window": 1_000, "pct_of_window": 50, "keep_chars": 100, "keep_recent": 2}

    def run(strategy: Strategy) -> list[tuple[Record, ...] | None]:
        state = strategy.new_state()
        out: list[tuple[Record, ...] | None] = []
        context = records[: len(records) // 2]
        assert strategy.compact(view_of(context, tokens=0), state) is None  # under the threshold
        for grown in (records, [*records, late]):  # then past it, then a late result for the first id
            result = strategy.compact(view_of([*context, *grown[len(context) :]], tokens=10_000), state)
            out.append(None if result is None else result.records)
            context = list(result.records) if result is not None else [*context, *grown[len(context) :]]
        return out

    ours, theirs = _pair("microcompact-truncate", WholeTruncate, config)
    decided = run(theirs)
    assert decided[0] is not None and decided[1] is not None
    assert decided[1][-1].tool_results()[0].content.startswith("y" * 100 + "\n...truncated")
    assert isinstance(ours.new_state(), TruncState)
    assert run(ours) == decided


def test_opencode_prune_never_counts_a_replayed_context_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replayed, every context extends the one before or the prune's own result, so only what was appended
    is counted (a prune that forgot its result would count the whole context again after each one)."""
    import workbench.strategies.opencode as opencode

    counted: list[int] = []

    def counting(records: Sequence[Record]) -> list[int]:
        counted.append(len(records))
        return prompt_indices(records)

    monkeypatch.setattr(opencode, "prompt_indices", counting)
    session = make_session(turns=8, tools=4, result_chars=2_000)
    config = {"mode": "every_step", "protect_tokens": 1_000, "minimum_tokens": 200}
    result = replay_session(session, create("opencode-prune", config))
    assert len(result.events) > 2
    assert counted == []
