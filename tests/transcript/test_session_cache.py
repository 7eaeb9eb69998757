"""The parsed-session cache (`workbench.transcript.session_cache`): warm loads parse nothing, a changed
file (appended to, or rewritten with the same size and mtime) is read again in full, faults degrade to
no cache with one warning, and every result is the one a cold load gives."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import warnings
from pathlib import Path

import pytest
from hostile import claude_lines, cli, write_claude

from workbench.transcript import claude_code, session_cache
from workbench.transcript.groups import load_groups, ranked_groups
from workbench.transcript.model import Block
from workbench.transcript.registry import file_summaries, load_paths
from workbench.transcript.session_cache import SessionCacheWarning


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder and fresh degradation state."""
    root = tmp_path / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(root))
    monkeypatch.delenv(session_cache.CACHE_ENV, raising=False)
    monkeypatch.setattr(session_cache, "_STATE", {"off": None, "warned_corrupt": False})
    return root / "sessions"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the Claude Code loader actually parsed."""
    seen: list[str] = []
    real = claude_code.ClaudeCodeLoader.load

    def load(self: claude_code.ClaudeCodeLoader, path: Path) -> list:
        seen.append(Path(path).name)
        return real(self, path)

    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "load", load)
    return seen


def _lines(sessions: list) -> list[list[str | None]]:
    return [[r.line for r in s.records] for s in sessions]


def test_a_warm_load_parses_nothing_and_gives_the_same_sessions(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    write_claude(folder / "b.jsonl", "s-b", input_tokens="NaN")  # a warning, cached with the session
    cold = list(load_paths([folder]))
    assert sorted(parses) == ["a.jsonl", "b.jsonl"]
    warm = list(load_paths([folder]))
    assert sorted(parses) == ["a.jsonl", "b.jsonl"], "the warm load parsed again"
    assert [s.id for s in warm] == [s.id for s in cold] and _lines(warm) == _lines(cold)
    assert [s.fingerprint for s in warm] == [s.fingerprint for s in cold]
    assert warm[1].metadata["warnings"] == cold[1].metadata["warnings"] != []
    summaries = [summary for _, summary in file_summaries([folder])]
    assert sorted(parses) == ["a.jsonl", "b.jsonl"], "the summaries parsed again"
    assert [info.fingerprint for s in summaries for info in s.sessions] == [s.fingerprint for s in cold]


def test_warm_ingest_reports_exactly_what_a_cold_one_does(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    (folder / "b.jsonl").write_text("\n".join(claude_lines("s-b")) + "\n{not json\n", encoding="utf-8")
    (folder / "README.md").write_text("not a transcript")
    code, cold, _ = cli("ingest", str(folder), "--json")
    assert code == 0 and len(parses) == 2
    code, warm, _ = cli("ingest", str(folder), "--json")
    assert code == 0 and len(parses) == 2, "a warm ingest parsed again"
    assert json.loads(warm) == json.loads(cold)
    data = json.loads(warm)
    assert data["lines"] == data["records"] + len(data["skipped"]) == 9
    assert data["round_trip"] == {"checked": 2, "identical": 2, "different": []}


def test_an_appended_file_is_read_again_in_full(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    """A session Claude Code is still writing: the cache entry of the old content is not used (full
    re-read, not from the offset), and it is replaced rather than kept beside the new one."""
    path = write_claude(tmp_path / "live.jsonl", "s-live")
    (first,) = load_paths([path])
    assert len(first.records) == 4
    extra = json.dumps(
        {"type": "user", "uuid": "u9", "sessionId": "s-live", "message": {"role": "user", "content": "more"}}
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write(extra + "\n")
    (second,) = load_paths([path])
    assert parses == ["live.jsonl", "live.jsonl"]
    assert len(second.records) == 5 and second.records[-1].line == extra
    assert [r.line for r in second.records[:4]] == [r.line for r in first.records]
    entries = sorted(p.suffix for p in cache.rglob("*.sessions"))
    assert entries == [".sessions"], "the old content's entry was kept"


def test_the_content_decides_not_size_or_mtime(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = write_claude(tmp_path / "x.jsonl", "s-x", text="aaaa")
    stat = os.stat(path)
    (before,) = load_paths([path])
    write_claude(path, "s-x", text="bbbb")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert os.stat(path).st_size == stat.st_size and os.stat(path).st_mtime_ns == stat.st_mtime_ns
    (after,) = load_paths([path])
    assert len(parses) == 2 and after.records[-1].text == "bbbb" != before.records[-1].text


def test_the_line_cap_is_part_of_the_key(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_claude(tmp_path / "x.jsonl", "s-x")
    (full,) = load_paths([path])
    monkeypatch.setenv("WORKBENCH_MAX_LINE_BYTES", "200")
    (capped,) = load_paths([path])
    assert len(parses) == 2 and len(capped.skipped) > 0 == len(full.skipped)


def test_a_corrupt_entry_warns_once_and_is_rewritten(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    a = write_claude(tmp_path / "a.jsonl", "s-a")
    b = write_claude(tmp_path / "b.jsonl", "s-b")
    cold = list(load_paths([a, b]))
    for entry in cache.rglob("*.sessions"):
        entry.write_bytes(b"\x80\x05garbage")  # truncated / damaged pickles
    with pytest.warns(SessionCacheWarning, match="cannot be read") as caught:
        again = list(load_paths([a, b]))
    assert len(caught) == 1 and _lines(again) == _lines(cold) and len(parses) == 4
    list(load_paths([a, b]))
    assert len(parses) == 4, "the rewritten entries were not used"


def test_a_cache_that_cannot_be_written_degrades_with_one_warning(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: object, **_kw: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session_cache, "_atomic", full)
    paths = [write_claude(tmp_path / f"{n}.jsonl", f"s-{n}") for n in "abc"]
    with pytest.warns(SessionCacheWarning, match="No space left on device") as caught:
        sessions = list(load_paths(paths))
    assert len(caught) == 1 and [s.id for s in sessions] == ["s-a", "s-b", "s-c"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(load_paths(paths))  # off for the process: no second warning
    assert len(parses) == 6


def test_the_cache_can_be_turned_off(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(session_cache.CACHE_ENV, "0")
    path = write_claude(tmp_path / "a.jsonl", "s-a")
    list(load_paths([path]))
    list(load_paths([path]))
    assert len(parses) == 2 and not cache.exists()


def test_a_file_changing_while_it_is_read_is_not_cached(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_claude(tmp_path / "a.jsonl", "s-a")
    real = claude_code.ClaudeCodeLoader.load

    def appending(self: claude_code.ClaudeCodeLoader, where: Path) -> list:
        out = real(self, where)
        with Path(where).open("a") as handle:  # Claude Code writes a line while we read
            handle.write(claude_lines("s-a")[0] + "\n")
        return out

    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "load", appending)
    list(load_paths([path]))
    assert not list(cache.rglob("*.sessions"))


def test_groups_hold_a_main_session_with_its_sub_agents(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "project"
    write_claude(folder / "main-1.jsonl", "main-1")
    write_claude(folder / "main-1" / "subagents" / "agent-x1.jsonl", "main-1")
    write_claude(folder / "agent-old.jsonl", "main-2")  # the flat layout: the parent's sessionId inside
    write_claude(folder / "main-2.jsonl", "main-2")
    write_claude(folder / "other.jsonl", "other")
    groups = [[s.id for s in group] for group in load_groups([folder])]
    assert sorted(map(sorted, groups)) == [
        ["main-1", "main-1/agent-x1"],
        ["main-2", "main-2/agent-old"],
        ["other"],
    ]
    assert sorted(s for g in groups for s in g) == sorted(s.id for s in load_paths([folder]))


def test_ranked_groups_give_back_the_load_paths_order(tmp_path: Path, cache: Path) -> None:
    """The flat ``agent-old.jsonl`` sorts before ``main-1.jsonl``, so its group (with ``main-2``) comes
    first; the ranks put the sessions back in `load_paths` order (what the report's tables need)."""
    folder = tmp_path / "project"
    write_claude(folder / "main-1.jsonl", "main-1")
    write_claude(folder / "main-1" / "subagents" / "agent-x1.jsonl", "main-1")
    write_claude(folder / "agent-old.jsonl", "main-2")
    write_claude(folder / "main-2.jsonl", "main-2")
    order = [s.id for s in load_paths([folder])]
    groups = list(ranked_groups([folder]))
    assert [[s.id for s in group] for group in load_groups([folder])] == [[s.id for _, s in g] for g in groups]
    streamed = [s.id for group in groups for _, s in group]
    assert streamed != order and sorted(streamed) == sorted(order)
    assert [s.id for _, s in sorted((p for g in groups for p in g), key=lambda pair: pair[0])] == order


def test_an_unchanged_file_is_not_even_hashed_again(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hash is remembered with the file's inode, size, mtime and ctime: a warm ingest reads no transcript."""
    path = write_claude(tmp_path / "a.jsonl", "s-a")
    list(file_summaries([path]))
    hashed: list[Path] = []
    real = session_cache.content_hash
    monkeypatch.setattr(session_cache, "content_hash", lambda p: hashed.append(p) or real(p))
    list(file_summaries([path]))
    assert hashed == [] and len(parses) == 1
    path.write_text(path.read_text() + "\n")  # changed: hashed again, and parsed again
    list(file_summaries([path]))
    assert hashed == [path] and len(parses) == 2


def test_a_file_copied_back_unchanged_is_hashed_once_then_known_again(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose bytes are the same under a new stamp (a corpus unpacked again, a backup restored: new
    inode, mtime and ctime) is hashed once, found in the cache, and its pointer takes the new stamp: the
    next load hashes nothing. Its sessions are never parsed again."""
    path = write_claude(tmp_path / "a.jsonl", "s-a")
    first = [s.fingerprint for s in load_paths([path])]
    hashed: list[Path] = []
    real = session_cache.content_hash
    monkeypatch.setattr(session_cache, "content_hash", lambda p: hashed.append(p) or real(p))
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)  # same content, a new inode and new times
    for _ in range(3):
        assert [s.fingerprint for s in load_paths([path])] == first
    assert hashed == [path] and len(parses) == 1


def test_notebook_reloads_use_the_cache(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    import workbench as wb

    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    first = wb.load(folder, progress=False)
    again = wb.load(folder, progress=False)
    assert parses == ["a.jsonl"] and [s.fingerprint for s in again] == [s.fingerprint for s in first]


def test_a_file_over_the_size_limit_keeps_only_its_summary(
    tmp_path: Path, cache: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pickling a huge session would cost more memory than the reload saves: only its summary is kept."""
    path = write_claude(tmp_path / "big.jsonl", "s-big")
    monkeypatch.setattr(session_cache, "MAX_CACHED_FILE_BYTES", path.stat().st_size - 1)
    list(load_paths([path]))
    list(file_summaries([path], keep_sessions=True))
    assert not list(cache.rglob("*.sessions")) and len(list(cache.rglob("*.summary"))) == 1
    list(file_summaries([path]))
    assert len(parses) == 2, "the summary was not reused"


def _every_field(record: object) -> tuple:
    """All fields of a record, the ones equality ignores (raw, line, source, the memoised key) too, with its
    blocks' fields."""
    values = tuple(getattr(record, f.name) for f in dataclasses.fields(record))  # type: ignore[arg-type]
    return (type(record), *values, tuple((type(b), b.kind, b.raw) for b in record.blocks))  # type: ignore[attr-defined]


def test_cached_records_keep_every_field(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    """Records and blocks pickle through their constructor (`Record.__reduce__`, faster than the frozen
    dataclass default): every field comes back, including those equality ignores and a memoised key."""
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    cold = list(load_paths([folder]))
    warm = list(load_paths([folder]))
    assert parses == ["a.jsonl"]
    assert [_every_field(r) for s in warm for r in s.records] == [_every_field(r) for s in cold for r in s.records]
    record = cold[0].records[-1]
    changed = record.with_blocks([Block.text_block("new")])
    key = changed.content_key  # memoised in the record
    for original in (record, changed):
        copy = pickle.loads(pickle.dumps(original, protocol=pickle.HIGHEST_PROTOCOL))
        assert _every_field(copy) == _every_field(original) and copy is not original
    assert pickle.loads(pickle.dumps(changed))._key == key


def test_cached_records_carry_their_content_key(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    """The entry stores each record's `Record.content_key` (the token-count cache's lookup key): a warm load
    does not hash every line again, and the stored key is the one hashing gives."""
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    list(load_paths([folder]))
    warm = [r for s in load_paths([folder]) for r in s.records]
    assert parses == ["a.jsonl"] and warm
    assert all(r._key is not None for r in warm)
    assert [r._key for r in warm] == [dataclasses.replace(r, _key=None).content_key for r in warm]


def test_cached_sessions_carry_their_fingerprint(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    """The entry stores each session's `Session.fingerprint` (a sweep worker checks every session it
    replays by it): a warm load does not hash the lines again, and the stored one is what hashing gives."""
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    cold = list(load_paths([folder]))
    warm = list(load_paths([folder]))
    assert parses == ["a.jsonl"] and warm
    assert all(s._fingerprint is not None for s in warm)
    assert [s._fingerprint for s in warm] == [s.with_records(s.records).fingerprint for s in cold]


def test_entries_are_read_with_the_garbage_collector_paused(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unpickling creates no garbage, only objects the collector would scan again and again: it is paused
    while an entry is read, and on again afterwards (also when the entry is corrupt), unless it was off."""
    import gc

    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    cold = list(load_paths([folder]))
    during: list[bool] = []
    real = pickle.load

    def load(handle):  # type: ignore[no-untyped-def]
        during.append(gc.isenabled())
        return real(handle)

    monkeypatch.setattr(pickle, "load", load)  # imported where sessions are read
    assert gc.isenabled()
    warm = list(load_paths([folder]))
    assert during == [False] and gc.isenabled() and _lines(warm) == _lines(cold)
    for entry in cache.rglob("*.sessions"):
        entry.write_bytes(b"not a pickle")
    with pytest.warns(SessionCacheWarning):
        assert _lines(list(load_paths([folder]))) == _lines(cold)
    assert during == [False, False] and gc.isenabled()
    gc.disable()
    try:
        list(load_paths([folder]))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_summaries_are_kept_as_json_and_pickled_only_when_json_would_change_them(
    tmp_path: Path, cache: Path, parses: list[str]
) -> None:
    from workbench.transcript.summary import FileSummary, SessionInfo, summary_from_json, summary_json

    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    write_claude(folder / "b.jsonl", "s-b", input_tokens="NaN")  # a warning in the summary
    (folder / "c.jsonl").write_text("\n".join(claude_lines("s-c")) + "\n{not json\n", encoding="utf-8")  # a skip
    cold = [summary for _, summary in file_summaries([folder])]
    entries = sorted(cache.rglob("*.summary"))
    assert len(entries) == 3 and all(entry.read_bytes()[:1] == b"{" for entry in entries)
    warm = [summary for _, summary in file_summaries([folder])]
    assert warm == cold and len(parses) == 3 and cold[1].warnings and cold[2].skipped
    assert all(isinstance(info, SessionInfo) for s in warm for info in s.sessions)
    # what JSON cannot keep as it is: a tuple, a non-string key, a lone surrogate (kept), an object
    info = SessionInfo("s\udcff", None, "claude-code", "f", 1, False, False)
    assert summary_from_json(json.loads(summary_json(FileSummary(sessions=[info])) or b"")).sessions == [info]
    for odd in ({"file": "a", "at": (1, 2)}, {1: "x"}, {"file": Path("a")}):
        assert summary_json(FileSummary(warnings=[odd])) is None, odd
    session_cache._write(
        "ab" * 16,
        "summary",
        FileSummary(warnings=[{"at": (1, 2)}]),
        session_cache._entry(folder / "a.jsonl", "claude-code"),
    )
    pickled = next(cache.rglob(f"{'ab' * 16}.summary"))
    assert pickled.read_bytes()[:1] == b"\x80"
    assert session_cache._read("ab" * 16, "summary") == FileSummary(warnings=[{"at": (1, 2)}])
