"""Writing replay results to parquet as they come, so a replay of a whole history holds one session's rows.

`FrameWriter` takes one `ReplayResult` at a time and writes its steps and events rows as a part file
(a session's rows are one frame, as `replay_frames` builds them); `close` joins the parts into
``steps.parquet`` and ``events.parquet`` one part at a time (columns are unified across parts: a column
that is all null in one session and typed in another takes the type, an integer column that has a null
somewhere becomes float, as one frame over all rows would make it), then deletes the parts. The files
are what `replay_frames(...).to_parquet` wrote before, row for row.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .engine import ReplayResult

__all__ = ["FrameWriter"]

_TABLES = ("steps", "events")


class FrameWriter:
    """Stream `ReplayResult` rows into ``<out>/steps.parquet`` and ``<out>/events.parquet``."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self._parts: Path | None = None
        self._count = 0

    def add(self, result: ReplayResult) -> None:
        if self._parts is None:
            self.out.mkdir(parents=True, exist_ok=True)
            self._parts = Path(tempfile.mkdtemp(dir=self.out, prefix=".parts-"))
        for table, rows in (("steps", result.steps), ("events", result.events)):
            if rows:
                frame = pd.DataFrame(rows)
                pq.write_table(
                    pa.Table.from_pandas(frame, preserve_index=False),
                    self._parts / f"{table}-{self._count:08d}.parquet",
                )
        self._count += 1

    def close(self) -> None:
        """Join the parts into the two files (an empty frame where no session had rows) and remove them."""
        if self._parts is None:
            return
        try:
            for table in _TABLES:
                parts = sorted(self._parts.glob(f"{table}-*.parquet"))
                target = self.out / f"{table}.parquet"
                if not parts:
                    pd.DataFrame().to_parquet(target, index=False)
                    continue
                schema = pa.unify_schemas([pq.read_schema(p) for p in parts], promote_options="permissive")
                schema = pa.schema([_widened(f, parts) for f in schema]).with_metadata(None)
                with pq.ParquetWriter(target, schema) as writer:
                    for part in parts:
                        writer.write_table(_conform(pq.read_table(part).replace_schema_metadata(None), schema))
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the parts (after `close`, or when the replay stopped: nothing half-written is left)."""
        if self._parts is not None:
            shutil.rmtree(self._parts, ignore_errors=True)
            self._parts = None


def _widened(field: pa.Field, parts: list[Path]) -> pa.Field:
    """An integer column that is null somewhere (a part where it is float or null) becomes float64, as
    pandas makes it in one frame over all the rows."""
    if not pa.types.is_integer(field.type):
        return field
    for part in parts:
        schema = pq.read_schema(part)
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
