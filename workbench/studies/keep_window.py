"""Where SM-compact's keep window (docs §2.4, default config) would start if a compaction ran before
each API call of a session (`keep_window_cuts`), with ``lastSummarizedMessageId`` replayed by the
extraction trigger (docs §1.3): the cut points of the study's ``keep_window`` family, and what the
keep-window widget (`workbench.widgets._keep_window`) steps through.

Separate from the study (`workbench.studies.naive_cut`) because it is a replay of SM-compact's choice of start
(the trigger's state across calls, compact boundaries, the fallback to a full compaction when the
summarized id is gone, §2.6 step 4), not a check of the API rules; it computes `keep_window` with the
prefix sums of `_SessionCuts` instead of recounting the window per call.
"""

from __future__ import annotations

import bisect
import inspect
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

from ..memory.trigger import ExtractionTrigger
from ..tokens.context import token_count_with_estimation
from ..transcript.model import Session
from .tally import _SessionCuts

__all__ = ["keep_window_cuts"]

T = TypeVar("T")


class _Seen(Sequence[T]):
    """``records[offset:first] + [records[i] for i in extra]`` without copying (what the extraction
    trigger observes before each call, and the token counts beside it; it only looks at the end)."""

    def __init__(self, records: Sequence[T], offset: int, first: int, extra: Sequence[int]) -> None:
        self._records, self._offset, self._first, self._extra = records, offset, first, list(extra)
        self._size = first - offset + len(self._extra)

    def __len__(self) -> int:
        return self._size

    def _at(self, i: int) -> T:
        body = self._first - self._offset
        return self._records[self._offset + i] if i < body else self._records[self._extra[i - body]]

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return self._at(index)

    def __iter__(self) -> Iterator[T]:
        return (self._at(i) for i in range(self._size))

    def __reversed__(self) -> Iterator[T]:
        return (self._at(i) for i in range(self._size - 1, -1, -1))


def _keep_window(cuts: _SessionCuts, offset: int, end: int, last_summarized: int) -> tuple[int, int]:
    """`keep_window` (default config) of ``records[offset:end]`` with prefix sums: absolute
    ``(naive_start, start)``. ``last_summarized`` is an absolute index, or -1 when unset."""
    from ..strategies.keep_window import keep_window

    # the defaults of its signature (`inspect.signature`, not ``__kwdefaults__``: a wrapped function, as
    # mutmut's trampoline, has no keyword defaults of its own but keeps the wrapped one's signature)
    defaults = inspect.signature(keep_window).parameters
    min_tokens: int = defaults["min_tokens"].default
    min_text: int = defaults["min_text_block_messages"].default
    max_tokens: int = defaults["max_tokens"].default
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
            counts = _Seen(rough, offset, call.first, call.indices)
            trigger.observe(seen, tokens=token_count_with_estimation(seen, counts=counts))
    return out
