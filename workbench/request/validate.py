"""A pure, deterministic validator for Messages API requests: the 400s Claude Code users hit.

`validate` returns one `Violation` per problem, each with the API's exact wording (backticked forms,
docs §9) and a ``messages.N.content.M`` location, plus the uuids of the
records behind the offending message. Unlike the API (which reports the first error only) every
problem is listed.

Rules (rule id → API message):

* ``first_message_not_user``: ``messages: first message must use the "user" role``.
* ``empty_content``: ``messages.N: all messages must have non-empty content except for the optional
  final assistant message`` (§9 item 11).
* ``empty_text``: ``messages: text content blocks must be non-empty`` (§9 item 11, #60009).
* ``whitespace_text``: ``messages: text content blocks must contain non-whitespace text`` (§9 item 10).
* ``tool_result_without_tool_use``: ``messages.N.content.M: unexpected `tool_use_id` found in
  `tool_result` blocks: ID. Each `tool_result` block must have a corresponding `tool_use` block in the
  previous message.`` (§9 items 3-5).
* ``tool_use_without_tool_result``: ``messages.N: `tool_use` ids were found without `tool_result` blocks
  immediately after: ID, ID. Each `tool_use` block must have a corresponding `tool_result` block in the
  next message.`` (§9 item 1), N being the assistant message.
* ``duplicate_tool_use_id``: ``messages.N.content.M: `tool_use` ids must be unique`` (§9 item 8), at the
  later occurrence.
* ``final_assistant_missing_thinking`` (only with ``thinking=True``): ``messages.N.content.M.type:
  Expected `thinking` or `redacted_thinking`, but found `X`. When `thinking` is enabled, a final
  `assistant` message must start with a thinking block …`` (§9 item 11).
* ``thinking_modified`` (only when the original blocks are given): ``messages.N.content.M: `thinking` or
  `redacted_thinking` blocks in the latest assistant message cannot be modified. …`` (§9 item 6).
* ``prompt_too_long``: ``prompt is too long: N tokens > W maximum`` (§9 item 9).

Assumptions, where the reference does not pin the API down:

* The three ``messages: …`` text/role errors carry no index in the API's wording; the Violation's
  ``location`` still names ``messages.N.content.M``.
* Whitespace-only text is rejected in user messages and when it is the whole content of an assistant
  message. A whitespace-only text block *beside* other blocks of an assistant message is accepted: the
  v2.1.39 recordings stream a ``"\\n\\n"`` text block before thinking, and those requests succeeded.
* The thinking rule: the "final assistant message" is the first assistant message of the trailing tool
  loop, i.e. after the last user message that holds anything but tool_result blocks; it applies only
  when the request ends with a user message holding tool_results *only* (a recorded v2.1.38 request
  ending in tool_result + ``[Request interrupted by user]`` + a new prompt, after a thinking-less
  tool-use turn, was accepted with thinking on). Leading whitespace-only text blocks
  are skipped when finding its first block (same corpus evidence as above).
* Responses inside a tool loop often hold no thinking (in the dev corpus's 13 Claude Code sessions that
  record thinking, 393 of 451 Opus 4.6 responses, 68 of 111 Sonnet 4.5 and 5 of 451 Opus 4.5 responses
  hold none), so a cut that makes such a response the loop's first breaks the rule (the reference SM cut
  does). A summarising compaction is different: the model's first response after it is generated from
  the compacted context, so a tool loop it opens after the summary is the model's own. An open-loop replay
  stands the recorded response in for it, and that one may lack thinking only because it was given in
  the middle of the recorded loop. ``fresh_responses`` names such responses (the message ids of the calls
  a compaction came right before); the rule exempts a trailing loop that one of them opens.
* Modification of thinking can only be seen against the original records: pass
  ``original_thinking`` (`original_thinking_blocks`), record uuid → the thinking blocks recorded.
  Removing every thinking block of the latest assistant message is not a modification.
* ``prompt_too_long`` needs ``context_window``; without ``prompt_tokens`` the request is measured with
  Claude Code's rough chars/4 estimate (docs §6). Thinking signatures are not checked.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tokens.js import rough_tokens
from ..tokens.walk import block_tokens
from ..transcript.model import Block, Record
from .normalize import ApiMessage, Request

__all__ = [
    "RULES",
    "Violation",
    "original_thinking_blocks",
    "thinking_violations",
    "validate",
]

RULES = (
    "first_message_not_user",
    "empty_content",
    "empty_text",
    "whitespace_text",
    "tool_result_without_tool_use",
    "tool_use_without_tool_result",
    "duplicate_tool_use_id",
    "final_assistant_missing_thinking",
    "thinking_modified",
    "prompt_too_long",
)

_THINKING = frozenset({"thinking", "redacted_thinking"})
THINKING_DOC_URL = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


@dataclass(frozen=True, slots=True)
class Violation:
    """One API error the request would produce."""

    rule: str
    location: str
    message: str
    record_uuids: tuple[str, ...] = ()


def original_thinking_blocks(records: Iterable[Record]) -> dict[str, tuple[Mapping[str, Any], ...]]:
    """Record uuid → the thinking/redacted_thinking blocks it recorded (for ``thinking_modified``)."""
    return {
        r.uuid: tuple(b.raw for b in r.blocks if b.kind in _THINKING)
        for r in records
        if r.kind == "assistant" and r.uuid and any(b.kind in _THINKING for b in r.blocks)
    }


def _is_blank_text(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _text_rules(n: int, message: ApiMessage) -> list[Violation]:
    out: list[Violation] = []
    whole_blank = message.role == "assistant" and all(_is_blank_text(b) for b in message.content)
    for m, block in enumerate(message.content):
        if block.get("type") != "text":
            continue
        text = block.get("text")
        where = f"messages.{n}.content.{m}"
        if not isinstance(text, str) or text == "":
            out.append(
                Violation("empty_text", where, "messages: text content blocks must be non-empty", message.record_uuids)
            )
        elif not text.strip() and (message.role == "user" or whole_blank):
            out.append(
                Violation(
                    "whitespace_text",
                    where,
                    "messages: text content blocks must contain non-whitespace text",
                    message.record_uuids,
                )
            )
    return out


def _pairing_rules(messages: Sequence[ApiMessage]) -> list[Violation]:
    out: list[Violation] = []
    seen: dict[Any, int] = {}
    for n in range(len(messages)):
        pairing_at(n, messages, seen, out)
    return out


def pairing_at(n: int, messages: Sequence[ApiMessage], seen: dict[Any, int], out: list[Violation]) -> None:
    """The pairing violations of ``messages[n]`` (appended to ``out``): its tool_use ids against the next
    message's results (and ``seen``, tool_use id → the message first holding it, updated), or its
    tool_results against the previous message's tool_uses."""
    message = messages[n]
    if message.role == "assistant":
        ids = []
        for m, block in enumerate(message.content):
            if block.get("type") != "tool_use":
                continue
            use_id = block.get("id")
            if use_id in seen:
                out.append(
                    Violation(
                        "duplicate_tool_use_id",
                        f"messages.{n}.content.{m}",
                        f"messages.{n}.content.{m}: `tool_use` ids must be unique",
                        message.record_uuids,
                    )
                )
            else:
                seen[use_id] = n
            ids.append(use_id)
        nxt = messages[n + 1] if n + 1 < len(messages) else None
        answered = (
            {b.get("tool_use_id") for b in nxt.content if b.get("type") == "tool_result"}
            if nxt is not None and nxt.role == "user"
            else set()
        )
        missing = [str(i) for i in dict.fromkeys(ids) if i not in answered]
        if missing:
            out.append(
                Violation(
                    "tool_use_without_tool_result",
                    f"messages.{n}",
                    f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                    "in the next message.",
                    message.record_uuids,
                )
            )
        return
    prev = messages[n - 1] if n > 0 else None
    uses = (
        {b.get("id") for b in prev.content if b.get("type") == "tool_use"}
        if prev is not None and prev.role == "assistant"
        else set()
    )
    for m, block in enumerate(message.content):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in uses:
            where = f"messages.{n}.content.{m}"
            out.append(
                Violation(
                    "tool_result_without_tool_use",
                    where,
                    f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.",
                    message.record_uuids,
                )
            )


def _is_tool_result_only(message: ApiMessage) -> bool:
    return (
        message.role == "user"
        and bool(message.content)
        and all(b.get("type") == "tool_result" for b in message.content)
    )


def _thinking_start_rule(messages: Sequence[ApiMessage], fresh_responses: Container[str] = ()) -> list[Violation]:
    """``final_assistant_missing_thinking`` (what `validate` with ``thinking=True`` adds): the first response
    of the trailing tool loop must start with thinking. It looks only at the trailing loop, walking back
    from the last message; `thinking_violations` runs it alone. ``fresh_responses``: see the module
    docstring (a loop opened by the model's first response after a compaction is exempt)."""
    if not messages or not _is_tool_result_only(messages[-1]):
        return []
    n = len(messages) - 2
    first: int | None = None
    while n >= 0 and messages[n].role == "assistant":
        first = n
        if n - 1 >= 0 and _is_tool_result_only(messages[n - 1]):
            n -= 2
            continue
        break
    if first is None:
        return []
    message = messages[first]
    if message.message_id is not None and message.message_id in fresh_responses:
        return []
    m = next((k for k, b in enumerate(message.content) if not _is_blank_text(b)), None)
    if m is None or message.content[m].get("type") in _THINKING:
        return []
    where = f"messages.{first}.content.{m}.type"
    text = (
        f"{where}: Expected `thinking` or `redacted_thinking`, but found `{message.content[m].get('type')}`. When "
        "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
        "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
        "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
        f"{THINKING_DOC_URL}"
    )
    return [Violation("final_assistant_missing_thinking", where, text, message.record_uuids)]


def thinking_violations(request: Request) -> list[Violation]:
    """The ``final_assistant_missing_thinking`` violations of ``request``: exactly those of
    ``validate(request, thinking=True)`` with that rule, without the other rules' work (the API-safe cut
    asks this at every compaction: `workbench.request.invariants.adjust_for_thinking`)."""
    return _thinking_start_rule(request.messages)


def _thinking_modified_rule(
    messages: Sequence[ApiMessage], originals: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[Violation]:
    n = next((k for k in range(len(messages) - 1, -1, -1) if messages[k].role == "assistant"), None)
    if n is None:
        return []
    message = messages[n]
    known = [u for u in message.record_uuids if u in originals]
    actual = [(m, b) for m, b in enumerate(message.content) if b.get("type") in _THINKING]
    if not known or not actual:
        return []
    expected = [dict(b) for u in known for b in originals[u]]
    changed = [m for k, (m, block) in enumerate(actual) if k >= len(expected) or dict(block) != expected[k]]
    if not changed:
        if len(actual) == len(expected):
            return []
        changed = [actual[-1][0]]
    m = changed[0]
    where = f"messages.{n}.content.{m}"
    text = (
        f"{where}: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. "
        "These blocks must remain as they were in the original response."
    )
    return [Violation("thinking_modified", where, text, message.record_uuids)]


def _estimate(messages: Sequence[ApiMessage]) -> int:
    return sum(block_tokens(Block.from_raw(b), rough_tokens) for m in messages for b in m.content)


def first_message_rule(messages: Sequence[ApiMessage]) -> list[Violation]:
    if not messages or messages[0].role == "user":
        return []
    return [
        Violation(
            "first_message_not_user",
            "messages.0",
            'messages: first message must use the "user" role',
            messages[0].record_uuids,
        )
    ]


def message_rules(n: int, message: ApiMessage, *, final: bool) -> list[Violation]:
    """The rules of one message on its own (``empty_content``, then the text rules), ``final``: whether it
    is the request's last message."""
    out: list[Violation] = []
    if not message.content and not (final and message.role == "assistant"):
        out.append(
            Violation(
                "empty_content",
                f"messages.{n}",
                f"messages.{n}: all messages must have non-empty content except for the optional final "
                "assistant message",
                message.record_uuids,
            )
        )
    out.extend(_text_rules(n, message))
    return out


def request_end_rules(
    messages: Sequence[ApiMessage],
    *,
    thinking: bool,
    original_thinking: Mapping[str, Sequence[Mapping[str, Any]]] | None,
    fresh_responses: Container[str] = (),
) -> list[Violation]:
    """The rules about the request's end: the trailing tool loop's thinking, the latest thinking blocks."""
    out = _thinking_start_rule(messages, fresh_responses) if thinking else []
    if original_thinking:
        out.extend(_thinking_modified_rule(messages, original_thinking))
    return out


def validate(
    request: Request,
    *,
    thinking: bool = False,
    context_window: int | None = None,
    prompt_tokens: int | None = None,
    original_thinking: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    fresh_responses: Container[str] = (),
) -> list[Violation]:
    """The API errors ``request`` would produce, in message order per rule family.

    Args:
        request: the request (normalized, optionally repaired).
        thinking: whether extended thinking is enabled for the request.
        context_window: the model's window; enables ``prompt_too_long``.
        prompt_tokens: the request's size; estimated (chars/4) when None.
        original_thinking: record uuid → recorded thinking blocks, enables ``thinking_modified``.
        fresh_responses: message ids of the model's first responses after a compaction; the thinking rule
            exempts a trailing tool loop one of them opens (module docstring).

    Returns:
        The violations; empty when the API would accept the request.
    """
    messages = request.messages
    out: list[Violation] = []
    if not messages:
        return out
    out.extend(first_message_rule(messages))
    for n, message in enumerate(messages):
        out.extend(message_rules(n, message, final=n == len(messages) - 1))
    out.extend(_pairing_rules(messages))
    out.extend(
        request_end_rules(
            messages, thinking=thinking, original_thinking=original_thinking, fresh_responses=fresh_responses
        )
    )
    if context_window is not None:
        size = prompt_tokens if prompt_tokens is not None else _estimate(messages)
        if size > context_window:
            out.append(
                Violation("prompt_too_long", "prompt", f"prompt is too long: {size} tokens > {context_window} maximum")
            )
    return out
