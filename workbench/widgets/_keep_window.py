"""The SM-compact keep window at one compaction point, as a plain value the widget only draws.

`SessionIndex.build` does the per-session work once (record list, ``claude-padded`` counts, API calls,
the extraction trigger's ``lastSummarizedMessageId`` before every call, prefix sums); `keep_window_model`
then answers one slider position in a few milliseconds: the naive start of
`workbench.strategies.keep_window.keep_window` (docs §2.4), the start after each of the two steps of
`workbench.request.invariants.adjust_to_api_invariants` (docs §2.5: tool pairs, then same-``message.id``
siblings) and *why* it moved, the window's tokens and text-block messages against the minimums, and the
API errors the naive and the adjusted cut would produce (`workbench.request.validate.validate` on
`workbench.studies.naive_cut.cut_request`, the API's own wording).

Indices in a `KeepWindowState` are into ``session.conversation()``. The message list of step ``s`` is
``records[offset:end]``: from the last compact boundary before the call (kept, as in
`workbench.studies.keep_window.keep_window_cuts`) up to the call's first record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import Any, Literal

from ..memory.trigger import ExtractionTrigger
from ..request.invariants import Move, explain_adjustment
from ..request.validate import Violation, original_thinking_blocks, validate
from ..strategies.keep_window import keep_window
from ..studies.naive_cut import cut_request
from ..tokens.context import token_count_with_estimation
from ..tokens.estimators import get_estimator
from ..transcript.model import Record, Session
from ..transcript.steps import ApiCall, api_calls

__all__ = ["KeepWindowState", "Move", "SessionIndex", "keep_window_model"]

Summarized = Literal["trigger", "unset"]


@dataclass(frozen=True)
class SessionIndex:
    """Everything `keep_window_model` needs that does not depend on the sliders, computed once."""

    session_id: str
    records: tuple[Record, ...]
    counts: tuple[int, ...]
    prefix_tokens: tuple[int, ...]
    prefix_text: tuple[int, ...]
    calls: tuple[ApiCall, ...]
    offsets: tuple[int, ...]
    summarized: tuple[int | None, ...]
    thinking: tuple[bool, ...]
    originals: dict[str, tuple[Mapping[str, Any], ...]] = field(repr=False)
    validation_cache: dict[tuple[int, int, int], tuple[Violation, ...]] = field(default_factory=dict, repr=False)
    #: The file the session was read from, when known (titles name it).
    source: str | None = None

    @classmethod
    def build(cls, session: Session) -> SessionIndex:
        """Index ``session``; ``summarized`` replays the extraction trigger as `keep_window_cuts` does.

        ``summarized[s]`` is the index (into the whole record list) of ``lastSummarizedMessageId`` before
        call ``s``; None when it is unset (sub-agents, or no tool-free extraction yet): the window then
        starts from the end. ``-1`` marks an id no longer in the message list (SM-compact falls back to a
        full compaction, docs §2.6 step 4).
        """
        records = session.conversation()
        counts = get_estimator("claude-padded").count_many(records)
        rough = get_estimator("claude-rough").count_many(records)
        calls = api_calls(records)
        trigger = None if session.is_subagent else ExtractionTrigger()
        offsets: list[int] = []
        summarized: list[int | None] = []
        thinking: list[bool] = []
        boundary = -1
        last_boundary = -1
        scanned = 0
        for call in calls:
            for i in range(scanned, call.first):
                if records[i].is_compact_boundary:
                    last_boundary = i
            scanned = call.first
            offset = max(last_boundary, 0)
            if offset != boundary and boundary != -1 and trigger is not None:
                trigger.after_compaction()
            boundary = offset
            offsets.append(offset)
            uuid = trigger.last_summarized_message_id if trigger is not None else None
            if uuid is None:
                summarized.append(None)
            else:
                summarized.append(next((i for i in range(offset, call.first) if records[i].uuid == uuid), -1))
            thinking.append(any(b.kind == "thinking" for i in call.indices for b in records[i].blocks))
            if trigger is not None:
                seen = [*records[offset : call.first], *(records[i] for i in call.indices)]
                seen_counts = [*rough[offset : call.first], *(rough[i] for i in call.indices)]
                trigger.observe(seen, tokens=token_count_with_estimation(seen, counts=seen_counts))
        return cls(
            session_id=session.id,
            records=tuple(records),
            counts=tuple(counts),
            prefix_tokens=tuple(accumulate(counts, initial=0)),
            prefix_text=tuple(accumulate((int(r.has_text_blocks) for r in records), initial=0)),
            calls=tuple(calls),
            offsets=tuple(offsets),
            summarized=tuple(summarized),
            thinking=tuple(thinking),
            originals=original_thinking_blocks(records),
            source=session.source,
        )

    @property
    def steps(self) -> int:
        return len(self.calls)

    def tokens(self, start: int, end: int) -> int:
        return self.prefix_tokens[end] - self.prefix_tokens[start]

    def text_messages(self, start: int, end: int) -> int:
        return self.prefix_text[end] - self.prefix_text[start]

    def violations(self, step: int, cut: int) -> tuple[Violation, ...]:
        """API errors of "summary + ``records[cut:end]``" for call ``step`` (cached per cut)."""
        key = (step, cut, self.calls[step].first)
        if key not in self.validation_cache:
            offset, end = self.offsets[step], self.calls[step].first
            request = cut_request(self.records[offset:end], cut - offset)
            self.validation_cache[key] = tuple(
                validate(request, thinking=self.thinking[step], original_thinking=self.originals)
            )
        return self.validation_cache[key]


@dataclass(frozen=True)
class KeepWindowState:
    """The keep window at one compaction point and one slider setting (indices into the record list).

    ``naive_start`` is `keep_window`'s window before the adjustment, ``pair_start`` after step 1 (tool
    pairs), ``start`` after step 2 (split responses) = `adjust_to_api_invariants`. ``tokens`` /
    ``text_messages`` are what the naive window ``[naive_start:end]`` holds (what the minimums are checked
    against), ``kept_tokens`` / ``kept_text_messages`` what the adjusted window holds. ``fallback`` is set
    when SM-compact would fall back to a full compaction instead (then there is no window).
    """

    session_id: str
    step: int
    steps: int
    offset: int
    end: int
    floor: int
    last_summarized: int | None
    min_tokens: int
    max_tokens: int
    min_text_block_messages: int
    naive_start: int
    pair_start: int
    start: int
    tokens: int
    text_messages: int
    kept_tokens: int
    kept_text_messages: int
    moves: tuple[Move, ...]
    split_message_ids: tuple[str, ...]
    thinking: bool
    naive_violations: tuple[Violation, ...]
    adjusted_violations: tuple[Violation, ...]
    fallback: str | None = None

    @property
    def moved(self) -> bool:
        return self.start != self.naive_start

    @property
    def meets_min_tokens(self) -> bool:
        return self.tokens >= self.min_tokens

    @property
    def meets_min_text(self) -> bool:
        return self.text_messages >= self.min_text_block_messages

    @property
    def hit_max(self) -> bool:
        return self.tokens >= self.max_tokens

    @property
    def reason(self) -> str:
        """Why the start is where it is, in words (what the view prints under the strip)."""
        if self.fallback:
            return f"no keep window: {self.fallback} (SM-compact falls back to a full compaction)"
        if not self.moved:
            return (
                "not moved: the naive window keeps the tool_use of every kept tool_result and splits no "
                "streamed response"
            )
        parts = []
        pairs = [m for m in self.moves if m.kind == "tool_pair"]
        splits = [m for m in self.moves if m.kind == "split_response"]
        if pairs:
            first = min(pairs, key=lambda m: m.dropped)
            more = f" (+{len(pairs) - 1} more pair{'s' if len(pairs) > 2 else ''})" if len(pairs) > 1 else ""
            parts.append(f"step 1 moved #{self.naive_start} → #{self.pair_start}: {first.describe()}{more}")
        if splits:
            first = min(splits, key=lambda m: m.dropped)
            more = f" (+{len(splits) - 1} more)" if len(splits) > 1 else ""
            parts.append(f"step 2 moved #{self.pair_start} → #{self.start}: {first.describe()}{more}")
        return "; ".join(parts)


def _split_ids(records: Sequence[Record], floor: int, cut: int, end: int) -> tuple[str, ...]:
    """``message.id``s of assistant records on both sides of ``cut`` within ``[floor, end)``."""
    if cut <= floor or cut >= end:
        return ()
    before = {r.message_id for r in records[floor:cut] if r.kind == "assistant" and r.message_id is not None}
    if not before:
        return ()
    after = {r.message_id for r in records[cut:end] if r.kind == "assistant" and r.message_id in before}
    return tuple(sorted(after))


def keep_window_model(
    session: Session | SessionIndex,
    step: int | None = None,
    *,
    min_tokens: int = 10_000,
    max_tokens: int = 40_000,
    min_text_block_messages: int = 5,
    summarized: Summarized = "trigger",
    validate_cuts: bool = True,
) -> KeepWindowState:
    """The keep window SM-compact would choose if it compacted before API call ``step``.

    Args:
        session: a session, or its `SessionIndex` (build it once when calling repeatedly).
        step: the API call before which the compaction runs (default: the last one).
        min_tokens: ``minTokens`` (docs §2.1).
        max_tokens: ``maxTokens``.
        min_text_block_messages: ``minTextBlockMessages``.
        summarized: ``"trigger"`` replays the extraction trigger for ``lastSummarizedMessageId`` (main
            sessions; docs §1.3), ``"unset"`` starts the window from the end (a resumed session).
        validate_cuts: also validate the naive and the adjusted cut (the slow part; cached per cut).

    Returns:
        The window and its explanation; raises ValueError for a step out of range.
    """
    index = session if isinstance(session, SessionIndex) else SessionIndex.build(session)
    if not index.calls:
        raise ValueError(f"session {index.session_id} has no API calls")
    if step is None:
        step = index.steps - 1
    if not 0 <= step < index.steps:
        raise ValueError(f"step must be in [0, {index.steps - 1}], got {step}")
    records = index.records
    offset, end = index.offsets[step], index.calls[step].first
    floor = offset + 1 if records[offset].is_compact_boundary else offset
    last = index.summarized[step] if summarized == "trigger" else None
    state = partial(
        KeepWindowState,
        session_id=index.session_id,
        step=step,
        steps=index.steps,
        offset=offset,
        end=end,
        floor=floor,
        last_summarized=last,
        min_tokens=min_tokens,
        max_tokens=max_tokens,
        min_text_block_messages=min_text_block_messages,
        thinking=index.thinking[step],
    )
    if last == -1:
        return state(
            naive_start=-1,
            pair_start=-1,
            start=-1,
            tokens=0,
            text_messages=0,
            kept_tokens=0,
            kept_text_messages=0,
            moves=(),
            split_message_ids=(),
            naive_violations=(),
            adjusted_violations=(),
            fallback="lastSummarizedMessageId is no longer in the message list",
        )
    messages = records[offset:end]
    relative = (end - 1 - offset) if last is None else last - offset
    window = keep_window(
        messages,
        relative,
        min_tokens=min_tokens,
        min_text_block_messages=min_text_block_messages,
        max_tokens=max_tokens,
        counts=index.counts[offset:end],
    )
    explained = explain_adjustment(messages, window.naive_start)
    pair_start, start, moves = explained.pair_start, explained.start, explained.moves
    naive = offset + window.naive_start
    adjusted = offset + start
    shifted = tuple(Move(m.kind, m.key, m.dropped + offset, m.kept + offset) for m in moves)
    naive_violations: tuple[Violation, ...] = ()
    adjusted_violations: tuple[Violation, ...] = ()
    if validate_cuts:
        naive_violations = index.violations(step, naive)
        adjusted_violations = naive_violations if adjusted == naive else index.violations(step, adjusted)
    return state(
        naive_start=naive,
        pair_start=offset + pair_start,
        start=adjusted,
        tokens=window.tokens,
        text_messages=window.text_messages,
        kept_tokens=index.tokens(adjusted, end),
        kept_text_messages=index.text_messages(adjusted, end),
        moves=shifted,
        split_message_ids=_split_ids(records, floor, naive, end),
        naive_violations=naive_violations,
        adjusted_violations=adjusted_violations,
    )
