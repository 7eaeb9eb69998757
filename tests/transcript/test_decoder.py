"""The fast decoder (orjson) with the standard library as the fallback: same values, same skip reasons.

`workbench.transcript.jsonio.loads` decodes with orjson and falls back to `json` where orjson rejects
input the standard library accepts (NaN, Infinity, 1e999, lone surrogate escapes) or
could round an integer (outside the 64-bit range). Every case here is checked against `json.loads`.
"""

from __future__ import annotations

import json
import math

import orjson
import pytest

from workbench.transcript import jsonio
from workbench.transcript.claude_code import parse_line
from workbench.transcript.model import Skip

CASES = [
    b'{"a":1}',
    b'{"a":"\\udc80"}',  # a lone surrogate escape: orjson rejects it, json keeps it
    b'{"a":"\\ud83d\\ude00"}',  # a pair: both decode it to one character
    b'{"usage":{"input_tokens":NaN}}',
    b'{"usage":{"input_tokens":Infinity,"x":-Infinity}}',
    b'{"usage":{"input_tokens":1e999}}',
    b'{"usage":{"input_tokens":' + str(10**30).encode() + b"}}",  # orjson: a float; json: the exact int
    b'{"n":-9223372036854775809}',  # just below int64: orjson rounds it
    b'{"n":18446744073709551616}',  # just above uint64
    b'{"n":18446744073709551615,"m":-9223372036854775808}',  # the edges orjson keeps
    b'{"text":"id 12345678901234567890123 in a string"}',  # a long digit run inside a string
    b'{"f":0.1,"g":-0.0,"h":5e-324,"i":1.7976931348623157e308}',
    b'{"a":1,"a":2}',  # duplicate keys: the last wins in both
    b'{"s":"\\u0000\\t\\n\\u001b[31m"}',
    b'{"deep":' + b"[" * 200 + b"]" * 200 + b"}",  # deep, within both limits
    '{"ü":"日本語 ✓"}'.encode(),
    b'  {"a":1}  ',
]


@pytest.mark.parametrize("line", CASES, ids=range(len(CASES)))
def test_values_equal_the_standard_library(line: bytes) -> None:
    expected = json.loads(line.decode())
    got = jsonio.decode_json_line(line)
    assert _same(got, expected)


def _same(a: object, b: object) -> bool:
    """Equal, with the same types (an int is not a float), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)  # type: ignore[arg-type]
    return a == b


BAD = [
    (b'{"a":', "invalid JSON: Expecting value at column 6"),
    (b'{"a":1,}', "invalid JSON: Expecting property name enclosed in double quotes at column 8"),
    (b'{"a":"x\ty"}', "invalid JSON: Invalid control character at at column 8"),
    (b"\x00{}", "invalid JSON: Expecting value at column 1"),  # json.loads(bytes) would guess UTF-16 here
    (b'{"a":"\xff"}', "invalid UTF-8 at byte 6"),
    (b"   ", "blank line"),
    ("\u00a0\u2028".encode(), "blank line"),  # Unicode whitespace counts as blank, as before
    (b"\xef\xbb\xbf", "blank line"),
    (b"[" * 100_000, "invalid JSON: nested too deeply"),
]


@pytest.mark.parametrize(("line", "reason"), BAD, ids=range(len(BAD)))
def test_skip_reasons_are_the_standard_librarys(line: bytes, reason: str) -> None:
    with pytest.raises(jsonio.BadInput) as caught:
        jsonio.decode_json_line(line)
    assert caught.value.reason == reason


def test_a_bom_is_ignored_by_the_decoder_and_kept_in_the_line() -> None:
    item = parse_line(b'\xef\xbb\xbf{"type":"summary","summary":"x"}', source="f.jsonl", line_no=1)
    assert not isinstance(item, Skip)
    assert item.raw == {"type": "summary", "summary": "x"} and item.line is not None
    assert item.line.startswith("\ufeff")


def test_documents_name_line_and_column() -> None:
    with pytest.raises(jsonio.BadInput) as caught:
        jsonio.decode_json_document(b'{\n  "a": [1,\n  2,,\n]}')
    assert caught.value.reason == "invalid JSON: Expecting value at line 3 column 5" and caught.value.line == 3
    assert jsonio.decode_json_document(b'{"x": NaN}')["x"] != jsonio.decode_json_document(b'{"x": NaN}')["x"]


def test_orjson_decodes_the_common_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken: an ordinary line goes to orjson, not to the standard library."""
    calls: list[bytes] = []
    real = orjson.loads

    def spy(data: bytes) -> object:
        calls.append(data)
        return real(data)

    monkeypatch.setattr(jsonio.orjson, "loads", spy)
    monkeypatch.setattr(jsonio.json, "loads", lambda *_a, **_k: pytest.fail("stdlib used for a plain line"))
    assert jsonio.decode_json_line(b'{"type":"user","n":12}') == {"type": "user", "n": 12}
    assert calls == [b'{"type":"user","n":12}']
