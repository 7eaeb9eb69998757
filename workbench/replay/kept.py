"""What an event kept, named without comparing the whole history at every event (`KeptIndex`).

An event names the records of the old context it kept unchanged by ``kept_uuids`` or, when shorter, by
``not_kept_uuids`` (`rows.kept_columns`: the uuids of the records before its call that it did not keep).
Computed from scratch, that is a set over every uuid of the history and every kept record at every event:
linear per event, so a strategy that rewrites a few records before every call (masking, clearing,
truncating) spends the square of the session's length on it (a fifth of an ``observation-masking`` replay
of a 1,000-call session).

A replay's context grows by exactly the records its history grows by (the engine appends each record once,
in order), so the cursor keeps, between calls, how many records of the context hold each uuid and which
uuids of the history no record of the context holds (``absent``). An in-place compaction that names its
``changed_at`` positions and keeps each position's uuid (a rewritten record keeps its uuid) changes neither,
and it did not keep exactly ``absent`` plus the uuids held only by the records it rewrote: read in the
size of what changed. Any other compaction is named the whole way (`rows.kept_columns`), and the index is
rebuilt from the context it left. Both give the same columns (``tests/replay/test_kept_index.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..strategies.base import Compaction
from ..transcript.model import Record
from .rows import kept_columns

__all__ = ["KeptIndex", "changes", "first_positions"]

Columns = dict[str, list[str | None] | None]


def first_positions(uuids: Sequence[str | None]) -> dict[str | None, int]:
    """Each uuid's first position in ``uuids`` (the order `rows.kept_columns` lists ``not_kept_uuids`` in)."""
    return dict(zip(reversed(uuids), range(len(uuids) - 1, -1, -1), strict=True))


class KeptIndex:
    """One cursor's view of its context's uuids against its history's (the module docstring)."""

    __slots__ = ("absent", "count", "first")

    def __init__(self, first: Mapping[str | None, int]) -> None:
        self.first = first  # the session's, shared: it depends on no strategy decision
        self.count: Counter[str] = Counter()
        self.absent: set[str] = set()

    def copy(self) -> KeptIndex:
        clone = KeptIndex(self.first)
        clone.count, clone.absent = self.count.copy(), set(self.absent)
        return clone

    def appended(self, records: Iterable[Record]) -> None:
        """The context and the history grew by ``records``."""
        count, absent = self.count, self.absent
        for record in records:
            uuid = record.uuid
            if uuid is not None:
                count[uuid] += 1
                absent.discard(uuid)

    def event(
        self,
        context: Sequence[Record],
        compaction: Compaction,
        kept: Callable[[], Sequence[Record]],
        history: Callable[[], Sequence[str | None]],
        before: int,
    ) -> Columns:
        """``kept_uuids`` / ``not_kept_uuids`` of ``compaction`` of ``context`` (`rows.kept_columns` of
        ``kept()`` against ``history()``, the uuids of the ``before`` records before the call), then the
        index of its result."""
        at = compaction.changed_at
        records = compaction.records
        if at is not None and len(records) == len(context) and all(context[i].uuid == records[i].uuid for i in at):
            first, count = self.first, self.count
            rewritten = Counter(uuid for i in at if (uuid := context[i].uuid) is not None)
            # a uuid no kept record holds, if the history has it (a strategy's own record may have a new one)
            missing = self.absent.union(
                uuid for uuid, n in rewritten.items() if count[uuid] == n and first.get(uuid, before) < before
            )
            if len(missing) < len(context) - len(at):  # `kept_columns`' choice: the shorter list
                return {"kept_uuids": None, "not_kept_uuids": sorted(missing, key=first.__getitem__)}
            return kept_columns(kept(), history())  # the index holds: the context has the same uuids
        uuids = history()
        columns = kept_columns(kept(), uuids)
        self.count = Counter(uuid for record in records if (uuid := record.uuid) is not None)
        self.absent = {uuid for uuid in uuids if uuid is not None and uuid not in self.count}
        return columns


def changes(
    context: Sequence[Record], compaction: Compaction
) -> tuple[list[Record], list[Record], Callable[[], list[Record]]]:
    """The records of ``context`` a compaction dropped, the records it added, and a function giving those of
    the old context it kept (compared by identity, in order; asked for only when the event lists them,
    `KeptIndex.event`); read at its ``changed_at`` positions when it names them (an in-place rewrite of a
    few records of a long context: comparing the whole context at every call made a masking replay's cost
    grow with the square of the session's length)."""
    records = compaction.records
    at = compaction.changed_at
    if at is not None and len(records) == len(context):

        def kept() -> list[Record]:
            out: list[Record] = []
            start = 0
            for position in at:
                out += records[start:position]
                start = position + 1
            out += records[start:]
            return out

        return [context[i] for i in at], [records[i] for i in at], kept
    survivors = {id(r) for r in records}
    old = {id(r) for r in context}
    dropped = [r for r in context if id(r) not in survivors]
    survived = [r for r in records if id(r) in old]
    return dropped, [r for r in records if id(r) not in old], lambda: survived
