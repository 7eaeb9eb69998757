"""Load-time checks of values everything downstream trusts: usage token counts and well-formed text.

`load_paths` passes every session through `check_session`, whatever its format, so one bad value is a
warning on its record instead of a crash of every command over the whole folder:

* **Usage.** A token count must be an integer ``0 <= n <= MAX_TOKENS`` (an integral float such as
  ``12.0`` is taken as that integer). ``NaN``, ``1e999`` (infinity), ``10**30``, negatives, booleans and
  strings under a ``*_tokens`` / ``*_requests`` key, and a ``cache_creation`` / ``server_tool_use`` that is
  not an object, are dropped from the record's ``usage`` (treated as missing, like a key the recording
  never had) with a warning naming file, line and value. ``Record.raw`` and ``Record.line`` keep what
  was recorded, so export stays byte-identical.
* **Lone UTF-16 surrogates** (``"\\udc80"``: valid JSON, which Claude Code writes when it cuts a string at
  a UTF-16 boundary) cannot be encoded as UTF-8, so hashing, tokenizers and parquet fail on them. In
  the loaded values (blocks, ``raw``, ids, usage) each becomes U+FFFD, one UTF-16 unit like the
  surrogate, so Claude Code's chars/4 estimates (UTF-16 length, docs §6) do not change; ``Record.line``
  keeps the original escape for byte-identical export. One warning per record.

* **Compact boundaries.** ``compactMetadata`` token counts (``preTokens``, ``postTokens``) follow the usage
  rule: one that is not credible is dropped from `Record.compact_metadata` (``Record.raw`` keeps it) with
  a warning, so ``workbench tokens`` never reports an error against ``preTokens = -5``.

* **Cache writes only in the breakdown.** Before Claude Code 2.1.152 a transcript could record
  ``cache_creation_input_tokens: 0`` when the API reported cache writes only in the nested
  ``cache_creation`` object (CHANGELOG 2.1.152). Read as written, those writes vanish from the context size
  and the bill; the loader takes the breakdown's total instead, with a warning.

Warnings go to ``Session.metadata["warnings"]`` as ``{"file", "line", "reason"}`` (``workbench ingest``
lists them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from .model import MAX_TOKENS, Block, Record, Session, credible_count, is_count_key

__all__ = ["MAX_TOKENS", "ZERO_CACHE_WRITES", "check_session", "clean_usage", "replace_surrogates"]

_NESTED = ("cache_creation", "server_tool_use")
_COUNT_SUFFIXES = ("_tokens", "_requests")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A JSON escape of a surrogate code point: the only way a lone surrogate reaches a strictly decoded line.
_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_NOTHING: list[str] = []  # shared, never appended to
_VALUE_FIELDS = tuple(f.name for f in fields(Record) if f.name not in ("line", "source", "blocks", "_key"))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _plain(usage: Mapping[str, Any]) -> bool:
    """The common case, checked without building anything: every value an int in range, None, a string
    under a key that is not a count, or a mapping of the same."""
    for key, value in usage.items():
        kind = type(value)
        if kind is int:
            if not 0 <= value <= MAX_TOKENS:
                return False
        elif kind is str:
            if key in _NESTED or (isinstance(key, str) and key.endswith(_COUNT_SUFFIXES)):
                return False
        elif kind is dict or isinstance(value, Mapping):
            if not _plain(value):
                return False
        elif value is not None:
            return False
    return True


def clean_usage(usage: Mapping[str, Any], where: str = "usage") -> tuple[Mapping[str, Any], list[str]]:
    """``usage`` without the values that are not credible token counts, and one problem per dropped value.

    Returns ``(usage, [])`` unchanged (the same object) when nothing is wrong; a new mapping when a value
    was dropped or an integral float made an int.
    """
    if _plain(usage):
        return usage, []
    problems: list[str] = []
    out: dict[str, Any] = {}
    changed = False
    for key, value in usage.items():
        name = f"{where}.{key}"
        if isinstance(value, Mapping):
            inner, found = clean_usage(value, name)
            problems += found
            out[key] = inner
            changed |= inner is not value
            continue
        if key in _NESTED and value is not None:
            problems.append(f"{name} = {_show(value)} is not an object; treated as missing")
            continue
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        counted = isinstance(key, str) and key.endswith(_COUNT_SUFFIXES)
        if (is_number or (counted and value is not None)) and credible_count(value) is None:
            problems.append(
                f"{name} = {_show(value)} is not a token count (an integer 0..{MAX_TOKENS:,}); treated as missing"
            )
            continue
        out[key] = credible_count(value) if is_number else value
        changed |= out[key] is not value
    return (out, problems) if problems or changed else (usage, [])


def replace_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (str, mapping, list, tuple: recursively) with each lone surrogate replaced by U+FFFD,
    and how many strings changed; the same object when nothing changed."""
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value, 0
        return _SURROGATE.sub("\ufffd", value), 1
    if isinstance(value, Mapping):
        changed = 0
        items = []
        for key, item in value.items():
            new_key, a = replace_surrogates(key)
            new_item, b = replace_surrogates(item)
            changed += a + b
            items.append((new_key, new_item))
        return (dict(items), changed) if changed else (value, 0)
    if isinstance(value, (list, tuple)):
        changed = 0
        items = []
        for item in value:
            new_item, n = replace_surrogates(item)
            changed += n
            items.append(new_item)
        return (type(value)(items), changed) if changed else (value, 0)
    return value, 0


def _metadata_problems(record: Record) -> list[str]:
    """``compactMetadata`` token counts that are not credible (`Record.compact_metadata` drops them)."""
    value = record.raw.get("compactMetadata")
    if not isinstance(value, Mapping):
        return []
    return [
        f"compactMetadata.{key} = {_show(item)} is not a token count (an integer 0..{MAX_TOKENS:,}); treated as missing"
        for key, item in value.items()
        if is_count_key(key) and credible_count(item) is None
    ]


#: The reason given when the breakdown's cache writes replace a recorded 0.
ZERO_CACHE_WRITES = (
    "cache_creation_input_tokens is 0 but the nested cache_creation breakdown reports cache writes (Claude Code "
    "before 2.1.152); the breakdown's total is used"
)


def _breakdown_writes(usage: Mapping[str, Any]) -> int:
    """The cache-write tokens of ``usage``'s nested breakdown when the top-level count is 0 or missing, else 0."""
    nested = usage.get("cache_creation")
    if not isinstance(nested, Mapping) or usage.get("cache_creation_input_tokens"):
        return 0
    return sum(v for v in nested.values() if type(v) is int and v > 0)


def _clean_record(record: Record) -> tuple[Record, list[str]]:
    line, usage = record.line, record.usage
    boundary = record.is_compact_boundary
    if (
        line is not None
        and _ESCAPE.search(line) is None
        and (usage is None or (type(usage) is dict and _plain(usage) and not _breakdown_writes(usage)))
        and not boundary
    ):
        return record, _NOTHING  # the common case, kept cheap: ingest checks every record
    problems: list[str] = _metadata_problems(record) if boundary else []
    changes: dict[str, Any] = {}
    if line is None or _ESCAPE.search(line):
        for name in _VALUE_FIELDS:
            value, n = replace_surrogates(getattr(record, name))
            if n:
                changes[name] = value
        blocks = [replace_surrogates(block.raw) for block in record.blocks]
        if any(n for _, n in blocks):
            changes["blocks"] = tuple(
                Block(block.kind, raw) if n else block for block, (raw, n) in zip(record.blocks, blocks, strict=True)
            )
        if changes:
            problems.append("lone UTF-16 surrogate(s) replaced by U+FFFD in the loaded values (export keeps the line)")
    usage = changes.get("usage", record.usage)
    if isinstance(usage, Mapping):
        cleaned, found = clean_usage(usage)
        if cleaned is not usage:
            changes["usage"] = cleaned
            problems += found
        writes = _breakdown_writes(cleaned)
        if writes:
            changes["usage"] = {**cleaned, "cache_creation_input_tokens": writes}
            problems.append(ZERO_CACHE_WRITES)
    return (replace(record, **changes) if changes else record), problems


def check_session(session: Session) -> Session:
    """``session`` with credible usage and well-formed text (module docstring); problems become
    ``metadata["warnings"]``. The same object when nothing is wrong."""
    warnings: list[dict[str, Any]] = []
    records = list(session.records)
    changed = False
    for index, record in enumerate(records):
        new, problems = _clean_record(record)
        if new is not record:
            records[index], changed = new, True
        for problem in problems:
            warnings.append({"file": record.source or session.source, "line": record.line_no, "reason": problem})
    head: dict[str, Any] = {}
    for name in ("id", "session_id", "parent_session_id", "agent_id", "client_version", "models", "metadata"):
        value, n = replace_surrogates(getattr(session, name))
        if n:
            head[name] = value
    if not changed and not head and not warnings:
        return session
    metadata = dict(head.get("metadata", session.metadata))
    if warnings:
        metadata["warnings"] = [*metadata.get("warnings", []), *warnings]
    return replace(session, records=tuple(records), **{**head, "metadata": metadata})
