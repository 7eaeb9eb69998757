"""Text helpers of `workbench.memory.facts`: whitespace folding and error-line detection."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

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


@given(st.text(alphabet=st.sampled_from([*_WHITESPACE, "a", "b", "é", "😀"]), max_size=30), st.integers(1, 12))
def test_one_line_folds_whitespace_like_the_regex(text: str, limit: int) -> None:
    folded = WS.sub(" ", text).strip()
    expected = folded if len(folded) <= limit else folded[: limit - 1].rstrip() + "…"
    assert one_line(text, limit) == expected


def test_one_line_examples() -> None:
    assert one_line("  a\u2028\tb\xa0 c  ", 10) == "a b c"
    assert one_line("alpha beta gamma", 8) == "alpha b…"


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
    """Whole outputs, ASCII or not: the substring test that skips the scan on ASCII text without "error" or
    "failure" must never hide a match (IGNORECASE also matches "ſ" for "s", "ı"/"İ" for "i", "K" for "k")."""
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
    assert flagged("1 fa\u0130lure") and flagged("2 fa\u0131lures")  # İ and ı match i: non-ASCII is always scanned
