"""What every cut family of the naive-cut study (`workbench.studies.naive_cut`) shares: one session's cut state,
built once (`_SessionCuts`: the adjusters, the request oracle of `workbench.studies.cuts`, prefix sums of
sent records, claude-padded tokens and text-block messages), which evaluates a cut four ways (naive,
repaired, adjusted, thinking-aware adjusted), and the per-variant counts of violating cuts (`_Tally`).

Separate from the study because the cut families (every index, the keep window:
`workbench.studies.keep_window`) and the report only walk cuts and read the counts; how a cut is
evaluated and counted is one concern, checked against the direct computation
(`workbench.studies.reference`) by ``tests/studies/test_cuts.py``.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

from ..request.normalize import is_sent
from ..request.validate import original_thinking_blocks
from ..tokens.estimators import get_estimator
from ..transcript.model import Session
from ..transcript.steps import api_calls
from .cuts import Adjuster, CutOracle, ThinkingAdjuster

__all__: list[str] = []

_VARIANTS = ("naive", "repaired", "adjusted", "adjusted_thinking")


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
    `workbench.studies.cuts`): the adjusters, the request oracle, and prefix sums of sent records,
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
