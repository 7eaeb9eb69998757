"""One bad record, session or run folder must not take the run down.

* usage of NaN / 1e999 / 10**30 crashed ``replay`` (every strategy), ``invariants`` and ``tokens`` for the
  whole folder: it is now a warning at load and the value counts as missing;
* any session a command fails on is reported (file, session, reason) and the others finish
  (`workbench.transcript.isolation`), exit 0 when one succeeded, 1 when none did;
* a lone surrogate crashed every compacting strategy;
* bad ``--set`` values are usage errors (exit 2), a corrupt run folder is left out of ``report``.
"""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest
from hostile import cli, write_claude

from workbench.transcript import isolation, load_paths
from workbench.transcript.isolation import SessionFailure, each_session, over_sessions

ROOT = Path(__file__).resolve().parents[2]
BAD_USAGE = {"nan": "NaN", "inf": "1e999", "huge": str(10**30)}


@pytest.fixture
def bad_usage_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    for name, value in BAD_USAGE.items():
        write_claude(folder / f"{name}.jsonl", f"s-{name}", input_tokens=value)
    write_claude(folder / "good.jsonl", "s-good")
    return folder


def test_bad_usage_is_a_warning_and_treated_as_missing(bad_usage_folder: Path) -> None:
    code, out, _ = cli("ingest", str(bad_usage_folder), "--json")
    data = json.loads(out)
    assert code == 0 and data["sessions"] == 4 and data["skipped"] == []
    warned = {Path(w["file"]).stem: w for w in data["warnings"]}
    assert set(warned) == set(BAD_USAGE)
    assert all(w["line"] == 2 and "usage.input_tokens" in w["reason"] for w in warned.values())
    assert "treated as missing" in warned["nan"]["reason"] and "nan" in warned["nan"]["reason"]
    sessions = {s.id: s for s in load_paths([bad_usage_folder])}
    assert "input_tokens" not in sessions["s-nan"].records[1].usage
    assert sessions["s-nan"].records[1].raw["message"]["usage"]["input_tokens"] != 0  # raw keeps the record
    assert sessions["s-good"].records[1].usage["input_tokens"] == 100


@pytest.mark.parametrize(
    "command",
    [["replay", "-s", "sm-compact"], ["replay", "-s", "none"], ["invariants"], ["tokens"], ["validate"]],
    ids=lambda c: "-".join(c),
)
def test_commands_finish_the_folder_with_bad_usage(bad_usage_folder: Path, command: list[str]) -> None:
    code, out, err = cli(*command, str(bad_usage_folder), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["failed"] == []
    if command[0] == "replay":
        assert len(data["sessions"]) == 4
    elif command[0] == "tokens":
        assert data["sessions"] == 4 and data["estimators"]
    else:
        assert data["sessions"] == 4


def test_a_failing_session_is_reported_and_the_others_finish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    write_claude(folder / "b.jsonl", "s-b")
    replay_package = importlib.import_module("workbench.replay")  # the module (``wb.replay`` is the facade)

    real = replay_package.replay_session

    def flaky(session, strategy, **kw):
        if session.id == "s-a":
            raise ValueError("cannot convert float NaN to integer")
        return real(session, strategy, **kw)

    monkeypatch.setattr(replay_package, "replay_session", flaky)
    code, out, err = cli("replay", str(folder), "-s", "none", "--json", "--out", str(tmp_path / "run"))
    data = json.loads(out)
    assert code == 0
    assert [s["session_id"] for s in data["sessions"]] == ["s-b"]
    failure = {
        "file": str(folder / "a.jsonl"),
        "session_id": "s-a",
        "reason": "ValueError: cannot convert float NaN to integer",
    }
    assert data["failed"] == [failure]
    assert f"error: {folder / 'a.jsonl'}: session s-a: ValueError: cannot convert float NaN to integer" in err
    assert (tmp_path / "run" / "steps.parquet").is_file()
    code, _, err = cli("replay", str(folder / "a.jsonl"), "-s", "none")
    assert code == 1 and "all 1 session(s) failed" in err


def test_aggregate_commands_isolate_the_failing_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """validate and invariants tally across sessions, one session at a time (the commands stream): a
    session whose tally raises adds nothing, is reported, and the others are counted."""
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    write_claude(folder / "b.jsonl", "s-b")
    study = importlib.import_module("workbench.studies.naive_cut")

    for name in ("ValidateStudy", "InvariantsStudy"):
        cls = getattr(study, name)

        def broken(self, session, *args, _real=cls.add, **kw):
            if session.id == "s-a":
                raise OverflowError("cannot convert float infinity to integer")
            return _real(self, session, *args, **kw)

        monkeypatch.setattr(cls, "add", broken)
    for command in ("validate", "invariants"):
        code, out, err = cli(command, str(folder), "--json")
        data = json.loads(out)
        assert code == 0 and data["sessions"] == 1, (command, err)
        assert [f["session_id"] for f in data["failed"]] == ["s-a"]
        assert "OverflowError: cannot convert float infinity to integer" in err


def test_over_sessions_pays_nothing_without_failures_and_reraises_an_aggregate_bug() -> None:
    calls: list[int] = []
    sessions = list(
        load_paths([ROOT / "data" / "tiny-hello-b8a1abcd.jsonl", ROOT / "data" / "short-question-21636369.jsonl"])
    )

    def count(items):
        calls.append(len(items))
        return len(items)

    failures: list[SessionFailure] = []
    assert over_sessions(count, sessions, failures) == (sessions, 2) and calls == [2] and failures == []

    def only_together(items):
        if len(items) > 1:
            raise RuntimeError("interaction")
        return 1

    with pytest.raises(RuntimeError, match="interaction"):
        over_sessions(only_together, sessions, failures)
    assert failures == []
    done = each_session(lambda s: 1 / 0 if "tiny" in (s.source or "") else s.id, sessions, failures)
    assert [value for _, value in done] == [sessions[1].id]
    assert failures[0].reason == "ZeroDivisionError: division by zero"


def test_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DEBUG", "1")
    sessions = list(load_paths([ROOT / "data" / "tiny-hello-b8a1abcd.jsonl"]))
    with pytest.raises(ZeroDivisionError):
        isolation.each_session(lambda s: 1 / 0, sessions, [])


def test_lone_surrogates_replay_through_every_strategy(tmp_path: Path) -> None:
    """Every text of the embedded long session gets a lone surrogate; every strategy replays it (most
    compact: they hash and summarise that text)."""
    from workbench.replay import replay_session
    from workbench.strategies import create, strategies

    source = (ROOT / "data" / "long-autocompact-e3e70682.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "surrogates.jsonl"
    path.write_text(source.replace('"text":"', '"text":"\\udc80').replace('"content":"', '"content":"\\ud800x'))
    [session] = load_paths([path])
    assert session.metadata["warnings"]
    compactions = 0
    for name in sorted(strategies()):
        result = replay_session(session, create(name))
        compactions += len(result.events)
    assert compactions > 20


def test_compaction_records_hash_surrogates() -> None:
    """The Python API path (no loader in between): the records a compaction creates hash any text."""
    from workbench.strategies.recent_window import user_note
    from workbench.strategies.records import compact_boundary, summary_message

    boundary = compact_boundary("auto", 10, None)
    assert summary_message("cut \udc80 here", boundary).uuid
    assert user_note("cut \ud800 here", "summary", "k\udc80").uuid


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["min_tokens=["], "--set 'min_tokens=[': the value is not valid YAML"),
        (["min_tokens=*a"], "the value is not valid YAML (found undefined alias"),
        (["min_tokens=!!python/object/apply:os.system [echo]"], "could not determine a constructor"),
        (["trigger=5", "trigger.pct_of_window=3"], "trigger is already set to 5, not a mapping"),
        (["trigger.pct_of_window=3", "trigger=5"], "trigger already has keys set (pct_of_window)"),
        (["=3"], "--set expects key=value"),
    ],
)
def test_bad_set_values_are_usage_errors(tmp_path: Path, sets: list[str], message: str) -> None:
    path = write_claude(tmp_path / "s.jsonl", "s1")
    args = [item for value in sets for item in ("--set", value)]
    code, _, err = cli("replay", str(path), "-s", "sm-compact", *args)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_report_leaves_a_corrupt_run_folder_out(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_claude(corpus / "a.jsonl", "s-a")
    runs = tmp_path / "runs"
    assert cli("replay", str(corpus), "-s", "none", "--out", str(runs / "none"))[0] == 0
    shutil.copytree(runs / "none", runs / "broken")
    (runs / "broken" / "steps.parquet").write_bytes(b"not parquet")
    shutil.copytree(runs / "none", runs / "bad-manifest")
    (runs / "bad-manifest" / "manifest.json").write_text("{")
    code, out, err = cli("report", str(runs), "--json")
    data = json.loads(out)
    assert code == 0 and [Path(r["path"]).name for r in data["runs"]] == ["none"]
    assert {Path(f["path"]).name for f in data["failed_runs"]} == {"broken", "bad-manifest"}
    assert any("steps.parquet" in f["reason"] for f in data["failed_runs"])
    assert f"error: {runs / 'broken'}: steps.parquet" in err
    assert any("left out" in note for note in data["notes"])
    code, _, err = cli("report", str(runs / "broken"))
    assert code == 1 and "no run folder could be read" in err


def test_recovery_reports_a_failing_session_and_measures_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``workbench recovery`` maps over sessions through `workbench.transcript.isolation` like the other commands."""
    folder = tmp_path / "corpus"
    write_claude(folder / "a.jsonl", "s-a")
    write_claude(folder / "b.jsonl", "s-b")
    recovery_module = importlib.import_module("workbench.metrics.recovery")
    real = recovery_module.recovery_rows

    def flaky(session, **kw):
        if session.id == "s-a":
            raise ValueError("boom")
        return real(session, **kw)

    monkeypatch.setattr(recovery_module, "recovery_rows", flaky)
    code, out, err = cli("recovery", str(folder), "--json")
    data = json.loads(out)
    assert code == 0, err
    assert data["sessions"] == 1
    assert [f["session_id"] for f in data["failed"]] == ["s-a"]
    assert "session s-a: ValueError: boom" in err
