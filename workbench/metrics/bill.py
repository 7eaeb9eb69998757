"""The recorded bill: what a session's persisted ``usage`` costs, priced once per response as ccusage 20 does.

``recorded_cost_usd`` is the figure Claude Code users get from ccusage (``ccusage claude session --offline``)
on the same transcript. Its rules, read in ccusage's source (ryoppippi/ccusage@5816e640, the newest snapshot
the source store holds; 20.0.24 itself ships only a native binary, and its figures on every corpus file are
pinned in ``tests/metrics/test_bill.py``):

* **Which lines.** A line counts when it carries ``message.usage`` with integer ``input_tokens`` and
  ``output_tokens`` and a ``timestamp`` (``types.rs``, ``UsageEntry``); it is dropped when one of the fields
  ``id``, ``cwd``, ``model``, ``speed``, ``costUSD``, ``version``, ``sessionId``, ``requestId``,
  ``isApiErrorMessage``, ``cache_read_input_tokens``, ``cache_creation_input_tokens`` is written ``null``
  anywhere on the line (``has_unsupported_null_field``), when ``version`` is not ``N.N.N…``, or when
  ``sessionId``/``requestId``/``message.id``/``message.model`` is an empty string (``is_valid_usage_entry``;
  all in ``adapter/claude/mod.rs``).
* **Once per response.** Lines are deduplicated by ``(message.id, requestId)``; a line whose exact key is new
  but whose ``message.id`` was seen on a sidechain line (or is itself a sidechain line) joins that entry too
  (``push_deduped_entry``: ``/btw`` sidechains replay parent messages under new request ids). Lines without a
  ``message.id`` are each their own entry.
* **The largest usage.** Within an entry a main-thread line beats a sidechain line; otherwise the line with
  the larger token total (input + output + cache writes + cache reads) replaces the kept one
  (``should_replace_deduped_entry``). Claude Code persists a streamed response as one line per content
  block, each with the usage known when it was written, so this keeps the final (largest) usage.
* **Cache writes.** With a ``cache_creation`` object, its ``ephemeral_5m_input_tokens`` are priced as
  5-minute writes and ``ephemeral_1h_input_tokens`` as 1-hour writes (twice the input rate); without it,
  all of ``cache_creation_input_tokens`` is a 5-minute write (``cost.rs``, ``calculate_cost_from_tokens``).
* **Long context** per token kind above 200k tokens, see `workbench.metrics.pricing`. A model missing from
  the table (``<synthetic>``, an unnamed model) costs 0, as in ccusage.

Which session a line belongs to: the bill of a session is over its own conversation
(`Session.conversation`), so a main file's inline v1.0 sidechain lines are billed in their sub-agent
sessions (`workbench.transcript.claude_code`), and the bills of all sessions of one file add up to
ccusage's figure for that file.

**Output tokens the file does not hold.** Most responses of the corpus persist only the usage of their
``message_start`` event: the last line of the response has ``stop_reason: null`` and 1-8 output tokens.
Every tool (ccusage included) then undercounts output. A response is *unfinished* when none of its lines
has a ``stop_reason`` and its recorded ``output_tokens`` is below its content's rough size (chars/4 of the
text, thinking and tool_use name + input JSON of all its lines: a lower bound, since tokens run shorter
than 4 characters on code). Its ``output_tokens_estimate`` is that rough size (else the recorded figure);
``output_tokens_estimated`` marks it. ``recorded_cost_usd`` keeps the recorded figure (it is the bill the
file supports, and ccusage's); ``estimated_cost_usd`` prices the estimate instead.
"""

from __future__ import annotations

import json
import math
import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from ..transcript.model import Record, Session
from .pricing import DEFAULT_MODEL, Price, known_price, load_pricing, tokens_dollars

__all__ = [
    "BILL_COLUMNS",
    "BilledResponse",
    "bill_row",
    "bill_sessions",
    "billed_responses",
    "content_tokens",
    "recorded_bill",
]

#: Fields whose ``null`` makes ccusage drop the whole line (``is_unsupported_nullable_field``).
_NULL_FIELDS = re.compile(
    r'"(id|cwd|model|speed|costUSD|version|sessionId|requestId|isApiErrorMessage|'
    r'cache_read_input_tokens|cache_creation_input_tokens)":null'
)
_SEMVER_PREFIX = re.compile(r"^\d+\.\d+\.\d")


@dataclass(frozen=True)
class BilledResponse:
    """One billed API response: the kept line's usage and what it costs."""

    message_id: str | None
    request_id: str | None
    model: str | None
    line_no: int | None
    is_sidechain: bool
    input_tokens: int
    output_tokens: int
    cache_write_5m: int
    cache_write_1h: int
    cache_read: int
    output_tokens_estimate: int
    output_tokens_estimated: bool
    cost_usd: float
    estimated_cost_usd: float

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_write_5m + self.cache_write_1h + self.cache_read


def _count(value: Any) -> int | None:
    """A u64 the way serde reads it: a non-negative JSON integer (not a float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _optional_str(obj: Mapping[str, Any], key: str) -> tuple[bool, str | None]:
    """(ok, value): absent is fine, a string is fine, anything else fails ccusage's parse."""
    value = obj.get(key)
    if value is None:
        return True, None
    return (True, value) if isinstance(value, str) else (False, None)


def _timestamp_ok(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Entry:
    record: Record
    message_id: str | None
    request_id: str | None
    model: str | None
    sidechain: bool
    tokens: tuple[int, int, int, int, int]  # input, output, write 5m, write 1h, read

    @property
    def total(self) -> int:
        return sum(self.tokens)


def _entry(record: Record) -> _Entry | None:
    """The usage entry ccusage reads from this line, or None where it drops the line."""
    if record.line is not None and '"usage":{' not in record.line:
        return None  # tested below anyway: first, so a line without usage is not decoded again (line_raw)
    raw = record.raw
    message = raw.get("message")
    if not isinstance(message, Mapping):
        return None
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return None
    line = record.line if record.line is not None else json.dumps(raw, separators=(",", ":"))
    if '"usage":{' not in line or _NULL_FIELDS.search(line):
        return None
    if not _timestamp_ok(raw.get("timestamp")):
        return None
    checks = [_optional_str(raw, "version"), _optional_str(raw, "sessionId"), _optional_str(raw, "requestId")]
    checks += [_optional_str(message, "id"), _optional_str(message, "model")]
    if not all(ok for ok, _ in checks):
        return None
    version, session_id, request_id, message_id, model = (value for _, value in checks)
    if version is not None and not _SEMVER_PREFIX.match(version):
        return None
    if "" in (session_id, request_id, message_id, model):
        return None
    inp, out = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    write = _count(usage.get("cache_creation_input_tokens", 0))
    read = _count(usage.get("cache_read_input_tokens", 0))
    if inp is None or out is None or write is None or read is None:
        return None
    split = usage.get("cache_creation")
    if isinstance(split, Mapping):
        five = _count(split.get("ephemeral_5m_input_tokens", 0))
        hour = _count(split.get("ephemeral_1h_input_tokens", 0))
        if five is None or hour is None:
            return None
    elif split is None:
        five, hour = write, 0
    else:
        return None
    sidechain = raw.get("isSidechain") is True
    return _Entry(record, message_id, request_id, model, sidechain, (inp, out, five, hour, read))


def _replaces(candidate: _Entry, existing: _Entry) -> bool:
    if candidate.sidechain != existing.sidechain:
        return existing.sidechain
    return candidate.total > existing.total


def _deduplicated(records: Iterable[Record]) -> list[_Entry]:
    """ccusage's ``push_deduped_entry``: its hash maps are accelerators, each hit re-checked against the
    entry kept at that index, so a lookup by message id with that check is the same rule."""
    kept: list[_Entry] = []
    by_message: dict[str, list[int]] = {}
    for record in records:
        entry = _entry(record)
        if entry is None:
            continue
        if entry.message_id is None:
            kept.append(entry)
            continue
        seen = by_message.setdefault(entry.message_id, [])
        index = next((i for i in seen if kept[i].request_id == entry.request_id), None)
        if index is None:  # /btw sidechains replay a parent's message under a new request id
            index = next((i for i in seen if entry.sidechain or kept[i].sidechain), None)
        if index is None:
            seen.append(len(kept))
            kept.append(entry)
        elif _replaces(entry, kept[index]):
            kept[index] = entry
    return kept


def content_tokens(records: Iterable[Record]) -> int:
    """Rough output size of a response: chars/4 of its text, thinking and tool_use (name + input JSON)."""
    chars = 0
    for record in records:
        for block in record.blocks:
            if block.kind in ("text", "thinking"):
                chars += len(block.text)
            elif block.kind in ("tool_use", "server_tool_use"):
                chars += len(block.name or "") + len(json.dumps(block.input, ensure_ascii=False))
    return math.ceil(chars / 4)


def billed_responses(records: Sequence[Record], pricing: Mapping[str, Price] | None = None) -> list[BilledResponse]:
    """The billed responses of ``records`` (one session's conversation), in order of first appearance."""
    table = pricing or load_pricing()
    lines_of: dict[str, list[Record]] = {}
    for record in records:
        if record.kind == "assistant" and record.message_id is not None:
            lines_of.setdefault(record.message_id, []).append(record)
    out = []
    for entry in _deduplicated(records):
        inp, output, five, hour, read = entry.tokens
        group = lines_of.get(entry.message_id or "", [entry.record])
        finished = any(r.stop_reason for r in group)
        rough = content_tokens(group)
        estimated = not finished and rough > output
        estimate = rough if estimated else output
        price = known_price(entry.model, table)
        tokens = {"input": inp, "cache_write_5m": five, "cache_write_1h": hour, "cache_read": read}
        cost = tokens_dollars(price, **tokens, output=output) if price else 0.0
        estimated_cost = tokens_dollars(price, **tokens, output=estimate) if price else 0.0
        out.append(
            BilledResponse(
                message_id=entry.message_id,
                request_id=entry.request_id,
                model=entry.model,
                line_no=entry.record.line_no,
                is_sidechain=entry.sidechain,
                input_tokens=inp,
                output_tokens=output,
                cache_write_5m=five,
                cache_write_1h=hour,
                cache_read=read,
                output_tokens_estimate=estimate,
                output_tokens_estimated=estimated,
                cost_usd=cost,
                estimated_cost_usd=estimated_cost,
            )
        )
    return out


#: The last `recorded_bill` answer with (a weak reference to) the session and the pricing it was for: a
#: report prices a session's bill and then simulates its cost, and both read the bill (compared by identity:
#: sessions are immutable; weakly, so the memo never keeps a session alive).
_LAST_BILL: list[tuple[weakref.ref[Session], Mapping[str, Price] | None, list[BilledResponse]]] = []


def _last_bill(session: Session) -> tuple[Mapping[str, Price] | None, list[BilledResponse]] | None:
    last = _LAST_BILL[0] if _LAST_BILL else None
    return (last[1], last[2]) if last is not None and last[0]() is session else None


def recorded_bill(session: Session, pricing: Mapping[str, Price] | None = None) -> list[BilledResponse]:
    """The billed responses of one session's own conversation (inline sidechains belong to their sub-agents).

    The list is shared with the next call for the same session: read it, do not change it."""
    last = _last_bill(session)
    if last is not None and last[0] is pricing:
        return last[1]
    found = billed_responses(session.conversation(), pricing)
    _LAST_BILL[:] = [(weakref.ref(session), pricing, found)]
    return found


def billed_outputs(session: Session) -> dict[str | None, int]:
    """Output tokens per billed response of ``session`` (its largest persisted usage; prices do not matter,
    so the last `recorded_bill` of the session is reused under any pricing)."""
    last = _last_bill(session)
    bill = last[1] if last is not None else recorded_bill(session)
    return {b.message_id: b.output_tokens for b in bill}


BILL_COLUMNS = [
    "session_id",
    "responses",
    "recorded_cost_usd",
    "estimated_cost_usd",
    "input_tokens",
    "cache_write_5m",
    "cache_write_1h",
    "cache_read",
    "output_tokens_recorded",
    "output_tokens_estimate",
    "output_tokens_estimated",
]


def bill_sessions(
    sessions: Iterable[Session] | Mapping[str, Session],
    *,
    pricing: Mapping[str, Price] | None = None,
    default_model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """One row per session: ``recorded_cost_usd`` (= ccusage), the output-token estimate and its cost.

    Sessions whose format records no usage get NaN dollars ("not available"), not 0.
    ``output_tokens_estimated`` counts the responses whose output was estimated.
    """
    del default_model  # ccusage prices an unnamed or unknown model at 0; kept for a uniform signature
    table = pricing or load_pricing()
    items = sessions.values() if isinstance(sessions, Mapping) else sessions
    rows = [bill_row(session, table) for session in items]
    return pd.DataFrame(rows, columns=BILL_COLUMNS)


def bill_row(session: Session, pricing: Mapping[str, Price]) -> dict[str, Any]:
    """`bill_sessions`' row of one session (a caller streaming sessions builds the frame from these)."""
    if "usage" not in session.capabilities:
        return {"session_id": session.id, "recorded_cost_usd": float("nan"), "responses": 0}
    bill = recorded_bill(session, pricing)
    return {
        "session_id": session.id,
        "responses": len(bill),
        "recorded_cost_usd": sum(b.cost_usd for b in bill),
        "estimated_cost_usd": sum(b.estimated_cost_usd for b in bill),
        "input_tokens": sum(b.input_tokens for b in bill),
        "cache_write_5m": sum(b.cache_write_5m for b in bill),
        "cache_write_1h": sum(b.cache_write_1h for b in bill),
        "cache_read": sum(b.cache_read for b in bill),
        "output_tokens_recorded": sum(b.output_tokens for b in bill),
        "output_tokens_estimate": sum(b.output_tokens_estimate for b in bill),
        "output_tokens_estimated": sum(b.output_tokens_estimated for b in bill),
    }
