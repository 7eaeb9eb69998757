"""normalizeMessagesForAPI reproduction (docs §8.1) on small hand-made fixtures."""

from __future__ import annotations

from record_builders import assistant, system, text, thinking, tool_result, tool_use, user

from workbench.request import normalize
from workbench.transcript.model import Record


def shapes(records: list[Record]) -> list[tuple[str, list[str | None]]]:
    return [(m.role, m.block_types()) for m in normalize(records).messages]


def test_split_thinking_then_two_tool_uses_is_rejoined_across_interleaved_results() -> None:
    records = [
        user("go"),
        assistant(thinking(), message_id="X"),
        assistant(tool_use("t1"), message_id="X"),
        user(tool_result("t1")),
        assistant(tool_use("t2"), message_id="X"),
        user(tool_result("t2")),
    ]
    request = normalize(records)
    assert shapes(records) == [
        ("user", ["text"]),
        ("assistant", ["thinking", "tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result"]),
    ]
    assert request.messages[1].record_uuids == (records[1].uuid, records[2].uuid, records[4].uuid)
    assert request.messages[2].record_uuids == (records[3].uuid, records[5].uuid)


def test_consecutive_user_text_gets_newline_seam_and_results_hoisted() -> None:
    request = normalize([user("a"), user(text("b"), tool_result("t")), user("c")])
    (message,) = request.messages
    assert [dict(b) for b in message.content] == [
        {"type": "tool_result", "tool_use_id": "t", "content": "ok"},
        {"type": "text", "text": "a\n"},
        {"type": "text", "text": "b\n"},
        {"type": "text", "text": "c"},
    ]


def test_unsent_records_are_dropped_and_local_command_becomes_user() -> None:
    records = [
        user("hi"),
        Record("progress", uuid="p"),
        system("turn_duration", "3s"),
        system("compact_boundary", "Conversation compacted"),
        assistant(text("API Error: 529"), message_id="E", model="<synthetic>", is_api_error=True),
        user("virtual", raw={"isVirtual": True}),
        Record("file-history-snapshot"),
        system("local_command", "<local-command-stdout>ok</local-command-stdout>"),
        assistant(text("done"), message_id="A"),
    ]
    request = normalize(records)
    assert [(m.role, [b.get("text") for b in m.content]) for m in request.messages] == [
        ("user", ["hi\n", "<local-command-stdout>ok</local-command-stdout>"]),
        ("assistant", ["done"]),
    ]


def test_only_a_synthetic_api_error_is_dropped() -> None:
    """docs §8.1 step 2 drops *synthetic API-error* assistants: ``<synthetic>`` and ``isApiErrorMessage``
    both. A synthetic interruption notice, or an error flag on a real model's message, is sent (an earlier
    rule dropped either)."""
    records = [
        user("hi"),
        assistant(text("[Request interrupted by user]"), message_id="S", model="<synthetic>"),
        user("go on"),
        assistant(text("boom"), message_id="F", is_api_error=True),
        user("again"),
        assistant(text("API Error: 529"), message_id="E", model="<synthetic>", is_api_error=True),
    ]
    assert [b.get("text") for m in normalize(records).messages if m.role == "assistant" for b in m.content] == [
        "[Request interrupted by user]",
        "boom",
    ]


def test_same_id_walk_stops_at_a_real_user_message() -> None:
    records = [user("q"), assistant(text("a"), message_id="X"), user("more"), assistant(text("b"), message_id="X")]
    assert [m.role for m in normalize(records).messages] == ["user", "assistant", "user", "assistant"]


def test_late_sibling_is_rejoined_past_other_responses_and_new_ids_are_appended() -> None:
    records = [
        user("q"),
        assistant(tool_use("t1"), message_id="X"),
        user(tool_result("t1")),
        assistant(tool_use("t2"), message_id="Y"),
        user(tool_result("t2")),
        assistant(text("late"), message_id="X"),
        assistant(text("new"), message_id="Z"),
    ]
    assert [(m.role, m.message_id, m.block_types()) for m in normalize(records).messages] == [
        ("user", None, ["text"]),
        ("assistant", "X", ["tool_use", "text"]),
        ("user", None, ["tool_result"]),
        ("assistant", "Y", ["tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", "Z", ["text"]),
    ]


def test_tool_use_keeps_only_api_fields() -> None:
    request = normalize(
        [user("q"), assistant({**tool_use("t"), "caller": "x"}, message_id="X"), user(tool_result("t"))]
    )
    assert set(request.messages[1].content[0]) == {"type", "id", "name", "input"}


def test_orphaned_thinking_only_message_is_dropped_without_remerging_users() -> None:
    records = [user("q"), assistant(thinking(), message_id="X"), user("next"), assistant(text("a"), message_id="Y")]
    assert shapes(records) == [("user", ["text"]), ("user", ["text"]), ("assistant", ["text"])]


def test_trailing_thinking_is_stripped_from_final_assistant() -> None:
    records = [user("q"), assistant(text("a"), thinking(), message_id="X")]
    assert shapes(records)[-1] == ("assistant", ["text"])


def test_whitespace_only_assistant_is_dropped_and_users_remerged() -> None:
    records = [user("q"), assistant(text("\n\n"), message_id="X"), user("r")]
    assert shapes(records) == [("user", ["text", "text"])]


def test_is_error_tool_result_keeps_only_text() -> None:
    content = [text("bad"), {"type": "image", "source": {}}]
    records = [user("q"), assistant(tool_use("t"), message_id="X"), user(tool_result("t", content, is_error=True))]
    block = normalize(records).messages[2].content[0]
    assert block["content"] == [text("bad")]


def test_to_api_round_trips_plain_dicts() -> None:
    api = normalize([user("q"), assistant(text("a"), message_id="X")]).to_api()
    assert api == [{"role": "user", "content": [text("q")]}, {"role": "assistant", "content": [text("a")]}]


def test_a_memo_gives_the_request_normalize_builds_without_one(claude_sessions: list) -> None:
    """``normalize(records, memo=...)`` builds each record's message once and reuses it on later calls:
    the requests must equal those built without a memo, for growing contexts of every real Claude Code
    session checked one after another with one memo (as the replay engine checks them), and for a context
    whose tool results a strategy rewrote (new records: their own messages, not the originals')."""
    from workbench.request.normalize import MessageMemo
    from workbench.strategies.rewrite import rewrite_tool_results

    memo: MessageMemo = {}
    hits = 0
    for session in claude_sessions:
        records = session.records
        for end in range(1, len(records) + 1, max(1, len(records) // 12)):
            before = len(memo)
            assert normalize(records[:end], memo=memo) == normalize(records[:end])
            hits += end - (len(memo) - before)
        masked, changed = rewrite_tool_results(records, lambda block: "(masked)")
        assert changed > 0 or not any(r.tool_results() for r in records)
        expected = normalize(masked)
        assert normalize(masked, memo=memo) == expected
        assert normalize(masked, memo=memo) == expected
    assert hits > 10_000  # the memo was used, not only filled
    assert all(memo[key][0] is not None and id(memo[key][0]) == key for key in memo)
    sent = [user("go"), assistant(text("x"), tool_use("a"), message_id="A"), user(tool_result("a"))]
    assert normalize(sent, memo=memo) == normalize(sent)
    assert normalize([system("hello")], memo=memo) == normalize([system("hello")])
