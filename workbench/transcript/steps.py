"""API calls ("steps") in a recorded session.

A step is one assistant API call: all assistant records sharing one ``message.id`` (one streamed
response is written as several records, docs §7.4). Records of other formats without message ids form
one step each. Synthetic assistants (``model == "<synthetic>"`` or ``isApiErrorMessage``) are not API
calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .model import Record

__all__ = ["ApiCall", "api_calls", "is_real_assistant"]


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One API call: indices (into the record list given) of its records, first and last."""

    step: int
    message_id: str | None
    indices: tuple[int, ...]

    @property
    def first(self) -> int:
        return self.indices[0]

    @property
    def last(self) -> int:
        return self.indices[-1]

    def usage(self, records: Sequence[Record]) -> Mapping[str, Any] | None:
        """The usage of the call's last record that has one (the final ``message_delta`` usage)."""
        for index in reversed(self.indices):
            if records[index].usage is not None:
                return records[index].usage
        return None


def is_real_assistant(record: Record) -> bool:
    return record.kind == "assistant" and record.model != "<synthetic>" and not record.is_api_error


def api_calls(records: Sequence[Record]) -> list[ApiCall]:
    """The API calls in ``records`` in order of their first record."""
    order: list[str | int] = []
    groups: dict[str | int, list[int]] = {}
    for index, record in enumerate(records):
        if not is_real_assistant(record):
            continue
        key: str | int = record.message_id if record.message_id is not None else index
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(index)
    return [ApiCall(step, key if isinstance(key, str) else None, tuple(groups[key])) for step, key in enumerate(order)]
