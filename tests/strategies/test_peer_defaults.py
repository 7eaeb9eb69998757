"""Pinned default behaviours of the Anthropic, Codex, Gemini CLI, opencode, Aider, LangChain and Letta
strategies (docs/peers.md §1.3-§1.9), on synthetic sessions with hand-computable expectations."""

from __future__ import annotations

import math

import pytest
from helpers import context_before_last_call, view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.aider import PREFIX as AIDER_PREFIX
from workbench.strategies.codex import approx_token_count, truncate_text
from workbench.strategies.langchain import SUMMARY_PREFIX, lc_messages
from workbench.strategies.opencode import PRUNE_CLEARED
from workbench.strategies.recent_window import is_prompt, step_starts
from workbench.transcript import Block


def records(turns: int, tools: int, chars: int = 400):
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def run(name: str, recs, config=None, tokens=None):
    strategy = create(name, config)
    return strategy.compact(view_of(recs, tokens=tokens), strategy.new_state())


def valid(result) -> bool:
    return check_request(list(result.records), thinking=True).violations == ()


# ------------------------------------------------------------------ Anthropic context editing (§1.9)
def test_clear_tool_uses_defaults_keep_three_above_100k() -> None:
    recs = records(2, 5)  # 10 tool uses
    assert run("clear-tool-uses", recs, tokens=99_999) is None
    result = run("clear-tool-uses", recs, tokens=100_000)
    cleared = [b.tool_use_id for r in result.records for b in r.tool_results() if "cleared" in str(b.content)]
    assert cleared == [f"toolu_0_{c}" for c in range(5)] + ["toolu_1_0", "toolu_1_1"]
    assert result.details["cleared_tool_uses"] == 7 and valid(result)
    assert run("clear-tool-uses", recs, {"exclude_tools": ["Bash"]}, tokens=100_000) is None
    inputs = run("clear-tool-uses", recs, {"clear_tool_inputs": True}, tokens=100_000)
    assert [b.input for r in inputs.records for b in r.tool_uses()][:8] == [{}] * 7 + [
        {"command": "pytest tests/test_1_2.py"}
    ]


def test_clear_tool_uses_clear_at_least() -> None:
    recs = records(2, 5)
    config = {"clear_at_least": {"type": "input_tokens", "value": 1_000_000}}
    assert run("clear-tool-uses", recs, config, tokens=100_000) is None


def test_clear_thinking_keeps_the_last_turn() -> None:
    recs = records(3, 2)
    result = run("clear-thinking", recs)
    thinking = [r.uuid for r in result.records if any(b.kind == "thinking" for b in r.blocks)]
    assert thinking == ["a2.0.th", "a2.1.th"]
    assert len(result.dropped) == 4 and valid(result)
    assert run("clear-thinking", recs, {"keep": "all"}) is None


def test_server_compact_at_150k_keeps_nothing_before_the_block() -> None:
    recs = records(2, 2)
    assert run("server-compact", recs, tokens=149_999) is None
    result = run("server-compact", recs, tokens=150_000)
    assert [r.kind for r in result.records] == ["system", "user"] and result.records[0].is_compact_boundary
    with pytest.raises(ValidationError):
        create("server-compact", {"trigger": {"value": 49_999}})


# ------------------------------------------------------------------ Codex (§1.3)
def test_codex_keeps_newest_user_messages_within_20k() -> None:
    recs = records(3, 1)
    big = "word " * 20_000  # 100,000 chars = 25,000 rough tokens
    recs[0] = recs[0].with_blocks([Block.text_block(big)], string_content=True)
    assert create("codex").config.limit == 180_000
    assert run("codex", recs, tokens=179_999) is None
    result = run("codex", recs, tokens=180_000)
    users, summary = result.records[:-1], result.records[-1]
    assert [r.uuid for r in users] == ["u0", "u1", "u2"]
    small = sum(approx_token_count(r.text) for r in recs if r.uuid in ("u1", "u2"))
    assert users[0].text == truncate_text(big, 20_000 - small)  # the oldest one truncated to what is left
    assert summary.text.startswith("Another language model started") and valid(result)
    assert create("codex", {"auto_compact_token_limit": 190_000}).config.limit == 180_000


# ------------------------------------------------------------------ Gemini CLI (§1.4)
def test_gemini_split_lands_on_a_user_turn_past_70_percent() -> None:
    recs = records(5, 2, 8_000)
    context = recs[: recs.index(next(r for r in recs if r.uuid == "u4")) + 1]  # u4 is the request being sent
    assert run("gemini-cli", context, tokens=99_999) is None
    result = run("gemini-cli", context, tokens=100_000)  # 0.5 × 200k
    kept = result.records[2:]
    assert kept[0].uuid == "u3" and is_prompt(kept[0])  # 4 equal turns: 75% of the chars precede u3
    assert result.records[1].text == "Got it. Thanks for the additional context!"
    assert result.records[0].text.startswith("<state_snapshot>") and valid(result)


def test_gemini_truncates_function_responses_beyond_the_budget() -> None:
    recs = records(4, 1)
    long = "\n".join(f"line {i}" for i in range(100))
    recs = [
        r.with_blocks([Block(b.kind, {**b.raw, "content": long}) for b in r.blocks]) if r.tool_results() else r
        for r in recs
    ]
    context = context_before_last_call(recs)
    config = {"function_response_token_budget": 0, "truncate_tool_output_chars": 200, "tool_output_masking": False}
    result = run("gemini-cli", context, config, tokens=100_000)
    outputs = [b.result_text() for r in result.records for b in r.tool_results()]
    # formatTruncatedToolOutput: the first 20% and the last 80% of 200 characters around an omission note
    assert outputs and all(o.startswith("Output too large. Showing first 40 and last 160 characters.") for o in outputs)
    assert all(o.endswith(long[-160:]) and f"\n{long[:40]}\n" in o for o in outputs)
    unchanged = run("gemini-cli", context, {**config, "truncate_tool_output_chars": len(long)}, tokens=100_000)
    assert unchanged.details["truncated_function_responses"] == 0  # at most the limit: unchanged


def test_gemini_json_sizes_are_each_records_and_bounded() -> None:
    """The content JSON sizes Gemini's split reads are remembered per record (the replay asks at every call
    past the threshold): the same as measuring each record, the same split with or without them, emptied
    past their bound."""
    from workbench.strategies.gemini import GeminiState

    recs = records(6, 3, 2_000)
    state = GeminiState()
    sizes = state.sizes
    assert sizes.of(recs) == [len(r.content_json()) for r in recs] == sizes.of(recs)
    assert len(sizes.sizes) == len(recs)
    strategy = create("gemini-cli")
    fresh, remembered = run("gemini-cli", recs, tokens=100_000), strategy.compact(view_of(recs, tokens=100_000), state)
    assert fresh is not None and remembered is not None and fresh.start == remembered.start
    sizes.sizes.update({-k: (recs[0], 0) for k in range(1, 4 * len(recs) + 1_002)})  # past the bound
    assert sizes.of(recs) == [len(r.content_json()) for r in recs] and len(sizes.sizes) == len(recs)


# ------------------------------------------------------------------ opencode (§1.5)
def test_opencode_overflow_and_tail_budget() -> None:
    config = create("opencode").config
    assert (config.usable, config.tail_tokens) == (148_000, 15_000)
    recs = records(6, 3, 8_000)  # each output 2,000 tokens, each turn ≈ 6.1k
    assert run("opencode", recs, tokens=147_999) is None
    result = run("opencode", recs, tokens=148_000)
    view = view_of(recs)
    assert result.start in step_starts(recs) or is_prompt(recs[result.start])  # an opencode message start
    assert sum(view.rough[result.start :]) <= 15_000
    assert recs.index(next(r for r in recs if r.uuid == "u4")) >= result.start  # the last 2 whole turns
    assert valid(result)


def test_opencode_prune_protects_last_two_turns_and_40k() -> None:
    recs = records(5, 3, 79_984)  # each output exactly 20,000 tokens
    result = run("opencode-prune", recs)
    cleared = [b.tool_use_id for r in result.records for b in r.tool_results() if b.content == PRUNE_CLEARED]
    assert cleared == [f"toolu_{t}_{c}" for t in (0, 1) for c in range(3)] + ["toolu_2_0"]
    assert result.details["pruned_tokens"] > 20_000 and valid(result)
    assert run("opencode-prune", records(5, 3, 400)) is None  # candidates under PRUNE_MINIMUM


# ------------------------------------------------------------------ Aider (§1.6)
def test_aider_budget_and_summary_shape() -> None:
    assert create("aider").config.budget == 8_192
    assert create("aider", {"max_input_tokens": 8_000}).config.budget == 1_024
    assert create("aider", {"max_input_tokens": 100_000}).config.budget == 6_250
    recs = records(4, 1, 4_000)
    context = recs[: recs.index(next(r for r in recs if r.uuid == "u3")) + 1]
    assert run("aider", context) is None  # done messages ≈ 3k < 8,192
    result = run("aider", context, {"max_chat_history_tokens": 2_000})
    assert result.records[0].text.startswith(AIDER_PREFIX) and result.records[1].text == "Ok."
    assert result.records[-1].uuid == "u3"  # the current exchange is never summarised
    assert is_prompt(result.records[2]) and valid(result)


# ------------------------------------------------------------------ LangChain (§1.7)
def test_langchain_trim_last_and_start_on() -> None:
    recs = records(4, 3, 4_000)
    view = view_of(recs)
    total = sum(m[3] for m in lc_messages(view))
    assert run("langchain-trim", recs, {"max_tokens": total}) is None
    result = run("langchain-trim", recs, {"max_tokens": total // 2})
    assert sum(view.rough[result.start :]) <= total // 2
    human = run("langchain-trim", recs, {"max_tokens": total // 2, "start_on": "human"})
    assert is_prompt(human.records[0]) and valid(human)
    with pytest.raises(ValidationError):
        create("langchain-trim", {"strategy": "first", "start_on": "human"})


def test_langchain_summarization_off_by_default_keeps_20_messages() -> None:
    recs = records(4, 5)
    assert run("langchain-summarization", recs) is None
    result = run("langchain-summarization", recs, {"trigger": ("messages", 30)})
    assert result.records[0].text.startswith(SUMMARY_PREFIX)
    kept = view_of(list(result.records[1:]))
    assert len(lc_messages(kept)) >= 20 and valid(result)


# ------------------------------------------------------------------ Letta (§1.8)
def test_letta_evicts_down_to_70_percent() -> None:
    recs = records(6, 3, 8_000)
    tokens = sum(view_of(recs).rough)
    window = math.ceil(tokens / 0.9)  # at 90% or below: not above
    assert run("letta", recs, {"context_window": window}) is None
    window -= 100
    result = run("letta", recs, {"context_window": window})
    kept = result.records[1:]
    assert kept[0].kind == "assistant"
    assert sum(view_of(list(kept)).rough) * 1.3 < 0.7 * window
    assert result.details["post_tokens"] < 0.7 * window and valid(result)
