"""A Claude Code record's ``raw`` is pickled as its line and decoded again only when read (`line_raw`),
and records are restored without their constructor (`model._restore_record`): what comes back is the
same record, field for field."""

from __future__ import annotations

import json
import pickle
from dataclasses import fields
from pathlib import Path

import pytest

from workbench.transcript import load_paths
from workbench.transcript.claude_code import parse_line
from workbench.transcript.line_raw import ABSENT, KEPT, LineRaw
from workbench.transcript.model import Block, Record

LINE = (
    '{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","cwd":"/w","version":"2.1.88",'
    '"isVirtual":false,"message":{"role":"user","content":[{"type":"text","text":"hi ✓"}]}}'
)


def _record(line: str = LINE) -> Record:
    record = parse_line(line.encode(), source="f.jsonl", line_no=3)
    assert isinstance(record, Record)
    return record


def test_a_loaded_line_keeps_its_parsed_object_and_pickles_as_the_line() -> None:
    record = _record()
    assert isinstance(record.raw, LineRaw) and not record.raw.decoded  # the loader's parse is not kept
    assert (
        record.raw == json.loads(LINE) and dict(record.raw) == json.loads(LINE) and {**record.raw} == json.loads(LINE)
    )
    restored = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    assert isinstance(restored.raw, LineRaw) and not restored.raw.decoded
    assert restored.raw._line is restored.line  # one string, stored once


def test_kept_keys_are_answered_without_decoding_and_the_rest_decodes_exactly() -> None:
    restored = pickle.loads(pickle.dumps(_record()))
    raw = restored.raw
    assert raw.get("version") == "2.1.88" and raw["cwd"] == "/w" and raw.get("isVirtual") is False
    assert "cwd" in raw and not raw.decoded
    assert KEPT == ("version", "cwd", "isVirtual")
    bare = pickle.loads(pickle.dumps(_record(LINE.replace('"cwd":"/w",', "").replace('"isVirtual":false,', ""))))
    assert bare.raw.get("cwd", "absent") == "absent" and "isVirtual" not in bare.raw and not bare.raw.decoded
    with pytest.raises(KeyError):
        bare.raw["cwd"]
    assert raw.get("gitBranch", "none") == "none" and raw.decoded  # any other key: the whole line
    assert raw["message"]["content"][0]["text"] == "hi ✓"
    assert raw == json.loads(LINE) and raw == _record().raw and list(raw) == list(json.loads(LINE))


def test_a_line_with_a_byte_order_mark_decodes_after_a_restore() -> None:
    record = _record("\ufeff" + LINE)
    restored = pickle.loads(pickle.dumps(record))
    assert restored.line.startswith("\ufeff") and restored.raw == json.loads(LINE)


def test_a_restored_record_equals_the_original_in_every_field() -> None:
    record = _record()
    assert record.content_key  # memoised before pickling, as the session cache stores records
    restored = pickle.loads(pickle.dumps(record))
    for f in fields(Record):
        assert getattr(restored, f.name) == getattr(record, f.name), f.name
    assert restored == record and restored._key == record._key
    with pytest.raises(AttributeError):  # still frozen
        restored.kind = "assistant"  # type: ignore[misc]
    plain = Record("assistant", uuid="a", blocks=(Block.text_block("x"),), raw={"k": [1]}, line_no=7, modified=True)
    again = pickle.loads(pickle.dumps(plain))
    assert again == plain and again.raw == {"k": [1]} and type(again.raw) is dict and again.modified


def test_restored_real_records_read_as_the_parsed_lines(corpus: Path) -> None:
    files = sorted((corpus / "claude-code").rglob("*.jsonl"))[:3]
    checked = 0
    for session in load_paths(files):
        for record in session.records:
            if not isinstance(record.raw, LineRaw):
                continue
            restored = pickle.loads(pickle.dumps(record))
            expected = json.loads(record.line.removeprefix("\ufeff"))
            for key in KEPT:
                assert restored.raw.get(key, "absent") == expected.get(key, "absent")
            assert not restored.raw.decoded and restored.raw == expected and restored == record
            checked += 1
    assert checked > 100


def test_a_line_raw_needs_a_value_for_every_kept_key() -> None:
    with pytest.raises(ValueError, match="needs the values of"):
        LineRaw('{"type":"user"}', ("2.1.88",))
    raw = LineRaw('{"type":"user","cwd":"/w"}', (ABSENT, "/elsewhere", ABSENT))
    assert raw.get("cwd") == "/elsewhere" and raw.get("version", 1) == 1  # kept values answer, undecoded
    assert raw.get("type") == "user" and raw.get("cwd") == "/w"  # decoded: the line decides
    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
