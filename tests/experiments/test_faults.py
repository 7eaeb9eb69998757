"""Sweeps against bad input and faults: each test reproduces a failure of the
old code; the docstrings say what it did."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from workbench.experiments import ResultStore, SpecError, load_spec, plan_sweep, run_sweep
from workbench.experiments.claims import Claimant, store_lock
from workbench.experiments.run import SweepFailureWarning
from workbench.experiments.schema import SCHEMAS, SchemaError, to_table
from workbench.experiments.tables import cell_table, config_table, sweep_frames

from .conftest import DATA, REPO, sm_grid, write_spec

TYPES = """\
name: types
corpus: ["DATA"]
metrics: [savings, validity]
strategies:
  - name: none
  - name: recorded
  - name: full-compact
  - name: truncate-oldest
  - name: microcompact-truncate
  - name: sm-compact
    grid:
      min_tokens: [5000, 20000]
"""


def _cli(*args: str) -> list[str]:
    code = "from workbench.cli import main; main()"
    return [sys.executable, "-c", f"if __name__ == '__main__':\n    {code}", *args]


def _run_cli(*args: str, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        _cli(*args),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "WORKBENCH_CODE_VERSION": "test", **(env or {})},
    )


def _read_every_table(store: Path) -> dict[str, pd.DataFrame]:
    """Every table folder with pandas and with pyarrow.dataset (they must agree)."""
    out = {}
    for table in ("cells", "steps", "events"):
        frame = pd.read_parquet(store / table)
        assert ds.dataset(store / table, format="parquet").to_table().num_rows == len(frame)
        out[table] = frame
    return out


# -- item 12: one explicit schema ---------------------------------------------------------------------


def test_every_table_reads_as_one_dataset_after_resume_kill_and_rerun(tmp_path):
    """Part files carry the table's schema, not types inferred per part (events ``summary`` null in one part,
    string in the next; ``naive_start`` null vs int64), so ``pd.read_parquet(store / "events")`` reads the
    store after a clean sweep."""
    spec = write_spec(tmp_path, TYPES)
    store = tmp_path / "store"
    first = load_spec(spec)
    run_sweep(first, store=store, executor="inline", progress=False, batch_size=1, points=first.points[:2])
    # a killed sweep: steps of a batch that never got its cells file, and a half-written temporary file
    plan = plan_sweep(first, first.points[2:3])
    from workbench.experiments.cells import CellTask, run_task

    cell = plan.cells[0]
    task = CellTask(str(cell.source), cell.session_id, cell.session_fingerprint, (cell,))
    killed = ResultStore(store, owner="deadbeef0000")
    out = run_task(task)
    killed._write("steps", f"{time.time_ns():020d}-deadbeef0000-000000", to_table("steps", out.steps))
    (store / "events" / f".part-{time.time_ns():020d}-deadbeef0000-000001.parquet.tmp").write_bytes(b"PAR1 half")
    again = run_sweep(spec, store=store, executor="inline", progress=False, batch_size=1)  # resume + re-run
    assert again.cells_computed == again.cells_total - again.cells_cached > 0
    assert any("never committed" in p for p in again.store_problems)
    assert any("stale temporary file" in p for p in again.store_problems)
    tables = _read_every_table(store)
    reader = ResultStore(store)
    assert tables["cells"]["cell_id"].is_unique and len(tables["cells"]) == again.cells_total
    assert len(tables["steps"]) == len(reader.steps()) and len(tables["events"]) == len(reader.events())
    events = tables["events"]
    assert events["summary"].notna().any() and events["summary"].isna().any()
    assert events["naive_start"].notna().any() and events["naive_start"].isna().any()
    for table in ("cells", "steps", "events"):
        schemas = {pq.read_schema(p).remove_metadata() for p in (store / table).glob("part-*.parquet")}
        assert schemas == {SCHEMAS[table].remove_metadata()}, table


def test_rows_that_do_not_fit_the_schema_are_an_error_naming_table_and_column():
    with pytest.raises(SchemaError, match=r"store table steps: surprise not in store schema"):
        to_table("steps", [{"session_id": "s", "surprise": 1}])
    with pytest.raises(SchemaError, match=r"column step \(int64\)"):
        to_table("steps", [{"session_id": "s", "step": "three"}])
    table = to_table("events", [{"naive_start": float("nan"), "fallbacks": ("a",)}, {"naive_start": 3}])
    assert table.column("naive_start").to_pylist() == [None, 3] and table.column("fallbacks").to_pylist()[0] == ["a"]


def test_tables_without_list_columns_convert_by_row_to_what_the_column_way_gives() -> None:
    """`to_table` hands rows of a table without list columns to Arrow whole; the result is the column
    way's (`_values` per column, NaN stored as null), and a value the row way refuses still names its column."""
    import numpy as np

    import workbench.experiments.schema as schema

    def by_column(table: str, rows: list[dict]) -> pa.Table:  # type: ignore[type-arg]
        fields = schema.SCHEMAS[table]
        arrays = [schema._values(table, f.name, f.type, [row.get(f.name) for row in rows]) for f in fields]
        return pa.Table.from_arrays(arrays, schema=fields)

    cells = [
        {"session_id": "s", "steps": np.int64(3), "saved_share": float("nan"), "elapsed_s": 1.5},
        {"session_id": "t", "saved_share": 0.25, "started_at": None},
        {},
    ]
    steps = [{"session_id": "s", "step": 1, "compacted": True, "violations": np.int64(0)}, {"step": 2}]
    for table, rows in (("cells", cells), ("steps", steps), ("steps", [])):
        fast = to_table(table, rows)
        assert fast.equals(by_column(table, rows)), table
    assert to_table("cells", cells).column("saved_share").to_pylist() == [None, 0.25, None]
    with pytest.raises(SchemaError, match=r"column steps \(int64\)"):
        to_table("cells", [{"session_id": "s", "steps": float("nan")}, {"steps": "many"}])


@pytest.mark.parametrize("chunk", [1, 3, 4, 1_000])
def test_list_columns_convert_in_chunks_to_the_same_values(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """A masking replay's events list every kept record: list columns are built in chunks of about
    `LIST_CHUNK_ENTRIES` entries (bounded memory), with the same values, and a bad value in a later chunk
    still names its column."""
    import workbench.experiments.schema as schema

    rows = [
        {"step": n, "kept_uuids": [f"u{k}" for k in range(n)] if n != 2 else None, "fallbacks": ()} for n in range(7)
    ]
    rows += [{"step": 7, "kept_uuids": []}, {"step": 8, "kept_uuids": ["last"]}]  # a remainder after the last cut
    monkeypatch.setattr(schema, "LIST_CHUNK_ENTRIES", 10**9)
    whole = to_table("events", rows)
    monkeypatch.setattr(schema, "LIST_CHUNK_ENTRIES", chunk)
    cut = to_table("events", rows)
    assert cut.schema == whole.schema and cut.equals(whole)
    assert cut.column("kept_uuids").to_pylist() == [r["kept_uuids"] for r in rows]
    assert cut.column("kept_uuids").num_chunks == (1 if chunk == 1_000 else len(_cuts(rows, chunk)))
    with pytest.raises(SchemaError, match=r"column kept_uuids"):
        to_table("events", [*rows, {"kept_uuids": 5}])


def _cuts(rows: list[dict], chunk: int) -> list[int]:  # type: ignore[type-arg]
    """The rows after which a chunk ends (the rule `to_table` follows), and one more for a remainder."""
    ends, entries = [], 0
    for index, row in enumerate(rows):
        entries += len(row["kept_uuids"] or ())
        if entries >= chunk:
            ends.append(index)
            entries = 0
    return ends if ends and ends[-1] == len(rows) - 1 else [*ends, len(rows) - 1]


def test_every_column_a_replay_emits_is_in_the_store_schema():
    """A column added to the engine's rows must be added to the schema (else sweeps fail at write time)."""
    from workbench.replay import replay_session
    from workbench.strategies import create, strategies
    from workbench.transcript import load_paths

    session = next(s for s in load_paths([DATA / "long-autocompact-e3e70682.jsonl"]) if s.records)
    step_keys, event_keys = set(), set()
    for name in sorted(strategies()):
        result = replay_session(session, create(name))
        step_keys.update(k for row in result.steps for k in row)
        event_keys.update(k for row in result.events for k in row)
    assert step_keys <= set(SCHEMAS["steps"].names), step_keys - set(SCHEMAS["steps"].names)
    assert event_keys <= set(SCHEMAS["events"].names), event_keys - set(SCHEMAS["events"].names)


# -- item 13: damaged part files ----------------------------------------------------------------------


def test_zero_byte_and_truncated_parts_are_skipped_reported_and_recomputed(tmp_path):
    """One zero-byte or truncated part does not make every read, and so every re-run, fail."""
    spec = write_spec(tmp_path, TYPES)
    store = tmp_path / "store"
    first = run_sweep(spec, store=store, executor="inline", progress=False, batch_size=2)
    parts = sorted((store / "cells").glob("part-*.parquet"))
    zero, cut = parts[0], sorted((store / "steps").glob("part-*.parquet"))[-1]
    lost = set(pq.read_table(zero).column("cell_id").to_pylist())
    batch_of_cut = cut.name.removeprefix("part-").removesuffix(".parquet")
    lost |= set(pq.read_table(store / "cells" / cut.name).column("cell_id").to_pylist())
    zero.write_bytes(b"")
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    reader = ResultStore(store)
    assert reader.done_ids() == set(first.cell_ids) - lost
    assert any(str(zero) in p for p in reader.problems) and any(str(cut) in p for p in reader.problems)
    again = run_sweep(spec, store=store, executor="inline", progress=False, batch_size=2)
    assert again.cells_computed == len(lost) and again.cells_cached == first.cells_total - len(lost)
    assert any(str(zero) in p and "moved to" in p for p in again.store_problems)
    assert any(batch_of_cut in p for p in again.store_problems)
    assert (store / "_quarantine" / "cells" / zero.name).is_file()
    assert (store / "_quarantine" / "steps" / cut.name).is_file()
    assert ResultStore(store).done_ids() == set(first.cell_ids)
    _read_every_table(store)
    third = run_sweep(spec, store=store, executor="inline", progress=False)
    assert third.cells_computed == 0 and third.store_problems == []


# -- item 15: failures inside a sweep -----------------------------------------------------------------


def test_online_api_errors_pickle():
    """``OnlineAPIError`` survives pickling, so a worker's error reaches the driver as itself; keyword-only
    arguments would make unpickling raise TypeError and break the process pool (BrokenProcessPool)."""
    import pickle

    from workbench.online.client import OnlineAPIError

    error = OnlineAPIError("boom", endpoint="messages", status_code=400, error_type="bad", request_id="r", attempts=2)
    back = pickle.loads(pickle.dumps(error))
    assert (str(back), back.status_code, back.error_type, back.request_id) == ("boom", 400, "bad", "r")
    assert back.attempts == 2


ONLINE = """\
name: online
corpus: ["DATA"]
metrics: [savings]
strategies:
  - name: none
  - name: full-compact
    config: {summarizer: anthropic}
"""


@pytest.fixture()
def failing_api(monkeypatch):
    sys.path.insert(0, str(REPO / "tests" / "online"))
    try:
        from fake_anthropic import FAKE_KEY, MESSAGES_PATH, FakeAnthropic
    finally:
        sys.path.pop(0)
    server = FakeAnthropic().start()
    for _ in range(50):
        server.fail(MESSAGES_PATH, 400, "invalid_request_error", "the fake API refuses this request")
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    try:
        yield server
    finally:
        server.stop()


def test_an_online_failure_in_a_worker_fails_that_cell_and_stores_the_rest(tmp_path, failing_api, monkeypatch):
    """A worker's OnlineAPIError reaches the driver with its real cause, and the session's other finished
    cells are kept."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    spec = write_spec(tmp_path, ONLINE)
    with pytest.warns(SweepFailureWarning, match="cells failed"):
        result = run_sweep(spec, store=tmp_path / "store", executor="local", workers=2, progress=False)
    assert result.cells_failed >= 1
    assert {f["error_type"] for f in result.failures} == {"OnlineAPIError"}
    assert all("the fake API refuses this request" in f["error"] for f in result.failures)
    assert all(f["strategy"] == "full-compact" for f in result.failures)
    stored = ResultStore(tmp_path / "store")
    cells = stored.cells()
    assert len(cells) == result.cells_total - result.cells_failed == result.cells_computed
    failed_sessions = {f["session_id"] for f in result.failures}
    kept = cells[cells["session_id"].isin(failed_sessions)]
    assert set(kept["strategy"]) == {"none"}  # the failing session's other cell is stored
    failures = stored.failures()
    assert set(failures["cell_id"]) == {f["cell_id"] for f in result.failures}
    assert "fake API refuses" in failures["error"].iloc[0]


def test_the_cli_reports_failed_cells_with_exit_1(tmp_path, failing_api):
    spec = write_spec(tmp_path, ONLINE)
    env = {"WORKBENCH_CACHE_DIR": str(tmp_path / "cache")}
    out = _run_cli("sweep", str(spec), "--store", str(tmp_path / "s"), "--workers", "1", "--json", env=env)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["cells_failed"] >= 1 and data["cells_computed"] == data["cells_total"] - data["cells_failed"]
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "OnlineAPIError" in last and "a re-run retries them" in last


# -- item 14: concurrent sweeps -------------------------------------------------------------------------

MANY = sm_grid("many")


def test_two_concurrent_sweeps_compute_every_cell_once(tmp_path):
    """Two sweeps on one store share the work: each cell is computed once."""
    spec = write_spec(tmp_path, MANY)
    store = tmp_path / "store"
    args = ("sweep", str(spec), "--store", str(store), "--workers", "1", "--batch-size", "2", "--json")
    env = {**os.environ, "WORKBENCH_CODE_VERSION": "test"}
    procs = [
        subprocess.Popen(_cli(*args), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    results = [json.loads(o[0]) for o in outs]
    total = results[0]["cells_total"]
    assert total == 15 * 6
    assert sum(r["cells_computed"] for r in results) == total
    cells = pd.read_parquet(store / "cells")
    assert len(cells) == total and cells["cell_id"].is_unique
    assert len(pd.read_parquet(store / "steps")) == int(cells["steps"].sum())
    assert not list((store / "_claims").glob("*.json"))


def test_a_sweep_waits_for_live_claims_and_takes_over_when_the_claimant_goes(tmp_path):
    spec = write_spec(tmp_path, MANY)
    store = tmp_path / "store"
    plan = plan_sweep(spec)
    held = [c.id for c in plan.cells[:10]]
    other = Claimant(store, owner="othersweep01")
    with store_lock(store):
        other.claim(held)
    box = {}
    thread = threading.Thread(
        target=lambda: box.setdefault(
            "result", run_sweep(spec, store=store, executor="inline", progress=False, plan=plan, poll_s=0.05)
        )
    )
    thread.start()
    deadline = time.time() + 120
    while time.time() < deadline and len(ResultStore(store).done_ids()) < len(plan.cells) - len(held):
        time.sleep(0.05)
    time.sleep(0.3)
    assert thread.is_alive(), "the sweep must wait for the cells another live sweep holds"
    assert ResultStore(store).done_ids().isdisjoint(held)
    other.close()  # that sweep ends without computing them: they are taken over
    thread.join(timeout=120)
    result = box["result"]
    assert result.cells_computed == len(plan.cells) and ResultStore(store).done_ids() == {c.id for c in plan.cells}


def test_claims_of_a_killed_sweep_are_stale(tmp_path):
    store = tmp_path / "store"
    code = (
        "import sys, time; from workbench.experiments.claims import Claimant, store_lock\n"
        f"c = Claimant({str(store)!r}, owner='killed000001')\n"
        f"with store_lock(c.root): c.claim(['a', 'b'])\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        from workbench.experiments.claims import live_claims

        with store_lock(store):
            assert set(live_claims(store)) == {"killed000001"}
        proc.kill()
        proc.wait(timeout=30)
        with store_lock(store):
            assert live_claims(store) == {}
        assert not (store / "_claims" / "killed000001.json").exists()
    finally:
        proc.kill()


# -- item 7: one session id in several files ----------------------------------------------------------


def test_copies_of_a_session_are_separate_sessions_in_a_sweep(tmp_path):
    """Two files with one sessionId are two cells, never one (identical copies are not silently merged)."""
    corpus = tmp_path / "corpus"
    (corpus / "copy").mkdir(parents=True)
    source = DATA / "short-bugfix-d95bafc8.jsonl"
    shutil.copy(source, corpus / "a.jsonl")
    shutil.copy(source, corpus / "copy" / "a.jsonl")
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    (corpus / "resumed.jsonl").write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    spec = write_spec(tmp_path, TYPES.replace('["DATA"]', f'["{corpus}"]'))
    plan = plan_sweep(spec)
    assert len(plan.sessions) == 3 and len({s.id for s in plan.sessions}) == 1
    [dup] = plan.duplicate_sessions
    assert len(dup["files"]) == 3 and dup["identical"] is False
    result = run_sweep(spec, store=tmp_path / "store", executor="inline", progress=False, plan=plan)
    assert result.cells_total == len(plan.spec.points) * 3 == result.cells_computed
    cells, steps, events = sweep_frames(ResultStore(result.store), result.cell_ids)
    table = cell_table(cells, steps, events, plan.sessions, ["savings", "validity"])
    assert len(table) == result.cells_total and set(table["session_id"]) == {plan.sessions[0].id}
    assert set(table["file"]) == {"corpus/a.jsonl", "corpus/copy/a.jsonl", "corpus/resumed.jsonl"}
    by_file = table[table["strategy"] == "none"].set_index("file")["steps"]
    assert by_file["corpus/a.jsonl"] == by_file["corpus/copy/a.jsonl"] > by_file["corpus/resumed.jsonl"]
    assert table["violation_rate"].notna().all()
    assert set(config_table(table)["sessions"]) == {3}
    out = _run_cli("sweep", str(spec), "--store", str(tmp_path / "store"), "--executor", "inline")
    assert out.returncode == 0, out.stderr
    assert "warning: session" in out.stderr and "3 files" in out.stderr


def test_moving_the_corpus_keeps_cell_ids(tmp_path):
    spec_a = write_spec(tmp_path, TYPES.replace('["DATA"]', f'["{tmp_path / "one" / "data"}"]'), "a.yaml")
    shutil.copytree(DATA, tmp_path / "one" / "data")
    ids = set(run_sweep(spec_a, store=tmp_path / "s", executor="inline", progress=False).cell_ids)
    shutil.move(tmp_path / "one", tmp_path / "two")
    spec_b = write_spec(tmp_path, TYPES.replace('["DATA"]', f'["{tmp_path / "two" / "data"}"]'), "b.yaml")
    moved = run_sweep(spec_b, store=tmp_path / "s", executor="inline", progress=False)
    assert set(moved.cell_ids) == ids and moved.cells_computed == 0


# -- items 9 and 16: limits and usage errors ----------------------------------------------------------

HUGE = """\
name: huge
corpus: ["DATA"]
strategies:
  - name: sm-compact
    grid:
      min_tokens: [RANGE]
      max_tokens: [RANGE]
      min_text_block_messages: [RANGE]
      trigger.pct_of_window: [RANGE]
      trigger.max_output_tokens: [RANGE]
"""


def test_a_huge_grid_is_refused_at_once_with_its_count(tmp_path):
    """A 30^5 grid is refused at once with its size, not planned for hours without output."""
    values = ", ".join(str(40 + i) for i in range(30))
    path = write_spec(tmp_path, HUGE.replace("RANGE", values))
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert time.perf_counter() - started < 5
    message = str(info.value)
    assert str(path) in message and "24,300,000 points" in message and "30 × 30 × 30 × 30 × 30" in message
    assert "max_grid_points" in message and "--max-grid-points" in message
    small = write_spec(tmp_path, TYPES, "small.yaml")
    with pytest.raises(SpecError, match="7 points"):
        load_spec(small, max_grid_points=6)
    assert len(load_spec(small, max_grid_points=7).points) == 7
    out = _run_cli("sweep", str(path), "--store", str(tmp_path / "s"), timeout=60)
    assert out.returncode == 2 and "24,300,000 points" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        (lambda body, tmp: body.replace("metrics:", "format: nope\nmetrics:"), "format: unknown format 'nope'"),
        (lambda body, tmp: body.replace('["DATA"]', f'["{tmp / "empty"}"]'), "no transcripts"),
    ],
)
def test_usage_errors_exit_2(tmp_path, change, expect):
    """``format: nope`` and an empty corpus folder are errors, never an exit 0 with 0 cells."""
    (tmp_path / "empty").mkdir()
    spec = write_spec(tmp_path, change(TYPES, tmp_path))
    out = _run_cli("sweep", str(spec), "--store", str(tmp_path / "s"), timeout=60)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert expect in out.stderr and str(spec) in out.stderr and "Traceback" not in out.stderr


def test_negative_workers_exit_2(tmp_path):
    spec = write_spec(tmp_path, TYPES)
    out = _run_cli("sweep", str(spec), "--store", str(tmp_path / "s"), "--workers", "-3", timeout=60)
    assert out.returncode == 2 and "--workers" in out.stderr and "Traceback" not in out.stderr


def test_a_dask_address_that_refuses_connections_fails_fast_naming_it(tmp_path):
    import socket

    with socket.socket() as probe:  # a free port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = write_spec(tmp_path, TYPES)
    started = time.monotonic()
    out = _run_cli("sweep", str(spec), "--store", str(tmp_path / "s"), "--executor", f"dask://127.0.0.1:{port}")
    elapsed = time.monotonic() - started
    assert out.returncode == 2, out.stderr
    assert f"127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr
    assert elapsed < 10 + 15, elapsed  # 10 s to fail, plus interpreter start and planning on a loaded machine
    from workbench.experiments.executors import ExecutorError, make_executor

    started = time.monotonic()
    with pytest.raises(ExecutorError, match=f"127.0.0.1:{port}"), make_executor(f"dask://127.0.0.1:{port}"):
        pass
    assert time.monotonic() - started < 10


def test_a_part_damaged_inside_its_data_pages_is_recomputed(tmp_path):
    """64 bytes overwritten inside a steps part's data pages, footer intact: the row count still matches,
    but the part no longer reads back; it is quarantined, reported, and its cells computed again (before:
    "cached", exit 0, the read error in `store.problems` that nothing printed, costs `-` in the report)."""
    spec = write_spec(tmp_path, TYPES)
    store = tmp_path / "store"
    first = run_sweep(spec, store=store, executor="inline", progress=False, batch_size=2)
    part = max((store / "steps").glob("part-*.parquet"), key=lambda p: p.stat().st_size)
    lost = set(pq.read_table(store / "cells" / part.name).column("cell_id").to_pylist())
    data = bytearray(part.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    middle = 4 + (len(data) - footer - 8 - 4) // 2  # inside the data pages, far from the footer
    data[middle : middle + 64] = bytes(64)
    part.write_bytes(bytes(data))
    assert pq.read_metadata(part).num_rows > 0  # the footer still reads
    again = run_sweep(spec, store=store, executor="inline", progress=False, batch_size=2)
    assert again.cells_computed == len(lost) and again.cells_cached == first.cells_total - len(lost)
    assert any(part.name in p and "moved to" in p for p in again.store_problems)
    assert (store / "_quarantine" / "steps" / part.name).is_file()
    _read_every_table(store)
    third = run_sweep(spec, store=store, executor="inline", progress=False)
    assert third.cells_computed == 0 and third.store_problems == []
