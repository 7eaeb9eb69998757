"""`Adjuster`: `adjust_to_api_invariants` on any window ``records[lo:hi]`` of one record list in
O(crossing ids · log n), for the near-linear naive-cut study (`workbench.studies.cuts`).

Only ids that *cross* the cut can move it (a tool_use before the cut with a result after it; a
``message.id`` with records on both sides), and those are listed per position beforehand.
``tests/studies/test_cuts.py`` checks it equal to `workbench.request.invariants.adjust_to_api_invariants`
cut by cut.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..transcript.model import Record

__all__ = ["Adjuster"]


def _crossing(spans: Mapping[Any, Sequence[int]], size: int) -> dict[int, list[Any]]:
    """Position p → the keys whose positions lie on both sides of p (some < p, some >= p)."""
    out: dict[int, list[Any]] = defaultdict(list)
    for key, positions in spans.items():
        for p in range(positions[0] + 1, min(positions[-1], size) + 1):
            out[p].append(key)
    return out


class Adjuster:
    """`adjust_to_api_invariants` on windows of one record list (module docstring)."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.n = len(records)
        uses: dict[str, set[int]] = defaultdict(set)
        results: dict[str, set[int]] = defaultdict(set)
        groups: dict[str, list[int]] = defaultdict(list)
        for i, record in enumerate(records):
            if record.kind == "assistant":
                for tool_id in record.tool_use_ids():
                    uses[tool_id].add(i)
                if record.message_id is not None:
                    groups[record.message_id].append(i)
            elif record.kind == "user" and not record.string_content:
                for tool_id in record.tool_result_ids():
                    results[tool_id].add(i)
        self._uses = {k: sorted(v) for k, v in uses.items()}
        self._results = {k: sorted(v) for k, v in results.items()}
        self._groups = dict(groups)
        spans = {k: (self._uses[k][0], self._results[k][-1]) for k in self._results if k in self._uses}
        self._tools_at = _crossing({k: v for k, v in spans.items() if v[0] < v[1]}, self.n)
        self._groups_at = _crossing({k: (v[0], v[-1]) for k, v in self._groups.items() if v[0] < v[-1]}, self.n)

    def adjust(self, start: int, lo: int = 0, hi: int | None = None) -> int:
        """``lo + adjust_to_api_invariants(records[lo:hi], start - lo)``."""
        hi = self.n if hi is None else hi
        if start <= lo or start >= hi:
            return start
        pair_start = start
        for tool_id in self._tools_at.get(start, ()):
            found = self._results[tool_id]
            j = bisect.bisect_left(found, start)
            if j == len(found) or found[j] >= hi:  # no kept tool_result
                continue
            used = self._uses[tool_id]
            k = bisect.bisect_left(used, start)
            if k < len(used) and used[k] < hi:  # its tool_use is kept too
                continue
            if k and used[k - 1] >= lo:  # pulled back to the nearest earlier tool_use
                pair_start = min(pair_start, used[k - 1])
        adjusted = pair_start
        for message_id in self._groups_at.get(pair_start, ()):
            group = self._groups[message_id]
            j = bisect.bisect_left(group, pair_start)
            if j == len(group) or group[j] >= hi:  # no kept sibling
                continue
            k = bisect.bisect_left(group, lo)
            if k < j:
                adjusted = min(adjusted, group[k])
        return adjusted
