"""JavaScript semantics that Claude Code's estimators depend on (docs §6).

Claude Code measures ``string.length`` (UTF-16 code units, so an emoji counts 2), rounds with
``Math.round`` (half rounds up, also for .5) and serialises with ``JSON.stringify`` (no spaces).
"""

from __future__ import annotations

import math
from typing import Any

from ..transcript.model import canonical_json

__all__ = ["js_len", "js_round", "js_stringify", "rough_tokens"]


def js_len(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_round(value: float) -> int:
    """``Math.round``: rounds half up (towards +infinity), unlike Python's banker's ``round``."""
    return math.floor(value + 0.5)


def js_stringify(value: Any) -> str:
    """``JSON.stringify`` for JSON-loaded values (no spaces, non-ASCII kept)."""
    return canonical_json(value)


def rough_tokens(text: str, bytes_per_token: float = 4) -> int:
    """``roughTokenCountEstimation``: ``Math.round(s.length / bytesPerToken)``."""
    return js_round(js_len(text) / bytes_per_token)
