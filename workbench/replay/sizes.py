"""Context sizes for the replay engine: the uncompacted size in O(log n) per query, the session's
real-tokens-per-estimated-token ratio, and per-record counts computed only when a strategy asks."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate
from typing import overload

from ..tokens.cache import cached_estimator
from ..tokens.context import get_token_usage, prompt_tokens, usage_tokens
from ..transcript.model import Record
from ..transcript.steps import ApiCall, api_calls

__all__ = ["CountTable", "LazyCounts", "UncompactedSize", "session_scale", "strip_recorded_compactions"]


def strip_recorded_compactions(records: Sequence[Record]) -> tuple[list[Record], list[tuple[int, Record]]]:
    """Records without recorded boundaries/summaries, and each boundary with its position in the output."""
    kept: list[Record] = []
    boundaries: list[tuple[int, Record]] = []
    for record in records:
        if record.is_compact_boundary:
            boundaries.append((len(kept), record))
        elif record.is_compact_summary:
            continue
        else:
            kept.append(record)
    return kept, boundaries


class UncompactedSize:
    """``tokenCountWithEstimation`` over the uncompacted record list in O(log n) per query."""

    def __init__(
        self,
        records: Sequence[Record],
        rough: Sequence[int],
        boundaries: Sequence[tuple[int, Record]],
    ) -> None:
        self.records = records
        self.prefix = [0, *accumulate(rough)]
        #: each record's real usage (`get_token_usage`), None where it has none
        self.usages = [get_token_usage(record) for record in records]
        #: indices of the records with a usage, in order, and for each the index of the first record
        #: of its response (where the estimate after that usage starts, docs §6)
        self.measured = [index for index, usage in enumerate(self.usages) if usage is not None]
        #: ``usage_tokens`` of each of them, aligned with ``measured`` (asked twice before every call)
        self.totals = [usage_tokens(self.usages[index] or {}) for index in self.measured]
        self.anchors = _sibling_anchors(records, self.measured)
        #: indices of the compact boundaries still in ``records`` (each starts a segment)
        self.segments = [index for index, record in enumerate(records) if record.is_compact_boundary]
        self.offsets = self._offsets(boundaries)
        self.overhead = self._overhead()

    def _overhead(self) -> int:
        """What the first request measured beyond the rough size of its messages: system prompt, tool
        definitions, CLAUDE.md (not in transcripts). 0 when the session has no usage."""
        if not self.measured:
            return 0
        first = self.measured[0]
        while first > 0 and self.records[first - 1].message_id == self.records[first].message_id:
            first -= 1
        return max(0, prompt_tokens(self.usages[first] or {}) - self.prefix[first])

    def _offsets(self, boundaries: Sequence[tuple[int, Record]]) -> list[tuple[int, int]]:
        """(first index whose usage is post-boundary, tokens the recorded compaction removed), for every
        recorded compaction and recorded microcompact."""
        out = []
        self.offset_at: dict[int, int] = {}  # boundary position → offsets of it and every earlier boundary
        total = 0
        for position, boundary in boundaries:
            pre = boundary.compact_metadata.get("preTokens")
            k = bisect_left(self.measured, position)
            if not isinstance(pre, int) or k == len(self.measured):
                continue
            first_call = self.measured[k]
            between = self.prefix[first_call] - self.prefix[position]
            removed = pre + between - prompt_tokens(self.usages[first_call] or {})
            out.append((first_call, removed))
            total += removed
            self.offset_at[position] = total
        # A recorded microcompact (``microcompact_boundary``, versions 1.0.68–2.1.20) cleared tool results in
        # place: the transcript keeps them whole while every later usage counts them cleared, so its
        # ``tokensSaved`` is added back from the first usage after it.
        for index, record in enumerate(self.records):
            saved = record.microcompact_metadata.get("tokensSaved") if record.is_microcompact_boundary else None
            k = bisect_left(self.measured, index)
            if isinstance(saved, int) and saved > 0 and k < len(self.measured):
                out.append((self.measured[k], saved))
        return out

    def before(self, index: int) -> int:
        """Context size just before ``records[index]`` is sent."""
        if index == 0:
            return 0
        k = bisect_right(self.measured, index - 1) - 1  # the last usage before ``index``
        b = bisect_right(self.segments, index - 1) - 1
        segment = self.segments[b] if b >= 0 else 0
        if k < 0 or self.measured[k] < segment:  # nothing measured yet in this segment: rough + overhead
            return self.overhead + self.prefix[index] - self.prefix[segment]
        last, anchor = self.measured[k], self.anchors[k]
        offset = sum(removed for first, removed in self.offsets if last >= first)
        return self.totals[k] + offset + self.prefix[index] - self.prefix[anchor + 1]

    def usage_before(self, index: int) -> int | None:
        """``tokenCountFromLastAPIResponse`` just before ``records[index]``: the last usage total (plus what
        stripped recorded compactions removed before it); 0 before the segment's first response, None when
        the session records no usage at all."""
        if not self.measured:
            return None
        k = bisect_right(self.measured, index - 1) - 1
        b = bisect_right(self.segments, index - 1) - 1
        segment = self.segments[b] if b >= 0 else 0
        if k < 0 or self.measured[k] < segment:
            return 0
        last = self.measured[k]
        offset = sum(removed for first, removed in self.offsets if last >= first)
        return self.totals[k] + offset


def _sibling_anchors(records: Sequence[Record], measured: Sequence[int]) -> list[int]:
    """For each usage-bearing record, the first record of its response as ``tokenCountWithEstimation``
    finds it (`workbench.tokens.context`): walk back over non-assistant records and same-``message.id``
    siblings, stop at any assistant with another id (a synthetic one included, docs §6 step 2)."""
    anchors: list[int] = []
    run_id: str | None = None
    run_start = 0
    m = 0
    for index, record in enumerate(records):
        if record.kind == "assistant" and record.message_id is not None and record.message_id != run_id:
            run_id, run_start = record.message_id, index
        if m < len(measured) and measured[m] == index:
            anchors.append(run_start if record.message_id is not None and record.message_id == run_id else index)
            m += 1
    return anchors


def session_scale(
    records: Sequence[Record],
    counts: Sequence[int],
    *,
    end: int | None = None,
    bounds: tuple[float, float] = (0.5, 3.0),
    calls: Sequence[ApiCall] | None = None,
) -> float:
    """Real tokens per estimated token in this session, from its recorded usage.

    The first API call fixes the overhead transcripts do not record (system prompt, tools):
    ``overhead = prompt(first) − Σ estimate(before first)``. The ratio is then
    ``(prompt(last) − overhead) / Σ estimate(before last)`` at the last call before any recorded compact
    boundary (or before ``end``, where stripped boundaries were), the widest lever, clamped to
    ``bounds``; 1.0 where the session has no usage. ``calls``: ``api_calls(records)`` if already known.
    """
    calls = [c for c in (api_calls(records) if calls is None else calls) if c.usage(records) is not None]
    boundary = next((i for i, r in enumerate(records) if r.is_compact_boundary), len(records))
    if end is not None:
        boundary = min(boundary, end)
    calls = [c for c in calls if c.first < boundary]
    if len(calls) < 2:
        return 1.0
    prefix = [0, *accumulate(counts)]
    first, last = calls[0], calls[-1]
    overhead = prompt_tokens(first.usage(records) or {}) - prefix[first.first]
    grown = prefix[last.first]
    if grown <= 0:
        return 1.0
    ratio = (prompt_tokens(last.usage(records) or {}) - overhead) / grown
    return min(max(ratio, bounds[0]), bounds[1])


class CountTable:
    """One estimator's per-record counts for one replayed session, by record identity, holding every record
    it has a count for: CPython reuses a freed object's address, so a table keyed by ``id`` that did not
    keep its records alive handed a record made later (a strategy's note, a rewritten copy) the count of
    one that had died at that address (an aider replay of a real session compacted once less when its
    records came from the parsed-session cache, where other objects happened to be alive)."""

    __slots__ = ("_counts", "_held")

    def __init__(self, records: Sequence[Record] = (), counts: Sequence[int] = ()) -> None:
        self._counts: dict[int, int] = {}
        self._held: list[Record] = []
        self.add(records, counts)

    def add(self, records: Sequence[Record], counts: Sequence[int]) -> None:
        self._counts.update(zip(map(id, records), counts, strict=True))
        self._held.extend(records)

    def missing(self, records: Sequence[Record]) -> list[Record]:
        counts = self._counts
        return [r for r in records if id(r) not in counts]

    def of(self, records: Sequence[Record]) -> tuple[int, ...]:
        counts = self._counts
        return tuple(counts[id(r)] for r in records)


class LazyCounts(Sequence[int]):
    """Per-record counts aligned with a context, computed on first access (then kept in ``table``)."""

    def __init__(self, items: Sequence[Record], table: CountTable, name: str) -> None:
        self._items, self._table, self._name = items, table, name
        self._values: tuple[int, ...] | None = None

    def _resolve(self) -> tuple[int, ...]:
        if self._values is None:
            missing = self._table.missing(self._items)
            if missing:
                self._table.add(missing, cached_estimator(self._name).count_many(missing))
            self._values = self._table.of(self._items)
        return self._values

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...

    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        return self._resolve()[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[int]:
        return iter(self._resolve())
