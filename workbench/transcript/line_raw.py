"""``Record.raw`` of a JSONL line: the parsed object, kept as the line's text and decoded again when read.

A loaded Claude Code record holds its line twice: as text (``Record.line``, for byte-identical export and
the content hash) and parsed (``Record.raw``). Replays read almost nothing of ``raw`` beyond what the
Record's own fields already hold (the ``version`` of a call's first record, a ``cwd``, a queue operation),
yet a parsed-session cache entry stored and restored every dict and string of it: the envelope of every
line (uuids, cwd, gitBranch, usage, …) is most of the objects an entry restores. `LineRaw` is a read-only
mapping over the line: built by the loader around the object it has just parsed (nothing decoded twice on
a cold load), pickled as the line alone (the same string object as ``Record.line``, so stored once), and
decoded from that text with the loader's own decoder (`jsonio.loads`, so the value is exactly what the
loader parsed) the first time a key is read after a restore. The few top-level keys replays read of
(nearly) every record, `KEPT` (``version``: the behaviour of the call's Claude Code version; ``cwd``: the
memory note's path and facts; ``isVirtual``: whether a record is sent, docs §8.1), are kept beside the
line as they were parsed, so reading them decodes nothing (decoding a call's whole first line to learn
its ``version`` cost more than the restore saved).

Measured on the 8x corpus (71,360 records, 8 copies of the real Claude Code corpus): the cache entries
shrink from 310 to 238 MB and restoring them takes about a quarter less time (README "Scale").

It is a `Mapping`, not a ``dict``: ``dict(raw)``, ``{**raw}``, ``raw.get``, ``==`` with a dict work;
``json.dumps(raw)`` does not (write ``Record.line``, which is the exact text, or ``dict(raw)``).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from .jsonio import loads

__all__ = ["KEPT", "LineRaw"]

_BOM = "\ufeff"

#: Top-level keys answered without decoding the line (module docstring).
KEPT: frozenset[str] = frozenset({"version", "cwd", "isVirtual"})


class LineRaw(Mapping[str, Any]):
    """The JSON object of one transcript line, decoded from ``line`` on first use (module docstring).

    ``value``: the object the loader already parsed from ``line`` (kept, not decoded again), or None;
    ``kept``: the object's `KEPT` keys that it has, with their values. One of the two is needed (``kept`` is
    taken from ``value`` only when pickled: most loaded records never are)."""

    __slots__ = ("_kept", "_line", "_value")

    def __init__(self, line: str, value: dict[str, Any] | None = None, kept: dict[str, Any] | None = None) -> None:
        if value is None and kept is None:
            raise ValueError("LineRaw needs the parsed value or its kept keys")
        self._line = line
        self._value = value
        self._kept = kept

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
        if self._value is None and key in KEPT:
            return self._kept[key]
        return self.value[key]

    def get(self, key: str, default: Any = None) -> Any:
        if self._value is None and key in KEPT:
            return self._kept.get(key, default)
        return self.value.get(key, default)

    def __contains__(self, key: object) -> bool:
        if self._value is None and key in KEPT:
            return key in self._kept
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
        kept = self._kept
        if kept is None:
            value = self.value
            kept = self._kept = {key: value[key] for key in KEPT if key in value}
        return LineRaw, (self._line, None, kept)

    def __deepcopy__(self, memo: dict[int, Any]) -> LineRaw:
        return self  # read-only, like the Record that holds it
