"""Property: mutating real lines never crashes the loader, never loses a line, and round-trips bytes."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.transcript import Record, load_paths, session_bytes
from workbench.transcript.claude_code import parse_line


def _real_lines(corpus: Path) -> list[bytes]:
    path = corpus / "claude-code" / "marot-spotter" / "short.jsonl"
    return path.read_bytes().splitlines()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_real_lines(corpus: Path, tmp_path_factory, data) -> None:
    lines = _real_lines(corpus)
    picked = data.draw(st.lists(st.sampled_from(lines), min_size=1, max_size=6))
    mutated = []
    for line in picked:
        op = data.draw(st.sampled_from(["keep", "truncate", "flip", "insert", "delete_key"]))
        if op == "truncate":
            line = line[: data.draw(st.integers(0, len(line)))]
        elif op == "flip":
            pos = data.draw(st.integers(0, len(line) - 1))
            line = line[:pos] + bytes([data.draw(st.integers(0, 255))]) + line[pos + 1 :]
        elif op == "insert":
            pos = data.draw(st.integers(0, len(line)))
            line = line[:pos] + data.draw(st.binary(min_size=1, max_size=4)) + line[pos:]
        elif op == "delete_key":
            line = line.replace(b'"type":', b'"typo":', 1)
        mutated.append(line.replace(b"\n", b" "))
    payload = b"\n".join(mutated) + b"\n"
    path = tmp_path_factory.mktemp("m") / "m.jsonl"
    path.write_bytes(payload)
    sessions = list(load_paths([path]))
    if not sessions:  # nothing a loader recognises (e.g. first line no longer JSON-like)
        for number, line in enumerate(mutated, start=1):
            parse_line(line, source=str(path), line_no=number)  # must not raise either
        return
    [session] = sessions
    assert session.lines == len(mutated) == len(session.records) + len(session.skipped)
    assert all(isinstance(r, Record) for r in session.records)
    assert all(s.reason and s.line >= 1 for s in session.skipped)
    assert session_bytes(session) == payload
