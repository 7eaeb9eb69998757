"""``workbench recovery`` and ``workbench report`` hold one session group at a time.

The loader is wrapped so every session it returns is weakly tracked (`LiveSessions`); whenever a file is
about to be read, the sessions still alive must all belong to that file's own group (a main session and
its sub-agents): listing every session of the inputs first would keep the first group alive at the
second group's file. The corpus is synthetic (`workbench.synthetic`): four
groups, two recorded compactions, a compaction agent (``agent-acompact-*``) in the flat layout whose file
sorts before its main session's, so the groups do not come in `load_paths` order.
"""

from __future__ import annotations

import gc
import json
import shutil
import weakref
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli

from workbench.reporting.report import report
from workbench.synthetic import generate_session
from workbench.transcript import LoadReport, Session, groups, load_paths, registry

ZETA = "f0000000-0000-4000-8000-000000000001"  # compacts; its compaction agent's file sorts first
BETA = "c0000000-0000-4000-8000-000000000002"  # compacts
GAMMA = "d0000000-0000-4000-8000-000000000003"  # a sub-agent in <id>/subagents/
DELTA = "e0000000-0000-4000-8000-000000000004"


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def corpus4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("groups") / "project"
    compacting = {"target_tokens": 30_000, "compact_at": 22_000, "after_compact_calls": 4}
    _write(root / f"{ZETA}.jsonl", generate_session(1, session_id=ZETA, **compacting))
    _write(
        root / "agent-acompact-a1b2c3.jsonl",
        generate_session(2, target_tokens=26_000, max_calls=2, session_id=ZETA, agent_id="acompact-a1b2c3"),
    )
    _write(root / f"{BETA}.jsonl", generate_session(3, session_id=BETA, **compacting))
    _write(root / f"{GAMMA}.jsonl", generate_session(4, target_tokens=26_000, session_id=GAMMA))
    _write(
        root / GAMMA / "subagents" / "agent-a0f0f0.jsonl",
        generate_session(5, target_tokens=26_000, session_id=GAMMA, agent_id="a0f0f0"),
    )
    _write(root / f"{DELTA}.jsonl", generate_session(6, target_tokens=26_000, session_id=DELTA))
    return root


class LiveSessions:
    """Every session the loader returns, weakly referenced; at each file read, the groups still alive."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *roots: Path) -> None:
        files = list(registry.iter_files(list(roots), LoadReport()))
        self.group_of = {str(p): n for n, group in enumerate(groups.group_files(files)) for p, _ in group}
        self.live: list[weakref.ref[Session]] = []  # not a WeakSet: a session hashes its fields, unset in __new__
        #: (group of the file about to be read, groups with a session holding records still alive)
        self.reads: list[tuple[int, set[int]]] = []
        tracked = self._tracked_class()
        real = registry._load_file

        def load(path: Path, named: bool, forced: Any, report: Any, **kw: Any) -> Any:
            gc.collect()
            alive = {self.group_of[str(s.source)] for s in (ref() for ref in self.live) if s is not None and s.records}
            self.reads.append((self.group_of[str(path)], alive))
            found = real(path, named, forced, report, **kw)
            if not isinstance(found, list):
                return found
            return [tracked(**{f.name: getattr(s, f.name) for f in fields(Session) if f.init}) for s in found]

        monkeypatch.setattr(registry, "_load_file", load)

    def _tracked_class(self) -> type[Session]:
        live = self.live

        class Tracked(Session):  # Session has slots: a subclass can be weakly referenced
            def __new__(cls, *args: Any, **kwargs: Any) -> Tracked:
                session = super().__new__(cls)
                live.append(weakref.ref(session))  # copies (`dataclasses.replace`) are tracked too
                return session

        return Tracked

    def check(self, groups: int) -> None:
        assert len({group for group, _ in self.reads}) == groups  # every group was read, so this can fail
        earlier = [(group, alive - {group}) for group, alive in self.reads if alive - {group}]
        assert not earlier, f"sessions of other groups alive when a group was read: {earlier}"


def _replay(corpus: Path, runs: Path, strategies: list[str]) -> None:
    for name in strategies:
        out = run_cli("replay", str(corpus), "-s", name, "--out", str(runs / name), "--json")
        assert out.exit_code == 0, out.output


def test_recovery_holds_one_group_at_a_time(corpus4: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live = LiveSessions(monkeypatch, corpus4)
    out = run_cli("recovery", str(corpus4), "--validate", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["sessions"] == 6 and data["failed"] == []
    assert {Path(c["file"]).stem for c in data["compactions"]} == {ZETA, BETA}
    assert len(data["validation"]["compactions"]) == len(data["compactions"])
    live.check(groups=4)


@pytest.fixture(scope="module")
def runs4(corpus4: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    _replay(corpus4, runs, ["none", "recorded"])
    return runs


def test_report_holds_one_group_at_a_time(corpus4: Path, runs4: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live = LiveSessions(monkeypatch, corpus4)
    data = report(runs4, references=True)
    assert not any("not available" in note for note in data["notes"])
    assert {r["source"] for r in data["reference"]} == {"compact-summary", "acompact-transcript"}
    assert data["calibration"] and data["recovery"]
    live.check(groups=4)


def test_streamed_report_equals_the_report_of_the_sessions_in_memory(corpus4: Path, runs4: Path) -> None:
    """Read group by group from the manifests or handed over as one list: the same report, row order
    included (the reference rows in `load_paths` order, though the groups come in another)."""
    given = list(load_paths([corpus4]))
    assert [s.id for s in given if not s.is_subagent] == [BETA, GAMMA, DELTA, ZETA]
    streamed = report(runs4, references=True)
    assert [r["session_id"] for r in streamed["reference"]] == [BETA, ZETA, ZETA]
    assert streamed == report(runs4, sessions=given, references=True)


def test_copies_are_validated_and_referenced_each_on_their_own(corpus4: Path, tmp_path: Path) -> None:
    """Two copies of a folder share their session ids. The validation table had the first copy's rows
    twice and the second's unscored; the report paired both copies with the first copy's compaction
    agent. Scored per group, each copy has its own rows."""
    both = tmp_path / "both"
    for name in ("a", "b"):
        shutil.copytree(corpus4, both / name)
    out = run_cli("recovery", str(both), "--validate", "--json")
    data = json.loads(out.stdout)
    table = data["validation"]["compactions"]
    assert len(data["compactions"]) == 4 and len(table) == 4
    assert sorted((Path(r["file"]).parent.name, r["event"]) for r in table) == [("a", 0), ("a", 0), ("b", 0), ("b", 0)]
    assert all(r["needed_recall"] is not None for r in table)
    runs = tmp_path / "runs"
    _replay(both, runs, ["none"])
    agents = [r for r in report(runs, references=True)["reference"] if r["source"] == "acompact-transcript"]
    assert [(Path(r["file"]).parent.name, r["origin"].split(" @ ")[1].split("/")[-2]) for r in agents] == [
        ("a", "a"),
        ("b", "b"),
    ]


@pytest.mark.parametrize("process", [False, True], ids=["sessions", "processes"])
def test_replay_holds_one_group_at_a_time(corpus4: Path, monkeypatch: pytest.MonkeyPatch, process: bool) -> None:
    """``workbench replay`` (one session at a time, and ``--process``: one group at a time) lets go of a
    group's sessions before the next group is read."""
    live = LiveSessions(monkeypatch, corpus4)
    argv = ["replay", str(corpus4), "-s", "claude-code", "--json", *(["--process"] if process else [])]
    out = run_cli(*argv)
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.stdout)["sessions"]) == 6
    live.check(groups=4)


def test_a_flat_sub_agent_joins_its_main_session_whose_file_was_renamed(
    corpus4: Path, tmp_path: Path, runs4: Path
) -> None:
    """A flat ``agent-*.jsonl`` belongs to the main file whose first ``sessionId`` is its own, also when
    that file is not named ``<sessionId>.jsonl``: the compaction agent still pairs with its compaction."""
    root = tmp_path / "project"
    shutil.copytree(corpus4, root)
    (root / f"{ZETA}.jsonl").rename(root / "renamed-main.jsonl")
    found = groups.group_files(list(registry.iter_files([root], LoadReport())))
    names = [sorted(p.name for p, _ in group) for group in found]
    assert ["agent-acompact-a1b2c3.jsonl", "renamed-main.jsonl"] in names
    assert len(found) == 4
    out = run_cli("recovery", str(root), "--validate", "--json")
    assert out.exit_code == 0, out.output
    validated = json.loads(out.stdout)["validation"]["compactions"]
    zeta = [row for row in validated if Path(row["file"]).name == "renamed-main.jsonl"]
    original = json.loads(run_cli("recovery", str(corpus4), "--validate", "--json").stdout)
    before = [r for r in original["validation"]["compactions"] if Path(r["file"]).stem == ZETA]
    assert zeta and [{k: v for k, v in r.items() if k != "file"} for r in zeta] == [
        {k: v for k, v in r.items() if k != "file"} for r in before
    ]
