"""Files that could be silently dropped, mislabelled, crash ingest or hang it.

Each case ends with a one-line error naming the file (or a skip naming file and line), the other files
of the folder still read, exit 0 when anything was read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hostile import claude_lines, cli, write_claude

from workbench.transcript import LoadReport, load_paths, session_bytes
from workbench.transcript import files as transcript_files
from workbench.transcript.files import OversizedLine, read_lines


def _ingest(*paths: Path, fmt: str | None = None) -> tuple[int, dict, str]:
    args = ["ingest", *map(str, paths), "--json", *(["--format", fmt] if fmt else [])]
    code, out, err = cli(*args)
    return code, json.loads(out), err


# ------------------------------------------------------------------ item 2: detection past a bad first line


@pytest.mark.parametrize(
    ("prefix", "skipped"),
    [(b"\n", "blank line"), (b"   \t\n", "blank line"), (b"garbage\n", "invalid JSON"), (b"\xef\xbb\xbf", None)],
    ids=["blank", "whitespace", "garbage", "bom"],
)
def test_a_bad_first_line_does_not_hide_the_file(tmp_path: Path, prefix: bytes, skipped: str | None) -> None:
    body = ("\n".join(claude_lines("s1")) + "\n").encode()
    (tmp_path / "f").mkdir()
    path = tmp_path / "f" / "odd.jsonl"
    path.write_bytes(prefix + body)
    write_claude(tmp_path / "f" / "good.jsonl", "s2")
    code, data, _ = _ingest(tmp_path / "f")
    assert code == 0 and data["sessions"] == 2 and not data["ignored"] and not data["errors"]
    assert data["by_format"] == {"claude-code": 2}
    if skipped is None:  # a BOM is not a bad line: line 1 is read, and export keeps the BOM
        assert data["skipped"] == [] and data["records"] == 8
    else:
        assert data["skipped"] == [{"file": str(path), "line": 1, "reason": data["skipped"][0]["reason"]}]
        assert skipped in data["skipped"][0]["reason"]
    assert data["round_trip"] == {"checked": 2, "identical": 2, "different": []}
    [session] = [s for s in load_paths([path])]
    assert session_bytes(session) == prefix + body


def test_an_unrecognised_jsonl_is_an_error_not_ignored(tmp_path: Path) -> None:
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "other.jsonl").write_text('{"event": "click", "x": 1}\n')
    (tmp_path / "f" / "README.md").write_text("# notes\n")
    write_claude(tmp_path / "f" / "good.jsonl", "s1")
    code, data, err = _ingest(tmp_path / "f")
    assert code == 0 and data["sessions"] == 1
    [error] = data["errors"]
    assert error["file"].endswith("other.jsonl") and "keys: event, x" in error["reason"]
    assert [Path(i["file"]).name for i in data["ignored"]] == ["README.md"]
    assert f"error: {error['file']}: not a recognised transcript format" in err


# ------------------------------------------------------------------ item 3: unreadable things, real reasons


def test_unreadable_file_is_reported_with_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection (the tests may run as root, who can read a chmod 000 file)."""
    bad = write_claude(tmp_path / "f" / "locked.jsonl", "s1")
    write_claude(tmp_path / "f" / "good.jsonl", "s2")
    real = transcript_files.open_regular

    def refuse(path):
        if Path(path) == bad:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(transcript_files, "open_regular", refuse)
    report = LoadReport()
    sessions = list(load_paths([tmp_path / "f"], report=report))
    assert [s.id for s in sessions] == ["s2"]
    assert report.errors == [{"file": str(bad), "reason": "cannot read: Permission denied"}]
    assert report.ignored == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads chmod 000 files; covered by the fault-injection test")
def test_chmod_000_file_and_folder(tmp_path: Path) -> None:
    bad = write_claude(tmp_path / "f" / "locked.jsonl", "s1")
    write_claude(tmp_path / "f" / "sub" / "x.jsonl", "s3")
    write_claude(tmp_path / "f" / "good.jsonl", "s2")
    bad.chmod(0)
    (tmp_path / "f" / "sub").chmod(0)
    try:
        report = LoadReport()
        assert [s.id for s in load_paths([tmp_path / "f"], report=report)] == ["s2"]
        assert {Path(e["file"]).name: e["reason"] for e in report.errors} == {
            "locked.jsonl": "cannot read: Permission denied",
            "sub": "cannot read folder: Permission denied",
        }
    finally:
        (tmp_path / "f" / "sub").chmod(0o755)
        bad.chmod(0o644)


def test_unreadable_sub_folder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_claude(tmp_path / "f" / "sub" / "x.jsonl", "s1")
    write_claude(tmp_path / "f" / "good.jsonl", "s2")
    real = os.scandir

    def scandir(path):
        if Path(path) == tmp_path / "f" / "sub":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(transcript_files.os, "scandir", scandir)
    report = LoadReport()
    assert [s.id for s in load_paths([tmp_path / "f"], report=report)] == ["s2"]
    assert report.errors == [{"file": str(tmp_path / "f" / "sub"), "reason": "cannot read folder: Permission denied"}]


def test_symlinks_dangling_loops_and_duplicates(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    write_claude(folder / "good.jsonl", "s1")
    write_claude(tmp_path / "elsewhere" / "other.jsonl", "s2")
    (folder / "dangling.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (folder / "loop").symlink_to(folder)
    (folder / "self.jsonl").symlink_to(folder / "self.jsonl")
    (folder / "linked").symlink_to(tmp_path / "elsewhere")
    (folder / "again").symlink_to(tmp_path / "elsewhere")
    report = LoadReport()
    sessions = list(load_paths([folder], report=report))
    assert sorted(s.id for s in sessions) == ["s1", "s2"]  # the linked folder is read once
    reasons = {Path(e["file"]).name: e["reason"] for e in report.errors}
    assert reasons["dangling.jsonl"].startswith("dangling symlink (-> ")
    assert reasons["loop"].startswith("symlink loop")
    assert reasons["self.jsonl"].startswith("symlink loop")
    assert [Path(i["file"]).name for i in report.ignored] == ["linked"]
    assert "same folder as" in report.ignored[0]["reason"]
    code, _, _ = _ingest(folder / "dangling.jsonl")
    assert code == 1


# ------------------------------------------------------------------ item 6: a type-confused field, not a crash


def test_type_confused_fields_are_skips_and_the_folder_survives(tmp_path: Path) -> None:
    """Gemini ``parts: 5`` and SWE-agent ``tool_calls: true`` raised TypeError out of ``ingest``."""
    folder = tmp_path / "f"
    folder.mkdir()
    gemini = folder / "g.responses"
    gemini.write_text(
        '{"method":"generateContentStream","response":[{"candidates":[{"content":{"parts":5}}]}]}\n'
        '{"method":"generateContentStream","response":[{"candidates":[{"content":{"parts":[{"text":"ok"}]}}]}]}\n'
    )
    traj = folder / "t.traj"
    traj.write_text(json.dumps({"history": [{"role": "assistant", "content": "x", "tool_calls": True}]}))
    write_claude(folder / "good.jsonl", "s1")
    code, data, _ = _ingest(folder)
    assert code == 0 and data["sessions"] == 3 and not data["errors"]
    skipped = {(Path(s["file"]).name, s["line"]): s["reason"] for s in data["skipped"]}
    assert skipped == {
        ("g.responses", 1): "'content.parts' is a int, not a list",
        ("t.traj", 1): "history.0: tool_calls must be a list, found bool",
    }


def test_a_loader_bug_is_one_error_not_a_lost_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.transcript import get_loader

    folder = tmp_path / "f"
    write_claude(folder / "a.jsonl", "s1")
    write_claude(folder / "b.jsonl", "s2")
    loader = get_loader("claude-code")
    real = type(loader).load

    def broken(self, path):
        if path.name == "a.jsonl":
            raise TypeError("'int' object is not iterable")
        return real(self, path)

    monkeypatch.setattr(type(loader), "load", broken)
    code, data, err = _ingest(folder)
    assert code == 0 and data["sessions"] == 1
    assert data["errors"] == [
        {
            "file": str(folder / "a.jsonl"),
            "reason": "the claude-code loader failed: TypeError: 'int' object is not iterable",
        }
    ]
    assert "error: " in err


# ------------------------------------------------------------------ item 8: no hang, bounded memory


def _run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "from workbench.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,  # a FIFO could block forever, /dev/zero grow without bound
        env={**os.environ, **(env or {})},
    )


def test_fifo_and_devices_are_reported_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    write_claude(folder / "good.jsonl", "s1")
    os.mkfifo(folder / "pipe.jsonl")
    run = _run_cli("ingest", str(folder))
    assert run.returncode == 0, run.stderr
    assert f"error: {folder / 'pipe.jsonl'}: a named pipe (FIFO), not a regular file" in run.stderr
    run = _run_cli("ingest", str(folder / "pipe.jsonl"))
    assert run.returncode == 1 and "a named pipe (FIFO), not a regular file" in run.stderr
    run = _run_cli("ingest", "/dev/zero", "--format", "claude-code")
    assert run.returncode == 1 and "error: /dev/zero: a character device, not a regular file" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_line_over_the_cap_is_a_reported_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = claude_lines("s1")
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([lines[0], "x" * 5000, *lines[1:]]) + "\n")
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "4096")
    code, data, _ = _ingest(path)
    assert code == 0 and data["records"] == 4
    assert data["skipped"] == [
        {
            "file": str(path),
            "line": 2,
            "reason": "line of 5,000 bytes exceeds the 4,096-byte cap; not read "
            "(raise WORKBENCH_MAX_LINE_BYTES to read it)",
        }
    ]
    code, _, err = cli("export", str(path), "--out", str(tmp_path / "out"))
    assert code == 1 and "line 2 was over the line cap" in err and not (tmp_path / "out" / "s.jsonl").exists()
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "lots")
    code, _, err = cli("ingest", str(path))
    assert code == 2 and "WORKBENCH_MAX_LINE_BYTES='lots'" in err


def test_a_document_over_the_cap_is_a_reported_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.traj"
    path.write_text(json.dumps({"history": [{"role": "user", "content": "x" * 5000}]}))
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "4096")
    code, data, _ = _ingest(path)
    assert code == 1 and data["sessions"] == 1
    [skip] = data["skipped"]
    assert skip["line"] == 1 and skip["reason"].startswith("file of 5,0")


def test_reading_a_huge_line_keeps_memory_bounded(tmp_path: Path) -> None:
    """A 32 MB line with a 1 MB cap: the reader holds about one chunk and the cap, never the line."""
    path = tmp_path / "zeros.jsonl"
    with path.open("wb") as handle:
        for _ in range(32):
            handle.write(b"\0" * (1 << 20))
        handle.write(b"\n{}\n")
    tracemalloc.start()
    try:
        lines, trailing = read_lines(path, cap=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(lines[0], OversizedLine) and lines[0].size == 32 << 20
    assert lines[1:] == [b"{}"] and trailing
    assert peak < 6 << 20, peak


def test_ingest_of_a_huge_line_keeps_memory_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole ``ingest`` path (load, checks, round-trip report), not only the reader: the round-trip
    check must not read the whole source back (a 2 GB line would be 2 GB resident)."""
    from workbench.cli import ingest_report

    path = tmp_path / "zeros.jsonl"
    with path.open("wb") as handle:
        for _ in range(32):
            handle.write(b"\0" * (1 << 20))
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", str(1 << 20))
    tracemalloc.start()
    try:
        report = LoadReport()
        sessions = list(load_paths([path], format="claude-code", report=report))
        data = ingest_report(sessions, report)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data["skipped"][0]["reason"].startswith("line of 33,554,432 bytes exceeds")
    assert data["round_trip"] == {"checked": 1, "identical": 0, "different": [str(path)]}
    assert peak < 8 << 20, peak


def test_read_lines_matches_split(tmp_path: Path) -> None:
    """The whole-file path (file <= cap) and the streaming path (file > cap, lines <= cap) agree with split."""
    path = tmp_path / "x"
    for data in [b"", b"\n", b"a", b"a\n", b"a\n\nb", b"a\nb\n", b"\n\n", b"ab\ncd\nef\n", b"abc\n\n\nabc", b"\nab"]:
        path.write_bytes(data)
        parts = data.split(b"\n")
        trailing = parts[-1] == b"" if data else True
        expected = parts[:-1] if trailing and data else parts if data else []
        for cap in (3, 1 << 20):
            assert read_lines(path, cap=cap) == (expected, trailing), (data, cap)


@pytest.mark.parametrize("pre", [-5, 10**30, "170000", True])
def test_an_absurd_recorded_pre_tokens_is_missing_like_an_absurd_usage(tmp_path: Path, pre: object) -> None:
    """``compactMetadata.preTokens`` of -5 or 10^30 is treated as missing, with a warning naming file and line,
    as the same value in ``usage`` is: `workbench tokens` reports no error against it."""
    from cli_helpers import run_cli

    lines = [json.loads(line) for line in claude_lines("s1")]
    boundary = {
        "parentUuid": lines[-1]["uuid"],
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "s1-b",
        "sessionId": "s1",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": "auto", "preTokens": pre},
    }
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [*lines, boundary]) + "\n")
    [session] = load_paths([path])
    record = next(r for r in session.records if r.is_compact_boundary)
    assert "preTokens" not in record.compact_metadata and record.compact_metadata["trigger"] == "auto"
    [warning] = session.metadata["warnings"]
    assert warning["line"] == len(lines) + 1 and warning["reason"].startswith("compactMetadata.preTokens = ")
    data = json.loads(run_cli("tokens", path, "--json").stdout)
    [row] = data["boundaries"]
    assert row["pre_tokens"] is None and row["claude-context error_pct"] is None
