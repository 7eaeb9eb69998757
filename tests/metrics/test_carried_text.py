"""The text rules of `workbench.metrics.carried` normalise lines as their regular expressions define them."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.metrics import carried

GUTTER = re.compile(r"^\s*\d+[→\t|:]\s?")
SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return SPACE.sub(" ", text).strip()


def _content_lines(text: str) -> tuple[str, ...]:
    lines = (_norm(GUTTER.sub("", line)) for line in text.splitlines())
    return tuple(line for line in lines if len(line) >= carried.MIN_LINE)


def _flat(text: str) -> str:
    return _norm("\n".join(GUTTER.sub("", line) for line in text.splitlines()))


def test_split_whitespace_and_decimal_digits_are_the_patterns_classes() -> None:
    """The fast paths rest on `str.split` splitting on exactly ``\\s`` and `str.isdecimal` being ``\\d``,
    over every code point."""
    space, digit = re.compile(r"\s"), re.compile(r"\d")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert bool(space.match(char)) == char.isspace(), hex(code)
        assert bool(digit.match(char)) == char.isdecimal(), hex(code)


# lines made of the characters that decide: gutters, unicode digits and spaces, separators, text
PIECES = st.lists(
    st.sampled_from(
        [
            " ",
            "\t",
            "\u00a0",
            "\u2003",
            "\x1c",
            "\u2028",
            "\n",
            "\r\n",
            "12",
            "٣",
            "²",
            "→",
            "|",
            ":",
            "\t",
            "x",
            "def parse(self, text):",
            "  return value  ",
            "🙂",
            "\x0b",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(PIECES)
def test_content_lines_and_flat_carriers_match_the_regular_expressions(text: str) -> None:
    assert carried._content_lines.__wrapped__(text) == _content_lines(text)
    assert carried._flat.__wrapped__(text) == _flat(text)
    assert carried._norm(text) == _norm(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_normalises_as_the_expressions_do(text: str) -> None:
    assert carried._content_lines.__wrapped__(text) == _content_lines(text)
    assert carried._flat.__wrapped__(text) == _flat(text)


def test_gutters_read_by_hand_as_the_pattern_reads_them() -> None:
    lines = [
        "   12→  foo",
        "12:\tbar",
        "7|x",
        "x12→y",
        "12a→y",
        "→12",
        "12",
        "12→",
        "12→ ",
        " ٣٤\tz",
        "²→q",
        "1\u2003→",
    ]
    for line in lines:
        assert carried._ungutter(line) == GUTTER.sub("", line), line
