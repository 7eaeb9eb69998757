"""``workbench replay --process``: a main session and its sub-agents replayed as one process through the CLI
(`workbench.replay.replay_process`, the shared state of `workbench.strategies.process`), one group at a time."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from cli_helpers import run_cli

from workbench.replay import replay_process
from workbench.strategies import create
from workbench.transcript import load_paths


def _replay(*args: str) -> tuple[int, dict, str]:
    result = run_cli("replay", *args, "--json")
    return result.exit_code, json.loads(result.stdout), result.stderr


@pytest.mark.corpus
def test_process_mode_replays_each_group_through_replay_process(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = corpus / "claude-code" / "marot-spotter"
    main = folder / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    subagents = folder / "8463c716-a2ea-4c14-9efa-87158ebd9f20"
    engine = importlib.import_module("workbench.replay.parallel")  # the CLI replays a group through it
    groups: list[list[str]] = []
    real = engine.replay_process

    def spy(sessions, strategy, **kw):
        groups.append(sorted(s.id for s in sessions))
        return real(sessions, strategy, **kw)

    monkeypatch.setattr(engine, "replay_process", spy)
    code, data, err = _replay(str(main), str(subagents), "-s", "claude-code", "--process")
    assert code == 0, err
    assert len(groups) == 1 and len(groups[0]) == 3  # the main session and its two sub-agents, together
    sessions = list(load_paths([main, subagents]))
    expected = {r.session_id: r for r in real(sessions, create("claude-code"))}
    got = {s["session_id"]: s for s in data["sessions"]}
    assert set(got) == set(expected)
    for sid, result in expected.items():
        assert got[sid]["steps"] == len(result.steps)
        assert got[sid]["peak_context_tokens"] == result.peak_context_tokens
        assert [e["step"] for e in got[sid]["events"]] == [e["step"] for e in result.events]


def test_a_failing_group_is_reported_under_its_main_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "s1"
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "hi"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s1",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        },
    ]
    folder.mkdir()
    (tmp_path / "s1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    sub = folder / "subagents"
    sub.mkdir()
    (sub / "agent-x1.jsonl").write_text(
        "".join(json.dumps({**x, "agentId": "x1", "isSidechain": True}) + "\n" for x in lines)
    )
    engine = importlib.import_module("workbench.replay.parallel")  # the CLI replays a group through it

    def broken(sessions, strategy, **kw):
        raise RuntimeError("shared state went wrong")

    monkeypatch.setattr(engine, "replay_process", broken)
    code, data, err = _replay(str(tmp_path), "-s", "claude-code", "--process")
    assert code == 1  # the only group failed
    assert [f["session_id"] for f in data["failed"]] == ["s1"]
    assert "RuntimeError: shared state went wrong" in err
    monkeypatch.setattr(engine, "replay_process", replay_process)
    code, data, err = _replay(str(tmp_path), "-s", "claude-code", "--process")
    assert code == 0 and sorted(s["session_id"] for s in data["sessions"]) == ["s1", "s1/agent-x1"]


_IMPORTS = """
import json, sys
from workbench.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "pandas": "pandas" in sys.modules, "pyarrow": "pyarrow" in sys.modules}))
"""


def test_a_replay_without_out_imports_neither_pandas_nor_pyarrow(tmp_path: Path) -> None:
    """Rows go to parquet only with ``--out``; without it the ~0.6 s of importing pandas and pyarrow is not
    paid (it was, via `workbench.replay.run` and `workbench.replay.frames`, on every replay)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    session = root / "data" / "tiny-hello-b8a1abcd.jsonl"
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(tmp_path / "cache")}

    def run(*extra: str) -> dict:
        argv = [sys.executable, "-c", _IMPORTS, "replay", str(session), "-s", "claude-code", "--json", *extra]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=root, env=env).stdout
        return json.loads(out.strip().splitlines()[-1])

    assert run() == {"code": 0, "pandas": False, "pyarrow": False}
    assert run("--out", str(tmp_path / "out")) == {"code": 0, "pandas": True, "pyarrow": True}
    assert (tmp_path / "out" / "steps.parquet").is_file()
