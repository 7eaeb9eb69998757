"""`IncrementalCheck` gives exactly the whole check (normalize, validate, count repairs) of every context.

Random edit sequences over records built to collide: a few ``message.id``\\ s (split responses rejoined across
tool results, thinking-only messages waiting for their content), a few tool_use ids (duplicates, orphans,
missing results), whitespace-only and empty messages, error results to sanitize, server tool uses, and
the records the API never sees. Then the real Claude Code sessions, grown and masked as a masking
strategy does between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from record_builders import assistant, system, text, thinking, tool_result, tool_use, user

from workbench.request.incremental import IncrementalCheck
from workbench.request.normalize import MessageMemo, normalize
from workbench.request.repair import repair
from workbench.request.validate import original_thinking_blocks, validate
from workbench.transcript.model import Record, Session


def whole(records: Sequence[Record], *, thinking: bool = False, original_thinking: dict | None = None) -> tuple:
    request = normalize(records)
    found = tuple(validate(request, thinking=thinking, original_thinking=original_thinking))
    return found, len(repair(request)[1])


def _blocks(draw: Callable, kind: str, ids: Sequence[str]) -> list[dict]:
    use = ids[draw(st.integers(0, len(ids) - 1))]
    return {
        "text": [text(draw(st.sampled_from(["a", "b c", " ", "\n\n", ""])))],
        "use": [tool_use(use)],
        "text+use": [text("doing"), tool_use(use)],
        "two uses": [tool_use(use), tool_use(ids[(ids.index(use) + 1) % len(ids)])],
        "thinking": [thinking()],
        "thinking+text": [thinking(), text("so")],
        "server": [{"type": "server_tool_use", "id": f"s{use}", "name": "web_search", "input": {}}],
        "empty": [],
    }[kind]


@st.composite
def a_record(draw: Callable) -> Record:
    ids = ["t1", "t2", "t3", "t4"]
    kind = draw(st.sampled_from(["user", "user", "result", "result", "assistant", "assistant", "assistant", "other"]))
    if kind == "user":
        choice = draw(st.sampled_from(["prompt", "string", "blank", "empty text", "mixed"]))
        if choice == "string":
            return user(draw(st.sampled_from(["go on", " ", "[Request interrupted by user]"])))
        if choice == "mixed":
            return user(tool_result(draw(st.sampled_from(ids))), text("and also"))
        return user(text({"prompt": "please", "blank": "  ", "empty text": ""}[choice]))
    if kind == "result":
        use = draw(st.sampled_from(ids))
        shape = draw(st.sampled_from(["plain", "error image", "error text", "list", "two"]))
        if shape == "error image":
            return user(tool_result(use, [text("no"), {"type": "image", "source": {}}], is_error=True))
        if shape == "error text":
            return user(tool_result(use, "failed", is_error=True))
        if shape == "list":
            return user(tool_result(use, [text("out"), {"type": "tool_reference", "tool_name": "x"}]))
        if shape == "two":
            return user(tool_result(use), tool_result(ids[(ids.index(use) + 1) % len(ids)]))
        return user(tool_result(use, draw(st.sampled_from(["ok", "masked", ""]))))
    if kind == "assistant":
        shape = draw(
            st.sampled_from(["text", "use", "text+use", "two uses", "thinking", "thinking+text", "server", "empty"])
        )
        msg_id = draw(st.sampled_from(["A", "B", "C", "D", "E"]))
        return assistant(*_blocks(draw, shape, ids), message_id=msg_id)
    other = draw(st.sampled_from(["local", "system", "boundary", "synthetic", "virtual", "no id"]))
    if other == "local":
        return system("local_command", "<command-name>/cost</command-name>")
    if other == "system":
        return system("informational", "note")
    if other == "boundary":
        return Record("system", uuid="b", subtype="compact_boundary")
    if other == "synthetic":
        return assistant(text("API Error"), message_id="Z", model="<synthetic>", is_api_error=True)
    if other == "virtual":
        return user(text("virtual"), raw={"isVirtual": True})
    return Record("assistant", uuid="n", role="assistant", blocks=(), has_content=False)


@st.composite
def edits(draw: Callable) -> list[list[Record]]:
    """A first context, then contexts each made from the previous one by a random edit."""
    context = draw(st.lists(a_record(), max_size=25))
    out = [list(context)]
    for _ in range(draw(st.integers(1, 12))):
        edit = draw(st.sampled_from(["append", "append", "replace", "replace", "truncate", "insert", "drop", "same"]))
        if edit == "append":
            context = context + draw(st.lists(a_record(), min_size=1, max_size=5))
        elif edit == "replace" and context:
            for _ in range(draw(st.integers(1, 3))):
                context = list(context)
                context[draw(st.integers(0, len(context) - 1))] = draw(a_record())
        elif edit == "truncate":
            context = context[: draw(st.integers(0, len(context)))]
        elif edit == "insert":
            at = draw(st.integers(0, len(context)))
            context = [*context[:at], draw(a_record()), *context[at:]]
        elif edit == "drop" and context:
            at = draw(st.integers(0, len(context) - 1))
            context = context[:at] + context[at + 1 :]
        else:
            context = list(context)
        out.append(context)
    return out


@settings(max_examples=800, deadline=None)
@given(contexts=edits(), flags=st.lists(st.booleans(), min_size=14, max_size=14), memo=st.booleans())
def test_every_check_equals_the_whole_check(contexts: list[list[Record]], flags: list[bool], memo: bool) -> None:
    check = IncrementalCheck()
    memos: MessageMemo | None = {} if memo else None
    for context, on in zip(contexts, flags, strict=False):
        originals = original_thinking_blocks(context)
        expected = whole(context, thinking=on, original_thinking=originals)
        assert check.check(context, thinking=on, original_thinking=originals, memo=memos) == expected


@settings(max_examples=400, deadline=None)
@given(first=edits(), second=edits(), at=st.integers(0, 12), thinking=st.booleans())
def test_a_copied_check_and_its_original_go_on_apart(
    first: list[list[Record]], second: list[list[Record]], at: int, thinking: bool
) -> None:
    """`IncrementalCheck.copy` (a replay branch's fork): after some checks the copy and the original each
    check their own continuation, interleaved, and every answer is the whole check's."""
    check = IncrementalCheck()
    shared, mine = first[: at + 1], first[at + 1 :]
    for context in shared:
        check.check(context, thinking=thinking)
    copy = check.copy()
    base = shared[-1]
    theirs = [[*base, *context] for context in second]  # the copy's contexts grow from the same last one
    for n in range(max(len(mine), len(theirs))):
        for checker, contexts in ((check, mine), (copy, theirs)):
            if n < len(contexts):
                context = contexts[n]
                assert checker.check(context, thinking=thinking) == whole(context, thinking=thinking)


def test_the_cases_the_tail_alone_cannot_decide() -> None:
    """Hand-made: a thinking-only message kept by content appended later, then left waiting when that
    content goes; a whitespace-only response between two user messages (merged again); an empty
    response that stops being the last message; a request that empties."""
    prompt, wait = user(text("go")), assistant(thinking(), message_id="A")
    content = assistant(text("answer"), message_id="A")
    steps = [
        [prompt, wait, user(text("more"))],
        [prompt, wait, user(text("more")), content],
        [prompt, wait, user(text("more")), content, user(text("again"))],
        [prompt, wait, user(text("more"))],
        [prompt, assistant(text(" "), message_id="B"), user(text("x")), assistant(text("y"), message_id="C")],
        [
            prompt,
            assistant(text(" "), message_id="B"),
            user(text("x")),
            assistant(text("y"), message_id="C"),
            user(text("z")),
        ],
        [prompt, assistant(message_id="E")],
        [prompt, assistant(message_id="E"), user(text("after"))],
        [],
        [assistant(tool_use("t1"), message_id="F"), user(tool_result("t1"))],
    ]
    check = IncrementalCheck()
    for context in steps:
        assert check.check(context) == whole(context)
    # the cases are what they say: the waiting message is dropped, then kept; the blank response dropped and
    # the users around it merged; the empty response filled in once it is not the last; a first assistant
    assert [len(normalize(steps[i])) for i in (0, 1, 3, 4, 5)] == [2, 4, 2, 2, 3]
    assert normalize(steps[7]).messages[1].content == ({"type": "text", "text": "(no content)"},)
    assert [v.rule for v in whole(steps[9])[0]] == ["first_message_not_user"]


def _masked(records: Sequence[Record], upto: int) -> list[Record]:
    """``records`` with the tool results of records before ``upto`` masked, as a masking strategy does."""
    from workbench.strategies.rewrite import rewrite_tool_results

    head, _ = rewrite_tool_results(records[:upto], lambda block: "(masked)")
    return [*head, *records[upto:]]


@pytest.mark.corpus
def test_growing_and_masked_real_sessions_check_as_a_whole(claude_sessions: list[Session]) -> None:
    """Every real Claude Code session, checked at every 7th record as it grows, the tool results of all but
    the last 30 records masked (new records, rebuilt each time as a strategy without a cache would), with
    thinking on: each check equals the whole check."""
    checks = violations = 0
    for session in claude_sessions:
        records = [r for r in session.conversation() if not r.is_compact_boundary]
        originals = original_thinking_blocks(records)
        check, memo = IncrementalCheck(), {}
        for end in range(1, len(records) + 1, 7):
            context = _masked(records[:end], max(0, end - 30))
            expected = whole(context, thinking=True, original_thinking=originals)
            assert check.check(context, thinking=True, original_thinking=originals, memo=memo) == expected
            checks += 1
            violations += len(expected[0])
    assert checks > 500 and violations > 0


def _start(context: Sequence[Record]) -> int:
    return next((i + 1 for i in range(len(context) - 1, -1, -1) if context[i].is_compact_boundary), 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "boundary", "replace", "cut", "drop head"]), st.integers(0, 30))))
def test_request_start_is_after_the_last_boundary_of_every_context(edits: list[tuple[str, int]]) -> None:
    """Contexts that grow, get a boundary, have a record replaced (a boundary by a plain record too), are cut
    back or lose their head, each checked once: `request_start` finds the boundary a whole search finds."""
    check, context = IncrementalCheck(), []
    for edit, at in edits:
        if edit == "append":
            context = [*context, user("more"), user("again")]
        elif edit == "boundary":
            context = [*context, system("compact_boundary", "Conversation compacted")]
        elif context and edit == "replace":
            plain = context[at % len(context)].is_compact_boundary
            new = user("instead") if plain else system("compact_boundary", "Conversation compacted")
            context = [*context[: at % len(context)], new, *context[at % len(context) + 1 :]]
        elif edit == "cut":
            context = context[: at % (len(context) + 1)]
        elif edit == "drop head":
            context = context[at % (len(context) + 1) :]
        assert check.request_start(context) == _start(context)
