"""opencode as its sources have it: the main line (sst/opencode @31e22f65: overflow, tail, templated
summary, prune) and pull request anomalyco/opencode#20632 (@001aa6cc: the retry ladder full →
compact-tools → recent 5 turns, a 20k-token summary cap, the post-compact budget)."""

from __future__ import annotations

import pytest
from helpers import view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.opencode import (
    CONTINUE_TEXT,
    PRUNE_CLEARED,
    keep_recent,
    opencode_summary,
    validate_summary,
)
from workbench.transcript import Block


def records(turns: int, tools: int, chars: int = 400):
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def valid(result) -> bool:
    return check_request(list(result.records), thinking=True).violations == ()


def big_prompts(recs, chars: int):
    """``recs`` with every user prompt padded to ``chars`` characters (its turn number kept first)."""
    return [
        r.with_blocks([Block.text_block((r.text + " ").ljust(chars, "p"))], string_content=True)
        if r.uuid and r.uuid.startswith("u")
        else r
        for r in recs
    ]


# ------------------------------------------------------------------ main line
def test_the_main_line_summary_is_the_template_and_passes_validate_summary() -> None:
    recs = records(6, 3, 8_000)
    result = create("opencode").compact(view_of(recs, tokens=148_000), None)
    assert result is not None and validate_summary(result.summary) and result.details["summary_valid"]
    assert result.summary.startswith("## Objective\n- ") and "### Blocked" in result.summary
    head = recs[: result.start]
    assert result.details["summarizer_input_tokens"][0] < sum(view_of(head).rough)  # outputs cut to 2,000 chars
    assert valid(result)


def test_validate_summary_rejects_a_wrong_order_or_an_empty_section() -> None:
    good = opencode_summary(records(2, 1))
    assert validate_summary(good)
    swapped = good.replace("## Next Move", "## NEXT").replace("## Relevant Files", "## Next Move")
    assert not validate_summary(swapped.replace("## NEXT", "## Relevant Files"))
    empty = good.split("## Relevant Files")[0] + "## Relevant Files\n"
    assert not validate_summary(empty)
    assert validate_summary(good.replace("## Work State\n", "## Work State\n\n"))  # Work State may be empty


def test_the_main_line_has_no_retry_and_prune_is_the_same_code() -> None:
    assert create("opencode").source == "sst/opencode packages/opencode/src/session/compaction.ts @ 31e22f65"
    assert create("opencode-prune").source == create("opencode").source
    assert "@ 001aa6cc" in create("opencode-retry").source and "#20632" in create("opencode-retry").source


# ------------------------------------------------------------------ #20632: retry ladder
def test_retry_fires_at_exactly_usable_and_not_one_below() -> None:
    recs = records(6, 3, 8_000)
    strategy = create("opencode-retry")
    assert strategy.compact(view_of(recs, tokens=147_999), strategy.new_state()) is None
    result = strategy.compact(view_of(recs, tokens=148_000), strategy.new_state())
    assert result is not None and result.details["retry_strategy"] == "full" and result.details["retries"] == 0
    question, summary, resume = result.records
    assert (question.kind, question.text) == ("user", "What did we do so far?")
    assert summary.kind == "assistant" and summary.text == result.summary
    assert resume.text == CONTINUE_TEXT and result.start == len(recs) and valid(result)
    headings = [line for line in result.summary.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Goal",
        "## Instructions",
        "## Discoveries",
        "## Accomplished",
        "## Relevant files / directories",
    ]
    assert result.details["post_compact_budget_left"] == 50_000 - result.details["summarizer_output_tokens"][0]


def ladder_context(overhead: int):
    """Eight turns whose prompts are 10k tokens each (80k) and whose tool outputs are 5k each; the view
    carries ``overhead`` tokens beyond its records (system prompt, tools)."""
    recs = big_prompts(records(8, 1, 20_000), 40_000)
    view = view_of(recs)
    return recs, view_of(recs, tokens=view.tokens + overhead)


def test_retry_steps_to_compact_tools_when_the_full_request_is_too_long() -> None:
    _, view = ladder_context(60_000)  # full ≈ 60k + 121k + 20k output > 200k; cleared ≈ 60k + 81k + 20k fits
    result = create("opencode-retry").compact(view, None)
    assert result.details["retry_strategy"] == "compact-tools" and result.details["retries"] == 1
    assert result.fallbacks == ("summarisation request too long: full",)
    assert "x" * 200 not in result.summary  # the cleared outputs are not summarised
    assert "Turn 0" in result.summary


def test_retry_steps_to_the_last_five_turns_then_gives_up() -> None:
    _, view = ladder_context(110_000)  # cleared ≈ 110k + 81k + 20k > 200k; 5 turns ≈ 110k + 51k + 20k fits
    result = create("opencode-retry").compact(view, None)
    assert result.details["retry_strategy"] == "recent-turns" and result.details["retries"] == 2
    assert "Turn 3:" in result.summary and "Turn 0:" not in result.summary and "Turn 2:" not in result.summary
    assert create("opencode-retry", {"max_retries": 1}).compact(view, None) is None  # no third attempt
    assert create("opencode-retry", {"max_retries": 0}).compact(ladder_context(60_000)[1], None) is None
    _, hopeless = ladder_context(140_000)  # even 5 turns do not fit: exhausted, no compaction
    assert create("opencode-retry").compact(hopeless, None) is None


def test_keep_recent_starts_at_the_fifth_last_user_message() -> None:
    recs = records(8, 1)
    assert keep_recent(recs, 5)[0].uuid == "u3"
    assert keep_recent(recs[:10], 5) == recs[:10]  # fewer than 5 user messages: everything


def test_the_summary_is_capped_at_the_output_limit() -> None:
    recs = big_prompts(records(6, 3, 8_000), 4_000)
    result = create("opencode-retry", {"summary_max_output_tokens": 100}).compact(view_of(recs, tokens=148_000), None)
    assert len(result.summary) == 400


def test_retry_bad_configs_raise() -> None:
    for bad in ({"max_retries": -1}, {"recent_turns": 0}, {"summary_max_output_tokens": 0}, {"tail_turns": 2}):
        with pytest.raises(ValidationError):
            create("opencode-retry", bad)


# ------------------------------------------------------------------ prune
def test_prune_skips_the_skill_tool_without_counting_it() -> None:
    recs = records(5, 3, 79_984)  # each output exactly 20,000 tokens
    base = create("opencode-prune").compact(view_of(recs), create("opencode-prune").new_state())
    skill = [
        r.with_blocks([Block(b.kind, {**b.raw, "name": "skill"}) for b in r.blocks]) if r.uuid == "a2.2.tu" else r
        for r in recs
    ]
    strategy = create("opencode-prune")
    result = strategy.compact(view_of(skill), strategy.new_state())
    cleared = {b.tool_use_id for r in result.records for b in r.tool_results() if b.content == PRUNE_CLEARED}
    base_cleared = {b.tool_use_id for r in base.records for b in r.tool_results() if b.content == PRUNE_CLEARED}
    assert "toolu_2_2" not in cleared and base_cleared - cleared == {"toolu_2_0"}
