"""Claude Code's cut-point adjustment, ``adjustIndexToPreserveAPIInvariants`` (docs §2.5).

SM-compact keeps ``messages[start:]`` verbatim. A naive ``start`` can orphan tool_results (their
tool_use was summarized away) or split one streamed response (docs §7.4) so that its thinking sibling is
lost. `adjust_to_api_invariants` moves ``start`` earlier, never later, in two steps:

1. Tool pairs: every tool_result id in the kept range (all kept user records, not only the first)
   without a kept tool_use pulls ``start`` back to the assistant record holding that tool_use.
2. Same-``message.id`` siblings: any earlier assistant record sharing a ``message.id`` with a kept
   assistant record pulls ``start`` back to it; the id set is taken once and not extended by the walk;
   an empty ``message.id`` is no id (the reference tests it for truthiness).

``start <= 0`` and ``start >= len(records)`` (keep nothing) are returned unchanged.

`adjust_for_thinking` is an extension that is *not* in Claude Code: after the reference adjustment it
also moves ``start`` earlier when the kept window would open a tool loop with a thinking-less response,
which the API rejects when thinking is on (docs §9 item 11). The study (`workbench.studies.naive_cut`) reports
both, so the reference's gap stays visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..transcript.model import Block, Record
from .normalize import is_sent, normalize
from .validate import thinking_violations

__all__ = [
    "SUMMARY_TEXT",
    "Adjustment",
    "Move",
    "adjust_for_thinking",
    "adjust_to_api_invariants",
    "explain_adjustment",
    "summary_record",
]


def adjust_to_api_invariants(records: Sequence[Record], start: int) -> int:
    """The adjusted first kept index (docs §2.5); always ``<= start``.

    Args:
        records: the message list SM-compact sees (Claude Code's in-memory order, i.e. file order).
        start: the naive first kept index.

    Returns:
        The index from which records can be kept without breaking tool pairing or split responses.
    """
    return explain_adjustment(records, start).start


@dataclass(frozen=True, slots=True)
class Move:
    """One pull of the start by the API-invariant adjustment (docs §2.5).

    ``kind`` is ``"tool_pair"`` (step 1: a kept tool_result needs its tool_use) or ``"split_response"``
    (step 2: an earlier record shares a ``message.id`` with a kept assistant record). ``dropped`` is the
    record that pulled the start back to itself, ``kept`` the already-kept record it belongs with.
    """

    kind: Literal["tool_pair", "split_response"]
    key: str
    dropped: int
    kept: int

    def describe(self) -> str:
        if self.kind == "tool_pair":
            return f"tool pair {self.key}: kept tool_result in #{self.kept} needs its tool_use in #{self.dropped}"
        return f"split response message.id {self.key}: #{self.dropped} and kept #{self.kept} are one streamed response"


@dataclass(frozen=True)
class Adjustment:
    """`adjust_to_api_invariants` with its reasons: the start after step 1 (tool pairs) and after step 2
    (same-``message.id`` siblings), and every record that pulled the start back."""

    pair_start: int
    start: int
    moves: tuple[Move, ...]


def explain_adjustment(records: Sequence[Record], start: int) -> Adjustment:
    """Claude Code's two-step adjustment (docs §2.5), remembering which record pulled the start.

    Step 1: every tool_result kept in ``[start, end)`` whose tool_use is not kept pulls the start back to
    the assistant record holding it (all kept records' results count, not just the first's: streaming
    splits). Step 2: every earlier assistant record sharing a ``message.id`` with a kept assistant record
    pulls it back further (the set is not extended during the walk). A start of 0 or past the end is
    returned unchanged: keeping nothing is not adjusted.
    """
    if start <= 0 or start >= len(records):
        return Adjustment(start, start, ())
    moves: list[Move] = []
    result_at: dict[str, int] = {}
    use_ids: set[str] = set()
    for i in range(start, len(records)):
        record = records[i]
        if record.kind == "user" and not record.string_content:
            for tool_id in record.tool_result_ids():
                result_at.setdefault(tool_id, i)
        elif record.kind == "assistant":
            use_ids.update(record.tool_use_ids())
    needed = set(result_at) - use_ids
    adjusted = start
    i = start - 1
    while needed and i >= 0:
        record = records[i]
        if record.kind == "assistant":
            found = needed.intersection(record.tool_use_ids())
            if found:
                adjusted = i
                needed -= found
                moves.extend(Move("tool_pair", tool_id, i, result_at[tool_id]) for tool_id in sorted(found))
        i -= 1
    pair_start = adjusted
    first_kept: dict[str, int] = {}
    for j in range(pair_start, len(records)):
        record = records[j]
        if record.kind == "assistant" and record.message_id:  # an empty id is no id (JS truthiness)
            first_kept.setdefault(record.message_id, j)
    pulled: dict[str, int] = {}
    for j in range(pair_start - 1, -1, -1):
        record = records[j]
        if record.kind == "assistant" and record.message_id and record.message_id in first_kept:
            adjusted = j
            pulled[record.message_id] = j
    moves.extend(Move("split_response", mid, j, first_kept[mid]) for mid, j in pulled.items())
    return Adjustment(pair_start, adjusted, tuple(moves))


# ---------------------------------------------------------------- thinking-aware extension (not in Claude Code)
#: Stand-in text of the compact summary message; its content does not matter to the API rules.
SUMMARY_TEXT = "This session is being continued from a previous conversation that ran out of context."
SUMMARY_UUID = "compact-summary"
_THINKING = frozenset({"thinking", "redacted_thinking"})
_THINKING_RULE = "final_assistant_missing_thinking"


def summary_record(text: str = SUMMARY_TEXT) -> Record:
    """A compact summary user message with string content (docs §2.6 step 7, §5.3)."""
    return Record(
        kind="user",
        uuid=SUMMARY_UUID,
        role="user",
        blocks=(Block.text_block(text),),
        string_content=True,
        has_content=True,
        is_compact_summary=True,
        is_visible_in_transcript_only=True,
    )


def _violates_thinking(records: Sequence[Record], start: int) -> bool:
    """Whether "summary + ``records[start:]``" breaks validate.py's ``final_assistant_missing_thinking``."""
    kept = [r for r in records[start:] if not r.is_compact_boundary]
    request = normalize([summary_record(), *kept])
    return any(v.rule == _THINKING_RULE for v in thinking_violations(request))


def _cut_sensitive_thinking_violation(records: Sequence[Record], start: int) -> bool:
    """Whether "summary + ``records[start:]``" breaks the thinking rule *because of where it is cut*.

    The rule is `validate`'s own (``final_assistant_missing_thinking`` with ``thinking=True``). It depends
    on the cut only when the flagged "final assistant message" is the first message after the summary,
    i.e. the trailing tool loop reaches back to the cut; otherwise a real user message inside the kept
    range starts the loop and no cut can change it.
    """
    kept = [r for r in records[start:] if not r.is_compact_boundary]
    request = normalize([summary_record(), *kept])
    if not request.messages or request.messages[0].record_uuids != (SUMMARY_UUID,):
        return False
    return any(v.rule == _THINKING_RULE and v.location.startswith("messages.1.") for v in thinking_violations(request))


def _is_prompt(record: Record) -> bool:
    """A sent record that becomes a user message holding anything but tool_result blocks (validate.py's
    "real user message", which ends a tool loop when walking backwards)."""
    if not is_sent(record) or record.kind == "assistant":
        return False
    if record.kind == "user" and record.blocks and all(b.kind == "tool_result" for b in record.blocks):
        return False  # fast path: normalising a tool_result-only record cannot give anything else
    return any(
        m.role == "user" and not all(b.get("type") == "tool_result" for b in m.content)
        for m in normalize([record]).messages
    )


def _starts_with_thinking(blocks: Sequence[Block]) -> bool:
    first = next((b for b in blocks if not (b.type == "text" and not b.text.strip())), None)
    return first is not None and first.type in _THINKING


def adjust_for_thinking(records: Sequence[Record], start: int, *, thinking: bool = True) -> int:
    """`adjust_to_api_invariants`, then move the cut earlier so the kept tool loop opens with thinking.

    Not part of Claude Code: an extension closing a gap of the reference adjustment (docs §2.5). The
    compaction prepends a plain user text summary, so a cut inside a tool loop makes the first kept
    response the loop's "final assistant message" of the API's thinking rule (docs §9 item 11: with
    thinking on, it must start with ``thinking``/``redacted_thinking``, else the request is rejected with
    "Expected `thinking` or `redacted_thinking`, but found `tool_use`…"). Within one loop only some
    responses carry thinking, and §2.5 only looks at tool pairs and same-``message.id`` siblings, so the
    reference cut can open the window with a thinking-less ``[text, tool_use]`` response.

    Rule (all indices into ``records``; the request is "summary + ``records[cut:]``", boundaries dropped):

    1. ``a = adjust_to_api_invariants(records, start)``. Return ``a`` when ``thinking`` is False, or when
       the request validates against validate.py's ``final_assistant_missing_thinking`` rule, or violates
       it at a message other than the first kept one (the trailing loop then starts at a kept real user
       message and no cut can change it). Keeping nothing validates; keeping everything leaves no earlier
       cut to try.
    2. Otherwise the cut lies inside the trailing tool loop. Its user prompt ``p`` is the last record
       before ``a`` (``records[a]`` is the first kept response) that becomes a user message holding
       anything but tool_results (validate.py's loop delimiter), searched no further back than the floor:
       the last ``compact_boundary`` before ``start`` + 1, 0 without one (the scan floor of docs §2.4).
    3. Responses of the loop (assistant records in ``(p, a)`` grouped by ``message.id``, siblings included)
       are tried nearest first; for one whose merged blocks start (whitespace-only text skipped) with
       thinking, the candidate cut is its first record, re-adjusted with `adjust_to_api_invariants`; the
       first candidate that stays at or after the floor and makes the request pass the thinking rule wins.
    4. If none does, ``a`` is returned: the loop's opening response itself lacks thinking (the real request
       would have been rejected too), and keeping more records, ``p`` or anything before it, leaves that
       response the loop's final assistant message, so it would fix nothing.

    This is the latest cut in ``[floor, a)`` that passes the rule, else ``a`` (a search over every cut,
    `tests/request/test_request_thinking_cut.py` checks the two agree). Only responses after ``p`` are tried
    because no cut at or before ``p`` can pass once they have failed, and a candidate that crosses the
    floor is skipped (an earlier one would keep all it keeps: `adjust_to_api_invariants` is monotone).
    The result is never later than ``a`` (hence than ``start``) and, when it moved, never before the floor.

    Args:
        records: the message list SM-compact sees (file order).
        start: the naive first kept index.
        thinking: whether extended thinking is on for the request; False gives the reference result.

    Returns:
        The adjusted first kept index.
    """
    adjusted = adjust_to_api_invariants(records, start)
    if not thinking or not _cut_sensitive_thinking_violation(records, adjusted):
        return adjusted
    floor = next((i + 1 for i in range(min(start, len(records)) - 1, -1, -1) if records[i].is_compact_boundary), 0)
    prompt = next((i for i in range(adjusted - 1, floor - 1, -1) if _is_prompt(records[i])), None)
    low = prompt + 1 if prompt is not None else floor
    responses: dict[Any, list[int]] = {}  # filled in record order: by first index, ascending
    for i in range(low, adjusted):
        record = records[i]
        if record.kind == "assistant" and is_sent(record):
            responses.setdefault(record.message_id if record.message_id is not None else ("record", i), []).append(i)
    for indices in reversed(list(responses.values())):  # nearest first
        if not _starts_with_thinking([b for i in indices for b in records[i].blocks]):
            continue
        candidate = adjust_to_api_invariants(records, indices[0])
        if candidate < floor:
            continue
        if not _violates_thinking(records, candidate):
            return candidate
    return adjusted
