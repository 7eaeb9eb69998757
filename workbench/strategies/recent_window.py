"""``recent-window``: keep the newest records that fit a token budget, cut only where the API allows.

The baseline "recent window" of docs/peers.md (Implications: "Baselines worth implementing"). It is
`truncate-oldest` with one change: the naive cut is moved *earlier* to an API-safe point with
`workbench.request.invariants.adjust_for_thinking` (which first applies ``adjust_to_api_invariants``: no
orphaned tool_result, no split ``message.id``; then keeps the kept tool loop opening with thinking,
peers.md §1.12 items 1-3), and a one-line user-role marker is put in front of the kept records so the
request still starts with a user message (§1.12 item 5; the marker plays the role of the summary that
``adjust_for_thinking`` assumes).

This module also holds the vocabulary every peer strategy of this package maps onto our records:

* **record**: one transcript line; Claude Code writes one content block per line (one thinking, one
  text, one tool_use, one tool_result each).
* **API call / response**: all assistant records sharing a ``message.id`` (`api_calls`).
* **API message**: what `workbench.request.normalize` sends: one response, or a run of consecutive user
  records merged into one user message (`api_messages`).
* **real user message** (`is_prompt`): a sent, non-meta user record with text and no tool_result.
* **turn** (user sense, `prompt_indices`): a real user message and everything after it up to the next.
* **step turn** (agent sense, SWE-agent / Complexity Trap / opencode "message"): one API call plus the
  tool_results answering it (`step_starts`).

Token counts inside strategies are the per-record ``rough`` counts of the `ContextView` (chars/4);
``overhead`` is what the view's total has beyond them (system prompt, tools, tokenizer ratio).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from ..request.invariants import adjust_for_thinking
from ..request.normalize import is_sent
from ..transcript.model import Block, Record
from ..transcript.steps import api_calls
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .refill import RefillGuard, guarded
from .registry import register

__all__ = [
    "ADDED_FLAG",
    "ApiMessage",
    "RecentWindow",
    "RecentWindowConfig",
    "WindowConfig",
    "api_messages",
    "assistant_note",
    "is_added",
    "is_prompt",
    "keep_newest",
    "overhead",
    "prompt_indices",
    "safe_cut",
    "safe_head_end",
    "shrinking_start",
    "splice",
    "step_starts",
    "user_note",
]

#: Raw key set on every record a strategy of this package creates (value: the strategy's kind).
ADDED_FLAG = "workbenchAdded"


def _uuid(*parts: str) -> str:
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def user_note(text: str, kind: str, *key: str, event: bool = False) -> Record:
    """A string-content user record created by a compaction (marker or summary), deterministic uuid.

    ``event`` says whether the OpenHands-style window counts it as an event (a summary does, a marker
    does not).
    """
    uuid = _uuid(kind, "user", text, *key)
    raw = {"type": "user", "message": {"role": "user", "content": text}, "uuid": uuid, ADDED_FLAG: kind, "event": event}
    return Record(
        kind="user",
        role="user",
        uuid=uuid,
        blocks=(Block.text_block(text),),
        string_content=True,
        has_content=True,
        raw=raw,
        modified=True,
    )


def assistant_note(text: str, kind: str, *key: str) -> Record:
    """An assistant text record created by a compaction (Gemini's and Aider's acknowledgements)."""
    uuid = _uuid(kind, "assistant", text, *key)
    raw = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "uuid": uuid,
        ADDED_FLAG: kind,
    }
    return Record(
        kind="assistant",
        role="assistant",
        uuid=uuid,
        message_id=f"msg_{uuid.replace('-', '')}",
        blocks=(Block.text_block(text),),
        has_content=True,
        raw=raw,
        modified=True,
    )


def is_added(record: Record) -> bool:
    return bool(record.raw.get(ADDED_FLAG))


def is_prompt(record: Record) -> bool:
    """A real user message: sent, not meta, not a summary or marker, with text and no tool_result."""
    return (
        record.kind == "user"
        and is_sent(record)
        and not record.is_meta
        and not record.is_compact_summary
        and not is_added(record)
        and not record.tool_results()
        and bool(record.text.strip())
    )


def prompt_indices(records: Sequence[Record]) -> list[int]:
    """Where each user-sense turn starts."""
    return [i for i, r in enumerate(records) if is_prompt(r)]


def step_starts(records: Sequence[Record]) -> list[int]:
    """Where each agent-sense turn starts: the first record of each API call (the records before the
    first call, i.e. the task, form turn 0 when there are any)."""
    starts = [call.first for call in api_calls(records)]
    if records and (not starts or starts[0] > 0):
        starts.insert(0, 0)
    return starts


@dataclass(frozen=True, slots=True)
class ApiMessage:
    """One API message as `normalize` would build it: ``role`` and the record indices ``[first, end)``."""

    role: str
    first: int
    end: int
    has_tool_result: bool
    has_tool_use: bool


def api_messages(records: Sequence[Record]) -> list[ApiMessage]:
    """Sent records grouped into API messages (consecutive user records merge; an assistant message is a
    run of records with one ``message.id``). Unsent records (progress, …) join the message before them."""
    out: list[list[Any]] = []
    for i, record in enumerate(records):
        if not is_sent(record):
            if out:
                out[-1][2] = i + 1
            continue
        role = "assistant" if record.kind == "assistant" else "user"
        last = out[-1] if out else None
        if last is not None and last[0] == role and (role == "user" or last[5] == record.message_id):
            last[2] = i + 1
            last[3] = last[3] or bool(record.tool_results())
            last[4] = last[4] or bool(record.tool_uses())
        else:
            out.append([role, i, i + 1, bool(record.tool_results()), bool(record.tool_uses()), record.message_id])
    if out:
        out[0][1] = 0
    return [ApiMessage(m[0], m[1], m[2], m[3], m[4]) for m in out]


def overhead(view: ContextView) -> int:
    """Tokens of the view beyond its records' rough counts (system prompt, tools, tokenizer ratio)."""
    return max(0, view.tokens - sum(view.rough))


def keep_newest(counts: Sequence[int], budget: int) -> int:
    """The first index of the longest suffix whose counts sum to at most ``budget``."""
    total = 0
    start = len(counts)
    for i in range(len(counts) - 1, -1, -1):
        if total + counts[i] > budget:
            break
        total += counts[i]
        start = i
    return start


def safe_cut(records: Sequence[Record], start: int) -> int:
    """The naive first kept index moved earlier to an API-safe one (tool pairs, split responses, and a
    kept tool loop opening with thinking), see `adjust_for_thinking`."""
    return adjust_for_thinking(records, start)


def shrinking_start(view: ContextView, start: int, limit: float) -> tuple[int, tuple[str, ...]]:
    """``start``, or ``len(records)`` (keep nothing verbatim) when the kept part would still reach
    ``limit`` tokens or nothing of the conversation would be dropped: an API-safe cut inside one long
    thinking tool loop can move back to the loop's start, and such a compaction would not shrink.
    Returns the index and the fallback taken (empty when none)."""
    records = view.records
    dropped_real = any(is_sent(r) and not is_added(r) for r in records[:start])
    if dropped_real and overhead(view) + sum(view.rough[start:]) < limit:
        return start, ()
    return len(records), ("safe cut does not shrink the context: nothing kept verbatim",)


def safe_head_end(records: Sequence[Record], end: int) -> int:
    """Extend a kept head ``records[:end]`` forward until no tool_use in it lacks its tool_result and it
    does not split a response (so a marker or summary can follow it)."""
    end = max(0, min(end, len(records)))
    while end < len(records):
        head = records[:end]
        uses = {i for r in head if r.kind == "assistant" for i in r.tool_use_ids()}
        results = {i for r in head if r.kind == "user" for i in r.tool_result_ids()}
        split = (
            end > 0
            and records[end].kind == "assistant"
            and records[end].message_id is not None
            and any(r.kind == "assistant" and r.message_id == records[end].message_id for r in head)
        )
        if not (uses - results) and not split:
            break
        end += 1
    return end


def splice(
    view: ContextView,
    start: int,
    *,
    kind: str,
    trigger: str,
    head_end: int = 0,
    added: Iterable[Record] = (),
    naive_start: int | None = None,
    summary: str | None = None,
    details: dict[str, Any] | None = None,
) -> Compaction:
    """``records[:head_end] + added + records[start:]``; everything in between is dropped."""
    records = view.records
    added = tuple(added)
    new = (*records[:head_end], *added, *records[start:])
    return Compaction(
        kind=kind,
        trigger=trigger,
        records=new,
        dropped=tuple(r.uuid for r in records[head_end:start]),
        added=added,
        start=start,
        naive_start=start if naive_start is None else naive_start,
        summary=summary,
        details=details or {},
    )


class WindowConfig(StrategyConfig):
    """Trigger and target of the token sliding window, as fractions of ``context_window``."""

    context_window: int = Field(200_000, gt=0)
    trigger_fraction: float = Field(0.8, gt=0, le=1, description="compact when the context reaches this share")
    keep_fraction: float = Field(0.5, gt=0, le=1, description="keep the newest records up to this share")

    @model_validator(mode="after")
    def _keep_below_trigger(self) -> WindowConfig:
        if self.keep_fraction >= self.trigger_fraction:
            raise ValueError(
                f"keep_fraction ({self.keep_fraction}) must be below trigger_fraction ({self.trigger_fraction})"
            )
        return self


class RecentWindowConfig(WindowConfig):
    marker: str = Field("[Earlier conversation removed to fit the context window.]", min_length=1)


def window_fires(view: ContextView, config: WindowConfig) -> bool:
    """Whether the context is at or above the window's trigger."""
    return view.tokens >= config.trigger_fraction * config.context_window


def window_start(view: ContextView, config: WindowConfig) -> int | None:
    """The naive first kept index, or None below the trigger."""
    if not window_fires(view, config):
        return None
    budget = int(config.keep_fraction * config.context_window) - overhead(view)
    return keep_newest(view.rough, max(0, budget))


@register
class RecentWindow(Strategy):
    """Token sliding window cut at API-safe points (peers.md "Implications": recent window baseline).

    Defaults (ours; the baseline has no upstream constants): at 80% of a 200k window keep the newest
    records up to 50% of it, cut moved earlier by `safe_cut`, a marker user message in front.
    """

    name = "recent-window"
    description = "Keep the newest records within 50% of the window once at 80%; cut only at API-safe points."
    source = "workbench (own design): the recent-window baseline with API-safe cuts (docs/peers.md, Implications)"
    Config = RecentWindowConfig
    config: RecentWindowConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        return guarded(state, view, window_fires(view, for_window(self.config, view)), self._compact)

    def _compact(self, view: ContextView) -> Compaction | None:
        naive = window_start(view, for_window(self.config, view))
        if naive is None:
            return None
        start = safe_cut(view.records, naive)
        if start <= 0 or start >= len(view.records):
            return None
        marker = user_note(self.config.marker, self.name, str(view.step))
        return splice(view, start, kind=self.name, trigger="tokens", added=(marker,), naive_start=naive)
