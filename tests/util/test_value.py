"""`workbench.util.value`: the dataclass stand-in of the classes a warm ``ingest`` builds and reads."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest

from workbench.transcript.registry import LoadReport
from workbench.transcript.summary import FileSummary, SessionInfo


def _info(**changes: object) -> SessionInfo:
    values = {"id": "s", "source": "a.jsonl", "format": "claude-code", "fingerprint": "f", "n_records": 3}
    values.update(is_subagent=False, is_inline=False, session_id="s", parent_session_id=None)
    values.update(changes)
    return SessionInfo(**values)  # type: ignore[arg-type]


def test_frozen_values_compare_hash_and_refuse_assignment_like_a_frozen_dataclass() -> None:
    assert _info() == _info() and hash(_info()) == hash(_info())
    assert _info() != _info(n_records=4) and _info() != _info(parent_session_id="p")
    assert len({_info(), _info(), _info(id="t")}) == 2
    with pytest.raises(AttributeError, match="frozen SessionInfo"):
        _info().id = "t"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del _info().id  # type: ignore[misc]
    assert _info() != ("s", "a.jsonl")  # another type is never equal
    assert SessionInfo("s", None, "x", "f", 1, False, False).session_id is None  # the defaults


def test_values_pickle_as_their_fields_and_repr_names_them() -> None:
    info = _info()
    summary = FileSummary(lines=4, records=3, by_kind=Counter(user=2), sessions=[info])
    for value in (info, summary, LoadReport(files=["a"], errors=[{"file": "b", "reason": "r"}])):
        back = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == value and type(back) is type(value) and back is not value
    assert repr(info).startswith("SessionInfo(id='s', source='a.jsonl', format='claude-code'")
    assert "by_kind=Counter({'user': 2})" in repr(summary)


def test_mutable_values_have_fresh_defaults_and_no_hash() -> None:
    one, two = FileSummary(), FileSummary()
    one.skipped.append({"line": 1})
    one.by_kind["user"] += 1
    assert two.skipped == [] and two.by_kind == Counter() and one != two
    assert LoadReport() == LoadReport() and LoadReport().files is not LoadReport().files
    with pytest.raises(TypeError, match="unhashable"):
        hash(FileSummary())


def test_replace_copies_a_value_with_changes_and_still_takes_dataclasses() -> None:
    from workbench.transcript.model import Skip
    from workbench.util.value import replace

    info = _info()
    other = replace(info, id="s @ a.jsonl")
    assert other.id == "s @ a.jsonl" and other.fingerprint == info.fingerprint and info.id == "s"
    assert other == _info(id="s @ a.jsonl") and type(other) is SessionInfo
    with pytest.raises(TypeError, match="no field"):
        replace(info, name="x")
    assert replace(Skip("a.jsonl", 1, "bad"), line=2) == Skip("a.jsonl", 2, "bad")  # dataclasses.replace
