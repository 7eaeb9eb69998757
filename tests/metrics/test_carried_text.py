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


LINE_WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "x", "", "=", "1"]), min_size=1, max_size=8)


@settings(max_examples=600, deadline=None)
@given(st.lists(LINE_WORDS, min_size=1, max_size=6), st.lists(LINE_WORDS, max_size=6), st.integers(0, 5))
def test_the_word_test_never_rejects_a_line_the_carrier_holds(
    carrier_lines: list[list[str]], content_lines: list[list[str]], cut: int
) -> None:
    """`_may_hold` only rejects lines the flat carrier does not hold, so `content_carried` answers as a search
    of every line would; lines cut out of the carrier (at any character) are always let through."""
    carrier = "\n".join(" ".join(words) for words in carrier_lines)
    flat = carried._flat.__wrapped__(carrier)
    words = frozenset(flat.split(" "))
    pieces = [" ".join(w) for w in content_lines] + [flat[cut : cut + n] for n in (20, 30, 45)]
    for line in pieces:
        normal = carried._norm(line)
        if normal in flat:
            assert carried._may_hold(words, normal), (normal, flat)
    content = "\n".join(pieces)
    lines = _content_lines(content)
    if lines:
        need = carried.CARRIED_SHARE * len(lines)
        expected = sum(line in flat for line in lines) >= need
        assert carried._carried.__wrapped__(content, carrier) == expected
