"""Writing replay results to parquet as they come: a replay of a whole history holds one session's rows
and at most `ROWS` rows waiting to be written.

`FrameWriter` takes one `ReplayResult` at a time and keeps its steps and events rows until `ROWS` rows
are pending, or `ENTRIES` entries of the events' list columns, then writes them as a part file (one frame
over those rows; the entries bound cuts a session's events into several parts); `close` joins the
parts into ``steps.parquet`` and ``events.parquet`` one part at a time (columns are unified across parts:
a column that is all null in one part and typed in another takes the type, an integer column that has a
null somewhere becomes float, as one frame over all rows would make it), then deletes the parts. The
files are what `replay_frames(...).to_parquet` wrote before, row for row. (A part per session cost more
than the replay: ``replay -s none --out`` of the 8x corpus took 7.9 s against 2.3 s without ``--out``;
reading every part's schema again for each integer column was a seventh of that.)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .engine import ReplayResult
from .run_folder import commit_run

__all__ = ["FrameWriter"]

_TABLES = ("steps", "events")
#: Rows (steps and events) kept before a part is written: a constant, whatever the corpus (a few MB).
ROWS = 2_000
#: Entries of the events' list columns (``kept_uuids``, ``dropped_uuids``, ...) kept before a part is written,
#: also in the middle of a session. An in-place compaction's event that listed every record of the context it
#: kept would hold entries growing with the square of the session's length (a synthetic 1,000-call session:
#: 2.4 million; one frame of them peaked at 540-560 MB); events list the shorter side (`workbench.replay.rows`),
#: and this bound holds any frame to a size.
ENTRIES = 100_000


class FrameWriter:
    """Stream `ReplayResult` rows into ``<out>/steps.parquet`` and ``<out>/events.parquet``."""

    def __init__(self, out: Path, *, rows: int = ROWS, entries: int = ENTRIES) -> None:
        self.out = Path(out)
        self.rows = rows
        self.entries = entries
        self._parts: Path | None = None
        self._count = 0
        self._pending: dict[str, list[dict[str, Any]]] = {table: [] for table in _TABLES}
        self._entries = 0  # list entries of the pending events rows

    def add(self, result: ReplayResult) -> None:
        if self._parts is None:
            self.out.mkdir(parents=True, exist_ok=True)
            self._parts = Path(tempfile.mkdtemp(dir=self.out, prefix=".parts-"))
        self._pending["steps"] += result.steps
        events = self._pending["events"]
        for row in result.events:
            events.append(row)
            self._entries += sum(len(value) for value in row.values() if isinstance(value, list))
            if self._entries >= self.entries:
                self._write_part()
                events = self._pending["events"]
        if sum(map(len, self._pending.values())) >= self.rows:
            self._write_part()

    def _write_part(self) -> None:
        assert self._parts is not None
        for table, rows in self._pending.items():
            if rows:
                frame = pd.DataFrame(rows)
                pq.write_table(
                    pa.Table.from_pandas(frame, preserve_index=False),
                    self._parts / f"{table}-{self._count:08d}.parquet",
                )
        self._pending = {table: [] for table in _TABLES}
        self._entries = 0
        pa.default_memory_pool().release_unused()  # mimalloc keeps what a part freed: ~40 MB more at 1,000 calls
        self._count += 1

    def close(self, manifest: Mapping[str, Any] | None = None) -> None:
        """Join the parts into the two files (an empty frame where no session had rows), put them and
        ``manifest`` in place (`workbench.replay.run_folder.commit_run`: all or nothing) and remove the parts."""
        if self._parts is None:
            return
        try:
            self._write_part()
            staged = {}
            for table in _TABLES:
                parts = sorted(self._parts.glob(f"{table}-*.parquet"))
                target = staged[f"{table}.parquet"] = self._parts / f"{table}.parquet"
                if not parts:
                    pd.DataFrame().to_parquet(target, index=False)
                    continue
                schemas = [pq.read_schema(p) for p in parts]
                schema = pa.unify_schemas(schemas, promote_options="permissive")
                schema = pa.schema([_widened(f, schemas) for f in schema]).with_metadata(None)
                with pq.ParquetWriter(target, schema) as writer:
                    for part in parts:
                        writer.write_table(_conform(pq.read_table(part).replace_schema_metadata(None), schema))
                        pa.default_memory_pool().release_unused()
            commit_run(self.out, staged, manifest)
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the parts (after `close`, or when the replay stopped: nothing half-written is left)."""
        if self._parts is not None:
            shutil.rmtree(self._parts, ignore_errors=True)
            self._parts = None


def _widened(field: pa.Field, schemas: list[pa.Schema]) -> pa.Field:
    """An integer column that is null somewhere (a part where it is float or null) becomes float64, as
    pandas makes it in one frame over all the rows."""
    if not pa.types.is_integer(field.type):
        return field
    for schema in schemas:
        index = schema.get_field_index(field.name)
        if index < 0 or not pa.types.is_integer(schema.field(index).type):
            return pa.field(field.name, pa.float64())
    return field


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(len(table), field.type))
    return pa.Table.from_arrays(columns, schema=schema)
