"""`CutOracle`: the rule sets of the requests "summary + ``records[c:end]``" of one record list, from
tables built once per session, for the near-linear naive-cut study (`workbench.studies.cuts`).

The session is split into *chunks* at clean points: an assistant record that starts a new response right
after a user message, with no ``message.id`` and no tool id occurring on both sides. Normalising,
repairing and validating the concatenation of chunks then equals doing it per chunk (no user merge,
sibling walk, orphan-thinking filter, id de-duplication or pairing rule reaches across a clean point, and
every chunk but the last ends with a user message, so none of the "final message" passes applies to it;
each chunk is checked to start with an assistant message after normalising, else its clean point is
dropped). A cut's request is then its *head* (summary + the records up to the next clean point,
normalised directly), whole chunks (their rule sets and repair counts come from prefix tables) and a
partial last chunk for requests that end before the session does. The two rules that depend on the
request's end, the thinking rule (the walk back over the trailing tool loop, with a jump table over the
chunks, `_Tail`) and ``thinking_modified`` (the latest assistant message), are evaluated on that
decomposition (`CutOracle._combine`); `CutEval` is the answer.

A re-derivation of `normalize`, `repair` and `validate` (unchanged); ``tests/studies/test_cuts.py``
checks it equal to them cut by cut. Sessions without ``message.id``s have no clean points (one chunk):
still correct, not faster.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..request.invariants import SUMMARY_UUID, summary_record
from ..request.normalize import ApiMessage, Request, is_sent, normalize
from ..request.repair import repair
from ..request.validate import RULES, validate
from ..transcript.model import Block, Record

__all__ = ["MODIFIED_RULE", "THINKING_RULE", "CutEval", "CutOracle"]

THINKING_RULE = "final_assistant_missing_thinking"
MODIFIED_RULE = "thinking_modified"
_FIRST = "first_message_not_user"
_THINKING = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True)
class CutEval:
    """What `validate` says about one request: its rules without the two thinking rules (``base``),
    the index of the message the thinking rule flags with thinking on (``thinking_at``, None when it
    passes), whether ``thinking_modified`` fires (``modified``), and whether the summary stands alone
    as the first message (``summary_first``)."""

    base: frozenset[str]
    thinking_at: int | None
    modified: bool
    summary_first: bool

    def rules(self, *, thinking: bool, originals: bool) -> frozenset[str]:
        """The rule set of ``validate(request, thinking=thinking, original_thinking=…)``."""
        extra = set()
        if thinking and self.thinking_at is not None:
            extra.add(THINKING_RULE)
        if originals and self.modified:
            extra.add(MODIFIED_RULE)
        return self.base | extra if extra else self.base


def _rules(messages: Sequence[ApiMessage], *, drop_first: bool = False) -> frozenset[str]:
    rules = {v.rule for v in validate(Request(tuple(messages)))}
    if drop_first:
        rules.discard(_FIRST)
    return frozenset(rules)


def _blank(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _tool_results_only(message: ApiMessage) -> bool:
    content = message.content
    return message.role == "user" and bool(content) and all(b.get("type") == "tool_result" for b in content)


def _flags(message: ApiMessage) -> bool:
    """Whether the thinking rule flags ``message`` as the loop's final assistant message."""
    m = next((k for k, b in enumerate(message.content) if not _blank(b)), None)
    return m is not None and message.content[m].get("type") not in _THINKING


@dataclass
class _Tail:
    """The chunks' messages laid end to end, with the tables the thinking walk needs."""

    messages: list[ApiMessage]
    starts: list[int]  # chunk k starts at starts[k]; starts[K + 1] == len(messages)
    stop: list[int]  # for an assistant at q: the lowest position the walk back reaches from q
    last_assistant: list[int]  # largest assistant position <= q (-1 when none)

    @classmethod
    def of(cls, chunks: Sequence[Sequence[ApiMessage]]) -> _Tail:
        messages: list[ApiMessage] = []
        starts = [0]
        for chunk in chunks:
            messages.extend(chunk)
            starts.append(len(messages))
        stop = list(range(len(messages)))
        last = []
        previous = -1
        for q, message in enumerate(messages):
            if message.role == "assistant":
                previous = q
                if q >= 2 and _tool_results_only(messages[q - 1]) and messages[q - 2].role == "assistant":
                    stop[q] = stop[q - 2]
            last.append(previous)
        return cls(messages, starts, stop, last)


class CutOracle:
    """The requests "summary + ``records[c:end]``" of one record list, evaluated fast (module docstring).

    Args:
        records: the session's conversation (the study's record list).
        originals: `original_thinking_blocks` of the session (for ``thinking_modified``).
    """

    def __init__(self, records: Sequence[Record], originals: Mapping[str, Any] | None = None) -> None:
        self.records = records
        self.n = len(records)
        self.originals = originals or {}
        self._summary = summary_record()
        self._idless()
        self.bounds = self._chunk_bounds()
        chunks = [normalize(records[b:e]).messages for b, e in zip(self.bounds[1:], self.bounds[2:], strict=False)]
        repaired = [repair(Request(tuple(c))) for c in chunks]
        self._plain = _Tail.of(chunks)
        self._repaired = _Tail.of([r.messages for r, _ in repaired])
        self._plain_rules = self._prefix([_rules(c, drop_first=True) for c in chunks])
        self._repaired_rules = self._prefix([_rules(r.messages, drop_first=True) for r, _ in repaired])
        self._repairs = [0]
        for _, repairs in repaired:
            self._repairs.append(self._repairs[-1] + len(repairs))
        self._memo: dict[tuple[int, int, bool], tuple[CutEval, int]] = {}

    # -- chunks ----------------------------------------------------------------------------------

    def _chunk_bounds(self) -> list[int]:
        """``[0, e_1, …, e_K, n]``: the clean points (module docstring), verified after normalising."""
        records, n = self.records, self.n
        sent = [is_sent(r) for r in records]
        where: dict[tuple[str, Any], list[int]] = {}
        for i, record in enumerate(records):
            if not sent[i]:
                continue
            keys: list[tuple[str, Any]] = []
            if record.kind == "assistant":
                if record.message_id is not None:  # id-less records join nothing (see _idless)
                    keys.append(("message", record.message_id))
                keys += [("tool", b.raw.get("id")) for b in record.blocks if b.kind == "tool_use"]
            else:
                results = [b.raw for b in record.blocks if b.raw.get("type") == "tool_result"]
                keys += [("tool", raw.get("tool_use_id")) for raw in results]
            for key in keys:
                seen = where.setdefault(key, [i, i])
                seen[1] = i
        blocked = [0] * (n + 2)
        for first, last in where.values():
            if first < last:
                blocked[first + 1] += 1
                blocked[last + 1] -= 1
        candidates, running, after_user = [], 0, False
        for e in range(n):
            running += blocked[e]
            if sent[e] and records[e].kind == "assistant" and after_user and running == 0:
                candidates.append(e)
            if sent[e]:
                after_user = records[e].kind != "assistant"
        bounds = [0, *candidates, n]
        thinking, content = self._idless_thinking, self._idless_content
        while True:  # drop clean points whose chunk does not start with an assistant message, or is
            bad = set()  # not self-sufficient about id-less messages (see `_idless`)
            for k in range(1, len(bounds) - 1):
                b, e = bounds[k], bounds[k + 1]
                lonely = thinking[e] - thinking[b] and not content[e] - content[b]
                if lonely or not (m := normalize(records[b:e]).messages) or m[0].role != "assistant":
                    bad.add(k)
            if not bad:
                return [0, *bounds]  # bounds[k + 1] is chunk k's start (chunk 0 is never a whole tail chunk)
            bounds = [b for k, b in enumerate(bounds) if k not in bad]

    def _idless(self) -> None:
        """Prefix counts of sent id-less assistant records that are thinking-only / have other content.

        A missing ``message.id`` joins nothing (no sibling walk), but the orphan-thinking filter drops an
        id-less thinking-only message only when *no* id-less assistant message of the request has other
        content. So every chunk with an id-less thinking-only record must hold such content itself
        (else its clean point is dropped), and a head or partial chunk without it is normalised with a
        stand-in id-less text message when the rest of its request has one (`_normalize_part`)."""
        thinking, content = [0], [0]
        for record in self.records:
            idless = record.kind == "assistant" and record.message_id is None and is_sent(record)
            types = ["tool_use" if b.kind == "tool_use" else b.raw.get("type") for b in record.blocks]
            thinking.append(thinking[-1] + bool(idless and types and all(t in _THINKING for t in types)))
            content.append(content[-1] + bool(idless and any(t not in _THINKING for t in types)))
        self._idless_thinking, self._idless_content = thinking, content

    def _normalize_part(self, start: int, end: int, *, head: bool, others: bool) -> list[ApiMessage]:
        """``records[start:end]`` normalised as part of a longer request (the summary first when
        ``head``); ``others``: whether the rest of that request has id-less assistant content."""
        records = list(self.records[start:end])
        lonely = (
            others
            and self._idless_thinking[end] - self._idless_thinking[start]
            and not self._idless_content[end] - self._idless_content[start]
        )
        if head:
            out = list(normalize([self._summary, *records, *((_STAND_IN,) if lonely else ())]).messages)
            return out[:-1] if lonely else out
        out = list(normalize([*((_STAND_IN,) if lonely else ()), *records]).messages)
        return out[1:] if lonely else out

    @staticmethod
    def _prefix(per_chunk: Sequence[frozenset[str]]) -> dict[str, list[int]]:
        """Rule → how many of the first k chunks break it (index k)."""
        out = {}
        for name in RULES:
            counts = [0]
            for rules in per_chunk:
                counts.append(counts[-1] + (name in rules))
            out[name] = counts
        return out

    def _chunk_of(self, index: int) -> int:
        """The chunk holding record ``index`` (chunk k is ``records[bounds[k+1]:bounds[k+2]]``)."""
        return bisect.bisect_right(self.bounds, index, lo=1) - 2

    # -- evaluation ------------------------------------------------------------------------------

    def evaluate(self, cut: int, end: int | None = None, *, repaired: bool = False) -> tuple[CutEval, int]:
        """``(CutEval, repairs)`` of "summary + ``records[cut:end]``", as cut or after `repair`
        (``repairs``: how many changes the repair made; 0 for the request as cut)."""
        end = self.n if end is None else end
        key = (cut, end, repaired)
        if key not in self._memo:
            self._memo[key] = self._evaluate(cut, end, repaired)
        return self._memo[key]

    def _direct(self, cut: int, end: int, repaired: bool) -> tuple[CutEval, int]:
        head = list(normalize([self._summary, *self.records[cut:end]]).messages)
        count = 0
        if repaired:
            request, repairs = repair(Request(tuple(head)))
            head, count = list(request.messages), len(repairs)
        return self._combine(head, None, 0, 0, [], frozenset(), repaired), count

    def _evaluate(self, cut: int, end: int, repaired: bool) -> tuple[CutEval, int]:
        if cut >= end or cut <= 0:
            return self._direct(cut, end, repaired)
        k = self._chunk_of(cut)
        head_end = self.bounds[k + 2]
        if end <= head_end:
            return self._direct(cut, end, repaired)
        j = self._chunk_of(end - 1)  # the chunk holding the request's last record
        whole_to = j + 1 if end == self.bounds[j + 2] else j  # chunks k+1 .. whole_to-1 are whole
        content = self._idless_content
        partial_start = self.bounds[whole_to + 1] if whole_to == j else end
        head = self._normalize_part(cut, head_end, head=True, others=content[end] - content[head_end] > 0)
        partial: list[ApiMessage] = []
        if whole_to == j:
            before = content[partial_start] - content[cut] > 0
            partial = self._normalize_part(partial_start, end, head=False, others=before)
            if partial and partial[0].role != "assistant":
                return self._direct(cut, end, repaired)
        if not head or head[-1].role != "user":
            return self._direct(cut, end, repaired)
        count = 0
        if repaired:
            request, repairs = repair(Request(tuple(head)))
            head, count = list(request.messages), count + len(repairs)
            if partial:
                request, repairs = repair(Request(tuple(partial)))
                partial, count = list(request.messages), count + len(repairs)
            count += self._repairs[whole_to] - self._repairs[k + 1]
        tail = self._repaired if repaired else self._plain
        table = self._repaired_rules if repaired else self._plain_rules
        middle = frozenset(name for name, counts in table.items() if counts[whole_to] - counts[k + 1] > 0)
        return self._combine(head, tail, tail.starts[k + 1], tail.starts[whole_to], partial, middle, repaired), count

    def _combine(
        self,
        head: list[ApiMessage],
        tail: _Tail | None,
        ts: int,
        te: int,
        partial: list[ApiMessage],
        middle: frozenset[str],
        repaired: bool,
    ) -> CutEval:
        """Rules of ``head ++ tail.messages[ts:te] ++ partial`` (module docstring)."""
        base = set(_rules(head)) | middle
        if partial:
            base |= _rules(partial, drop_first=True)
        h, t = len(head), te - ts
        size = h + t + len(partial)
        seg = tail.messages if tail is not None else []

        def at(i: int) -> ApiMessage:
            if i < h:
                return head[i]
            if i < h + t:
                return seg[ts + i - h]
            return partial[i - h - t]

        thinking_at = None
        if size and _tool_results_only(at(size - 1)):
            n, first = size - 2, None
            while n >= 0 and at(n).role == "assistant":
                first = n
                if tail is not None and h < n < h + t:  # jump over the whole chunks
                    low = tail.stop[ts + n - h]
                    if low > ts:  # the walk ends inside them, where it ends in the whole session
                        first = h + low - ts
                        break
                    # it reaches the first whole chunk's opening response (a chunk opens with an
                    # assistant message, so no step of two can jump over it) and goes on in the head
                    n = first = h
                if n - 1 >= 0 and _tool_results_only(at(n - 1)):
                    n -= 2
                    continue
                break
            if first is not None and _flags(at(first)):
                thinking_at = first
        modified = False
        if self.originals:
            latest = next((m for m in reversed(partial) if m.role == "assistant"), None)
            if latest is None and t:
                q = tail.last_assistant[te - 1] if tail is not None else -1
                latest = seg[q] if q >= ts else None
            if latest is None:
                latest = next((m for m in reversed(head) if m.role == "assistant"), None)
            if latest is not None:
                found = validate(Request((latest,)), original_thinking=self.originals)
                modified = any(v.rule == MODIFIED_RULE for v in found)
        summary_first = bool(head) and head[0].record_uuids == (SUMMARY_UUID,)
        return CutEval(frozenset(base), thinking_at, modified, summary_first)


#: An id-less assistant text message: stands in for the rest of a request (see `CutOracle._idless`).
_STAND_IN = Record(kind="assistant", role="assistant", blocks=(Block.text_block("stand-in"),), has_content=True)
