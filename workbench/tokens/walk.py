"""One walk over a message's blocks, shared by every per-record estimator.

Claude Code's two estimators and the tokenizer-based ones agree on *what* text a block contributes
(docs §3.4, §6): text blocks their text, thinking its text without the signature, redacted thinking its
``data``, tool_use ``name + JSON.stringify(input ?? {})``, tool_result its content (string or array,
recursively), images and documents a flat 2000, anything else its whole JSON. They differ in how a piece
of text becomes tokens, and in which records count; that is passed in as ``measure``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..transcript.model import Block, Record
from .js import js_stringify

__all__ = ["IMAGE_TOKENS", "block_tokens", "record_tokens"]

#: Flat charge per image or document block (docs §6: "the API actually charges about 2000").
IMAGE_TOKENS = 2000

Measure = Callable[[str], int]


def _raw_block_tokens(raw: Mapping[str, Any], measure: Measure) -> int:
    block_type = raw.get("type")
    if block_type == "text":
        text = raw.get("text")
        return measure(text if isinstance(text, str) else "")
    if block_type in ("image", "document"):
        return IMAGE_TOKENS
    if block_type == "tool_result":
        content = raw.get("content")
        if isinstance(content, str):
            return measure(content)
        if isinstance(content, list):
            return sum(_raw_block_tokens(part, measure) if isinstance(part, Mapping) else 0 for part in content)
        return 0
    if block_type == "tool_use":
        name = raw.get("name")
        value = raw.get("input")
        return measure((name if isinstance(name, str) else "") + js_stringify(value if value is not None else {}))
    if block_type == "thinking":
        text = raw.get("thinking")
        return measure(text if isinstance(text, str) else "")
    if block_type == "redacted_thinking":
        data = raw.get("data")
        return measure(data if isinstance(data, str) else "")
    return measure(js_stringify(dict(raw)))


def block_tokens(block: Block, measure: Measure) -> int:
    return _raw_block_tokens(block.raw, measure)


def record_tokens(record: Record, measure: Measure, *, string_content_counts: bool = True) -> int:
    """Sum over a user/assistant record's blocks; other record kinds count 0.

    ``string_content_counts=False`` reproduces ``estimateMessageTokens``, which counts string-content
    user messages as 0 (docs §2.3).
    """
    if record.kind not in ("user", "assistant") or not record.has_content:
        return 0
    if record.string_content:
        return measure(record.blocks[0].text) if string_content_counts and record.blocks else 0
    return sum(_raw_block_tokens(block.raw, measure) for block in record.blocks)
