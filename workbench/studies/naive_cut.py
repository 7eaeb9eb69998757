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

Findings on the Claude Code corpus (see ``tests/studies/test_naive_cut_study.py``): every real request
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

Where things live: evaluating and counting a cut (`_SessionCuts`, `_Tally`) in
`workbench.studies.tally`; the keep-window cut points (`keep_window_cuts`) in
`workbench.studies.keep_window`; here, the two studies and their reports. Every public name, and
`keep_window_cuts` (the tests import it from here), is still importable here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..request.invariants import SUMMARY_TEXT, summary_record
from ..request.normalize import Request, is_sent, normalize
from ..request.validate import Violation, original_thinking_blocks, validate
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .keep_window import keep_window_cuts
from .tally import _SessionCuts, _Tally

__all__ = [
    "SUMMARY_TEXT",
    "InvariantsStudy",
    "ValidateStudy",
    "cut_request",
    "invariants_report",
    "summary_record",
    "validate_report",
]


def cut_request(records: Sequence[Record], cut: int, end: int | None = None) -> Request:
    """The request after a compaction keeping ``records[cut:end]`` (boundaries filtered, §2.6 step 5)."""
    kept = [r for r in records[cut:end] if not r.is_compact_boundary]
    return normalize([summary_record(), *kept])


def _last_boundary(records: Sequence[Record], end: int) -> int:
    return next((i for i in range(end - 1, -1, -1) if records[i].is_compact_boundary), -1)


def _has_thinking(records: Sequence[Record], indices: Iterable[int]) -> bool:
    return any(b.kind == "thinking" for i in indices for b in records[i].blocks)


def _all_index_cuts(cuts: _SessionCuts, tally: _Tally) -> None:
    records, calls = cuts.records, cuts.calls
    thinking = bool(calls) and _has_thinking(records, calls[-1].indices)
    first = next((i for i, r in enumerate(records) if is_sent(r)), len(records))
    for cut in range(first + 1, len(records)):
        if is_sent(records[cut]):
            cuts.tally(tally, cut, cuts.adjuster.adjust(cut), len(records), thinking=thinking)


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
    can stream sessions through `workbench.transcript.isolation.fold_sessions`."""

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
        from ..request.repair import repair as run_repair

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
