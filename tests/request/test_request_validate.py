"""Validator rules with the API's exact wording (docs §9), on hand-made requests."""

from __future__ import annotations

from record_builders import assistant, text, thinking, tool_result, tool_use, user

from workbench.request import ApiMessage, Request, normalize, original_thinking_blocks, validate


def rules(request: Request, **kw: object) -> list[tuple[str, str]]:
    return [(v.rule, v.location) for v in validate(request, **kw)]  # type: ignore[arg-type]


def test_valid_tool_loop_has_no_violations() -> None:
    records = [user("q"), assistant(thinking(), tool_use("t"), message_id="X"), user(tool_result("t"))]
    assert validate(normalize(records), thinking=True) == []


def test_tool_result_without_tool_use_wording() -> None:
    (v,) = validate(
        normalize([user("q"), assistant(text("a"), message_id="X"), user(tool_result("toolu_1"), text("b"))])
    )
    assert v.rule == "tool_result_without_tool_use"
    assert v.location == "messages.2.content.0"
    assert v.message == (
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    )


def test_tool_use_without_tool_result_wording_names_every_id() -> None:
    request = normalize([user("q"), assistant(tool_use("a"), tool_use("b"), message_id="X"), user("next")])
    (v,) = validate(request)
    assert (v.rule, v.location) == ("tool_use_without_tool_result", "messages.1")
    assert v.message == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: a, b. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )
    assert v.record_uuids == request.messages[1].record_uuids


def test_duplicate_tool_use_id_wording() -> None:
    records = [
        user("q"),
        assistant(tool_use("a"), message_id="X"),
        user(tool_result("a")),
        assistant(text("x"), tool_use("a"), message_id="Y"),
        user(tool_result("a")),
    ]
    (v,) = validate(normalize(records))
    assert (v.rule, v.message) == ("duplicate_tool_use_id", "messages.3.content.1: `tool_use` ids must be unique")


def test_final_tool_loop_must_start_with_thinking() -> None:
    records = [
        user("q"),
        assistant(text("let me"), tool_use("a"), message_id="X"),
        user(tool_result("a")),
        assistant(thinking(), tool_use("b"), message_id="Y"),
        user(tool_result("b")),
    ]
    (v,) = validate(normalize(records), thinking=True)
    assert v.rule == "final_assistant_missing_thinking"
    assert v.message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is "
        "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
        "`tool_use` and `tool_result` blocks)."
    )
    assert validate(normalize(records), thinking=False) == []


def test_a_loop_opened_by_the_first_response_after_a_compaction_is_exempt() -> None:
    """After a summary (a user message) the recorded response that stands in for the model's first one opens
    the loop; the rule exempts it when named in ``fresh_responses``, and only it: a kept response is not."""
    records = [
        user("summary of the earlier conversation"),
        assistant(tool_use("a"), message_id="X"),
        user(tool_result("a")),
        assistant(tool_use("b"), message_id="Y"),
        user(tool_result("b")),
    ]
    request = normalize(records)
    assert [v.rule for v in validate(request, thinking=True)] == ["final_assistant_missing_thinking"]
    assert validate(request, thinking=True, fresh_responses={"X"}) == []
    assert [v.rule for v in validate(request, thinking=True, fresh_responses={"Y"})] == [
        "final_assistant_missing_thinking"
    ]


def test_thinking_rule_skips_a_leading_whitespace_text_block() -> None:
    records = [user("q"), assistant(text("\n\n"), thinking(), tool_use("a"), message_id="X"), user(tool_result("a"))]
    assert validate(normalize(records), thinking=True) == []


def test_thinking_rule_does_not_apply_when_last_user_message_has_text() -> None:
    records = [user("q"), assistant(tool_use("a"), message_id="X"), user(tool_result("a")), user("new prompt")]
    assert validate(normalize(records), thinking=True) == []


def test_modified_thinking_in_latest_assistant_message() -> None:
    records = [user("q"), assistant(thinking("orig"), text("a"), message_id="X", uuid="a1")]
    originals = original_thinking_blocks(records)
    changed = Request(
        (normalize(records).messages[0], ApiMessage("assistant", (thinking("edited"), text("a")), ("a1",)))
    )
    (v,) = validate(changed, original_thinking=originals)
    assert v.rule == "thinking_modified"
    assert v.message == (
        "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
        "modified. These blocks must remain as they were in the original response."
    )
    unchanged = Request((changed.messages[0], ApiMessage("assistant", (thinking("orig"), text("a")), ("a1",))))
    assert validate(unchanged, original_thinking=originals) == []


def test_empty_and_whitespace_text() -> None:
    request = Request((ApiMessage("user", (text(""), text("  "))), ApiMessage("assistant", (text("ok"),))))
    assert [(v.rule, v.location, v.message) for v in validate(request)] == [
        ("empty_text", "messages.0.content.0", "messages: text content blocks must be non-empty"),
        ("whitespace_text", "messages.0.content.1", "messages: text content blocks must contain non-whitespace text"),
    ]


def test_empty_content_allowed_only_for_final_assistant() -> None:
    request = Request((ApiMessage("user", ()), ApiMessage("assistant", ())))
    (v,) = validate(request)
    assert (
        v.message
        == "messages.0: all messages must have non-empty content except for the optional final assistant message"
    )


def test_first_message_must_be_user() -> None:
    request = Request((ApiMessage("assistant", (text("hi"),)), ApiMessage("user", (text("q"),))))
    assert rules(request) == [("first_message_not_user", "messages.0")]


def test_prompt_too_long_wording() -> None:
    request = normalize([user("q")])
    (v,) = validate(request, context_window=200000, prompt_tokens=208380)
    assert v.message == "prompt is too long: 208380 tokens > 200000 maximum"
    assert validate(request, context_window=200000, prompt_tokens=200000) == []
    assert validate(normalize([user("x" * 40)]), context_window=5) != []


def test_thinking_violations_are_validates_own_for_every_cut_of_the_real_corpus(claude_sessions: list) -> None:
    """`thinking_violations` (the API-safe cut's question) runs the thinking rule alone: the same
    violations as `validate` with ``thinking=True`` filtered to that rule, at every cut of every real
    Claude Code session (a cut every few records), and for hand-made loops with and without thinking."""
    from workbench.request.validate import thinking_violations
    from workbench.studies.naive_cut import cut_request

    rule = "final_assistant_missing_thinking"
    requests = [normalize([])]
    for session in claude_sessions:
        records = session.records
        requests += [cut_request(records, cut) for cut in range(0, len(records) + 1, 7)]
        requests += [cut_request(records, cut, end) for cut, end in ((0, 40), (10, 80), (30, 200))]
    for first in (
        assistant(text("x"), tool_use("a"), message_id="A"),
        assistant(thinking(), tool_use("a"), message_id="A"),
    ):
        requests.append(normalize([user("go"), first, user(tool_result("a"))]))
    flagged = 0
    for request in requests:
        expected = [v for v in validate(request, thinking=True) if v.rule == rule]
        assert thinking_violations(request) == expected
        flagged += bool(expected)
    assert flagged >= 5 and flagged < len(requests)  # both outcomes occur
