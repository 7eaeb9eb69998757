"""`canonical_json` writes what ``JSON.stringify`` writes: the standard library's compact JSON with non-ASCII
kept, and every lone UTF-16 surrogate escaped (well-formed ``JSON.stringify``, ES2019), so the text always
encodes as UTF-8."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from workbench.transcript.block import canonical_json

_SURROGATE = re.compile("[\ud800-\udfff]")
_CHARS = ["a", "Z", " ", "\n", "\t", '"', "\\", "/", "\x00", "\x1f", "\x7f", "é", "…", "\u2028", "😀"]
_CHARS += ["\ud800", "\udbff", "\udc00", "\udfff"]
_TEXT = st.text(alphabet=st.sampled_from(_CHARS), max_size=12)
_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _reference(value: object) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@given(_VALUE)
def test_the_standard_librarys_compact_json_with_lone_surrogates_escaped(value: object) -> None:
    text = canonical_json(value)
    assert text == _reference(value)
    text.encode("utf-8")  # never raises
    if _SURROGATE.search(text) is None and "\\ud" not in text:  # escapes of adjacent surrogates decode as one pair
        assert json.loads(text) == value


def test_examples() -> None:
    assert canonical_json({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'
    assert canonical_json("x\udc80y") == '"x\\udc80y"'
    assert canonical_json(["\ud83d", "😀"]) == '["\\ud83d","😀"]'  # a lone high surrogate; a real pair is one character
    assert canonical_json("plain") == '"plain"'
