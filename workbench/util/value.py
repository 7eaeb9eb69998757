"""`Value`: a small value-class base for the few classes a warm ``ingest`` builds or reads (the per-file
summaries it reads from the cache, the load report, the cache's entry key).

They were dataclasses. Importing `dataclasses` imports `inspect` (and with it ``ast``, ``dis``,
``tokenize``), and each ``@dataclass`` compiles its methods with ``exec`` when its module loads: together
about a quarter of a warm ``ingest`` at 1x on this machine (README "Start-up"). A subclass lists
its fields in ``__match_args__`` in ``__init__``'s order, makes them its ``__slots__`` and sets them in
its own ``__init__``; `Value` gives it equality, a repr and a compact pickle (the class and the field
values, passed back to ``__init__``: what the parsed-session cache stores) over those fields.
`FrozenValue` is also hashable and refuses assignment after ``__init__`` (which sets its fields with
`FrozenValue._set_fields`), as ``@dataclass(frozen=True)`` did.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FrozenValue", "Value", "replace"]


class Value:
    """Equality, repr and pickling over the subclass's ``__match_args__`` (its fields, in ``__init__`` order)."""

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]
        # (defining __eq__ alone makes the class unhashable, as a non-frozen dataclass)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return type(self), self._fields()

    def __replace__(self, **changes: Any) -> Any:
        """A copy with ``changes`` (Python 3.13's `copy.replace` protocol; `replace` on older ones)."""
        unknown = set(changes) - set(self.__match_args__)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(sorted(unknown))}")
        return type(self)(*(changes.get(name, getattr(self, name)) for name in self.__match_args__))


class FrozenValue(Value):
    """A `Value` that is hashable and cannot be assigned to once made (``__init__`` calls `_set_fields`)."""

    __slots__ = ()

    def _set_fields(self, *values: object) -> None:
        """Set every field, in ``__match_args__`` order (what ``__init__`` does instead of assigning)."""
        for name, value in zip(self.__match_args__, values, strict=True):
            object.__setattr__(self, name, value)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def replace(obj: Any, /, **changes: Any) -> Any:
    """``obj`` with ``changes``: a `Value`'s ``__replace__``, else `dataclasses.replace` (code that takes a
    `Session` or a `transcript.summary.SessionInfo` alike)."""
    if isinstance(obj, Value):
        return obj.__replace__(**changes)
    import dataclasses

    return dataclasses.replace(obj, **changes)
