"""The naive-cut study computed directly, cut by cut: the reference `workbench.studies.naive_cut` is checked
against (``tests/studies/test_cuts.py``) and timed against (``benchmarks/bench_invariants.py``).

This is the study's original quadratic algorithm, unchanged: for every cut it normalises,
repairs and validates "summary + ``records[cut:]``" with `normalize`, `repair` and `validate`, and
adjusts with `adjust_to_api_invariants`, `adjust_for_thinking` and `keep_window`, each over the whole
rest of the session (roughly cubic in session length). `workbench.studies.naive_cut.invariants_report` must
return exactly what `reference_invariants_report` returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..memory.trigger import ExtractionTrigger
from ..request.invariants import adjust_for_thinking, adjust_to_api_invariants
from ..request.normalize import is_sent
from ..request.repair import repair
from ..request.validate import original_thinking_blocks, validate
from ..strategies.keep_window import keep_window
from ..tokens.context import token_count_with_estimation
from ..tokens.estimators import get_estimator
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .naive_cut import cut_request
from .tally import _Tally as _CountingTally

__all__ = ["reference_invariants_report", "reference_keep_window_cuts"]


def _last_boundary(records: Sequence[Record], end: int) -> int:
    return next((i for i in range(end - 1, -1, -1) if records[i].is_compact_boundary), -1)


def _has_thinking(records: Sequence[Record], indices: Iterable[int]) -> bool:
    return any(b.kind == "thinking" for i in indices for b in records[i].blocks)


class _Tally(_CountingTally):
    """The counts and the report of `study_tally._Tally`; each cut evaluated here by the old algorithm."""

    def add(  # type: ignore[override]  # the old per-cut evaluation; only the counting is shared
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


def reference_keep_window_cuts(session: Session) -> list[tuple[int, int, int, int, int]]:
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
    for step, offset, naive, start, end in reference_keep_window_cuts(session):
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


def reference_invariants_report(sessions: Iterable[Session]) -> dict[str, Any]:
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
