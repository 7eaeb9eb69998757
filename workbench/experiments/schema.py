"""The result store's tables: one explicit, versioned Arrow schema each.

Every part file of a table is written with exactly its schema (`to_table`), so the folder of a table is
one dataset: ``pandas.read_parquet(store / "events")`` and ``pyarrow.dataset.dataset(store / "steps")``
read every table of any store, also one resumed after a kill. Types inferred from each part's own rows
would not do: a batch whose events all lack a ``summary`` would write a ``null`` column, the next one
``string``, and the folder could not be read as one dataset.

Rules:

* A row key that is not in the schema is an error naming the table and the key (a new column is added
  here, with its type, and `SCHEMA_VERSION` goes up); a schema column missing from a row is null.
* Values are converted to the column's type (an int or a float NaN into ``int64``/null, a tuple into a
  list); a value that does not convert raises with the table and the column.
* The version is stored in each part's metadata (``workbench.store.schema``). Parts written by older
  versions are conformed on read (`conform`: missing columns become null, types are cast), so
  `workbench.experiments.store.ResultStore` reads every store; ``pandas`` reads a folder as one
  dataset once its parts have this version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SCHEMAS", "SCHEMA_KEY", "SCHEMA_VERSION", "SchemaError", "conform", "part_version", "to_table"]

#: Bump when a table's columns or types change (2: events' summary_source, summary_note, recorded_boundary;
#: 3: steps' session-memory extraction columns; 4: events' not_kept_uuids, `workbench.replay.rows`; 5: events'
#: summarizer_input_tokens and summarizer_output_tokens, one count per summary call).
SCHEMA_VERSION = 5
#: Key of the version in each part file's schema metadata.
SCHEMA_KEY = b"workbench.store.schema"

_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_LIST = pa.list_(pa.field("element", pa.string()))  # the child name parquet writes back
_INTS = pa.list_(pa.field("element", pa.int64()))


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, kind) for name, kind in fields], metadata={SCHEMA_KEY: str(SCHEMA_VERSION)})


_CELL_IDENTITY = (
    ("cell_id", _S),
    ("strategy", _S),
    ("config_hash", _S),
    ("session_id", _S),
    ("session_fingerprint", _S),
    ("source", _S),
    ("file", _S),
    ("estimator", _S),
    ("code_version", _S),
    ("config_json", _S),
    ("passed_config_json", _S),
)
_PROVENANCE = (
    ("spec_name", _S),
    ("spec_path", _S),
    ("corpus", _S),
    ("corpus_fingerprint", _S),
    ("package_version", _S),
    ("git_revision", _S),
    ("executor", _S),
    ("finished_at", _F),
    ("batch", _S),
    ("written_at", _F),
)

SCHEMAS: dict[str, pa.Schema] = {
    # one row per computed cell: identity, the summary of its replay, provenance (the commit record)
    "cells": _schema(
        *_CELL_IDENTITY,
        ("steps", _I),
        ("compactions", _I),
        ("peak_context_tokens", _I),
        ("peak_without_compaction", _I),
        ("input_tokens", _I),
        ("input_tokens_without", _I),
        ("tokens_saved", _I),
        ("saved_share", _F),
        ("violating_steps", _I),
        ("violations", _I),
        ("compaction_violations", _I),
        ("repairs", _I),
        ("fallbacks", _I),
        ("started_at", _F),
        ("elapsed_s", _F),
        *_PROVENANCE,
    ),
    # one row per cell × replay step (`workbench.replay.engine`)
    "steps": _schema(
        ("session_id", _S),
        ("file", _S),
        ("strategy", _S),
        ("step", _I),
        ("message_id", _S),
        ("context_tokens", _I),
        ("tokens_without_compaction", _I),
        ("token_source", _S),
        ("context_records", _I),
        ("compacted", _B),
        ("violations", _I),
        ("violation_rules", _S),
        ("repaired", _I),
        # the session-memory extraction the hook ran before this call (`workbench.memory.fork`)
        ("memory_extraction", _B),
        ("extraction_context_tokens", _I),
        ("extraction_prompt_tokens", _I),
        ("extraction_notes_tokens", _I),
        ("extraction_edit_tokens", _I),
        ("extractor", _S),
        ("cell_id", _S),
        ("config_hash", _S),
        ("batch", _S),
    ),
    # one row per cell × compaction event (`workbench.replay.rows`)
    "events": _schema(
        ("session_id", _S),
        ("file", _S),
        ("strategy", _S),
        ("kind", _S),
        ("trigger", _S),
        ("step", _I),
        ("after_message_id", _S),
        ("tokens_before", _I),
        ("tokens_after", _I),
        ("keep_start", _I),
        ("naive_start", _I),
        ("kept_uuids", _LIST),
        ("not_kept_uuids", _LIST),  # v4: listed instead of kept_uuids when shorter (`workbench.replay.rows`)
        ("dropped_uuids", _LIST),
        ("summary", _S),
        ("added_text", _S),
        # where the summary came from (recorded, offline, anthropic, session-memory), why the
        # offline summariser stood in for a recorded one, and the recorded boundary a compaction reproduced
        ("summary_source", _S),
        ("summary_note", _S),
        ("recorded_boundary", _S),
        # v5: each summary call's input and output tokens, as the strategy counted them (null: one call,
        # estimated by the cost metric from the sizes before and after)
        ("summarizer_input_tokens", _INTS),
        ("summarizer_output_tokens", _INTS),
        ("fallbacks", _LIST),
        ("violations", _I),
        ("violation_rules", _LIST),
        ("repaired", _I),
        ("cell_id", _S),
        ("config_hash", _S),
        ("batch", _S),
    ),
    # one row per cell that raised: retried by the next sweep, kept as the record of what went wrong
    "failed": _schema(
        *_CELL_IDENTITY,
        ("error_type", _S),
        ("error", _S),
        *_PROVENANCE,
    ),
}


class SchemaError(ValueError):
    """Rows that do not fit a table's schema; the message names the table and the column."""


#: A list column is converted in chunks of about this many entries: an in-place compaction's event lists
#: every record it kept, so a masking replay of a long session gives one cell millions of entries (a
#: synthetic session of 1,000 calls: 2.4 million), and Arrow's builder, growing its buffers by doubling,
#: took about three times the column's size at once (+240 MB for an 89 MB events table; +155 MB in chunks).
LIST_CHUNK_ENTRIES = 100_000


def _values(table: str, name: str, kind: pa.DataType, values: list[Any]) -> pa.Array | pa.ChunkedArray:
    try:
        if not pa.types.is_list(kind):
            return pa.array(values, type=kind, from_pandas=True)
        chunks, chunk, entries = [], [], 0
        for value in values:
            strings = None if value is None else [str(x) for x in value]
            chunk.append(strings)
            entries += 0 if strings is None else len(strings)
            if entries >= LIST_CHUNK_ENTRIES:
                chunks.append(pa.array(chunk, type=kind, from_pandas=True))
                chunk, entries = [], 0
        if chunk or not chunks:
            chunks.append(pa.array(chunk, type=kind, from_pandas=True))
        return chunks[0] if len(chunks) == 1 else pa.chunked_array(chunks, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise SchemaError(f"store table {table}: column {name} ({kind}): {exc}") from None


def to_table(table: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows → an Arrow table with exactly ``SCHEMAS[table]`` (see the module docstring)."""
    schema = SCHEMAS[table]
    unknown = sorted(set().union(*rows) - set(schema.names))
    if unknown:
        raise SchemaError(
            f"store table {table}: {', '.join(unknown)} not in store schema v{SCHEMA_VERSION} "
            "(add the column with its type to workbench/experiments/schema.py and bump SCHEMA_VERSION)"
        )
    if not any(pa.types.is_list(f.type) for f in schema):
        # Arrow's own row conversion (a few times faster); rows it refuses go the column way below, which
        # names the column. It keeps a float NaN where the column way stores null: made null here.
        try:
            return _nan_as_null(pa.Table.from_pylist(list(rows), schema=schema))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
    arrays = [_values(table, f.name, f.type, [row.get(f.name) for row in rows]) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _nan_as_null(data: pa.Table) -> pa.Table:
    for position, field in enumerate(data.schema):
        if pa.types.is_floating(field.type):
            column = data.column(position)
            nan = pc.is_nan(column)
            if pc.any(nan).as_py():
                data = data.set_column(position, field, pc.if_else(nan, pa.scalar(None, field.type), column))
    return data


def part_version(schema: pa.Schema) -> int:
    """The schema version a part was written with (0: before versioning)."""
    raw = (schema.metadata or {}).get(SCHEMA_KEY)
    return int(raw) if raw else 0


def conform(table: str, data: pa.Table) -> pa.Table:
    """A part read from disk in the current schema: missing columns null, types cast; columns that
    are not in the schema (from other versions) are kept after the schema's."""
    schema = SCHEMAS[table]
    arrays, fields = [], []
    for field in schema:
        if field.name in data.column_names:
            column = data.column(field.name)
            arrays.append(column if column.type == field.type else column.cast(field.type))
        else:
            arrays.append(pa.nulls(len(data), field.type))
        fields.append(field)
    for name in data.column_names:
        if name not in schema.names:
            arrays.append(data.column(name))
            fields.append(data.schema.field(name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=schema.metadata))
