"""`workbench.replay.parallel`: session groups replayed by worker processes give what the serial replay
gives, in its order: the same rows, the same load report, the same failures."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import pytest

from workbench.replay.parallel import ParallelReplay, replay_loaded_group
from workbench.strategies import Strategy, create
from workbench.transcript import LoadReport, TranscriptError
from workbench.transcript.groups import load_groups
from workbench.transcript.isolation import SessionFailure

ROOT = Path(__file__).resolve().parents[2]


def _serial(paths: list[Path], strategy: Strategy, process: bool) -> tuple[list, LoadReport, list, int]:
    report, failures, results, records = LoadReport(), [], [], 0
    for group in load_groups(paths, report=report):
        records += sum(len(s.records) for s in group)
        results += replay_loaded_group(group, strategy, estimator="claude-rough", process=process, failures=failures)
    return results, report, failures, records


def _rows(results: list) -> list:
    return [(r.session_id, r.source, r.strategy, r.steps, r.events) for r in results]


@pytest.mark.corpus
@pytest.mark.parametrize("process", [False, True])
def test_two_workers_give_the_serial_replay_of_the_real_corpus(corpus: Path, process: bool) -> None:
    paths = [corpus / "claude-code", corpus / "claude-code-more"]
    strategy = create("claude-code")
    results, report, failures, records = _serial(paths, strategy, process)
    run = ParallelReplay(paths, strategy, workers=2, process=process)
    got = list(run.results())
    assert len(got) > 40 and any(r.events for r in got)  # sub-agents included, compactions made
    assert _rows(got) == _rows(results)
    assert run.report.as_dict() == report.as_dict() and len(run.report.files) == len(report.files) > 30
    assert run.failures == failures == []
    assert run.records == records > 1000


class _FailsOn(Strategy):
    """Raises at the first call of any session whose records carry the session id ``bad``."""

    name = "fails-on-bad"

    def compact(self, view, state):  # type: ignore[no-untyped-def]
        if any(r.session_id == "bad" for r in view.records):
            raise RuntimeError("boom in the bad session")
        return None


def _session(folder: Path, name: str, session_id: str) -> Path:
    text = (ROOT / "data" / "short-question-21636369.jsonl").read_text()
    original = next(line for line in text.splitlines() if '"sessionId"' in line)
    old = original.split('"sessionId":"', 1)[1].split('"', 1)[0]
    path = folder / name
    path.write_text(text.replace(old, session_id))
    return path


def test_failures_and_load_errors_are_those_of_the_serial_replay(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    _session(folder, "a.jsonl", "good-1")
    _session(folder, "b.jsonl", "bad")
    _session(folder, "c.jsonl", "good-2")
    (folder / "README.md").write_text("not a transcript\n")  # ignored
    (folder / "d.jsonl").write_text("this is not json\n")  # an error: a transcript suffix, no loader
    shutil.copy(ROOT / "data" / "tiny-hello-b8a1abcd.jsonl", folder / "e.jsonl")
    paths = [folder, tmp_path / "missing"]
    results, report, failures, records = _serial(paths, _FailsOn(), False)
    run = ParallelReplay(paths, _FailsOn(), workers=2)
    got = list(run.results())
    assert _rows(got) == _rows(results) and {r.session_id for r in got} >= {"good-1", "good-2"}
    assert run.failures == failures
    assert [f.session_id for f in failures] == ["bad"] and "boom in the bad session" in failures[0].reason
    assert isinstance(failures[0], SessionFailure)
    assert run.report.as_dict() == report.as_dict()
    assert {Path(e["file"]).name for e in report.errors} == {"d.jsonl", "missing"}
    assert [Path(e["file"]).name for e in report.ignored] == ["README.md"]
    assert run.records == records


def test_bad_arguments_are_refused_before_any_worker_starts(tmp_path: Path) -> None:
    for workers in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="--workers must be a positive number"):
            ParallelReplay([tmp_path], create("none"), workers=workers)  # type: ignore[arg-type]
    with pytest.raises(TranscriptError):
        ParallelReplay([tmp_path], create("none"), workers=2, fmt="no-such-format")
    assert multiprocessing.active_children() == []


def test_a_consumer_that_stops_early_leaves_no_worker_behind(tmp_path: Path) -> None:
    for n in range(6):
        _session(tmp_path, f"s{n}.jsonl", f"session-{n}")
    results = ParallelReplay([tmp_path], create("none"), workers=2).results()
    first = next(results)
    assert first.session_id == "session-0"
    results.close()
    assert multiprocessing.active_children() == []


def test_an_empty_input_starts_nothing_and_reports_the_path(tmp_path: Path) -> None:
    run = ParallelReplay([tmp_path / "nothing-here"], create("none"), workers=2)
    assert list(run.results()) == []
    assert run.report.errors == [{"file": str(tmp_path / "nothing-here"), "reason": "path does not exist"}]
    assert run.records == 0


@pytest.mark.corpus
@pytest.mark.parametrize("process", [False, True])
def test_replay_workers_on_the_command_line_print_what_one_process_prints(
    corpus: Path, tmp_path: Path, process: bool
) -> None:
    import pandas as pd
    from cli_helpers import run_cli

    paths = [corpus / "claude-code", corpus / "claude-code-more"]
    extra = ["--process"] if process else []
    one = run_cli("replay", *paths, "-s", "claude-code", "--json", *extra, "--out", tmp_path / "one")
    two = run_cli("replay", *paths, "-s", "claude-code", "--json", *extra, "--out", tmp_path / "two", "--workers", "2")
    assert one.exit_code == two.exit_code == 0, two.stderr
    strip = [line for line in one.stdout.splitlines() if '"out":' not in line]
    assert [line for line in two.stdout.splitlines() if '"out":' not in line] == strip
    assert one.stderr == two.stderr
    for table in ("steps", "events"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "two" / f"{table}.parquet"),
            pd.read_parquet(tmp_path / "one" / f"{table}.parquet"),
            check_exact=True,
        )


def test_replay_workers_report_bad_files_and_failures_as_one_process_does(tmp_path: Path) -> None:
    from cli_helpers import run_cli

    folder = tmp_path / "projects"
    folder.mkdir()
    _session(folder, "a.jsonl", "good-1")
    (folder / "d.jsonl").write_text("this is not json\n")
    options = ([], ["--workers", "3"])
    runs = [run_cli("replay", folder, tmp_path / "missing", "-s", "none", "--json", *w) for w in options]
    assert runs[0].exit_code == runs[1].exit_code == 0
    assert runs[1].stdout == runs[0].stdout and runs[1].stderr == runs[0].stderr
    assert "d.jsonl" in runs[0].stderr and "missing" in runs[0].stderr
    nothing = [run_cli("replay", tmp_path / "missing", "-s", "none", "--json", *w) for w in options]
    assert nothing[0].exit_code == nothing[1].exit_code == 1
    assert nothing[1].stdout == nothing[0].stdout and nothing[1].stderr == nothing[0].stderr
    bad = run_cli("replay", folder, "-s", "none", "--workers", "0")
    assert bad.exit_code == 2 and "--workers: must be at least 1, got 0" in bad.stderr


def test_ingest_workers_give_the_report_of_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli_helpers import run_cli

    from workbench.transcript import session_cache as sc

    folder = tmp_path / "projects"
    folder.mkdir()
    for n in range(5):
        _session(folder, f"s{n}.jsonl", f"session-{n}")
    (folder / "broken.jsonl").write_text('{"type": "user"\n')
    shutil.copy(ROOT / "data" / "long-autocompact-e3e70682.jsonl", folder / "long.jsonl")
    runs = []
    for workers in ("1", "2"):
        monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / f"cache-{workers}"))  # each parses every file
        monkeypatch.setattr(sc, "_STATE", {"off": None, "warned_corrupt": False})
        runs.append(run_cli("ingest", folder, tmp_path / "missing", "--json", "--workers", workers))
    assert runs[0].exit_code == runs[1].exit_code == 0
    assert runs[1].stdout == runs[0].stdout and runs[1].stderr == runs[0].stderr
    data = json.loads(runs[0].stdout)
    assert data["files"] == 7 and [Path(e["file"]).name for e in data["errors"]] == ["missing"]
    assert [(Path(s["file"]).name, s["line"]) for s in data["skipped"]] == [("broken.jsonl", 1)]
