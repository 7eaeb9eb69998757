"""Claude Code's estimators with their JavaScript semantics, tiktoken offline, and the disk cache."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from workbench.tokens.cache import CachedEstimator, cached_estimator
from workbench.tokens.context import token_count_with_estimation
from workbench.tokens.estimators import get_estimator
from workbench.tokens.js import js_len, js_round
from workbench.transcript import Block, Record


def _user(content) -> Record:
    if isinstance(content, str):
        return Record(
            "user", uuid="u", role="user", blocks=(Block.text_block(content),), string_content=True, has_content=True
        )
    return Record("user", uuid="u", role="user", blocks=tuple(Block.from_raw(b) for b in content), has_content=True)


def _assistant(blocks, mid="m1", usage=None) -> Record:
    return Record(
        "assistant",
        uuid=f"a-{mid}-{len(blocks)}",
        role="assistant",
        message_id=mid,
        blocks=tuple(Block.from_raw(b) for b in blocks),
        has_content=True,
        usage=usage,
        model="claude-opus-4-6",
    )


def test_js_semantics() -> None:
    assert js_len("abc") == 3 and js_len("é") == 1 and js_len("😀") == 2
    assert js_round(2.5) == 3 and js_round(0.5) == 1 and js_round(1.49) == 1  # Python's round(2.5) == 2


def test_rough_counts_string_content_and_pieces_separately() -> None:
    rough = get_estimator("claude-rough")
    assert rough.count(_user("x" * 10)) == 3  # Math.round(2.5)
    tool_use = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls -la"}}
    # "Bash" + '{"command":"ls -la"}' = 4 + 20 chars -> 6
    assert rough.count(_assistant([tool_use])) == 6
    thinking = {"type": "thinking", "thinking": "abcd" * 5, "signature": "S" * 400}
    assert rough.count(_assistant([thinking])) == 5  # the signature is not counted
    image = {"type": "image", "source": {"type": "base64", "data": "Z" * 9999}}
    assert rough.count(_user([image, {"type": "text", "text": "hi"}])) == 2000 + 1  # round(0.5) = 1
    result = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "y" * 8}, image]}
    assert rough.count(_user([result])) == 2 + 2000


def test_padded_is_array_only_times_four_thirds_ceil() -> None:
    padded = get_estimator("claude-padded")
    assert padded.count(_user("x" * 4000)) == 0  # string content counts 0 (docs §2.3)
    assert padded.count(_user([{"type": "text", "text": "x" * 4000}])) == math.ceil(1000 * 4 / 3)
    system = Record("system", uuid="s", subtype="compact_boundary")
    assert padded.count(system) == 0


def test_token_count_with_estimation_walks_back_to_the_first_sibling() -> None:
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000, "output_tokens": 50}
    thinking = _assistant([{"type": "thinking", "thinking": "t" * 40}], usage={**usage, "output_tokens": 1})
    tool = _assistant([{"type": "tool_use", "id": "a", "name": "Read", "input": {}}], usage=usage)
    result = _user([{"type": "tool_result", "tool_use_id": "a", "content": "r" * 400}])
    records = [_user("go"), thinking, tool, result]
    # usage of the last response (1060) + everything after its first sibling: tool_use (round(6/4)=2) + 100
    assert token_count_with_estimation(records) == 1060 + 2 + 100
    assert token_count_with_estimation(records, walk_siblings=False) == 1060 + 100
    assert token_count_with_estimation([_user("x" * 40)]) == 10  # no usage: rough estimate of everything


def test_tiktoken_is_offline_from_the_packaged_bpe_files(tmp_path: Path) -> None:
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise RuntimeError('network used')\n"
        "socket.socket.connect = refuse\n"
        "from workbench.tokens.estimators import get_estimator\n"
        "from workbench.transcript import Block, Record\n"
        "r = Record('user', role='user', blocks=(Block.text_block('hello world'),),\n"
        "           string_content=True, has_content=True)\n"
        "print(get_estimator('tiktoken:o200k_base').count(r), get_estimator('tiktoken:cl100k_base').count(r))\n"
    )
    env = {"PATH": "", "WORKBENCH_CACHE_DIR": str(tmp_path / "wb"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["2", "2"]
    assert (tmp_path / "wb" / "tiktoken").is_dir()


def test_second_run_reads_every_count_from_the_cache(claude_sessions, tmp_path: Path) -> None:
    records = [r for s in claude_sessions for r in s.records]
    first = cached_estimator("tiktoken:o200k_base", tmp_path / "c.sqlite")
    counts = first.count_many(records)
    assert first.stats.misses > 0
    assert cached_estimator("tiktoken:o200k_base", tmp_path / "c.sqlite") is first  # one per process
    second = CachedEstimator(get_estimator("tiktoken:o200k_base"), tmp_path / "c.sqlite")  # a new process
    assert second.count_many(records) == counts
    assert second.stats.misses == 0 and second.stats.hits == len(records)
    assert counts == get_estimator("tiktoken:o200k_base").count_many(records)


def test_many_processes_can_open_a_fresh_cache_file_at_once(tmp_path: Path) -> None:
    """Sweep workers and notebook kernels open the same cache file concurrently (was 'database is locked')."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from workbench.tokens.cache import CachedEstimator\n"
        "from workbench.tokens.estimators import get_estimator\n"
        "from workbench.transcript import Block, Record\n"
        "r = Record('user', role='user', blocks=(Block.text_block('x' * int(sys.argv[1])),),\n"
        "           string_content=True, has_content=True)\n"
        "print(CachedEstimator(get_estimator('claude-rough'), Path(sys.argv[2])).count(r))\n"
    )
    db = tmp_path / "shared.sqlite"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(40 * (i + 1)), str(db)], stdout=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8
    assert outputs == [str(10 * (i + 1)) for i in range(8)]


def _count_in_child(path: str, size: int, queue) -> None:
    from workbench.tokens.cache import cached_estimator as shared

    cache = shared("claude-rough", Path(path))  # the instance inherited from the parent
    closed_at_fork = cache._db is None
    record = Record("user", role="user", blocks=(Block.text_block("y" * size),), string_content=True, has_content=True)
    queue.put((closed_at_fork, cache.count(record), cache.stats.misses))


def test_a_forked_worker_reopens_the_cache_and_the_parent_keeps_using_it(tmp_path: Path) -> None:
    """The sweep forks its workers (experiments/executors.py): no SQLite connection may cross the fork."""
    import multiprocessing
    import sqlite3

    path = tmp_path / "fork.sqlite"
    cache = cached_estimator("claude-rough", path)
    seen = _user("x" * 400)
    assert cache.count(seen) == 100 and cache._db is not None
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_count_in_child, args=(str(path), 800, queue))
    child.start()
    # counted and written through a fresh connection (misses: the parent's one, inherited, + the child's)
    assert queue.get(timeout=60) == (True, 200, 2)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert cache.count(seen) == 100  # the parent's memo survived the fork; its connection reopens lazily
    assert cache.count(_user("z" * 1200)) == 300
    rows = sqlite3.connect(path).execute("SELECT n FROM counts ORDER BY n").fetchall()
    assert rows == [(100,), (200,), (300,)]
