"""Every compaction cut of a session, evaluated in near-linear total time.

The naive-cut study (`workbench.studies.naive_cut`) asks, for every cut ``c`` of a session (and for the keep
window before every API call), what the API would say to "summary + ``records[c:end]``" as cut, after
Claude Code's pairing repair, after the reference adjustment and after the thinking-aware one. Done
directly, each cut normalises, repairs and validates the whole rest of the session and adjusts by
scanning it, and the thinking-aware adjustment tries many candidate cuts inside a long tool loop:
roughly cubic in session length (12 s on the corpus, 292 s on sessions three times longer). These
modules give the same answers from work done once per session:

* `Adjuster` (`workbench.studies.cuts_adjuster`): `adjust_to_api_invariants` on any window
  ``records[lo:hi]`` in O(crossing ids · log n). Only ids that *cross* the cut can move it (a tool_use
  before the cut with a result after it; a ``message.id`` with records on both sides), and those are
  listed per position beforehand.
* `CutOracle` (`workbench.studies.cuts_oracle`): the request's rule sets. The session is split into
  *chunks* at clean points (an assistant record that starts a new response right after a user message,
  with no ``message.id`` and no tool id occurring on both sides), where normalising, repairing and
  validating the concatenation of chunks equals doing it per chunk. A cut's request is then its *head*
  (normalised directly), whole chunks (prefix tables of their rule sets and repair counts) and a
  partial last chunk for requests that end before the session does; the two rules that depend on the
  request's end (the thinking rule, with a jump table over the chunks, and ``thinking_modified``) are
  evaluated on that decomposition. Its module docstring has the details.
* `ThinkingAdjuster` (here): `adjust_for_thinking` with the two above; the candidate responses of a tool
  loop are judged once per loop, not once per cut.

Everything is a re-derivation of `normalize`, `repair`, `validate`, `adjust_to_api_invariants` and
`adjust_for_thinking` (the reference implementations, unchanged); ``tests/studies/test_cuts.py``
checks it equal to them cut by cut, and ``benchmarks/bench_invariants.py`` measures the scaling.
Sessions without ``message.id``s have no clean points (one chunk): still correct, not faster.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from ..request.normalize import is_sent
from ..transcript.model import Record
from .cuts_adjuster import Adjuster
from .cuts_oracle import _THINKING, MODIFIED_RULE, THINKING_RULE, CutEval, CutOracle

__all__ = ["MODIFIED_RULE", "THINKING_RULE", "Adjuster", "CutEval", "CutOracle", "ThinkingAdjuster"]


def _starts_with_thinking(records: Sequence[Record]) -> bool:
    blocks = [b for r in records for b in r.blocks]
    first = next((b for b in blocks if not (b.type == "text" and not b.text.strip())), None)
    return first is not None and first.type in _THINKING


class ThinkingAdjuster:
    """`adjust_for_thinking` over windows of one record list, with `Adjuster` and `CutOracle`."""

    def __init__(self, records: Sequence[Record], adjuster: Adjuster, oracle: CutOracle) -> None:
        from ..request.invariants import _is_prompt

        self.records = records
        self.adjuster = adjuster
        self.oracle = oracle
        self._prompts = [i for i, r in enumerate(records) if _is_prompt(r)]
        self._boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
        self._loops: dict[tuple[int, int, int, int], tuple[list[int], list[int | None]]] = {}

    def _violates(self, cut: int, end: int) -> bool:
        return self.oracle.evaluate(cut, end)[0].thinking_at is not None

    def _cut_sensitive(self, cut: int, end: int) -> bool:
        result = self.oracle.evaluate(cut, end)[0]
        return result.summary_first and result.thinking_at == 1

    def _loop(self, low: int, floor: int, lo: int, hi: int) -> tuple[list[int], list[int | None]]:
        """The loop's responses from ``low`` (first record indices, ascending) and, per response, the
        nearest candidate cut at or below it that passes (None: none does)."""
        key = (low, floor, lo, hi)
        if key in self._loops:
            return self._loops[key]
        k = bisect.bisect_left(self._prompts, low)
        limit = min(self._prompts[k] if k < len(self._prompts) else hi, hi)
        groups: dict[Any, list[int]] = {}
        for i in range(low, limit):
            record = self.records[i]
            if record.kind == "assistant" and is_sent(record):
                groups.setdefault(record.message_id if record.message_id is not None else ("record", i), []).append(i)
        firsts = sorted(ix[0] for ix in groups.values())
        members = {ix[0]: ix for ix in groups.values()}
        best: list[int | None] = []
        for first in firsts:
            found = None
            if _starts_with_thinking([self.records[i] for i in members[first]]):
                candidate = self.adjuster.adjust(first, lo, hi)
                if candidate >= floor and not self._violates(candidate, hi):
                    found = candidate
            best.append(found if found is not None else (best[-1] if best else None))
        self._loops[key] = (firsts, best)
        return firsts, best

    def adjust(self, start: int, lo: int = 0, hi: int | None = None, *, thinking: bool = True) -> int:
        """``lo + adjust_for_thinking(records[lo:hi], start - lo, thinking=thinking)``."""
        hi = len(self.records) if hi is None else hi
        adjusted = self.adjuster.adjust(start, lo, hi)
        if not thinking or adjusted <= lo or adjusted >= hi:
            return adjusted
        if not self._cut_sensitive(adjusted, hi):
            return adjusted
        b = bisect.bisect_left(self._boundaries, min(start, hi)) - 1
        floor = self._boundaries[b] + 1 if b >= 0 and self._boundaries[b] >= lo else lo
        p = bisect.bisect_left(self._prompts, adjusted) - 1
        prompt = self._prompts[p] if p >= 0 and self._prompts[p] >= floor else None
        low = prompt + 1 if prompt is not None else floor
        firsts, best = self._loop(low, floor, lo, hi)
        below = bisect.bisect_left(firsts, adjusted) - 1  # responses of the loop before the cut
        if below >= 0 and best[below] is not None:
            return best[below]  # type: ignore[return-value]
        candidate = self.adjuster.adjust(prompt if prompt is not None else floor, lo, hi)
        if floor <= candidate < adjusted and not self._violates(candidate, hi):
            return candidate
        return adjusted
