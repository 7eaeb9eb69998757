"""A 🤗 ``datasets`` bridge: sessions ⇄ ``Dataset``, local dataset files, presets for foreign schemas.

`corpus_to_dataset` writes one row per record (an empty session gets one placeholder row with
``record_index = -1``). Lossless columns: ``record_json`` (every `Record` field, blocks as
``{"kind", "raw"}``; ``raw`` is omitted when it equals ``json.loads(line)``) and ``session_json`` (the
session's fields incl. skips with their bytes, on the session's first row only). Typed convenience
columns: session_id, session_index, record_index, format, source, kind, role, uuid, message_id,
timestamp, model, subtype, text, block_types. `dataset_to_sessions` rebuilds the sessions exactly.

`load_dataset_sessions` reads local json/jsonl/parquet files (offline) or ``hf://OWNER/NAME[:split]``
(online only). Rows in this module's own schema are restored; other rows go through a preset, one
Session per row (``<name>:<row>`` unless an id column exists):

* ``history`` — SWE-agent ``.traj``-like rows (`swe_agent.session_from_traj`);
* ``messages`` — chat ``messages`` (OpenAI ``tool_calls``/``tool`` or Anthropic blocks);
* ``trajectory`` — a list of ``{role|from, content|text|value}`` turns (role aliases: ai/gpt/model →
  assistant, human → user), or SWE-agent steps ``{response, observation}``;
* ``conversations`` — ShareGPT ``{from, value}``.

Arrow unifies struct fields across rows, adding ``null`` for keys a message did not have: presets
drop null-valued keys before mapping (a genuinely recorded ``null`` is indistinguishable).

`workbench.tokens.datasets.add_token_counts` adds a per-record token column with
``Dataset.map(batched=True, num_proc=N)``.
``datasets`` is imported lazily; a ``.parquet`` loader is registered for files in this schema.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chat_jsonl import MessageError, ToolIds, record_from_message, session_from_messages
from .jsonio import unreadable_session
from .model import Block, Record, Session, Skip
from .registry import TranscriptError, register
from .swe_agent import session_from_traj

if TYPE_CHECKING:
    import datasets

__all__ = [
    "PRESETS",
    "DatasetParquetLoader",
    "corpus_to_dataset",
    "dataset_to_sessions",
    "load_dataset_sessions",
    "record_from_json",
    "record_to_json",
    "rows_to_sessions",
]

PRESETS = ("history", "messages", "trajectory", "conversations")
ID_COLUMNS = ("instance_id", "session_id", "conversation_id", "traj_id", "id")
_RECORD_FIELDS = tuple(f.name for f in fields(Record))
_SESSION_FIELDS = tuple(f.name for f in fields(Session) if f.init and f.name != "records")  # not memo fields
_ROLE_ALIASES = {"ai": "assistant", "gpt": "assistant", "model": "assistant", "bot": "assistant", "human": "user"}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode("ascii")}
    return value


def _dumps(value: Any) -> str:
    return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"), default=str)


def record_to_json(record: Record) -> str:
    out: dict[str, Any] = {name: getattr(record, name) for name in _RECORD_FIELDS}
    out["blocks"] = [{"kind": b.kind, "raw": b.raw} for b in record.blocks]
    if record.line is not None:
        try:
            if json.loads(record.line) == record.raw:
                out["raw"], out["raw_from_line"] = None, True
        except (json.JSONDecodeError, RecursionError):
            pass
    return _dumps(out)


def record_from_json(text: str) -> Record:
    data = json.loads(text)
    if data.pop("raw_from_line", False):
        data["raw"] = json.loads(data["line"])
    data["blocks"] = tuple(Block(b["kind"], b["raw"]) for b in data.get("blocks") or ())
    return Record(**{k: v for k, v in data.items() if k in _RECORD_FIELDS})


def _session_to_json(session: Session) -> str:
    out = {name: getattr(session, name) for name in _SESSION_FIELDS}
    out["skipped"] = [{**s.as_dict(), "data": base64.b64encode(s.data).decode("ascii")} for s in session.skipped]
    return _dumps(out)


def _session_from_json(text: str, records: list[Record]) -> Session:
    data = json.loads(text)
    data["skipped"] = tuple(
        Skip(s["file"], s["line"], s["reason"], base64.b64decode(s.get("data") or "")) for s in data["skipped"]
    )
    data["models"] = tuple(data.get("models") or ())
    data["capabilities"] = frozenset(data.get("capabilities") or ())
    return Session(records=tuple(records), **{k: v for k, v in data.items() if k in _SESSION_FIELDS})


def _features() -> datasets.Features:
    from datasets import Features, List, Value

    text = Value("string")
    columns = ("session_id", "format", "source", "kind", "role", "uuid", "message_id", "timestamp", "model")
    spec: dict[str, Any] = {name: text for name in columns}
    spec.update(
        session_index=Value("int64"),
        record_index=Value("int64"),
        subtype=text,
        text=text,
        block_types=List(text),
        record_json=text,
        session_json=text,
    )
    return Features(spec)


_RECORD_COLUMNS = ("kind", "role", "uuid", "message_id", "timestamp", "model", "subtype")


def _rows(sessions: Iterable[Session]) -> Iterator[dict[str, Any]]:
    for s_index, session in enumerate(sessions):
        base = {"session_id": session.id, "session_index": s_index, "format": session.format, "source": session.source}
        head = _session_to_json(session)
        if not session.records:  # a placeholder row keeps an all-skipped session
            empty = dict.fromkeys((*_RECORD_COLUMNS, "text", "record_json"))
            yield {**base, **empty, "record_index": -1, "block_types": [], "session_json": head}
        for r_index, record in enumerate(session.records):
            yield {
                **base,
                **{name: getattr(record, name) for name in _RECORD_COLUMNS},
                "record_index": r_index,
                "text": record.text,
                "block_types": [str(b.type) for b in record.blocks],
                "record_json": record_to_json(record),
                "session_json": head if r_index == 0 else None,
            }


def corpus_to_dataset(sessions: Iterable[Session]) -> datasets.Dataset:
    """One row per record, sessions in order (see the module docstring for the columns)."""
    from datasets import Dataset

    rows = list(_rows(sessions))
    columns = {name: [row[name] for row in rows] for name in _features()}
    return Dataset.from_dict(columns, features=_features())


def rows_to_sessions(rows: Iterable[Mapping[str, Any]]) -> list[Session]:
    """Sessions from rows of `corpus_to_dataset`'s schema, in session order."""
    heads: dict[int, str] = {}
    records: dict[int, list[Record]] = {}
    for row in rows:
        index = row["session_index"]
        records.setdefault(index, [])
        if row.get("session_json"):
            heads[index] = row["session_json"]
        if row.get("record_json"):
            records[index].append(record_from_json(row["record_json"]))
    missing = sorted(set(records) - set(heads))
    if missing:
        raise TranscriptError(f"rows of session_index {missing[:5]} have no session_json row")
    return [_session_from_json(heads[i], records[i]) for i in sorted(records)]


def dataset_to_sessions(ds: datasets.Dataset) -> list[Session]:
    """The sessions `corpus_to_dataset` wrote (row order does not matter: rows are sorted back)."""
    if "record_json" not in ds.column_names:
        raise TranscriptError("dataset has no record_json column; use load_dataset_sessions with a preset")
    rows: list[dict[str, Any]] = []
    for batch in ds.select_columns(["session_index", "record_index", "record_json", "session_json"]).iter(1024):
        rows.extend(dict(zip(batch, values, strict=True)) for values in zip(*batch.values(), strict=True))
    rows.sort(key=lambda r: (r["session_index"], r["record_index"]))
    return rows_to_sessions(rows)


# ------------------------------------------------------------------ foreign schemas


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def detect_preset(columns: Iterable[str]) -> str | None:
    names = set(columns)
    return next((p for p in PRESETS if p in names), None)


def _turns_session(turns: list[Any], *, sid: str, source: str, fmt: str) -> Session:
    """``{role|from, content|text|value}`` turns (trajectory / ShareGPT)."""
    if turns and all(isinstance(t, Mapping) and "observation" in t and "role" not in t for t in turns):
        return replace(session_from_traj({"trajectory": turns}, session_id=sid, source=source), format=fmt)
    ids = ToolIds()
    records: list[Record] = []
    skipped: list[Skip] = []
    for index, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            skipped.append(Skip(source, index + 1, f"{sid} turn {index}: not an object"))
            continue
        role = turn.get("role", turn.get("from"))
        role = _ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
        content = next((turn[k] for k in ("content", "text", "value") if k in turn), None)
        message = {**turn, "role": role, "content": content}
        if role in ("tool", "observation", "function") and "tool_call_id" not in turn:
            message = {"role": "user", "content": content}
        try:
            record = record_from_message(message, uuid=f"{sid}:{index}", ids=ids, source=source, line_no=index + 1)
        except MessageError as exc:
            skipped.append(Skip(source, index + 1, f"{sid} turn {index}: {exc}"))
            continue
        records.append(replace(record, raw=dict(turn)))
    return Session(
        id=sid,
        records=tuple(records),
        source=source,
        format=fmt,
        session_id=sid,
        skipped=tuple(skipped),
        lines=len(turns),
    )


def _row_session(row: Mapping[str, Any], preset: str, *, sid: str, source: str) -> Session:
    fmt = f"dataset:{preset}"
    value = _drop_nulls(row[preset])
    meta = {k: v for k, v in row.items() if k != preset and isinstance(v, (str, int, float, bool))}
    if not isinstance(value, list):
        return Session(
            id=sid,
            records=(),
            source=source,
            format=fmt,
            lines=1,
            skipped=(Skip(source, 1, f"{sid}: column {preset!r} is not a list"),),
        )
    if preset == "history":
        session = replace(session_from_traj(_drop_nulls(dict(row)), session_id=sid, source=source), format=fmt)
    elif preset == "messages":
        session = session_from_messages({"messages": value}, session_id=sid, source=source, format=fmt)
        meta.update(session.metadata)
    else:
        session = _turns_session(value, sid=sid, source=source, fmt=fmt)
    return replace(session, metadata={**session.metadata, **meta})


def _foreign_sessions(
    rows: Iterable[Mapping[str, Any]], columns: list[str], preset: str | None, name: str, source: str
) -> list[Session]:
    preset = preset or detect_preset(columns)
    if preset is None or preset not in columns:
        raise TranscriptError(f"{source}: no column for a preset; columns: {', '.join(columns)}; presets: {PRESETS}")
    id_column = next((c for c in ID_COLUMNS if c in columns), None)
    sessions = []
    for index, row in enumerate(rows):
        sid = str(row[id_column]) if id_column and row.get(id_column) is not None else f"{name}:{index}"
        sessions.append(_row_session(row, preset, sid=sid, source=f"{source}#row{index}"))
    return sessions


def load_dataset_sessions(
    spec: str | Path, *, preset: str | None = None, split: str = "train", cache_dir: str | Path | None = None
) -> list[Session]:
    """Sessions from a local json/jsonl/parquet file (or folder of them) or ``hf://OWNER/NAME[:split]``."""
    import datasets

    text = str(spec)
    if text.startswith("hf://"):
        if datasets.config.HF_HUB_OFFLINE or "1" in (
            os.environ.get("HF_HUB_OFFLINE"),
            os.environ.get("HF_DATASETS_OFFLINE"),
        ):
            raise TranscriptError(f"{text}: the Hugging Face Hub is offline (HF_HUB_OFFLINE)")
        name, _, hub_split = text.removeprefix("hf://").partition(":")
        try:
            ds = datasets.load_dataset(name, split=hub_split or split, cache_dir=cache_dir)
        except Exception as exc:  # network, auth, missing dataset: report, do not trace back
            raise TranscriptError(f"{text}: cannot load from the Hub: {exc}") from exc
        label = name
    else:
        path = Path(text)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        suffixes = {p.suffix for p in files}
        builder = "parquet" if suffixes == {".parquet"} else "json" if suffixes <= {".json", ".jsonl"} else None
        if not files or builder is None:
            raise TranscriptError(f"{text}: expected json/jsonl or parquet files, found {sorted(suffixes)}")
        try:
            ds = datasets.load_dataset(builder, data_files=[str(p) for p in files], split="train", cache_dir=cache_dir)
        except Exception as exc:  # malformed files: report, do not trace back
            raise TranscriptError(f"{text}: not loadable as a {builder} dataset: {exc}") from exc
        label = path.stem
    if "record_json" in ds.column_names and preset is None:
        return dataset_to_sessions(ds)
    return _foreign_sessions(iter(ds), ds.column_names, preset, label, text)


# ------------------------------------------------------------------ registry loader


class DatasetParquetLoader:
    """``.parquet`` files: this module's schema restored; otherwise one Session per row via a preset."""

    name = "dataset-parquet"
    suffixes = (".parquet",)

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(b"PAR1")

    def load(self, path: Path) -> list[Session]:
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            return [unreadable_session(path, self.name, f"unreadable parquet: {exc}")]
        rows = table.to_pylist()
        try:
            if "record_json" in table.column_names:
                return rows_to_sessions(rows)
            return _foreign_sessions(rows, table.column_names, None, path.stem, str(path))
        except (TranscriptError, KeyError, ValueError, TypeError) as exc:
            return [unreadable_session(path, self.name, f"not a transcript dataset: {exc}")]


register(DatasetParquetLoader())
