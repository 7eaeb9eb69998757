"""Commands hold one session group at a time: memory does not grow with the corpus.

Measured with tracemalloc (Python allocations, deterministic: not disturbed by a loaded machine) for a
corpus of 1 and of 4 copies of ``data/`` with every UUID rewritten per copy (distinct sessions): the
peak of the 4x run stays under 1.5x the 1x run's. Holding every session, as the commands did, the peak
grows about 4x. The benchmark (``make bench-scale``) measures the same as peak RSS at 1x, 8x and 1 GB.
"""

from __future__ import annotations

import re
import tracemalloc
import uuid
from pathlib import Path

import pytest
from hostile import cli

REPO = Path(__file__).resolve().parents[2]
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _copies(out: Path, n: int) -> Path:
    for copy in range(n):
        space = uuid.uuid5(uuid.NAMESPACE_URL, f"streaming-test/{copy}")
        for path in sorted((REPO / "data").rglob("*.jsonl")):
            target = out / f"copy-{copy}" / path.relative_to(REPO / "data")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_UUID.sub(lambda m, ns=space: _renamed(ns, m.group()), path.read_bytes()))
    return out


def _renamed(space: uuid.UUID, old: bytes) -> bytes:
    return str(uuid.uuid5(space, old.decode())).encode()


def _peak(*args: str) -> int:
    tracemalloc.start()
    try:
        code, _, err = cli(*args)
        assert code == 0, err
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", [("ingest", "--json"), ("replay", "-s", "sm-compact", "--json")])
def test_memory_does_not_grow_with_the_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple) -> None:
    monkeypatch.setenv("WORKBENCH_SESSION_CACHE", "0")  # parse every time: the load is what is measured
    one, four = _copies(tmp_path / "one", 1), _copies(tmp_path / "four", 4)
    _peak(command[0], str(one), *command[1:])  # imports, token counts: not part of what is compared
    small = _peak(command[0], str(one), *command[1:])
    large = _peak(command[0], str(four), *command[1:])
    assert large < 1.5 * small, f"{command[0]}: peak {large / 1e6:.1f} MB at 4x vs {small / 1e6:.1f} MB at 1x"
