"""Behaviour the strict type check pointed at."""

from __future__ import annotations

from helpers import view_of  # also puts tests/replay on sys.path
from synthetic import make_session

from workbench.strategies import create
from workbench.strategies.opencode import PRUNE_CLEARED
from workbench.transcript import Block, Record


def _without_id(record: Record) -> Record:
    """``record`` with the ``tool_use_id`` of its tool_result blocks removed."""
    blocks = [
        Block(b.kind, {k: v for k, v in b.raw.items() if k != "tool_use_id"}) if b.kind == "tool_result" else b
        for b in record.blocks
    ]
    return record.with_blocks(blocks)


def test_opencode_prune_leaves_a_protected_result_without_an_id_alone() -> None:
    """A tool result without an id cannot be cleared by id: an old one no longer makes every id-less result
    (the protected newest ones too) a candidate."""
    recs = list(make_session(turns=5, tools=3, result_chars=79_984).records)  # each output 20,000 tokens
    recs = [_without_id(r) if r.uuid in ("r0.0", "r4.2") else r for r in recs]
    strategy = create("opencode-prune")
    result = strategy.compact(view_of(recs), strategy.new_state())
    assert result is not None
    by_uuid = {r.uuid: r for r in result.records}
    assert by_uuid["r4.2"].tool_results()[0].content != PRUNE_CLEARED  # in the protected last turns
    assert by_uuid["r0.0"].tool_results()[0].content != PRUNE_CLEARED  # no id to clear it by
    cleared = {b.tool_use_id for r in result.records for b in r.tool_results() if b.content == PRUNE_CLEARED}
    assert cleared == {"toolu_0_1", "toolu_0_2", "toolu_1_0", "toolu_1_1", "toolu_1_2", "toolu_2_0"}
    assert result.details["pruned"] == len(cleared)
    assert result.details["pruned_tokens"] == 20_000 * len(cleared)
