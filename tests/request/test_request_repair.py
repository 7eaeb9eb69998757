"""ensureToolResultPairing reproduction (docs §8.2)."""

from __future__ import annotations

from record_builders import assistant, text, tool_result, tool_use, user

from workbench.request import normalize, repair, validate
from workbench.request.repair import MISSING_RESULT_TEXT, ORPHAN_TEXT


def test_intact_request_is_returned_unchanged() -> None:
    request = normalize([user("q"), assistant(tool_use("t"), message_id="X"), user(tool_result("t"))])
    assert repair(request) == (request, [])


def test_orphaned_leading_result_becomes_placeholder_text() -> None:
    request = normalize([user(tool_result("gone")), assistant(text("a"), message_id="X")])
    fixed, repairs = repair(request)
    assert [r.kind for r in repairs] == ["orphaned_tool_result"]
    assert fixed.messages[0].content == (text(ORPHAN_TEXT),)
    assert validate(fixed) == []


def test_missing_result_is_synthesized_and_unexpected_removed() -> None:
    request = normalize(
        [user("q"), assistant(tool_use("a"), tool_use("b"), message_id="X"), user(tool_result("a"), tool_result("zz"))]
    )
    fixed, repairs = repair(request)
    assert sorted(r.kind for r in repairs) == ["synthetic_tool_result", "unexpected_tool_result"]
    first = fixed.messages[2].content[0]
    assert first == {"type": "tool_result", "tool_use_id": "b", "content": MISSING_RESULT_TEXT, "is_error": True}
    assert validate(fixed) == []


def test_duplicate_tool_use_is_removed_and_emptied_assistant_marked() -> None:
    records = [
        user("q"),
        assistant(tool_use("a"), message_id="X"),
        user(tool_result("a")),
        assistant(tool_use("a"), message_id="Y"),
        user(tool_result("a")),
    ]
    fixed, repairs = repair(normalize(records))
    assert [r.kind for r in repairs][:2] == ["duplicate_tool_use", "empty_assistant"]
    assert fixed.messages[3].content == (text("[Tool use interrupted]"),)
    assert validate(fixed) == []


def test_final_assistant_with_tool_use_gets_a_meta_result_message() -> None:
    fixed, repairs = repair(normalize([user("q"), assistant(text("a"), tool_use("t"), message_id="X")]))
    assert [r.kind for r in repairs] == ["synthetic_tool_result"]
    assert fixed.messages[-1].role == "user" and fixed.messages[-1].is_meta


def test_emptied_next_user_becomes_no_content() -> None:
    request = normalize([user("q"), assistant(text("a"), message_id="X"), user(tool_result("t"))])
    fixed, repairs = repair(request)
    assert [r.kind for r in repairs] == ["unexpected_tool_result", "inserted_no_content"]
    assert fixed.messages[-1].content == (text("(no content)"),)


def test_tool_use_without_id_is_matched_like_any_other_id() -> None:
    """A missing id is one id value, as `validate` counts it: a second id-less tool_use is a duplicate,
    and the unanswered one gets a synthetic result with no id, which then validates."""
    from workbench.request.normalize import ApiMessage, Request

    no_id = {"type": "tool_use", "name": "Read", "input": {}}
    request = Request(
        (
            ApiMessage("user", (text("q"),)),
            ApiMessage("assistant", (no_id, dict(no_id))),
            ApiMessage("user", (text("ok"),)),
        )
    )
    assert {v.rule for v in validate(request)} == {"duplicate_tool_use_id", "tool_use_without_tool_result"}
    fixed, repairs = repair(request)
    assert [(r.kind, r.tool_use_id) for r in repairs] == [
        ("duplicate_tool_use", None),
        ("synthetic_tool_result", None),
    ]
    assert fixed.messages[2].content[0]["tool_use_id"] is None
    assert validate(fixed) == []
