"""Append-only parquet result store: one file per finished cell batch, written atomically.

Layout under the store folder::

    cells/part-<batch>.parquet    one row per cell: id, summary metrics, provenance   (the commit record)
    steps/part-<batch>.parquet    one row per cell × replay step
    events/part-<batch>.parquet   one row per cell × compaction event
    failed/part-<batch>.parquet   one row per cell that raised (with its error); retried by the next sweep
    _claims/                      who is writing, and which cells each writer took (`claims`)
    _quarantine/<table>/          unreadable or never-committed part files moved out of the tables (log.jsonl)
    _verified.json                the parts that read through with their checksums (size, mtime), see below

Every part is written with its table's explicit schema (`workbench.experiments.schema`), so each table
folder reads as one dataset with pandas or pyarrow. A batch is written steps → events → cells, each file
to a temporary ``.part-<batch>.parquet.tmp`` first and moved into place with `os.replace` (atomic on
POSIX). A batch exists once its ``cells`` file exists *and* its steps/events files hold the rows its
cells announce (``steps`` and ``compactions`` per cell); anything else is not a result:

* a process killed between the files leaves orphaned steps/events parts: readers ignore them;
* an unreadable part (zero bytes, truncated, or damaged inside its data pages: every part is written
  with page checksums and read through once, with them verified, before its batch counts) is skipped and
  reported (`problems`), and its batch's cells count as missing, so the next sweep recomputes them
  instead of failing on every run or reading a wrong number. A part that read through is remembered by
  size and modification time in ``_verified.json``, so it is read again only when it changed. A part a
  store wrote and synced itself counts as read through (it holds the bytes just written); a later change
  to it (another size or modification time) is read through again.

`tidy` (run by every sweep, under the store lock) makes the folders match that: it deletes stale
temporary files and moves unreadable parts, and the orphans of writers that are gone, to
``_quarantine/`` (kept for inspection, out of the datasets). A batch is named
``<time_ns>-<owner>-<n>`` after the writer (`workbench.experiments.claims.Claimant`) that wrote it, so
files of a writer that is still running are never touched. Committed parts are never rewritten. When
two writers computed the same cell, readers keep the earliest batch.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .claims import Claimant, live_claims, store_lock
from .schema import conform, to_table

__all__ = ["QUARANTINE", "TABLES", "BatchWriter", "ResultStore"]

TABLES = ("cells", "steps", "events")
QUARANTINE = "_quarantine"
VERIFIED = "_verified.json"
_READ_ERRORS = (OSError, pa.ArrowException, ValueError)


def _batch_of(path: Path) -> str:
    """``part-<batch>.parquet`` or ``.part-<batch>.parquet.tmp`` → ``<batch>``."""
    name = path.name.removeprefix(".").removeprefix("part-")
    return name.removesuffix(".tmp").removesuffix(".parquet")


def _read_part(path: Path, *, columns: Sequence[str] | None = None, verify: bool = False) -> pa.Table:
    """One part file (``verify``: its page checksums checked), read as one file (`pq.read_table` of a path
    sets up a dataset first, about half the time of reading a part of a tune's store) on this thread (a
    part is at most a batch: starting Arrow's thread pool costs more than decoding it)."""
    with pq.ParquetFile(path, page_checksum_verification=verify) as part:
        return part.read(columns=columns, use_threads=False)


def _concat(tables: Sequence[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t.num_rows]
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


def _owner_of(batch: str) -> str | None:
    parts = batch.split("-")
    return parts[1] if len(parts) == 3 else None


@dataclass
class _Scan:
    """What the part files say: committed batches, their cells, and what is wrong."""

    committed: dict[str, list[str]] = field(default_factory=dict)  # batch → cell ids
    broken: dict[str, str] = field(default_factory=dict)  # batch → reason
    unreadable: dict[Path, str] = field(default_factory=dict)  # part → reason
    problems: list[str] = field(default_factory=list)


class ResultStore:
    """A result store folder (see the module docstring). ``owner`` names this writer's batches."""

    def __init__(self, root: str | Path, *, owner: str | None = None) -> None:
        self.root = Path(root)
        self.claimant = Claimant(self.root, owner)
        self._seq = itertools.count()
        self.problems: list[str] = []
        self._verified: dict[str, list[int]] | None = None  # part (relative) → [size, mtime_ns] that read through
        self._verified_changed = False

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    @property
    def owner(self) -> str:
        return self.claimant.owner

    def _files(self, table: str) -> list[Path]:
        folder = self.root / table
        return sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []

    # -- reading ---------------------------------------------------------------------------------

    def _scan(self) -> _Scan:
        scan = _Scan()
        expected: dict[str, tuple[int, int]] = {}
        for path in self._files("cells"):
            batch = _batch_of(path)
            try:
                data = _read_part(path, columns=["cell_id", "steps", "compactions"])
                damage = self._damage(path)
                if damage is not None:
                    raise ValueError(damage)
            except _READ_ERRORS as exc:
                scan.unreadable[path] = _reason(exc)
                scan.broken[batch] = f"{path}: unreadable ({_reason(exc)})"
                continue
            scan.committed[batch] = data.column("cell_id").to_pylist()
            expected[batch] = (
                sum(v or 0 for v in data.column("steps").to_pylist()),
                sum(v or 0 for v in data.column("compactions").to_pylist()),
            )
        for index, table in enumerate(("steps", "events")):
            seen: set[str] = set()
            for path in self._files(table):
                batch = _batch_of(path)
                seen.add(batch)
                try:
                    rows = pq.read_metadata(path).num_rows
                    damage = self._damage(path) if batch in expected else None
                    if damage is not None:
                        raise ValueError(damage)
                except _READ_ERRORS as exc:
                    scan.unreadable[path] = _reason(exc)
                    if batch in scan.committed:
                        scan.broken[batch] = f"{path}: unreadable ({_reason(exc)})"
                    continue
                if batch in expected and rows != expected[batch][index]:
                    scan.broken[batch] = f"{path}: {rows} rows, its cells announce {expected[batch][index]}"
            for batch, counts in expected.items():
                if counts[index] and batch not in seen and batch not in scan.broken:
                    scan.broken[batch] = f"{self.root / table}/part-{batch}.parquet: missing"
        for batch, reason in scan.broken.items():
            cells = len(scan.committed.pop(batch, ()))
            scan.problems.append(
                f"{reason}: batch {batch} skipped" + (f", its {cells} cells count as missing" if cells else "")
            )
        for path, reason in scan.unreadable.items():
            if _batch_of(path) not in scan.broken:
                scan.problems.append(f"{path}: unreadable ({reason}): skipped")
        self.problems = scan.problems
        return scan

    def _damage(self, path: Path) -> str | None:
        """None when the part's data reads through (page checksums verified where written), else why not;
        a part that read through before, unchanged since, is not read again (`_verified.json`)."""
        self._load_verified()
        assert self._verified is not None
        stat = path.stat()
        key, mark = str(path.relative_to(self.root)), [stat.st_size, stat.st_mtime_ns]
        if self._verified.get(key) == mark:
            return None
        try:
            _read_part(path, verify=True)
        except _READ_ERRORS as exc:
            self._verified.pop(key, None)
            return f"its data does not read back: {_reason(exc)}"
        self._verified[key], self._verified_changed = mark, True
        return None

    def _save_verified(self) -> None:
        """Write `_verified.json` (under the store lock), dropping parts that are gone."""
        if not self._verified_changed or self._verified is None:
            return
        kept = {k: v for k, v in self._verified.items() if (self.root / k).is_file()}
        temp = self.root / f".{VERIFIED}.{os.getpid()}.tmp"
        temp.write_text(json.dumps(kept, sort_keys=True), encoding="utf-8")
        os.replace(temp, self.root / VERIFIED)
        self._verified_changed = False

    def batches(self) -> list[str]:
        """Committed batches (see the module docstring), oldest first."""
        return sorted(self._scan().committed)

    def done_ids(self) -> set[str]:
        """Ids of every committed cell (reads only the cells' id and row-count columns)."""
        return {cell for ids in self._scan().committed.values() for cell in ids}

    def _read(self, table: str, batches: set[str] | None = None) -> pd.DataFrame:
        parts = []
        for path in self._files(table):
            if batches is not None and _batch_of(path) not in batches:
                continue
            try:
                parts.append(conform(table, _read_part(path)))
            except _READ_ERRORS as exc:
                self.problems.append(f"{path}: unreadable ({_reason(exc)}): skipped")
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return pd.DataFrame()
        return pa.concat_tables(parts, promote_options="permissive").to_pandas(use_threads=False)

    def cells(self, ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Committed cells, one row per cell id (earliest batch wins), optionally only ``ids``."""
        committed = set(self._scan().committed)
        frame = self._read("cells", committed)
        if frame.empty:
            return frame
        frame = frame.sort_values("batch", kind="stable").drop_duplicates("cell_id", keep="first")
        if ids is not None:
            frame = frame[frame["cell_id"].isin(set(ids))]
        return frame.reset_index(drop=True)

    def _rows(self, table: str, cells: pd.DataFrame) -> pd.DataFrame:
        if cells.empty:
            return pd.DataFrame()
        frame = self._read(table, set(cells["batch"]))
        if frame.empty:
            return frame
        keep = pd.MultiIndex.from_frame(cells[["cell_id", "batch"]])
        mask = pd.MultiIndex.from_frame(frame[["cell_id", "batch"]]).isin(keep)
        return frame[mask].reset_index(drop=True)

    def steps(self, cells: pd.DataFrame | None = None) -> pd.DataFrame:
        """Step rows of ``cells`` (default: every committed cell)."""
        return self._rows("steps", self.cells() if cells is None else cells)

    def events(self, cells: pd.DataFrame | None = None) -> pd.DataFrame:
        return self._rows("events", self.cells() if cells is None else cells)

    def session_parts(
        self, cells: pd.DataFrame, *, rows: int = 50_000
    ) -> Iterator[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]]:
        """``(cells, steps, events)`` of ``cells`` (`cells` rows) a few whole sessions at a time, so a caller
        measuring them holds about ``rows`` step rows and the largest session's, not the whole store's.

        The batches are read one at a time, oldest first; a session (``session_id``, ``file``) is given once
        the last batch holding one of its cells has been read, with every row of its cells, together with
        the other sessions ready by then, in parts of about ``rows`` step rows (by the cells' ``steps``
        counts, in the order the cells list them), once the rows read reach ``rows`` or the batches run out
        (a sweep stores the cells of one session computed in one run in one batch, so a session is seldom
        held across batches). A batch is read whole, so what is held is also bounded by the largest batch
        (`BatchWriter`: 20,000 step rows and one task)."""
        if cells.empty:
            return
        rank = {batch: n for n, batch in enumerate(sorted(set(cells["batch"])))}  # oldest first, as `batches`
        key = ["session_id", "file"] if "file" in cells.columns else ["session_id"]
        cells = cells.assign(_session=list(cells[key].itertuples(index=False, name=None)))
        cells = cells.assign(_rank=cells["batch"].map(rank))
        last = cells.groupby("_session", sort=False)["_rank"].max().to_dict()
        order = sorted(set(cells["_rank"]))
        steps: list[pa.Table] = []
        events: list[pa.Table] = []
        held: set[Any] = set()

        # each batch's cells as positions, looked up (a boolean mask over every cell per batch was a tenth of
        # a tune's measuring)
        by_rank = cells.groupby("_rank", sort=False).indices
        cell_ids, cell_sessions, cell_batches = (cells[c].tolist() for c in ("cell_id", "_session", "batch"))
        first_seen = {name: n for n, name in enumerate(dict.fromkeys(cell_sessions))}
        counts = cells["steps"].fillna(0).astype(int).tolist() if "steps" in cells.columns else [0] * len(cells)
        session_rows: dict[Any, int] = {}
        for name, count in zip(cell_sessions, counts, strict=True):
            session_rows[name] = session_rows.get(name, 0) + count

        def part(ready: set[Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
            """The rows of the ``ready`` sessions' cells, taken out of what is held (filtered in Arrow: only
            the part becomes a frame)."""
            nonlocal steps, events
            chosen = [i for i, name in enumerate(cell_sessions) if name in ready]
            ids = pa.array([cell_ids[i] for i in chosen], type=pa.string())
            frames: list[pd.DataFrame] = []
            rest: list[list[pa.Table]] = []
            for tables in (steps, events):
                whole = _concat(tables)
                if whole is None:
                    frames.append(pd.DataFrame())
                    rest.append([])
                    continue
                inside = pc.is_in(whole["cell_id"], value_set=ids)
                frames.append(whole.filter(inside).to_pandas(use_threads=False))
                left = whole.filter(pc.invert(inside))
                rest.append([left] if left.num_rows else [])
            steps, events = rest
            held.difference_update(ready)
            picked = cells.iloc[chosen].drop(columns=["_session", "_rank"]).reset_index(drop=True)
            return picked, frames[0], frames[1]

        gathered = 0
        for position in order:
            here = by_rank[position]
            batch = cell_batches[here[0]]
            ids = pa.array([cell_ids[i] for i in here], type=pa.string())
            for table, kept in (("steps", steps), ("events", events)):
                path = self.root / table / f"part-{batch}.parquet"
                try:
                    data = conform(table, _read_part(path)) if path.is_file() else None
                except _READ_ERRORS as exc:
                    self.problems.append(f"{path}: unreadable ({_reason(exc)}): skipped")
                    data = None
                if data is not None and data.num_rows:
                    kept.append(data.filter(pc.is_in(data["cell_id"], value_set=ids)))
                    gathered += kept[-1].num_rows if table == "steps" else 0
            held.update(cell_sessions[i] for i in here)
            if gathered < rows and position != order[-1]:
                continue
            ready = sorted((name for name in held if last[name] <= position), key=first_seen.__getitem__)
            # a batch holds several sessions: they are given in parts of about ``rows`` step rows too
            chunk: list[Any] = []
            size = 0
            for n, name in enumerate(ready):
                chunk.append(name)
                size += session_rows[name]
                if size >= rows or n == len(ready) - 1:
                    yield part(set(chunk))
                    chunk, size = [], 0
            gathered = sum(table.num_rows for table in steps)

    def failures(self) -> pd.DataFrame:
        """The latest failure of every cell that failed and has not been computed since."""
        frame = self._read("failed")
        if frame.empty:
            return frame
        frame = frame.sort_values("batch", kind="stable").drop_duplicates("cell_id", keep="last")
        return frame[~frame["cell_id"].isin(self.done_ids())].reset_index(drop=True)

    # -- writing ---------------------------------------------------------------------------------

    def _new_batch(self) -> str:
        if not self.claimant.is_open:
            with store_lock(self.root):
                self.claimant.open()
        return f"{time.time_ns():020d}-{self.owner}-{next(self._seq):06d}"

    def write_batch(
        self,
        cells: Sequence[Mapping[str, Any]],
        steps: Sequence[Mapping[str, Any]] = (),
        events: Sequence[Mapping[str, Any]] = (),
    ) -> str:
        """Write one batch atomically (cells last: their file is the commit). Returns the batch id."""
        if not cells:
            raise ValueError("a batch needs at least one cell")
        # every table first in memory, so rows that do not fit the schema leave no file behind
        parts = {
            name: [to_table(name, rows)] for name, rows in (("steps", steps), ("events", events), ("cells", cells))
        }
        return self.write_tables(parts)

    def write_tables(self, parts: Mapping[str, Sequence[pa.Table]]) -> str:
        """`write_batch` of rows already in their tables' schemas (`schema.to_table`, several parts per
        table: the tasks of a `BatchWriter` batch); the ``batch`` column, and the cells' ``written_at``, are
        set here. Returns the batch id."""
        pieces = {name: [t for t in parts.get(name, ()) if t.num_rows] for name in ("steps", "events", "cells")}
        if not pieces["cells"]:
            raise ValueError("a batch needs at least one cell")
        batch = self._new_batch()
        written_at = time.time()
        tables = {name: _filled(pa.concat_tables(found), "batch", batch) for name, found in pieces.items() if found}
        tables["cells"] = _filled(tables["cells"], "written_at", written_at)
        for name, table in tables.items():  # steps, events, then cells: the commit
            self._write(name, batch, table)
        return batch

    def write_failures(self, rows: Sequence[Mapping[str, Any]]) -> str | None:
        """Record failed cells (one atomic part in ``failed/``)."""
        if not rows:
            return None
        batch = self._new_batch()
        written_at = time.time()
        self._write(
            "failed", batch, to_table("failed", [{**r, "batch": batch, "written_at": written_at} for r in rows])
        )
        return batch

    def _write(self, table: str, batch: str, data: pa.Table) -> None:
        folder = self.root / table
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"part-{batch}.parquet"
        temp = folder / f".part-{batch}.parquet.tmp"
        pq.write_table(data, temp, write_page_checksum=True)
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, final)
        self._written(final)

    def _written(self, path: Path) -> None:
        """Count a part this store just wrote and synced as read through (its bytes are the ones written:
        reading them back would verify what this process holds); saved with `_verified.json`."""
        self._load_verified()
        assert self._verified is not None
        stat = path.stat()
        self._verified[str(path.relative_to(self.root))] = [stat.st_size, stat.st_mtime_ns]
        self._verified_changed = True

    def _load_verified(self) -> None:
        if self._verified is None:
            try:
                loaded = json.loads((self.root / VERIFIED).read_text(encoding="utf-8"))
                self._verified = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self._verified = {}

    # -- housekeeping ----------------------------------------------------------------------------

    def tidy(self) -> list[str]:
        """Delete stale temporary files; move unreadable parts, the parts of incomplete batches and the
        orphans of writers that are gone to ``_quarantine/``. Returns what was done, one line each."""
        done: list[str] = []
        with store_lock(self.root):
            live = set(live_claims(self.root, exclude=self.owner))
            if self.claimant.is_open:
                live.add(self.owner)
            for table in (*TABLES, "failed"):
                folder = self.root / table
                if not folder.is_dir():
                    continue
                for temp in sorted(folder.glob(".part-*.tmp")):
                    if _owner_of(_batch_of(temp)) not in live:
                        temp.unlink(missing_ok=True)
                        done.append(f"{temp}: stale temporary file of a writer that is gone: deleted")
            scan = self._scan()
            committed = set(scan.committed)
            for table in (*TABLES, "failed"):
                for path in self._files(table):
                    batch = _batch_of(path)
                    if path in scan.unreadable:
                        reason = f"unreadable ({scan.unreadable[path]})"
                    elif batch in scan.broken:
                        reason = f"part of an incomplete batch ({scan.broken[batch]})"
                    elif table in ("steps", "events") and batch not in committed and _owner_of(batch) not in live:
                        reason = "never committed (its writer stopped before the batch's cells file)"
                    else:
                        continue
                    done.append(f"{path}: {reason}: moved to {self._quarantine(table, path, reason)}")
            self._save_verified()
        self.problems = done
        return done

    def _quarantine(self, table: str, path: Path, reason: str) -> Path:
        folder = self.root / QUARANTINE / table
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / path.name
        n = 1
        while target.exists():
            target = folder / f"{path.stem}.{n}{path.suffix}"
            n += 1
        shutil.move(str(path), target)
        with open(self.root / QUARANTINE / "log.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps({"at": time.time(), "from": str(path), "to": str(target), "reason": reason}) + "\n")
        return target

    def close(self) -> None:
        """Give up this writer's claim (also done by the process ending) and save which parts it wrote."""
        with store_lock(self.root):
            self._save_verified()
            self.claimant.close()


class BatchWriter:
    """Finished cells gathered into stored batches: one batch (`ResultStore.write_tables`, a parquet part per table)
    for up to ``cells`` cells (more only when one task brings more), instead of one per finished task (a task holds one
    session's cells: a sweep of two strategies over 336 sessions wrote 336 batches, 1,008 part files, and its driver
    spent about half the sweep writing them and a seventh re-reading them to see what was done).

    A batch is written when it holds ``cells`` cells or ``rows`` step rows (memory stays bounded), when its oldest
    cell has waited ``wait_s`` seconds (`due_in` tells the caller when; a killed sweep loses at most that much
    finished work besides the tasks still running), and on `flush`, which leaving the ``with`` block does, also on
    an error or an interrupt (a failed write then does not hide the first error)."""

    def __init__(self, store: ResultStore, *, cells: int, rows: int = 20_000, wait_s: float = 1.0) -> None:
        if cells < 1 or rows < 1 or wait_s < 0:
            raise ValueError("a batch holds at least one cell and one row, and waits no negative time")
        self.store, self.cells, self.rows, self.wait_s = store, cells, rows, wait_s
        self.stored = 0  # cells written so far
        self._parts: dict[str, list[pa.Table]] = {name: [] for name in TABLES}  # a task's rows as one table each
        self._since: float | None = None  # time.monotonic() of the oldest pending cell

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.flush()
        except Exception:
            if exc_type is None:
                raise  # else the error that ended the block is the one to see

    def add(
        self,
        cells: Sequence[Mapping[str, Any]],
        steps: Sequence[Mapping[str, Any]] = (),
        events: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Keep one task's rows; write the batch when it is full or due. A task that would take the batch
        past ``cells`` cells goes to the next one (a task holds at most ``batch_size`` cells)."""
        if not cells:
            return
        # columnar at once (rows that do not fit the schema fail here): a pending batch holds Arrow buffers,
        # not dicts (holding 64 cells' row dicts raised a sweep's peak RSS by a third)
        parts = [
            (name, to_table(name, rows)) for name, rows in (("cells", cells), ("steps", steps), ("events", events))
        ]
        pending = self._pending("cells")
        if pending and pending + len(cells) > self.cells:
            self.flush()
        if self._since is None:
            self._since = time.monotonic()
        for name, table in parts:
            if table.num_rows:
                self._parts[name].append(table)
        if self._pending("cells") >= self.cells or self._pending("steps") >= self.rows or self.due_in() == 0:
            self.flush()

    def _pending(self, table: str) -> int:
        """Rows of ``table`` waiting to be written."""
        return sum(part.num_rows for part in self._parts[table])

    def due_in(self) -> float | None:
        """Seconds until the pending cells must be written (0: now), None when nothing is pending."""
        if self._since is None:
            return None
        return max(0.0, self.wait_s - (time.monotonic() - self._since))

    def flush_due(self) -> None:
        if self.due_in() == 0:
            self.flush()

    def flush(self) -> None:
        """Write the pending cells as one batch (nothing when none are pending)."""
        cells = self._pending("cells")
        if not cells:
            return
        self.store.write_tables(self._parts)
        self.stored += cells
        self._parts = {name: [] for name in TABLES}
        self._since = None


def _filled(table: pa.Table, column: str, value: object) -> pa.Table:
    """``table`` with every row's ``column`` set to ``value`` (of the column's type)."""
    index = table.schema.get_field_index(column)
    field = table.schema.field(index)
    return table.set_column(index, field, pa.array([value] * table.num_rows, type=field.type))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
