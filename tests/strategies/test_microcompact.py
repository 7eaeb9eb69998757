"""The tool-result size budget (docs §3.7) and the time-based microcompact gate, on hand-made records."""

from __future__ import annotations

from helpers import view_of
from record_builders import assistant, tool_use, user

from workbench.strategies.microcompact import (
    TimeBasedConfig,
    ToolResultBudgetConfig,
    apply_tool_result_budget,
    time_based_microcompact,
)
from workbench.transcript.model import Block, Record

BUDGET = ToolResultBudgetConfig(max_result_chars=100, max_message_chars=250, preview_bytes=10)


def _loop(*sizes: int, persisted: bool = False) -> list[Record]:
    """A prompt, one assistant call with a tool_use per size, then one user record with their results."""
    ids = [f"t{i}" for i in range(len(sizes))]
    prefix = "<persisted-output>" if persisted else ""
    results = tuple(
        Block("tool_result", {"type": "tool_result", "tool_use_id": i, "content": prefix + "x" * n})
        for i, n in zip(ids, sizes, strict=True)
    )
    return [
        user("go"),
        assistant(*(tool_use(i, "Bash", command="ls") for i in ids), message_id="A"),
        Record(kind="user", role="user", blocks=results, has_content=True),
    ]


def _persisted_ids(records: list[Record], compaction) -> list[str | None]:
    assert compaction is not None and len(compaction.records) == len(records)
    return [
        block.tool_use_id
        for record in compaction.records
        for block in record.tool_results()
        if "<persisted-output>" in block.result_text()
    ]


def test_a_result_over_the_per_result_cap_becomes_a_preview() -> None:
    records = _loop(50, 120)
    compaction = apply_tool_result_budget(view_of(records), BUDGET)
    assert _persisted_ids(records, compaction) == ["t1"]
    preview = compaction.records[2].tool_results()[1].result_text()
    assert preview.startswith("<persisted-output>\nOutput too large (120 chars).")
    assert "\nxxxxxxxxxx\n...\n</persisted-output>" in preview


def test_message_over_its_cap_loses_its_largest_results_first_ties_in_order() -> None:
    records = _loop(90, 95, 90, 90)  # 365 > 250: drop 95 (270 left), then the first 90 (180 left)
    assert _persisted_ids(records, apply_tool_result_budget(view_of(records), BUDGET)) == ["t0", "t1"]


def test_nothing_to_do_within_the_caps_or_already_persisted() -> None:
    assert apply_tool_result_budget(view_of(_loop(100, 100)), BUDGET) is None
    assert apply_tool_result_budget(view_of(_loop(300, persisted=True)), BUDGET) is None
    assert apply_tool_result_budget(view_of(_loop(300)), BUDGET.model_copy(update={"enabled": False})) is None


def test_records_before_start_are_not_checked_again() -> None:
    records = _loop(300)
    assert apply_tool_result_budget(view_of(records), BUDGET, start=len(records)) is None
    assert apply_tool_result_budget(view_of(records), BUDGET, start=2) is not None


def test_time_based_microcompact_is_off_by_default() -> None:
    assert time_based_microcompact(view_of(_loop(300)), TimeBasedConfig()) is None
