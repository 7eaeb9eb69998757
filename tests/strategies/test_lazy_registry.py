"""A built-in strategy is looked up by importing only its own module (`registry._BUILTIN_MODULES`), so a
replay of one strategy neither builds the other modules' configs nor scans the entry points; listing
still shows every strategy, in the order it always has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.strategies import registry, strategies
from workbench.strategies.base import Strategy, StrategyConfig

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
import json, sys
from workbench.strategies import registry
{body}
print(json.dumps({{"modules": sorted(m for m in sys.modules if m.startswith("workbench.strategies.")),
                  "metadata": "importlib.metadata" in sys.modules, "entry_points": registry._ENTRY_POINTS_LOADED,
                  "names": list(registry._REGISTRY)}}))
"""


def _fresh(body: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _RUN.format(body=body)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_the_table_names_every_builtin_strategy_and_its_module() -> None:
    builtin = {name: cls for name, cls in strategies().items() if cls.__module__.startswith("workbench.")}
    assert set(builtin) == set(registry._BUILTIN_MODULES)
    for name, cls in builtin.items():
        assert cls.__module__ == f"workbench.strategies.{registry._BUILTIN_MODULES[name]}", name


def test_looking_up_one_strategy_imports_only_its_module_and_what_it_uses() -> None:
    run = _fresh("registry.get_strategy('none')")
    assert "workbench.strategies.baseline" in run["modules"]
    assert "workbench.strategies.claude_code" not in run["modules"]
    assert "workbench.strategies.openhands" not in run["modules"]
    assert run["entry_points"] is False
    assert run["names"] == ["none", "recorded"]
    cc = _fresh("registry.create('claude-code')")
    assert "workbench.strategies.claude_code" in cc["modules"]
    assert "workbench.strategies.letta" not in cc["modules"] and "workbench.strategies.aider" not in cc["modules"]


def test_listing_after_a_lookup_keeps_the_builtin_order() -> None:
    fresh = _fresh("registry.strategies()")
    after = _fresh("registry.get_strategy('claude-code'); registry.get_strategy('letta'); registry.strategies()")
    assert after["names"] == fresh["names"] == list(registry._BUILTIN_MODULES)
    assert after["entry_points"] is True
    user_first = _fresh(
        "from workbench.strategies.base import Strategy, StrategyConfig\n"
        "class Mine(Strategy):\n    name = 'mine'\n    Config = StrategyConfig\n"
        "registry.register(Mine); registry.get_strategy('codex'); registry.strategies()"
    )
    assert user_first["names"] == [*registry._BUILTIN_MODULES, "mine"]  # built-ins first, as before


def test_an_unknown_name_still_loads_everything_and_says_what_is_known() -> None:
    run = _fresh(
        "try:\n    registry.get_strategy('no-such')\n"
        "except ValueError as exc:\n    assert 'claude-code' in str(exc), exc"
    )
    assert run["entry_points"] is True and "workbench.strategies.openhands" in run["modules"]


def test_a_builtin_name_is_taken_before_its_module_is_imported() -> None:
    body = (
        "from workbench.strategies.base import Strategy, StrategyConfig\n"
        "class Mine(Strategy):\n    name = 'letta'\n    Config = StrategyConfig\n"
        "try:\n    registry.register(Mine)\nexcept ValueError as exc:\n    assert 'already registered' in str(exc)\n"
        "else:\n    raise SystemExit('registered over a built-in')\n"
        "assert registry.get_strategy('letta').__module__ == 'workbench.strategies.letta'"
    )
    assert "workbench.strategies.letta" in _fresh(body)["modules"]


def test_a_user_strategy_with_a_new_name_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tiny(Strategy):
        name = "tiny-lazy-registry-test"
        Config = StrategyConfig

    monkeypatch.setitem(registry._ORIGIN, Tiny.name, "registered (test)")
    registry.register(Tiny)
    try:
        assert registry.get_strategy(Tiny.name) is Tiny
        assert list(strategies())[-1] == Tiny.name
    finally:
        registry._REGISTRY.pop(Tiny.name, None)
