"""A few recent answers of a pure function of a sequence of immutable objects, looked up by identity.

`workbench.replay.replay_group` steps the configs of a branch through the same call from the same state: at
a compaction their strategies see the very same records, and the costly parts of the answer that do not
depend on the config (where the API rules move a cut, the estimated size of what is kept) come out alike.
`IdentityMemo` keeps the last few of them. A hit needs the same items (``is``, compared in C) and the same
extra key, so it is exact for a pure function of immutable items; each entry holds its items, so their ids
cannot be reused while it is kept. Holding them also keeps their session alive: `release_memos` empties
every memo, and the replay engine calls it when a session's replay ends, so a command replaying a corpus
holds one session at a time.
"""

from __future__ import annotations

import operator
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "release_memos"]

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """The last ``size`` answers, each for a sequence of items (by identity) and an extra hashable key."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], tuple[list[Any], T]] = OrderedDict()
        _MEMOS.add(self)

    def get(self, items: Sequence[Any], extra: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, or the answer it gave for the same items and ``extra`` when that is still kept."""
        key = (len(items), id(items[0]) if items else None, id(items[-1]) if items else None, extra)
        found = self._entries.get(key)
        if found is not None and all(map(operator.is_, found[0], items)):
            self._entries.move_to_end(key)
            return found[1]
        value = compute()
        self._entries[key] = (list(items), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


#: Every memo of the process (weakly: a memo that is gone needs no release).
_MEMOS: weakref.WeakSet[IdentityMemo[Any]] = weakref.WeakSet()


def release_memos() -> None:
    """Empty every `IdentityMemo`: the items they hold (a session's records) can then be freed."""
    for memo in list(_MEMOS):
        memo.clear()
