"""Gemini CLI as its source has it (google-gemini/gemini-cli @5411f113): compression at exactly the
threshold, the verification turn and its cost, an inflated result discarded and the truncation-only mode
after it, and tool output masking (protection 50k, minimum prunable 30k, latest content protected)."""

from __future__ import annotations

import pytest
from helpers import context_before_last_call, view_of  # also puts tests/replay on sys.path
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay.validation import check_request
from workbench.strategies import create
from workbench.strategies.gemini import GeminiState, truncate_function_responses, verify_snapshot
from workbench.strategies.gemini_masking import MASKED_TAG
from workbench.transcript import Block


def records(turns: int, tools: int, chars: int = 400):
    return list(make_session(turns=turns, tools=tools, result_chars=chars).records)


def with_output(recs, uuid: str, text: str):
    """``recs`` with the tool result of record ``uuid`` replaced by ``text``."""
    return [
        r.with_blocks([Block(b.kind, {**b.raw, "content": text}) for b in r.blocks]) if r.uuid == uuid else r
        for r in recs
    ]


def renamed(recs, uuid: str, name: str):
    """``recs`` with the tool_use of record ``uuid`` renamed to ``name``."""
    return [
        r.with_blocks([Block(b.kind, {**b.raw, "name": name}) for b in r.blocks]) if r.uuid == uuid else r for r in recs
    ]


def valid(result) -> bool:
    return check_request(list(result.records), thinking=True).violations == ()


def masked_ids(result) -> list[str]:
    return [b.tool_use_id for r in result.records for b in r.tool_results() if f"<{MASKED_TAG}>" in b.result_text()]


def request_context():
    recs = records(5, 2, 8_000)
    return recs[: recs.index(next(r for r in recs if r.uuid == "u4")) + 1]  # u4 is the request being sent


# ------------------------------------------------------------------ compression
def test_compression_fires_at_exactly_half_the_window_and_not_one_token_below() -> None:
    context = request_context()
    strategy = create("gemini-cli")
    assert strategy.compact(view_of(context, tokens=99_999), strategy.new_state()) is None
    result = strategy.compact(view_of(context, tokens=100_000), strategy.new_state())
    assert result is not None and result.summary is not None
    assert result.records[0].text.startswith("<state_snapshot>\n    <overall_goal>")
    assert result.records[1].text == "Got it. Thanks for the additional context!" and valid(result)
    wider = create("gemini-cli", {"context_window": 1_000_000})
    assert wider.compact(view_of(context, tokens=499_999), wider.new_state()) is None


def test_the_snapshot_has_the_seven_sections_in_order() -> None:
    result = create("gemini-cli").compact(view_of(request_context(), tokens=100_000), GeminiState())
    text = result.summary
    tags = ["overall_goal", "active_constraints", "key_knowledge", "artifact_trail"]
    tags += ["file_system_state", "recent_actions", "task_state"]
    positions = [text.index(f"<{tag}>") for tag in tags]
    assert positions == sorted(positions) and text.rstrip().endswith("</state_snapshot>")


def test_the_verification_turn_adds_omitted_paths_and_is_a_second_paid_call() -> None:
    context = with_output(request_context(), "r0.0", "x" * 3_000 + "\nsee crates/late/src/hidden_path.rs:12")
    verified = create("gemini-cli").compact(view_of(context, tokens=100_000), GeminiState())
    plain = create("gemini-cli", {"verify": False}).compact(view_of(context, tokens=100_000), GeminiState())
    assert "crates/late/src/hidden_path.rs" in verified.summary
    assert "crates/late/src/hidden_path.rs" not in plain.summary
    assert verified.details["verification_added_paths"] >= 1
    assert (verified.details["summarizer_calls"], plain.details["summarizer_calls"]) == (2, 1)
    first_in, second_in = verified.details["summarizer_input_tokens"]
    # the second call reads the history again plus the first snapshot
    assert second_in > first_in + verified.details["summarizer_output_tokens"][0]
    assert verified.details["summarizer_output_tokens"][1] > plain.details["summarizer_output_tokens"][0]


def test_verification_repeats_a_snapshot_that_omits_nothing() -> None:
    snapshot = (
        "<state_snapshot>\n    <file_system_state>\n        src/mod0.py\n    </file_system_state>\n</state_snapshot>"
    )
    recs = records(1, 0)  # mentions only src/mod0.py
    assert verify_snapshot(snapshot, recs) == (snapshot, 0)


def test_an_inflated_result_is_discarded_and_only_truncation_follows() -> None:
    small = records(3, 1, 40)  # the snapshot of so little is larger than what it replaces
    tokens = view_of(small).tokens
    config = {"context_window": tokens * 2, "tool_output_masking": False}
    strategy = create("gemini-cli", config)
    state = strategy.new_state()
    assert strategy.compact(view_of(small), state) is None and state.failed
    # later automatic runs only truncate function responses (CONTENT_TRUNCATED), never summarise again
    big = with_output(small, "r0.0", "y" * 4_000)
    view = view_of(big)
    truncating = create(
        "gemini-cli",
        {
            **config,
            "context_window": view.tokens * 2,
            "function_response_token_budget": 0,
            "truncate_tool_output_chars": 1_000,
        },
    )
    after = truncating.compact(view, state)
    assert after is not None and after.summary is None and after.details["status"] == "CONTENT_TRUNCATED"
    assert [r.uuid for r in after.records] == [r.uuid for r in big]
    assert truncating.compact(view, GeminiState()).summary is not None  # a fresh session would compress


def test_an_equal_count_is_accepted_and_one_token_more_is_inflated() -> None:
    context = request_context()
    probe = create("gemini-cli", {"tool_output_masking": False}).compact(
        view_of(context, tokens=100_000), GeminiState()
    )
    new = probe.details["new_tokens"]
    strategy = create("gemini-cli", {"context_window": new, "tool_output_masking": False})
    assert strategy.compact(view_of(context, tokens=new), GeminiState()) is not None
    state = GeminiState()
    assert strategy.compact(view_of(context, tokens=new - 1), state) is None and state.failed


def test_function_responses_past_the_budget_are_cut_and_the_cut_counts_against_it() -> None:
    # newest first: toolu_3_0, toolu_2_0, toolu_1_0 of 502 tokens each, then toolu_0_0 of 300 tokens
    context = with_output(context_before_last_call(records(4, 1, 2_000)), "r0.0", "z" * 1_200)
    out, truncated = truncate_function_responses(context, 1_500, 1_000)
    outputs = {b.tool_use_id: b.result_text() for r in out for b in r.tool_results()}
    assert truncated == 2 and not outputs["toolu_3_0"].startswith("Output too large")
    assert not outputs["toolu_2_0"].startswith("Output too large")
    assert outputs["toolu_1_0"].startswith("Output too large. Showing first 200 and last 800 characters.")
    assert outputs["toolu_1_0"].endswith("x" * 800) and "characters omitted" in outputs["toolu_1_0"]
    # 1,004 whole + 283 for toolu_1_0's replacement leave less than 300: toolu_0_0 is cut too
    assert outputs["toolu_0_0"].endswith("z" * 800) and outputs["toolu_0_0"].startswith("Output too large")
    assert truncate_function_responses(context, 1_500, 1_200)[1] == 1  # at most the limit: unchanged
    config = {
        "function_response_token_budget": 1_500,
        "truncate_tool_output_chars": 1_000,
        "tool_output_masking": False,
    }
    result = create("gemini-cli", config).compact(view_of(context, tokens=100_000), GeminiState())
    assert result.details["truncated_function_responses"] == 2


def test_bad_configs_raise() -> None:
    for bad in ({"compression_threshold": 0}, {"preserve_fraction": 1}, {"preserve_fraction": 0}, {"nope": 1}):
        with pytest.raises(ValidationError):
            create("gemini-cli", bad)
    with pytest.raises(ValidationError):
        create("gemini-masking", {"min_prunable_tokens": -1})


# ------------------------------------------------------------------ tool output masking
def lines_output(recs, lines: int = 2_000):
    """``recs`` with every tool output replaced by ``lines`` lines of 40 characters (20k tokens at 2,000)."""
    out = []
    for r in recs:
        if r.tool_results():
            tid = r.tool_results()[0].tool_use_id
            text = "\n".join(f"{tid} line {i:05d} ".ljust(39, ".") for i in range(lines))
            r = r.with_blocks([Block(b.kind, {**b.raw, "content": text}) for b in r.blocks])
        out.append(r)
    return out


def masking_context():
    """Two turns of three tools, each output 20k tokens of lines; the context before the last call ends
    with the request being sent (the last tool result)."""
    return lines_output(context_before_last_call(records(2, 3)))


def test_masking_protects_the_newest_50k_and_masks_older_once_they_reach_30k() -> None:
    context = masking_context()
    # history outputs newest first: toolu_1_1 20k, toolu_1_0 40k, toolu_0_2 60k (crosses 50k: prunable), 0_1, 0_0
    # toolu_1_2 is the request being sent: not in the history
    result = create("gemini-masking").compact(view_of(context), None)
    assert sorted(masked_ids(result)) == ["toolu_0_0", "toolu_0_1", "toolu_0_2"]
    assert result.details["prunable_tokens"] >= 60_000 and result.summary is None and valid(result)
    text = next(b.result_text() for r in result.records for b in r.tool_results() if b.tool_use_id == "toolu_0_0")
    # the shell tool's preview: its first and last 10 lines
    assert text.startswith(f"<{MASKED_TAG}>\ntoolu_0_0 line 00000") and "[1980 lines omitted]" in text
    assert "toolu_0_0 line 01999" in text and "Full output available at: " in text


def test_a_masked_output_must_save_tokens() -> None:
    """The shell preview keeps a single long line whole: nothing saved, nothing masked; another tool's
    preview is its first and last 250 characters."""
    one_line = context_before_last_call(records(2, 3, 80_000))
    assert create("gemini-masking").compact(view_of(one_line), None) is None
    read = renamed(renamed(renamed(one_line, "a0.0.tu", "Read"), "a0.1.tu", "Read"), "a0.2.tu", "Read")
    result = create("gemini-masking").compact(view_of(read), None)
    assert sorted(masked_ids(result)) == ["toolu_0_0", "toolu_0_1", "toolu_0_2"]
    text = next(b.result_text() for r in result.records for b in r.tool_results() if b.tool_use_id == "toolu_0_1")
    assert "\n... [TRUNCATED] ...\n" in text and len(text) < 700


def test_masking_triggers_at_exactly_the_minimum_prunable() -> None:
    context = masking_context()
    prunable = create("gemini-masking").compact(view_of(context), None).details["prunable_tokens"]
    assert create("gemini-masking", {"min_prunable_tokens": prunable}).compact(view_of(context), None) is not None
    assert create("gemini-masking", {"min_prunable_tokens": prunable + 1}).compact(view_of(context), None) is None


def test_masking_never_counts_or_masks_the_request_being_sent_exempt_tools_or_masked_outputs() -> None:
    context = masking_context()
    everything = {"protection_threshold_tokens": 0, "min_prunable_tokens": 0}
    result = create("gemini-masking", everything).compact(view_of(context), None)
    # toolu_1_2 is in the request being sent: Gemini masks the history before appending the request
    assert sorted(masked_ids(result)) == ["toolu_0_0", "toolu_0_1", "toolu_0_2", "toolu_1_0", "toolu_1_1"]
    # an exempt tool's output is neither masked nor counted
    skill = renamed(context, "a0.0.tu", "activate_skill")
    result = create("gemini-masking").compact(view_of(skill), None)
    assert sorted(masked_ids(result)) == ["toolu_0_1", "toolu_0_2"]
    # ask_user among the newest: the protection window reaches one output further back
    asked = renamed(context, "a1.1.tu", "AskUserQuestion")
    assert sorted(masked_ids(create("gemini-masking").compact(view_of(asked), None))) == ["toolu_0_0", "toolu_0_1"]
    # masked outputs are skipped: a second pass over the result finds nothing more
    assert create("gemini-masking").compact(view_of(list(result.records)), None) is None


def test_gemini_cli_masks_below_the_compression_threshold() -> None:
    context = masking_context()
    result = create("gemini-cli").compact(view_of(context, tokens=99_999), GeminiState())
    assert result is not None and result.summary is None and result.trigger == "tool_output_masking"
    assert sorted(masked_ids(result)) == ["toolu_0_0", "toolu_0_1", "toolu_0_2"]
    assert (
        create("gemini-cli", {"tool_output_masking": False}).compact(view_of(context, tokens=99_999), GeminiState())
        is None
    )


def test_gemini_cli_masks_the_compressed_context() -> None:
    """Compression first, then masking over its result: one event, both effects, accounted for."""
    context = lines_output(context_before_last_call(records(3, 8)))  # the kept turn holds 7 outputs of 20k tokens
    config = {"context_window": 1_000_000, "function_response_token_budget": 10_000_000}  # the tail stays whole
    result = create("gemini-cli", config).compact(view_of(context, tokens=500_000), GeminiState())
    assert result.summary is not None and result.details["status"] == "COMPRESSED"
    masked = masked_ids(result)
    assert masked and result.details["masking"]["masked"] == len(masked) and valid(result)
    replaced = {r.uuid for r in context if any(b.tool_use_id in masked for b in r.tool_results())}
    assert replaced <= set(result.dropped)
    assert {r.uuid for r in result.added if r.tool_results()} == replaced


def test_sources_name_file_and_commit() -> None:
    for name in ("gemini-cli", "gemini-masking"):
        source = create(name).source
        assert source.startswith("google-gemini/gemini-cli packages/core/src/context/") and "@ 5411f113" in source
