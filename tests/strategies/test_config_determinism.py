"""Config JSON (hence config hashes, cell ids and ``--json`` output) must not depend on the process."""

from __future__ import annotations

import subprocess
import sys

CODE = """
from workbench.strategies.registry import create, strategies
from workbench.strategies.base import prefix_key
for name in sorted(strategies()):
    print(prefix_key(create(name)))
"""


def test_config_json_is_the_same_under_any_hash_seed() -> None:
    outputs = {
        subprocess.run(
            [sys.executable, "-c", CODE], env={"PYTHONHASHSEED": seed, "PATH": ""}, capture_output=True, text=True
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(outputs) == 1 and "compactable_tools" in next(iter(outputs))
