"""Replays that check requests against the API rules: real requests, and requests after a cut.

* `validate_report` rebuilds, for every assistant API call of every session, the request Claude Code
  sent (``normalize`` of the conversation after the last compact boundary, before the call's first
  record, then ``repair``) and validates it. Real requests were accepted, so any violation is a bug in
  the reproduction (or a step the JSONL cannot reproduce).
* `invariants_report` asks how often a compaction cut breaks the API invariants: for each cut the
  request "summary message + records[cut:]" is validated (a) as cut, (b) after ``repair``
  (docs §8.2), (c) after `adjust_to_api_invariants` (docs §2.5), (d) after the thinking-aware extension
  `adjust_for_thinking` (not in Claude Code; ``adjusted_thinking``, which also reports how many more
  records and claude-padded tokens it keeps than (c)). Cuts are (a) every index of a sent
  record, (b) where SM-compact's keep window (docs §2.4, default config) would start if a compaction ran
  before each API call, with ``lastSummarizedMessageId`` replayed by the extraction trigger (docs §1.3).

Findings on the Claude Code corpus (see ``tests/api/test_api_study.py``): every real request
validates; naive cuts orphan tool_results; adjusted cuts never break pairing, but a keep window that
starts inside a long tool loop can open with a thinking-less response, which the API rejects when
thinking is on (docs §9 item 11): 21 of 532 keep-window cuts — the reference adjustment (§2.5) does not
look at thinking across responses. `adjust_for_thinking` closes that gap (``adjusted_thinking`` has no
violations; it moves those 21 cuts, keeping on average ~39 more sent records / ~8.4k claude-padded tokens
each). The ``all_indices`` requests run to the end of the session, which rarely ends inside a tool loop,
so that family is practically blind to the thinking rule.

Limits of the replay: the ``agent-acompact-*`` transcripts record only the compaction prompt and its
answer, while the real request was the whole parent conversation plus that prompt (a cache-sharing
fork); only the recorded part is validated.

Assumptions:

* Thinking is taken as enabled for a request when the response to it contains a thinking block (a
  thinking-less response does not prove thinking was off, so the rule is then not applied). The
  ``all_indices`` requests run to the end of the session and use the session's last API call.
* ``prompt_too_long`` is not checked in replays: the window in force is not recorded.
* The extraction trigger runs only for main sessions (the hook needs ``repl_main_thread``, §1.3);
  sub-agents use the "unset" path (keep window from the end). A recorded compact boundary resets
  ``lastSummarizedMessageId``; when the id is not in the message list SM-compact falls back to a full
  compaction (§2.6 step 4), counted as ``fallbacks`` and not as a cut.
"""

from __future__ import annotations

import bisect
import inspect
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import accumulate
from typing import Any

from ..memory.trigger import ExtractionTrigger
from ..tokens.context import token_count_with_estimation
from ..tokens.estimators import get_estimator
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .cuts import Adjuster, CutOracle, ThinkingAdjuster
from .invariants import SUMMARY_TEXT, summary_record
from .normalize import Request, is_sent, normalize
from .validate import Violation, original_thinking_blocks, validate

__all__ = [
    "SUMMARY_TEXT",
    "InvariantsStudy",
    "ValidateStudy",
    "cut_request",
    "invariants_report",
    "summary_record",
    "validate_report",
]

_VARIANTS = ("naive", "repaired", "adjusted", "adjusted_thinking")


def cut_request(records: Sequence[Record], cut: int, end: int | None = None) -> Request:
    """The request after a compaction keeping ``records[cut:end]`` (boundaries filtered, §2.6 step 5)."""
    kept = [r for r in records[cut:end] if not r.is_compact_boundary]
    return normalize([summary_record(), *kept])


def _last_boundary(records: Sequence[Record], end: int) -> int:
    return next((i for i in range(end - 1, -1, -1) if records[i].is_compact_boundary), -1)


def _has_thinking(records: Sequence[Record], indices: Iterable[int]) -> bool:
    return any(b.kind == "thinking" for i in indices for b in records[i].blocks)


class _Tally:
    def __init__(self) -> None:
        self.cuts = 0
        self.violating: Counter[str] = Counter()
        self.by_rule: dict[str, Counter[str]] = {v: Counter() for v in _VARIANTS}
        self.repairs = 0
        self.fallbacks = 0
        self.moved = 0
        self.extra_records = 0
        self.extra_tokens = 0

    def add(self, rules: Mapping[str, frozenset[str]], *, repairs: int, extra: tuple[int, int] | None) -> None:
        """Tally one cut: the rule set of each variant's request, the pairing repair's changes and, when
        the thinking-aware cut moved, the sent records and claude-padded tokens it keeps in addition."""
        self.cuts += 1
        self.repairs += repairs
        if extra is not None:
            self.moved += 1
            self.extra_records += extra[0]
            self.extra_tokens += extra[1]
        for variant in _VARIANTS:
            if rules[variant]:
                self.violating[variant] += 1
            for rule in sorted(rules[variant]):
                self.by_rule[variant][rule] += 1

    def merge(self, other: _Tally) -> None:
        """Add another tally's counts (every field is a sum)."""
        self.cuts += other.cuts
        self.violating += other.violating
        for variant in _VARIANTS:
            self.by_rule[variant] += other.by_rule[variant]
        self.repairs += other.repairs
        self.fallbacks += other.fallbacks
        self.moved += other.moved
        self.extra_records += other.extra_records
        self.extra_tokens += other.extra_tokens

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for variant in _VARIANTS:
            violating = self.violating[variant]
            out[variant] = {
                "cuts": self.cuts,
                "violating": violating,
                "rate": violating / self.cuts if self.cuts else 0.0,
                "by_rule": {
                    rule: {"cuts": n, "rate": n / self.cuts} for rule, n in sorted(self.by_rule[variant].items())
                },
            }
        out["repaired"]["repairs"] = self.repairs
        extra = out["adjusted_thinking"]
        extra["moved_cuts"] = self.moved
        extra["extra_records_mean"] = self.extra_records / self.cuts if self.cuts else 0.0
        extra["extra_tokens_mean"] = self.extra_tokens / self.cuts if self.cuts else 0.0
        extra["extra_records_mean_moved"] = self.extra_records / self.moved if self.moved else 0.0
        extra["extra_tokens_mean_moved"] = self.extra_tokens / self.moved if self.moved else 0.0
        return out


class _SessionCuts:
    """One session's conversation with everything the cut families share, built once (see
    `workbench.api.cuts`): the adjusters, the request oracle, and prefix sums of sent records,
    claude-padded tokens and text-block messages."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.records = records = session.conversation()
        self.calls = api_calls(records)
        self.originals = original_thinking_blocks(records)
        self.padded = get_estimator("claude-padded").count_many(records)
        self.rough = get_estimator("claude-rough").count_many(records)
        self.adjuster = Adjuster(records)
        self.oracle = CutOracle(records, self.originals)
        self.thinking = ThinkingAdjuster(records, self.adjuster, self.oracle)
        self.sent_prefix = list(accumulate((is_sent(r) for r in records), initial=0))
        self.padded_prefix = list(accumulate(self.padded, initial=0))
        self.text_prefix = list(accumulate((r.has_text_blocks for r in records), initial=0))
        self.boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
        self.uuids: dict[str, list[int]] = {}
        for i, record in enumerate(records):
            if record.uuid is not None:
                self.uuids.setdefault(record.uuid, []).append(i)

    def last_boundary(self, end: int) -> int:
        """`_last_boundary`: the last compact boundary before ``end``, -1 without one."""
        k = bisect.bisect_left(self.boundaries, end) - 1
        return self.boundaries[k] if k >= 0 else -1

    def tally(self, tally: _Tally, naive: int, adjusted: int, end: int, *, thinking: bool, lo: int = 0) -> None:
        """One cut ``naive`` (adjusted by the reference to ``adjusted``) of the requests ending at ``end``;
        the thinking-aware cut is computed on the window ``records[lo:end]``."""
        oracle, originals = self.oracle, bool(self.originals)
        moved = self.thinking.adjust(naive, lo, end, thinking=thinking)
        plain, _ = oracle.evaluate(naive, end)
        fixed, repairs = oracle.evaluate(naive, end, repaired=True)
        rules = {
            "naive": plain.rules(thinking=thinking, originals=originals),
            "repaired": fixed.rules(thinking=thinking, originals=originals),
            "adjusted": oracle.evaluate(adjusted, end)[0].rules(thinking=thinking, originals=originals),
            "adjusted_thinking": oracle.evaluate(moved, end)[0].rules(thinking=thinking, originals=originals),
        }
        extra = None
        if moved != adjusted:
            extra = (
                self.sent_prefix[adjusted] - self.sent_prefix[moved] if adjusted > moved else 0,
                self.padded_prefix[adjusted] - self.padded_prefix[moved] if adjusted > moved else 0,
            )
        tally.add(rules, repairs=repairs, extra=extra)


def _all_index_cuts(cuts: _SessionCuts, tally: _Tally) -> None:
    records, calls = cuts.records, cuts.calls
    thinking = bool(calls) and _has_thinking(records, calls[-1].indices)
    first = next((i for i, r in enumerate(records) if is_sent(r)), len(records))
    for cut in range(first + 1, len(records)):
        if is_sent(records[cut]):
            cuts.tally(tally, cut, cuts.adjuster.adjust(cut), len(records), thinking=thinking)


class _Seen(Sequence[Record]):
    """``records[offset:first] + [records[i] for i in extra]`` without copying (what the extraction
    trigger observes before each call; it only looks at the end)."""

    def __init__(self, records: Sequence[Record], offset: int, first: int, extra: Sequence[int]) -> None:
        self._records, self._offset, self._first, self._extra = records, offset, first, list(extra)
        self._size = first - offset + len(self._extra)

    def __len__(self) -> int:
        return self._size

    def _at(self, i: int) -> Record:
        body = self._first - self._offset
        return self._records[self._offset + i] if i < body else self._records[self._extra[i - body]]

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return self._at(index)

    def __iter__(self) -> Iterator[Record]:
        return (self._at(i) for i in range(self._size))

    def __reversed__(self) -> Iterator[Record]:
        return (self._at(i) for i in range(self._size - 1, -1, -1))


def _keep_window(cuts: _SessionCuts, offset: int, end: int, last_summarized: int) -> tuple[int, int]:
    """`keep_window` (default config) of ``records[offset:end]`` with prefix sums: absolute
    ``(naive_start, start)``. ``last_summarized`` is an absolute index, or -1 when unset."""
    from ..strategies.keep_window import keep_window

    # the defaults of its signature (`inspect.signature`, not ``__kwdefaults__``: a wrapped function, as
    # mutmut's trampoline, has no keyword defaults of its own but keeps the wrapped one's signature)
    defaults = inspect.signature(keep_window).parameters
    min_tokens, min_text, max_tokens = (
        defaults["min_tokens"].default,
        defaults["min_text_block_messages"].default,
        defaults["max_tokens"].default,
    )
    if end <= offset:
        return offset, offset
    start = last_summarized + 1 if last_summarized >= 0 else end
    tokens, texts = cuts.padded_prefix, cuts.text_prefix

    def enough(i: int) -> bool:
        size = tokens[end] - tokens[i]
        return size >= max_tokens or (size >= min_tokens and texts[end] - texts[i] >= min_text)

    if not enough(start):
        floor = offset + 1 if cuts.records[offset].is_compact_boundary else offset
        if start - 1 >= floor:
            # the largest i in [floor, start) whose window is enough (monotone: smaller i keeps more)
            low, high = floor, start - 1
            if not enough(low):
                start = floor
            else:
                while low < high:
                    mid = (low + high + 1) // 2
                    if enough(mid):
                        low = mid
                    else:
                        high = mid - 1
                start = low
    return start, cuts.adjuster.adjust(start, offset, end)


def keep_window_cuts(session: Session | _SessionCuts) -> list[tuple[int, int, int, int, int]]:
    """``(step, offset, naive_start, start, end)`` per API call of ``session``, indices into
    ``session.conversation()``; ``naive_start == -1`` marks a fallback to full compaction."""
    cuts = session if isinstance(session, _SessionCuts) else _SessionCuts(session)
    records, rough = cuts.records, cuts.rough
    trigger = None if cuts.session.is_subagent else ExtractionTrigger()
    out: list[tuple[int, int, int, int, int]] = []
    boundary = -1
    for call in cuts.calls:
        offset = max(cuts.last_boundary(call.first), 0)
        if offset != boundary and boundary != -1 and trigger is not None:
            trigger.after_compaction()
        boundary = offset
        summarized = trigger.last_summarized_message_id if trigger is not None else None
        if summarized is None:
            index = call.first - 1 if call.first > offset else -1
        else:
            found = cuts.uuids.get(summarized, [])
            k = bisect.bisect_left(found, offset)
            index = found[k] if k < len(found) and found[k] < call.first else -2
        if index == -2:
            out.append((call.step, offset, -1, -1, call.first))
        else:
            naive, start = _keep_window(cuts, offset, call.first, index)
            out.append((call.step, offset, naive, start, call.first))
        if trigger is not None:
            seen = _Seen(records, offset, call.first, call.indices)
            counts = _Seen(rough, offset, call.first, call.indices)  # type: ignore[arg-type]
            trigger.observe(seen, tokens=token_count_with_estimation(seen, counts=counts))
    return out


def _keep_window_cuts(cuts: _SessionCuts, tally: _Tally) -> None:
    for step, offset, naive, start, end in keep_window_cuts(cuts):
        if naive < 0:
            tally.fallbacks += 1
            continue
        thinking = _has_thinking(cuts.records, cuts.calls[step].indices)
        cuts.tally(tally, naive, start, end, thinking=thinking, lo=offset)


def invariants_report(sessions: Iterable[Session]) -> dict[str, Any]:
    """Violation rates per rule for naive, repaired, adjusted and thinking-aware adjusted cuts (see the
    module docstring).

    Returns:
        ``{"all_indices": {"naive": {"cuts", "violating", "rate", "by_rule"}, "repaired": {…, "repairs"},
        "adjusted": {…}, "adjusted_thinking": {…, "moved_cuts", "extra_records_mean", "extra_tokens_mean",
        "extra_records_mean_moved", "extra_tokens_mean_moved"}}, "keep_window": {same four, plus
        "fallbacks"}, "sessions": n}``; ``by_rule`` maps a rule id to ``{"cuts", "rate"}`` (cuts with at
        least one violation of that rule). The ``extra_*`` means are sent records (`is_sent`) / claude-padded
        tokens kept by ``adjusted_thinking`` beyond ``adjusted``, over all cuts and over the moved cuts only.
    """
    study = InvariantsStudy()
    for session in sessions:
        study.add(session)
    return study.report()


class InvariantsStudy:
    """`invariants_report` one session at a time: `add` each session, then `report`. A session whose
    cuts raise adds nothing (its tallies are merged only once all of them are computed), so a command
    can stream sessions through `workbench.isolation.fold_sessions`."""

    def __init__(self) -> None:
        self.every, self.window = _Tally(), _Tally()
        self.sessions = 0

    def add(self, session: Session) -> None:
        every, window = _Tally(), _Tally()
        cuts = _SessionCuts(session)
        _all_index_cuts(cuts, every)
        _keep_window_cuts(cuts, window)
        self.every.merge(every)
        self.window.merge(window)
        self.sessions += 1

    def report(self) -> dict[str, Any]:
        keep = self.window.report()
        keep["fallbacks"] = self.window.fallbacks
        return {"sessions": self.sessions, "all_indices": self.every.report(), "keep_window": keep}


def _violation_row(v: Violation, session: Session, step: int) -> dict[str, Any]:
    return {
        "rule": v.rule,
        "location": v.location,
        "message": v.message,
        "session_id": session.id,
        "step": step,
        "record_uuids": list(v.record_uuids),
    }


def validate_report(sessions: Iterable[Session], *, repair: bool = True) -> dict[str, Any]:
    """Validate the request before every assistant API call of every session (module docstring).

    Args:
        sessions: sessions to replay.
        repair: apply ``ensureToolResultPairing`` after normalization, as Claude Code does.

    Returns:
        ``{"sessions": n, "steps": n, "violations": [{"rule", "location", "message", "session_id",
        "step", "record_uuids"}], "repaired": number of repairs made}``.
    """
    study = ValidateStudy(repair=repair)
    for session in sessions:
        study.add(session)
    return study.report()


class ValidateStudy:
    """`validate_report` one session at a time (`add`, then `report`); a session that raises adds nothing."""

    def __init__(self, *, repair: bool = True) -> None:
        self.repair = repair
        self.sessions = self.steps = self.repairs = 0
        self.rows: list[dict[str, Any]] = []

    def add(self, session: Session) -> None:
        from .repair import repair as run_repair

        steps = repairs = 0
        rows: list[dict[str, Any]] = []
        records = session.conversation()
        originals: Mapping[str, Any] = original_thinking_blocks(records)
        for call in api_calls(records):
            steps += 1
            before = records[: call.first]
            request = normalize(before[_last_boundary(before, len(before)) + 1 :])
            if self.repair:
                request, changes = run_repair(request)
                repairs += len(changes)
            thinking = _has_thinking(records, call.indices)
            for v in validate(request, thinking=thinking, original_thinking=originals):
                rows.append(_violation_row(v, session, call.step))
        self.sessions += 1
        self.steps += steps
        self.repairs += repairs
        self.rows += rows

    def report(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "steps": self.steps, "violations": list(self.rows), "repaired": self.repairs}
