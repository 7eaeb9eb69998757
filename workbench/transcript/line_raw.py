"""``Record.raw`` of a JSONL line: the parsed object, kept as the line's text and decoded again when read.

A loaded Claude Code record holds its line as text (``Record.line``, for byte-identical export and the
content hash) and, as its fields and blocks, everything compaction reads of it. Replays read almost
nothing of the whole parsed object beyond that (the ``version`` of a call's first record, a ``cwd``, a
queue operation), yet holding it cost memory on every load (the envelope of every line: uuids, cwd,
gitBranch, the message dict, …) and, pickled, was most of the objects a parsed-session cache entry
restored. `LineRaw` is a read-only mapping over the line: the loader builds it from the object it has
just parsed (`LineRaw.of`) and lets that object go (the blocks keep their own dicts), it pickles as the
line (the same string object as ``Record.line``, so stored once), and it decodes the text again with the
loader's own decoder (`jsonio.loads`, so the value is exactly what the loader parsed) the first time a
key is read, then keeps it. The few top-level keys replays read of (nearly) every record, `KEPT`
(``version``: the behaviour of the call's Claude Code version; ``cwd``: the memory note's path and facts;
``isVirtual``: whether a record is sent, docs §8.1), are kept beside the line, so reading them decodes
nothing (decoding a call's whole first line to learn its ``version`` cost more than the restore saved).
A record behaves the same whether it was parsed now or restored from the cache.

Measured on the 8x corpus (71,360 records, 8 copies of the real Claude Code corpus): the cache entries
shrink from 310 to 238 MB and restoring them takes about a third less time; a file of 10⁶ tiny lines
loads in less memory (docs/performance.md).

It is a `Mapping`, not a ``dict``: ``dict(raw)``, ``{**raw}``, ``raw.get``, ``==`` with a dict work;
``json.dumps(raw)`` does not (write ``Record.line``, which is the exact text, or ``dict(raw)``).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from .jsonio import loads

__all__ = ["ABSENT", "KEPT", "LineRaw"]

_BOM = "\ufeff"

#: Top-level keys answered without decoding the line (module docstring), in the order `LineRaw` keeps them.
KEPT: tuple[str, ...] = ("version", "cwd", "isVirtual")
_AT = {key: index for index, key in enumerate(KEPT)}


class _Absent:
    """A kept key the line does not have (pickled by name: restores as the one `ABSENT`)."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()
_new = object.__new__


class LineRaw(Mapping[str, Any]):
    """The JSON object of one transcript line, decoded from ``line`` on first use (module docstring).

    ``kept``: the object's values of `KEPT`, in that order (`ABSENT` for a key it does not have); `of`
    takes them from the parsed object."""

    __slots__ = ("_kept", "_line", "_value")

    def __init__(self, line: str, kept: tuple[Any, ...]) -> None:
        if len(kept) != len(KEPT):
            raise ValueError(f"LineRaw needs the values of {KEPT}, got {len(kept)}")
        self._line = line
        self._kept = kept
        self._value: dict[str, Any] | None = None

    @staticmethod
    def of(line: str, value: dict[str, Any]) -> LineRaw:
        """The raw of ``line``, which the loader parsed into ``value`` (not kept: decoded again if read).
        Made without ``__init__`` (one per loaded line: half the cost)."""
        raw = _new(LineRaw)
        raw._line = line
        get = value.get
        raw._kept = (get("version", ABSENT), get("cwd", ABSENT), get("isVirtual", ABSENT))
        raw._value = None
        return raw

    @property
    def value(self) -> dict[str, Any]:
        """The parsed object (decoded now if it was not yet)."""
        value = self._value
        if value is None:
            value = self._value = loads(self._line.removeprefix(_BOM).encode("utf-8"))
        return value

    @property
    def decoded(self) -> bool:
        """Whether the object is in memory (for tests: a restore must not decode it)."""
        return self._value is not None

    def __getitem__(self, key: str) -> Any:
        at = _AT.get(key)
        if at is not None and self._value is None:
            value = self._kept[at]
            if value is ABSENT:
                raise KeyError(key)
            return value
        return self.value[key]

    def get(self, key: str, default: Any = None) -> Any:
        at = _AT.get(key)
        if at is not None and self._value is None:
            value = self._kept[at]
            return default if value is ABSENT else value
        return self.value.get(key, default)

    def __contains__(self, key: object) -> bool:
        at = _AT.get(key) if isinstance(key, str) else None
        if at is not None and self._value is None:
            return self._kept[at] is not ABSENT
        return key in self.value

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def keys(self) -> KeysView[str]:
        return self.value.keys()

    def items(self) -> ItemsView[str, Any]:
        return self.value.items()

    def values(self) -> ValuesView[Any]:
        return self.value.values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineRaw):
            return self._line == other._line or self.value == other.value
        return self.value == other

    __hash__ = None  # type: ignore[assignment]  # like the dict it stands for

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> tuple[Any, ...]:
        return LineRaw, (self._line, self._kept)

    def __deepcopy__(self, memo: dict[int, Any]) -> LineRaw:
        return self  # read-only, like the Record that holds it
