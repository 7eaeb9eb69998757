"""Export loses nothing, overwrites nothing, never leaves half a file."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from hostile import cli, write_claude

from workbench.transcript import export as export_module
from workbench.transcript import load_paths, session_bytes
from workbench.transcript.anthropic_messages import session_from_request

AIDER = "".join(
    f"# aider chat started at 2024-01-0{n} 10:00:00\n\n#### question {n}  \n\nanswer {n}\n\n" for n in range(1, 4)
)


def _export(*args: str) -> tuple[int, dict, str]:
    code, out, err = cli("export", *args, "--json")
    return code, (json.loads(out) if out.strip() else {}), err


def test_every_session_of_a_multi_session_file_is_exported(tmp_path: Path) -> None:
    """An Aider history holds one session per run: it is written once, as itself, and reads back whole
    (never three sessions to one path, the last winning, nor three JSONL files no loader reads)."""
    source = tmp_path / "in" / ".aider.chat.history.md"
    source.parent.mkdir()
    source.write_text(AIDER)
    code, data, _ = _export(str(source.parent), "--out", str(tmp_path / "out"))
    assert code == 0 and data["sessions"] == 3 and data["written"] == [str(tmp_path / "out" / source.name)]
    assert Path(data["written"][0]).read_bytes() == source.read_bytes()
    code, back, _ = cli("ingest", data["written"][0], "--json")
    assert code == 0 and json.loads(back)["sessions"] == 3


def test_two_inputs_with_the_same_name_do_not_collide(tmp_path: Path) -> None:
    first = write_claude(tmp_path / "a" / "x.jsonl", "s1")
    second = write_claude(tmp_path / "b" / "x.jsonl", "s2")
    code, data, _ = _export(str(first), str(second), "--out", str(tmp_path / "out"))
    assert code == 0 and sorted(data["written"]) == [
        str(tmp_path / "out" / "a" / "x.jsonl"),
        str(tmp_path / "out" / "b" / "x.jsonl"),
    ]
    assert (tmp_path / "out" / "a" / "x.jsonl").read_bytes() == first.read_bytes()  # byte-identical
    assert (tmp_path / "out" / "b" / "x.jsonl").read_bytes() == second.read_bytes()


def test_sessions_that_would_share_a_path_are_numbered(tmp_path: Path) -> None:
    """Two sessions written as ``<id>.jsonl`` with the same id get ``x.jsonl`` and ``x-2.jsonl``; a file
    format's sessions (an OpenHands ``x.json``) are written as their source, under its own name."""
    from workbench.transcript.export import plan_export
    from workbench.transcript.model import Session

    folder = tmp_path / "in"
    one = Session(id="x", records=(), source=str(folder / "x.md"), format="claude-code")
    two = Session(id="x", records=(), source=str(folder / "x.txt"), format="claude-code")
    events = Session(id="x", records=(), source=str(folder / "x.json"), format="openhands")
    targets = plan_export([one, two, events], [folder], tmp_path / "out")
    assert [t.name for t in targets] == ["x.jsonl", "x-2.jsonl", "x.json"]


def test_existing_files_are_kept_unless_force(tmp_path: Path) -> None:
    source = write_claude(tmp_path / "in" / "s.jsonl", "s1")
    out = tmp_path / "out"
    out.mkdir()
    (out / "s.jsonl").write_text("precious")
    code, data, err = _export(str(source), "--out", str(out))
    assert code == 2 and data == {} and "1 of 1 target file(s) already exist" in err and "--force" in err
    assert (out / "s.jsonl").read_text() == "precious"
    code, data, _ = _export(str(source), "--out", str(out), "--force")
    assert code == 0 and (out / "s.jsonl").read_bytes() == source.read_bytes()


@pytest.mark.parametrize("inside", ["", "sub"], ids=["same", "inside"])
def test_out_inside_an_input_is_refused(tmp_path: Path, inside: str) -> None:
    """``export corpus/aider --out corpus/aider`` replaced the source with JSONL."""
    folder = tmp_path / "aider"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(AIDER)
    before = sorted(p.name for p in folder.rglob("*"))
    code, _, err = _export(str(folder), "--out", str(folder / inside), "--force")
    assert code == 2 and "the export would mix with or replace its sources" in err
    assert sorted(p.name for p in folder.rglob("*")) == before
    assert (folder / ".aider.chat.history.md").read_text() == AIDER


def test_a_target_that_is_a_source_is_refused_even_with_force(tmp_path: Path) -> None:
    source = write_claude(tmp_path / "s.jsonl", "s1")
    code, _, err = _export(str(source), "--out", str(tmp_path), "--force")
    assert code == 2 and "is a source file of this export" in err


def test_a_full_disk_leaves_no_truncated_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write fails half-way (ENOSPC): the old file stays whole, no temporary file is left, the other
    session is still written, and the failed one is reported."""
    first = write_claude(tmp_path / "in" / "a.jsonl", "s1")
    second = write_claude(tmp_path / "in" / "b.jsonl", "s2")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.jsonl").write_text("previous export")
    real = os.fsync

    def full(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(".a.jsonl."):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(export_module.os, "fsync", full)
    code, data, err = _export(str(first.parent), "--out", str(out), "--force")
    assert code == 0
    assert (out / "a.jsonl").read_text() == "previous export"
    assert (out / "b.jsonl").read_bytes() == second.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "b.jsonl"]
    assert data["failed"] == [
        {"file": str(first), "session_id": "s1", "reason": "OSError: [Errno 28] No space left on device"}
    ]
    assert f"error: {first}: session s1: OSError: [Errno 28] No space left on device" in err
    code, _, err = _export(str(first), "--out", str(tmp_path / "empty"))
    assert code == 1 and "all 1 session(s) failed" in err


def test_lone_surrogates_export_as_valid_utf8(tmp_path: Path) -> None:
    """A lone surrogate (valid JSON) crashed the anthropic-messages export with UnicodeEncodeError."""
    session = session_from_request(
        {"model": "m", "messages": [{"role": "user", "content": "cut \udc80 here"}]}, source="r.json", session_id="r"
    )
    data = session_bytes(session)
    assert b"\\udc80" in data
    data.decode("utf-8")  # strict: well-formed
    path = tmp_path / "r.json"
    path.write_bytes(data)
    [again] = load_paths([path])
    assert again.records[0].text == "cut \ufffd here"  # loaded values hold no surrogate (sanitize)
    assert again.metadata["warnings"][0]["reason"].startswith("lone UTF-16 surrogate")


def test_claude_code_with_a_surrogate_round_trips(tmp_path: Path) -> None:
    source = write_claude(tmp_path / "s.jsonl", "s1", text="cut \udc80 here")
    [session] = load_paths([source])
    assert session.records[3].text == "cut \ufffd here"
    assert session_bytes(session) == source.read_bytes()
