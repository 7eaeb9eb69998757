"""The request check of a context that changes a little between checks, redone only where it changed.

The replay engine checks a strategy's context before API calls (`workbench.replay.validation`):
normalize (§8.1), validate (§9), count what the pairing repair (§8.2) changes. A masking strategy
rewrites a few tool results near the end of the window and the recording appends a few records before
every call, so checking the whole context each time is quadratic in a session's length. `IncrementalCheck`
gives exactly what that whole check gives (`tests/request/test_request_incremental.py` compares them over random
edit sequences and the real corpus) while redoing the work only from the first change:

1. **Merging** (`normalize`'s fold) is rewound to the first record that is not the one checked last time
   (by identity) with an undo log of what the fold replaced, then resumed.
2. The merged messages before the first one the rewind or the resumed fold touched (``J``) are the same
   objects as last time. The **post passes** leave them alone when last time's did (the request's first
   ``J`` messages were last time's merged ones, none of them the last), and no thinking-only message among
   them waits for a later message with its ``message.id`` (else ``J`` moves back to it). The passes then
   run on the messages from ``J`` on, with the ``message.id``\\ s of the whole request; they run on the
   whole request instead when a whitespace-only assistant message is to be dropped (the users around it
   are merged again) or nothing is left after ``J``.
3. **Validation**: the rules of each message below ``J`` and the pairing rules below ``J - 1`` (a message's
   pairing looks at its neighbours) are last time's; the rest is validated again, the duplicate tool_use
   check seeing the ids of the kept part.
4. **Repair**: its loop is resumed at message ``J - 1`` from the state it had there last time (repairs so
   far, the role put out last, the tool_use and tool_result ids seen, each kept with the message whose
   step saw it so they can be cut back).

What stays linear per check is cheap: identity comparisons and list slices (the id maps are cut back
from their end, `_cut_back`: what was cut, not the whole map); the rules about the request's end are taken
afresh (the thinking rule walks back over the trailing tool loop). The masking strategies and
the engine also read only what changed (`workbench.strategies.observation_masking`,
``Compaction.changed_at``); `benchmarks/bench_request_check.py` measures the replays.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Container, Mapping, Sequence
from itertools import compress, count
from operator import is_not
from typing import Any

from ..transcript.model import Record
from .normalize import (
    ApiMessage,
    MessageMemo,
    UndoLog,
    fold_message,
    has_non_thinking,
    is_thinking_only,
    is_whitespace_only_assistant,
    post_passes,
    remembered_message,
)
from .repair import Repair, ToolId, repair_step
from .validate import Violation, first_message_rule, message_rules, pairing_at, request_end_rules

__all__ = ["IncrementalCheck"]


def _first_difference(new: list[int], old: list[int], hint: int) -> int:
    """The first index where the id lists ``new`` and ``old`` differ (the shorter length if nowhere).

    ``hint``: where it was last time. Masking moves it forward, so the prefix up to it is compared at once
    (list equality, in C) and the rest scanned; a change further back is found by bisection.
    """
    end = min(len(new), len(old))
    hint = min(hint, end)
    if new[:hint] == old[:hint]:
        return next((i for i in range(hint, end) if new[i] != old[i]), end)
    low, high = 0, hint  # new[:low] == old[:low]; the first difference is in [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        if new[low:middle] == old[low:middle]:
            low = middle
        else:
            high = middle
    return low


def _cut_back(seen: dict[Any, int], end: int) -> dict[Any, int]:
    """``seen`` without its entries at ``end`` or later, in place: ``{k: n for k, n in seen.items() if n < end}``
    for a map whose values never decrease in insertion order (every id map here: an id is added once, at the
    message being folded, validated or repaired, and those go forward from where the map was cut). Popping
    from the end costs what was cut, not the whole map at every check."""
    while seen and next(reversed(seen.values())) >= end:
        seen.popitem()
    return seen


class IncrementalCheck:
    """The request check of successive contexts of one replay; see the module docstring.

    `check` returns ``(violations, repairs)`` exactly as ``validate(normalize(records))`` and
    ``len(repair(normalize(records))[1])``. The records must not be changed in place (they are frozen).
    """

    def __init__(self) -> None:
        # merging: the records folded, the fold's output and state, and where it stood before each record
        self._records: list[Record] = []  # held, so their ids stay theirs
        self._record_ids: list[int] = []
        self._merged: list[ApiMessage] = []
        self._ids: set[str] = set()
        self._log: UndoLog = []
        self._length_at: list[int] = []
        self._log_at: list[int] = []
        self._hint = 0
        # the last request: its first `_same` messages are merged messages the post passes left alone
        self._same = 0
        self._content_at: dict[str | None, int] = {}  # message.id → first merged message holding content
        self._thinking_only: list[tuple[int, str | None]] = []  # (merged index, message.id), ascending
        self._rule_at: list[int] = []
        self._rules: list[Violation] = []
        self._pair_at: list[int] = []
        self._pairs: list[Violation] = []
        self._use_at: dict[Any, int] = {}
        self._repairs_before: list[int] = [0]
        self._role_before: list[str | None] = [None]
        self._seen_uses: dict[ToolId, int] = {}
        self._seen_results: dict[ToolId, int] = {}
        # `request_start`: the whole context last time (held) and where its request started
        self._context: list[Record] = []
        self._start = 0

    def copy(self) -> IncrementalCheck:
        """An independent check in this one's state: the containers are copied, what they hold is shared
        (records, merged messages and violations are immutable), so each goes on from the same last check."""
        clone = IncrementalCheck.__new__(IncrementalCheck)
        for name, value in vars(self).items():
            setattr(clone, name, value.copy() if isinstance(value, list | dict | set) else value)
        return clone

    @property
    def start(self) -> int:
        """Where the last request started (`request_start`)."""
        return self._start

    def request_start(self, context: Sequence[Record], *, grown: int | None = None) -> int:
        """Where the request of ``context`` starts: after its last compact boundary, 0 without one (as
        `workbench.replay.validation.check_request` cuts it). Looked for only from the first record that is
        not last time's (by identity, compared in C): the boundary last time's context had stands while it is
        before that record; found again over the whole context only when the change reaches it.

        ``grown``: the caller's word that ``context`` is last time's context with records appended, last
        time's being ``grown`` long (a replay call where nothing was compacted); the identity scans are then
        skipped. Ignored unless it is last time's length."""
        previous = self._context
        if grown is not None and grown == len(previous):
            changed = grown
        else:
            grown = None
            changed = next(compress(count(), map(is_not, context, previous)), min(len(context), len(previous)))
        start = next((i + 1 for i in range(len(context) - 1, changed - 1, -1) if context[i].is_compact_boundary), None)
        if start is None:
            if self._start <= changed:  # last time's boundary (or none) is in the part that stayed
                start = self._start
            else:
                start = next((i + 1 for i in range(changed - 1, -1, -1) if context[i].is_compact_boundary), 0)
        if grown is not None:
            previous.extend(context[grown:])
        else:
            self._context = list(context)
        self._start = start
        return start

    def check(
        self,
        records: Sequence[Record],
        *,
        thinking: bool = False,
        original_thinking: Mapping[str, Any] | None = None,
        memo: MessageMemo | None = None,
        fresh_responses: Container[str] = (),
        grown: int | None = None,
    ) -> tuple[tuple[Violation, ...], int]:
        """The violations of the request ``records`` make and how many changes the repair makes. ``grown``:
        the caller's word that ``records`` are last time's with records appended, last time's being
        ``grown`` long (`request_start`); ignored unless it is last time's length."""
        request, keep = self._post(self._merge(records, memo, grown))
        violations = self._validate(request, keep, thinking, original_thinking, fresh_responses)
        return violations, self._repair(request, keep)

    # ------------------------------------------------------------------ 1. merging
    def _merge(self, records: Sequence[Record], memo: MessageMemo | None, grown: int | None = None) -> int:
        """Fold ``records``, reusing the fold of their common prefix with last time's; returns how many
        leading merged messages are last time's objects."""
        if grown is not None and grown == len(self._records):
            k = self._hint = grown
            new_ids = list(map(id, records[k:]))
        else:
            ids = list(map(id, records))
            k = self._hint = _first_difference(ids, self._record_ids, self._hint)
            new_ids = ids[k:]
        length, at = (
            (self._length_at[k], self._log_at[k]) if k < len(self._records) else (len(self._merged), len(self._log))
        )
        keep = length
        for j, undo in reversed(self._log[at:]):
            if j < 0:  # an id left behind would only cost `fold_message` a walk, not change what it builds
                self._ids.discard(undo)
            else:
                self._merged[j] = undo
                keep = min(keep, j)
        del self._log[at:], self._merged[length:], self._length_at[k:], self._log_at[k:]
        del self._records[k:], self._record_ids[k:]
        self._record_ids.extend(new_ids)
        for record in records[k:]:
            self._length_at.append(len(self._merged))
            self._log_at.append(len(self._log))
            self._records.append(record)
            message = remembered_message(record, memo)
            if message is not None:
                fold_message(self._merged, self._ids, message, self._log)
        return min([keep, *(j for j, _ in self._log[at:] if j >= 0)])

    # ------------------------------------------------------------------ 2. post passes
    def _post(self, keep: int) -> tuple[list[ApiMessage], int]:
        """The request after the post passes, and how many of its leading messages are last time's."""
        merged = self._merged
        keep = min(keep, self._same)
        while True:  # a thinking-only message below `keep` whose id has content only from `keep` on
            content_at = _cut_back(self._content_at, keep)
            waiting = [n for n, key in self._thinking_only if n < keep and key not in content_at]
            if not waiting:
                break
            keep = min(waiting)
        self._thinking_only = [(n, key) for n, key in self._thinking_only if n < keep]
        for n in range(keep, len(merged)):
            message = merged[n]
            if has_non_thinking(message):
                content_at.setdefault(message.message_id, n)
            elif is_thinking_only(message):
                self._thinking_only.append((n, message.message_id))
        self._content_at = content_at
        tail = merged[keep:]
        after = post_passes(tail, content_at) if keep and not any(map(is_whitespace_only_assistant, tail)) else []
        if after and after[0].role == merged[keep - 1].role:
            after = []  # the passes dropped the tail's head: its next message joins the one before the tail
        if not after:  # the passes change what comes before the tail: run them on the whole request
            keep, tail, after = 0, merged, post_passes(merged)
        same = next(
            (i for i, (a, b) in enumerate(zip(after, tail, strict=False)) if a is not b), min(len(after), len(tail))
        )
        request = merged[:keep] + after
        self._same = max(0, min(keep + same, len(request) - 1))  # the last message is never reused as such
        return request, keep

    # ------------------------------------------------------------------ 3. validation
    def _validate(
        self,
        request: list[ApiMessage],
        keep: int,
        thinking: bool,
        original_thinking: Mapping[str, Any] | None,
        fresh_responses: Container[str],
    ) -> tuple[Violation, ...]:
        cut = bisect_left(self._rule_at, keep)
        del self._rule_at[cut:], self._rules[cut:]
        last = len(request) - 1
        for n in range(keep, len(request)):
            for violation in message_rules(n, request[n], final=n == last):
                self._rule_at.append(n)
                self._rules.append(violation)
        start = max(0, keep - 1)
        cut = bisect_left(self._pair_at, start)
        del self._pair_at[cut:], self._pairs[cut:]
        _cut_back(self._use_at, start)
        for n in range(start, len(request)):
            before = len(self._pairs)
            pairing_at(n, request, self._use_at, self._pairs)
            self._pair_at.extend([n] * (len(self._pairs) - before))
        return (
            *first_message_rule(request),
            *self._rules,
            *self._pairs,
            *request_end_rules(
                request,
                thinking=thinking,
                original_thinking=original_thinking,
                fresh_responses=fresh_responses,
            ),
        )

    # ------------------------------------------------------------------ 4. repair
    def _repair(self, request: list[ApiMessage], keep: int) -> int:
        start = max(0, keep - 1)
        del self._repairs_before[start + 1 :], self._role_before[start + 1 :]
        _cut_back(self._seen_uses, start)
        _cut_back(self._seen_results, start)
        repairs: list[Repair] = []
        count, role = self._repairs_before[start], self._role_before[start]
        for i in range(start, len(request)):
            put = repair_step(i, request, role, self._seen_uses, self._seen_results, repairs)
            if put:
                role = put[-1].role
            count += len(repairs)
            repairs.clear()
            self._repairs_before.append(count)
            self._role_before.append(role)
        return count
