"""Text helpers of `workbench.memory.facts`: whitespace folding and error-line detection."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from workbench.memory import facts as facts_module
from workbench.memory.facts import SessionFacts, ToolCall, error_calls, first_error_line, one_line

#: The definitions the helpers must keep matching exactly (the single patterns they were written as).
WS = re.compile(r"\s+")
ERROR_LINE = re.compile(
    r"^\s*(?:\*\*\s*\(|error\b|traceback\b|fatal:|failed\b|panic:)|\berror:|\b[1-9]\d* (?:failures?|errors?)\b",
    re.IGNORECASE,
)

_WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u3000\u200b\ufeff"
_PIECES = ["error", "Error:", "ERROR:", "**", "(", "0", "1", "9", " failure", " errors", "traceback", "fatal:"]
_PIECES += ["failed", "panic:", "x", "_", "é", "ı", "ſ", "K", "\n", " ", ":", "-"]


@given(st.text(alphabet=st.sampled_from([*_WHITESPACE, "a", "b", "é", "😀"]), max_size=80), st.integers(-3, 24))
def test_one_line_folds_whitespace_like_the_regex(text: str, limit: int) -> None:
    """Also past ``2 * limit + 16`` characters, where only a prefix is folded first (and for the limits
    below one that ``n - 140`` gives with a small ``max_item_chars``)."""
    folded = WS.sub(" ", text).strip()
    expected = folded if len(folded) <= limit else folded[: max(0, limit - 1)].rstrip() + "…"
    assert one_line(text, limit) == expected


def test_one_line_examples() -> None:
    assert one_line("  a\u2028\tb\xa0 c  ", 10) == "a b c"
    assert one_line("alpha beta gamma", 8) == "alpha b…"
    # the folded prefix is exactly the limit long, the text goes on: clipped, not the prefix itself
    assert one_line("abcde" + " " * 30 + "f", 5) == "abcd…"
    assert one_line("abcde" + " " * 30, 5) == "abcde"


@given(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join))
def test_error_lines_are_the_lines_the_single_pattern_matches(text: str) -> None:
    expected = next((line for line in text.splitlines() if ERROR_LINE.search(line)), text)
    assert first_error_line(text, 1000) == one_line(expected, 1000)


def test_error_line_examples() -> None:
    output = "collected 3 items\nok\nFAILED tests/test_x.py\n2 failed, 1 passed"
    assert first_error_line(output, 200) == "FAILED tests/test_x.py"
    assert first_error_line("building\nsrc/a.c:3: error: missing ;", 200) == "src/a.c:3: error: missing ;"
    assert first_error_line("3 errors found\nmore", 200) == "3 errors found"
    assert first_error_line("no problems; errors: none", 200) == "no problems; errors: none"  # fallback: whole text


@given(
    st.lists(
        st.sampled_from([*_PIECES, "ERROR", "Failure", "FAILURE", "İ", "\u212a", "1 fa", "lure"]), max_size=12
    ).map("".join)
)
def test_a_shell_output_is_an_error_where_the_single_pattern_matches(text: str) -> None:
    """Whole outputs, ASCII or not: the substring test that skips the scan of a text whose lowered form holds
    neither "rror" nor "lure" must never hide a match (IGNORECASE also matches "ſ" for "s", "ı"/"İ" for "i",
    "K" for "k")."""
    facts = SessionFacts(calls=(ToolCall(0, "Bash", {"command": "make"}, result=text),))
    assert bool(error_calls(facts)) == bool(ERROR_LINE.search(text))


def test_shell_error_examples() -> None:
    def flagged(text: str) -> bool:
        return bool(error_calls(SessionFacts(calls=(ToolCall(0, "Bash", {"command": "x"}, result=text),))))

    assert flagged("compiling\nsrc/a.c:3: ERROR: missing ;")
    assert flagged("ran 9 tests\n2 Failures")
    assert flagged("  Traceback (most recent call last):")
    assert not flagged("all 12 tests passed\nno problems")
    assert not flagged("0 errors, 0 failures")
    assert flagged("1 fa\u0130lure") and flagged("2 fa\u0131lures")  # İ and ı match i; "lure" is still there


def test_the_fast_pattern_spells_each_letter_as_ignorecase_matches_it() -> None:
    """`workbench.memory.facts._ERROR_ANYWHERE` is the IGNORECASE pattern written case-sensitively: each
    letter class must be the set of every Unicode character that IGNORECASE matches for that letter, and the
    pattern must start with a character set (the regex engine's first-character skip)."""
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    pattern = facts_module._ERROR_ANYWHERE.pattern
    assert not facts_module._ERROR_ANYWHERE.flags & re.IGNORECASE and pattern.startswith("[Ee1-9]")
    classes = set(re.findall(r"\[([^\]\\]+)\]", pattern)) - {"Ee1-9", "1-9"}
    assert len(classes) == 9  # e, r, o, f, a, i, l, u, s
    for members in classes:
        letter = min(members, key=ord).lower()  # the ASCII capital sorts first
        assert set(members) == set(re.findall(letter, everything, re.IGNORECASE)), letter
        # what the substring test before the scan relies on: each member lowers to the letter
        assert letter not in "rolue" or {m.lower() for m in members} == {letter}


@given(
    st.lists(
        st.sampled_from([*_PIECES, "İ", "\u212a", "rror", "lure", "E", "5", "a1", "_2", "Fai", "ſ:", "٣"]), max_size=16
    ).map("".join)
)
def test_the_fast_pattern_matches_where_the_ignorecase_one_does(text: str) -> None:
    reference = re.compile(r"\b(?:error:|[1-9]\d* (?:failures?|errors?)\b)", re.IGNORECASE)
    assert bool(facts_module._ERROR_ANYWHERE.search(text)) == bool(reference.search(text))
