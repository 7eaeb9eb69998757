"""Users' own strategies: a class defined in ``__main__`` (a notebook cell) runs through
``wb.replay`` and sweeps on the local executor (forked and spawned workers) and on dask; a package
registers strategies through the ``workbench.strategies`` entry point group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"

STRATEGY = '''
from pydantic import Field

import workbench as wb


class KeepTail(wb.Strategy):
    """Keeps the last `keep` records once the context reaches `at_tokens` (no summary)."""

    name = "keep-tail"
    description = "drop all but the last records"
    unsafe = True

    class Config(wb.StrategyConfig):
        keep: int = Field(40, gt=0)
        at_tokens: int = Field(120_000, gt=0)

    def compact(self, view, state):
        if view.tokens < self.config.at_tokens or len(view.records) <= self.config.keep:
            return None
        start = len(view.records) - self.config.keep
        return wb.Compaction(
            kind="keep-tail", trigger="tokens", records=view.records[start:],
            dropped=tuple(r.uuid for r in view.records[:start]), start=start, naive_start=start,
        )
'''


def _env(*paths: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT)]),
        "WORKBENCH_CODE_VERSION": "test",
    }


@pytest.mark.slow
def test_a_main_module_strategy_runs_in_replay_and_every_executor(tmp_path):
    script = tmp_path / "notebook_like.py"
    script.write_text(
        STRATEGY
        + textwrap.dedent(
            f"""
            import json
            import workbench.experiments.executors as executors

            if __name__ == "__main__":
                corpus = wb.load({str(DATA)!r}, progress=False)
                runs = wb.replay(corpus, ["none", KeepTail, wb.strategy(KeepTail, keep=80)], progress=False)
                import workbench.util.pool as pool

                original, pool.start_method = pool.start_method, lambda: "spawn"  # workers without this class
                spawned = wb.replay(corpus, ["none", KeepTail, wb.strategy(KeepTail, keep=80)], progress=False,
                                    workers=2)
                pool.start_method = original
                same_when_spawned = all(getattr(spawned, f).equals(getattr(runs, f))
                                        for f in ("configs", "cells", "steps", "events"))
                summary = runs.summary(metrics=("savings",), columns="all")  # before registering: labels from the class
                wb.register(KeepTail)
                spec = {{"name": "mine", "corpus": [{str(DATA)!r}], "metrics": ["savings", "validity"],
                         "strategies": [{{"name": "keep-tail", "grid": {{"keep": [40, 80]}}}}]}}
                out = {{"labels": runs.labels, "same_when_spawned": same_when_spawned,
                        "replay": summary.set_index("label")["tokens_saved"].to_dict()}}
                for name, executor, method in (("fork", "local", "fork"), ("spawn", "local", "spawn"),
                                                ("dask", "dask-local", None)):
                    if method:
                        executors.local_start_method = lambda method=method: method
                    swept = wb.sweep(spec, store={str(tmp_path)!r} + "/" + name, executor=executor, workers=1,
                                     progress=False)
                    table = swept.summary(metrics=("savings",), columns="all")
                    out[name] = table.set_index("label")["tokens_saved"].to_dict()
                print(json.dumps(out))
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["labels"] == ["none", "keep-tail", "keep-tail keep=80"]
    assert out["same_when_spawned"] is True
    assert out["replay"]["keep-tail"] > 0 and out["replay"]["none"] == 0
    expected = {"keep-tail": out["replay"]["keep-tail"], "keep-tail keep=80": out["replay"]["keep-tail keep=80"]}
    assert out["fork"] == expected and out["spawn"] == expected and out["dask"] == expected


def test_editing_a_user_strategy_changes_its_cells():
    """Cell ids cover the user's class code (not in the package's code version)."""
    from workbench.strategies.portable import code_fingerprint

    def make(threshold: int) -> type:
        namespace: dict = {}
        exec(STRATEGY.replace("view.tokens < self.config.at_tokens", f"view.tokens < {threshold}"), namespace)
        cls = namespace["KeepTail"]
        cls.__module__ = "__main__"
        return cls

    a, b, again = make(1), make(2), make(1)
    assert code_fingerprint(a) != code_fingerprint(b)
    assert code_fingerprint(a) == code_fingerprint(again)  # a re-run cell: a new class, the same code
    from workbench.strategies import get_strategy

    assert code_fingerprint(get_strategy("sm-compact")) == ""


def _package(root: Path) -> Path:
    """A tiny strategy package installed metadata-only: a module and a dist-info folder on the path."""
    root.mkdir()
    (root / "tinystrat.py").write_text(STRATEGY.replace('"keep-tail"', '"tiny"').replace("KeepTail", "TinyStrategy"))
    info = root / "tinystrat-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinystrat\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[workbench.strategies]\ntiny = tinystrat:TinyStrategy\n")
    broken = root / "brokenstrat-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenstrat\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text("[workbench.strategies]\nbroken = no_such_module_x:Nope\n")
    return root


def test_entry_point_strategies_are_listed_and_replayed(tmp_path):
    plugins = _package(tmp_path / "site")
    env = _env(plugins)
    cli = [sys.executable, "-m", "workbench.cli"]
    listed = subprocess.run([*cli, "strategies", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    tiny = next(row for row in data["strategies"] if row["name"] == "tiny")
    assert tiny["origin"] == "entry point tinystrat:TinyStrategy (tinystrat)" and tiny["defaults"]["keep"] == 40
    (error,) = [e for e in data["errors"] if e["name"] == "broken"]
    assert error["entry_point"] == "no_such_module_x:Nope" and "ModuleNotFoundError" in error["error"]
    assert {row["name"] for row in data["strategies"]} >= {"sm-compact", "none", "tiny"}
    human = subprocess.run([*cli, "strategies"], capture_output=True, text=True, env=env, timeout=120)
    assert "error: strategy broken (no_such_module_x:Nope)" in human.stdout
    replayed = subprocess.run(
        [*cli, "replay", str(DATA), "-s", "tiny", "--set", "at_tokens=100000", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    result = json.loads(replayed.stdout)
    assert result["strategy"] == "tiny" and result["config"]["at_tokens"] == 100_000
    assert sum(len(s["events"]) for s in result["sessions"]) > 0
    asked = subprocess.run([*cli, "replay", str(DATA), "-s", "broken"], capture_output=True, text=True, env=env)
    assert asked.returncode == 2 and "broken" in asked.stderr and "no_such_module_x" in asked.stderr
