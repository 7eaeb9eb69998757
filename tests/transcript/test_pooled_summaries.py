"""`file_summaries(..., workers=N)`: files read by worker processes give the summaries and the load report
of one process: the same entries in the same order, the walk's errors where one process reports them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbench.transcript import LoadReport
from workbench.transcript import session_cache as sc
from workbench.transcript.registry import file_summaries

ROOT = Path(__file__).resolve().parents[2]


def _summaries(paths: list[Path], workers: int, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cache_dir))  # each run parses: nothing cached before
    monkeypatch.setattr(sc, "_STATE", {"off": None, "warned_corrupt": False})
    report = LoadReport()
    found = list(file_summaries(paths, report=report, workers=workers))
    return found, report.as_dict()


def test_two_workers_give_the_summaries_and_report_of_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for name in ("short-question-21636369.jsonl", "short-bugfix-d95bafc8.jsonl", "tiny-hello-b8a1abcd.jsonl"):
        shutil.copy(ROOT / "data" / name, first / name)
    (first / "README.md").write_text("not a transcript\n")
    (first / "broken.jsonl").write_text("not json\n")
    shutil.copy(ROOT / "data" / "long-autocompact-e3e70682.jsonl", second / "long.jsonl")
    (second / "empty").mkdir()  # a folder holding nothing inside a folder: not an error by itself
    paths = [first, tmp_path / "missing", second, tmp_path / "also-missing"]
    one = _summaries(paths, 1, tmp_path / "cache-1", monkeypatch)
    two = _summaries(paths, 2, tmp_path / "cache-2", monkeypatch)
    assert two == one
    found, report = one
    assert [path.name for path, _ in found] == [
        "short-bugfix-d95bafc8.jsonl",
        "short-question-21636369.jsonl",
        "tiny-hello-b8a1abcd.jsonl",
        "long.jsonl",
    ]
    # the walk's error for "missing" comes after the first folder's load error, as one process has it
    assert [Path(e["file"]).name for e in report["errors"]] == ["broken.jsonl", "missing", "also-missing"]
    assert [Path(i["file"]).name for i in report["ignored"]] == ["README.md"]
    assert sum(s.records for _, s in found) > 100


@pytest.mark.corpus
def test_the_real_corpus_summarised_by_two_workers(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [corpus / "claude-code", corpus / "claude-code-more", corpus / "codex"]
    one = _summaries(paths, 1, tmp_path / "cache-1", monkeypatch)
    two = _summaries(paths, 2, tmp_path / "cache-2", monkeypatch)
    assert two == one and len(one[0]) > 40
    warm = _summaries(paths, 2, tmp_path / "cache-2", monkeypatch)  # the workers cached what they parsed
    assert warm == one
    assert (tmp_path / "cache-2" / "sessions").is_dir()


def test_workers_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive number of worker processes"):
        list(file_summaries([tmp_path], workers=0))


def test_cached_files_are_answered_without_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    for name in ("short-question-21636369.jsonl", "tiny-hello-b8a1abcd.jsonl"):
        shutil.copy(ROOT / "data" / name, folder / name)
    cold = _summaries([folder], 2, tmp_path / "cache", monkeypatch)
    import workbench.util.pool

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pool was started for files whose summaries are cached")

    monkeypatch.setattr(workbench.util.pool, "ordered_map", no_pool)
    warm = _summaries([folder], 2, tmp_path / "cache", monkeypatch)
    assert warm == cold and len(warm[0]) == 2
    (folder / "tiny-hello-b8a1abcd.jsonl").write_text((ROOT / "data" / "short-bugfix-d95bafc8.jsonl").read_text())
    with pytest.raises(AssertionError, match="the pool was started"):  # a changed file goes to the pool
        _summaries([folder], 2, tmp_path / "cache", monkeypatch)
