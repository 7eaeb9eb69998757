"""The report's per-session analysis cache (`workbench.reporting.session_analysis`) changes nothing but time.

A report computed with the cache cold, with it warm and with it off is the same report, on the real corpus
and on generated sessions; a warm report reads only the files of sessions that have compaction events in
the replay (not their groups' other files); an entry is used only for the content, the pieces and the
settings it was written for; an entry that cannot be read and a cache folder that cannot be written are
warned about and change nothing else.
"""

from __future__ import annotations

import csv
import json
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli

from workbench.reporting import session_analysis
from workbench.reporting.report import report
from workbench.reporting.session_analysis import AnalysisCacheWarning
from workbench.synthetic import generate_session
from workbench.transcript import registry

COMPACTS = "c0000000-0000-4000-8000-00000000000c"
PLAIN = "d0000000-0000-4000-8000-00000000000d"


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own (cold at its start)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(folder))
    monkeypatch.setattr(session_analysis, "_WARNED", set())
    return folder


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """Two generated sessions: one with a recorded compaction, one without."""
    root = tmp_path / "project"
    compacting = {"target_tokens": 30_000, "compact_at": 22_000, "after_compact_calls": 4}
    _write(root / f"{COMPACTS}.jsonl", generate_session(11, session_id=COMPACTS, **compacting))
    _write(root / f"{PLAIN}.jsonl", generate_session(12, target_tokens=26_000, session_id=PLAIN))
    return root


def _replay(inputs: list[Path], out: Path, strategies: list[str]) -> Path:
    for name in strategies:
        done = run_cli("replay", *map(str, inputs), "-s", name, "--out", str(out / name), "--json")
        assert done.exit_code == 0, done.output
    return out


class Loads:
    """The files the loader reads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = registry._load_file

        def load(path: Path, *args: Any, **kwargs: Any) -> Any:
            self.paths.append(Path(path).name)
            return real(path, *args, **kwargs)

        monkeypatch.setattr(registry, "_load_file", load)


def _off(monkeypatch: pytest.MonkeyPatch, runs: Path, **kwargs: Any) -> dict[str, Any]:
    with monkeypatch.context() as patch:
        patch.setenv(session_analysis.CACHE_ENV, "0")
        return report(runs, **kwargs)


@pytest.mark.parametrize("strategies", [["none", "recorded", "sm-compact"], ["none"]])
@pytest.mark.parametrize("references", [False, True])
def test_a_warm_report_equals_a_cold_one_and_one_without_the_cache(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references: bool, strategies: list[str]
) -> None:
    """With ``none`` alone there are no events: the references (Claude's recorded summary) still need the
    records of the session that compacted."""
    runs = _replay([small], tmp_path / "runs", strategies)
    cold = report(runs, references=references)
    assert list(cache.glob("analyses/*/*/*.analysis")), "nothing was cached"
    warm = report(runs, references=references)
    assert warm == cold == _off(monkeypatch, runs, references=references)
    assert cold["calibration"] and cold["recovery"]
    assert bool(cold["reference"]) is references


def test_a_warm_report_loads_only_the_groups_with_events(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _replay([small], tmp_path / "runs", ["none"])  # `none` compacts nothing: no events
    cold = report(runs)
    loads = Loads(monkeypatch)
    assert report(runs) == cold
    assert loads.paths == [], "a session without events was loaded though its analysis is cached"
    recorded = _replay([small], tmp_path / "recorded", ["recorded"])
    report(recorded)
    loads.paths.clear()
    report(recorded)
    assert loads.paths == [f"{COMPACTS}.jsonl"]  # its recorded compaction is an event; the other is cached
    loads.paths.clear()
    report(recorded, references=True)  # the references read every record
    assert sorted(loads.paths) == sorted([f"{COMPACTS}.jsonl", f"{PLAIN}.jsonl"])


def test_of_a_group_with_events_only_the_files_with_events_are_read(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compacting session's sub-agent (a file of its group, with no events of its own) is taken from the
    cache as a session of a group without events is; the report equals a cold one and one without the cache."""
    agent = small / COMPACTS / "subagents" / "agent-a1.jsonl"
    _write(agent, generate_session(13, target_tokens=40_000, session_id=COMPACTS, agent_id="a1"))
    runs = _replay([small], tmp_path / "runs", ["recorded"])
    cold = report(runs)
    assert len(cold["sessions"]) == 3 and any(s["session_id"].endswith("/agent-a1") for s in cold["sessions"])
    loads = Loads(monkeypatch)
    assert report(runs) == cold
    assert loads.paths == [f"{COMPACTS}.jsonl"]
    assert _off(monkeypatch, runs) == cold  # without the cache every file is read
    assert sorted(loads.paths) == sorted([f"{COMPACTS}.jsonl", f"{COMPACTS}.jsonl", "agent-a1.jsonl", f"{PLAIN}.jsonl"])


def test_an_entry_is_used_only_for_the_content_it_was_written_for(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session Claude Code went on writing after its analysis was cached is analysed again."""
    plain = small / f"{PLAIN}.jsonl"
    lines = plain.read_text(encoding="utf-8").splitlines()
    plain.write_text("\n".join(lines[: len(lines) // 2]) + "\n", encoding="utf-8")
    before = report(_replay([small], tmp_path / "before", ["none"]))
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")  # the same path, more lines
    runs = _replay([small], tmp_path / "runs", ["none"])
    after = report(runs)
    assert after == _off(monkeypatch, runs)
    cost = {row["session_id"]: row["recorded_cost_usd"] for row in after["sessions"]}
    assert cost[PLAIN] > {row["session_id"]: row["recorded_cost_usd"] for row in before["sessions"]}[PLAIN]


def test_a_piece_an_entry_lacks_is_computed(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calibration is computed for ``none`` and ``recorded`` runs only: an entry written for another
    strategy's report lacks it, and a report that needs it computes it."""
    report(_replay([small], tmp_path / "first", ["sm-compact"]))
    runs = _replay([small], tmp_path / "runs", ["none"])
    calibrated = report(runs)
    assert calibrated == _off(monkeypatch, runs)
    assert [row["session_id"] for row in calibrated["calibration"]] == [PLAIN]  # the session without compactions


def test_other_pricing_and_estimators_are_other_entries(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _replay([small], tmp_path / "runs", ["recorded"])
    report(runs)
    assert len(list(cache.glob("analyses/*/*/*.analysis"))) == 2
    prices = tmp_path / "prices.csv"
    with (resources.files("workbench") / "data" / "pricing.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    for row in rows:  # every price ten times higher
        row.update({k: str(float(v) * 10) for k, v in row.items() if v and k not in ("model", "certain", "note")})
    with prices.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    dearer = report(runs, pricing_path=str(prices))
    assert dearer == _off(monkeypatch, runs, pricing_path=str(prices))
    cost = [r["recorded_cost_usd"] for r in report(runs)["sessions"]]
    assert [r["recorded_cost_usd"] for r in dearer["sessions"]] == pytest.approx([c * 10 for c in cost])
    counted = report(runs, estimator="tiktoken:o200k_base")
    assert counted == _off(monkeypatch, runs, estimator="tiktoken:o200k_base")
    assert len(list(cache.glob("analyses/*/*/*.analysis"))) == 6  # two sessions × three settings


def test_an_unreadable_entry_is_warned_about_and_analysed_again(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _replay([small], tmp_path / "runs", ["none"])
    expected = report(runs)
    entries = list(cache.glob("analyses/*/*/*.analysis"))
    assert len(entries) == 2
    for entry in entries:
        entry.write_bytes(b"\x80\x05not a pickle")
    with pytest.warns(AnalysisCacheWarning, match="cannot be read"):
        assert report(runs) == expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report(runs) == expected  # rewritten


def test_a_cache_folder_that_cannot_be_written_is_warned_about_once(
    cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _replay([small], tmp_path / "runs", ["none"])
    expected = _off(monkeypatch, runs)
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "analyses").write_text("a file where the folder goes", encoding="utf-8")
    with pytest.warns(AnalysisCacheWarning, match="reporting without it") as caught:
        assert report(runs) == expected
    assert len([w for w in caught if issubclass(w.category, AnalysisCacheWarning)]) == 1


def test_the_cache_can_be_turned_off(cache: Path, small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _replay([small], tmp_path / "runs", ["none"])
    _off(monkeypatch, runs)
    assert not list(cache.glob("analyses/*/*/*.analysis"))


def test_the_real_corpus_reports_the_same_from_cached_analyses(
    corpus: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every folder of the corpus (every format), with the runs a calibration and the baseline sizes need."""
    folders = sorted(p for p in corpus.iterdir() if p.is_dir())
    runs = _replay(folders, tmp_path / "runs", ["recorded", "sm-compact"])
    cold = report(runs)
    warm = report(runs)
    assert warm == cold == _off(monkeypatch, runs)
    sessions = {row["session_id"] for row in cold["sessions"]}
    assert len(sessions) > 60
    entries = list(cache.glob("analyses/*/*/*.analysis"))
    assert len(entries) == len({(row["session_id"], row["file"]) for row in cold["sessions"]})  # one per session
    assert json.dumps(cold, sort_keys=True)  # still JSON
