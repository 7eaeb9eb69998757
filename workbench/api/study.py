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

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..memory.trigger import ExtractionTrigger
from ..strategies.keep_window import keep_window
from ..tokens.context import token_count_with_estimation
from ..tokens.estimators import get_estimator
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .invariants import SUMMARY_TEXT, adjust_for_thinking, adjust_to_api_invariants, summary_record
from .normalize import Request, is_sent, normalize
from .repair import repair
from .validate import Violation, original_thinking_blocks, validate

__all__ = ["SUMMARY_TEXT", "cut_request", "invariants_report", "summary_record", "validate_report"]

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

    def add(
        self,
        records: Sequence[Record],
        naive: int,
        adjusted: int,
        end: int | None,
        *,
        adjusted_thinking: int,
        padded: Sequence[int],
        **kw: Any,
    ) -> None:
        """Tally one cut; ``padded`` are claude-padded counts aligned with ``records``."""
        self.cuts += 1
        request = cut_request(records, naive, end)
        repaired, repairs = repair(request)
        self.repairs += len(repairs)
        adjusted_request = request if adjusted == naive else cut_request(records, adjusted, end)
        thinking_request = (
            adjusted_request if adjusted_thinking == adjusted else cut_request(records, adjusted_thinking, end)
        )
        if adjusted_thinking != adjusted:
            self.moved += 1
            self.extra_records += sum(1 for r in records[adjusted_thinking:adjusted] if is_sent(r))
            self.extra_tokens += sum(padded[adjusted_thinking:adjusted])
        results = {
            "naive": validate(request, **kw),
            "repaired": validate(repaired, **kw),
            "adjusted": validate(adjusted_request, **kw),
            "adjusted_thinking": validate(thinking_request, **kw),
        }
        for variant, violations in results.items():
            if violations:
                self.violating[variant] += 1
            for rule in sorted({v.rule for v in violations}):
                self.by_rule[variant][rule] += 1

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


def _all_index_cuts(session: Session, tally: _Tally) -> None:
    records = session.conversation()
    calls = api_calls(records)
    thinking = bool(calls) and _has_thinking(records, calls[-1].indices)
    originals = original_thinking_blocks(records)
    padded = get_estimator("claude-padded").count_many(records)
    first = next((i for i, r in enumerate(records) if is_sent(r)), len(records))
    for cut in range(first + 1, len(records)):
        if is_sent(records[cut]):
            tally.add(
                records,
                cut,
                adjust_to_api_invariants(records, cut),
                None,
                adjusted_thinking=adjust_for_thinking(records, cut, thinking=thinking),
                padded=padded,
                thinking=thinking,
                original_thinking=originals,
            )


def keep_window_cuts(session: Session) -> list[tuple[int, int, int, int, int]]:
    """``(step, offset, naive_start, start, end)`` per API call of ``session``, indices into
    ``session.conversation()``; ``naive_start == -1`` marks a fallback to full compaction."""
    records = session.conversation()
    padded = get_estimator("claude-padded").count_many(records)
    rough = get_estimator("claude-rough").count_many(records)
    trigger = None if session.is_subagent else ExtractionTrigger()
    out: list[tuple[int, int, int, int, int]] = []
    boundary = -1
    for call in api_calls(records):
        offset = max(_last_boundary(records, call.first), 0)
        if offset != boundary and boundary != -1 and trigger is not None:
            trigger.after_compaction()
        boundary = offset
        messages = records[offset : call.first]
        summarized = trigger.last_summarized_message_id if trigger is not None else None
        if summarized is None:
            index = len(messages) - 1
        else:
            index = next((i for i, r in enumerate(messages) if r.uuid == summarized), -2)
        if index == -2:
            out.append((call.step, offset, -1, -1, call.first))
        else:
            window = keep_window(messages, index, counts=padded[offset : call.first])
            out.append((call.step, offset, offset + window.naive_start, offset + window.start, call.first))
        if trigger is not None:
            seen = [*messages, *(records[i] for i in call.indices)]
            counts = [*rough[offset : call.first], *(rough[i] for i in call.indices)]
            trigger.observe(seen, tokens=token_count_with_estimation(seen, counts=counts))
    return out


def _keep_window_cuts(session: Session, tally: _Tally) -> None:
    records = session.conversation()
    originals = original_thinking_blocks(records)
    padded = get_estimator("claude-padded").count_many(records)
    calls = api_calls(records)
    for step, offset, naive, start, end in keep_window_cuts(session):
        if naive < 0:
            tally.fallbacks += 1
            continue
        window = records[offset:end]
        thinking = _has_thinking(records, calls[step].indices)
        tally.add(
            window,
            naive - offset,
            start - offset,
            None,
            adjusted_thinking=adjust_for_thinking(window, naive - offset, thinking=thinking),
            padded=padded[offset:end],
            thinking=thinking,
            original_thinking=originals,
        )


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
    every, window = _Tally(), _Tally()
    count = 0
    for session in sessions:
        count += 1
        _all_index_cuts(session, every)
        _keep_window_cuts(session, window)
    keep = window.report()
    keep["fallbacks"] = window.fallbacks
    return {"sessions": count, "all_indices": every.report(), "keep_window": keep}


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
    from .repair import repair as run_repair

    n_sessions = n_steps = n_repairs = 0
    rows: list[dict[str, Any]] = []
    for session in sessions:
        n_sessions += 1
        records = session.conversation()
        originals: Mapping[str, Any] = original_thinking_blocks(records)
        for call in api_calls(records):
            n_steps += 1
            before = records[: call.first]
            request = normalize(before[_last_boundary(before, len(before)) + 1 :])
            if repair:
                request, repairs = run_repair(request)
                n_repairs += len(repairs)
            thinking = _has_thinking(records, call.indices)
            for v in validate(request, thinking=thinking, original_thinking=originals):
                rows.append(_violation_row(v, session, call.step))
    return {"sessions": n_sessions, "steps": n_steps, "violations": rows, "repaired": n_repairs}
