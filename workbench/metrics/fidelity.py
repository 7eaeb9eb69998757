"""Fidelity (offline, deterministic): how much of what a compaction dropped survived, and of what mattered.

**Facts.** `extract_facts` pulls string facts out of records, each keeping the uuids of the records it
came from (one fact seen in several records keeps them all):

========== ============================================================== ==================================
kind       where from                                                     key (what must survive)
========== ============================================================== ==================================
path       tool_use ``file_path``/``path``/``notebook_path``; path-like   last two path components
           strings (with an extension) in any text                        (``spotter/annotation.ex``)
symbol     definitions (``def``/``class``/``function``/``defmodule``…)   the identifier
           in any text; backticked identifiers and snake/camel-case
           names in assistant and user prose; identifier-like Grep
           patterns
command    each part of a Bash command's first line (split on ``&&``,    first three words
           ``;``, ``|``), ``cd``/``echo`` skipped
error      the first line of an ``is_error`` tool result and up to three  the line, whitespace-collapsed,
           lines with error/exception/failed/traceback per result         line-number gutter stripped, ≤ 60
                                                                          chars
number     numbers with a unit (ms, s, MB, %, tests, passed, lines…)     number + unit, lower case, no space
identifier commit SHAs, UUIDs, URLs, ``#123`` references                  the string
directive  each user-typed message (not tool results, not meta, tags     its content words (≥ 4 letters, not
/correction such as ``<system-reminder>`` removed); ``correction`` when   stop words, first 30)
           it says no/don't/instead/wrong/stop/never/actually…
========== ============================================================== ==================================

**Presence.** A fact is *present* in a text when the same extractors applied to that text yield its
key (paths match on any ``/``-suffix, so ``/home/u/lib/spotter/annotation.ex`` contains
``spotter/annotation.ex``); commands and errors match as whitespace-collapsed substrings; directives
when ≥ 60 % of their content words occur in the text. Form is not penalised (Claude's
paraphrasing summaries would lose recall for writing a name differently): a path is also present when its
basename (with an extension) is, and an identifier when the text has it in another case or separator
style (``SessionLive``, ``session_live`` and ``session live`` are one identifier, compared without case
or separators, at least 6 characters). On the open Claude Code corpus (``claude-code`` and
``claude-code-more``) this raised Claude's recorded summaries' pooled ``needed_recall`` from 0.566 to
0.602 (10 compactions) and the offline summariser's (``full-compact``, 40 sessions) from 0.689 to 0.725.

**What it measures.** Survival of *references* (names, paths, commands), not of content: a file's path
in the summary does not give the agent the file. Validated against what agents re-read after real
compactions (`workbench.metrics.validation`, docs/metrics.md, "Which fidelity score to trust"), a path kept in
Claude's summary went with *more* re-reads, not fewer; for what a strategy makes the agent re-acquire use
`workbench.metrics.expected_recovery`.

**The compacted context at an event.** Events are taken in step order. At an event before call *s* the
history is the records before call *s*; the event's *newly dropped* records are its ``dropped_uuids``
not dropped by an earlier event (for ``recorded-compact``: everything before the recording's
``compact_boundary``); the compacted context is the event's summary text (the last non-empty summary
when the event has none) plus every history record not dropped so far (for a recorded compaction this
includes the summary message and re-attached files between the boundary and the next call). A record a
compaction only *modified* (microcompact clears or truncates tool results) counts as dropped: what
remains of it is not credited.

**Metrics** (per event; per session pooled over its events):

* ``dropped_recall`` = |facts of newly dropped records present in the compacted context| / |facts of
  newly dropped records|.
* ``needed_recall`` (headline) = the same restricted to *needed* facts: facts whose key the recorded
  future (assistant records from call *s* on: text, thinking, tool inputs) uses again; directives and
  corrections are standing instructions and always count as needed.
* Where nothing was dropped (no events, or no facts in the dropped records) both are 1.0 by
  definition; ``dropped_facts``/``needed_facts`` give the denominators so such rows can be filtered.
* ``summary_tokens`` = rough tokens (chars/4) of the summary text; ``summary_template`` and
  ``section_coverage`` = share of the closest template's section headings found in it: the 9
  sections of Claude Code's compact prompt (docs §5.2) or the 10 of the session-memory template
  (docs §1.1).

Worked example: records r1 (user: "Please fix the tokenizer bug reported yesterday in
src/app/parser.py"), r2 (tool_use Bash
``pytest tests/test_parser.py``), r3 (tool_result "FAILED tests/test_parser.py::test_x - ValueError:
bad"), then call *s* whose assistant text edits ``app/parser.py``. A compaction drops r1–r3 and writes
the summary "Fixing src/app/parser.py". Facts of the dropped records: path ``app/parser.py`` (r1),
path ``tests/test_parser.py`` (r2, r3), command ``pytest tests/test_parser.py`` (r2), error
``FAILED tests/test_parser.py::test_x - ValueError: bad`` (r3), directive (r1): 5 facts, of which
only ``app/parser.py`` is in the summary (the directive's content words tokenizer, reported,
yesterday, parser: 1 of 4 present, below 60 %) → ``dropped_recall`` = 1/5 = 0.2. Needed: ``app/parser.py``
(used by the future) and the directive (always) → ``needed_recall`` = 1/2 = 0.5.

**Reference.** `reference_fidelity` scores Claude's own compaction summaries the same way: the
``isCompactSummary`` message of each recorded compaction, and the raw output of the matching
``agent-acompact-*`` transcript, against the records before the recording's ``compact_boundary``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import pandas as pd

from ..memory.template import SECTION_HEADINGS
from ..replay.engine import strip_recorded_compactions
from ..summarize.prompt import SUMMARY_SECTIONS
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from ._common import KEYS, as_list, ensure_keys, session_map, share
from .facts import DIRECTIVE_KINDS, Fact, FactIndex, extract_facts, render_record

__all__ = [
    "COMPACT_SECTIONS",
    "MEMORY_SECTIONS",
    "SESSION_COLUMNS",
    "Fact",
    "FactIndex",
    "extract_facts",
    "fidelity",
    "fidelity_events",
    "fidelity_sessions",
    "reference_fidelity",
    "reference_rows",
    "score_compaction",
    "section_coverage",
]

#: Claude Code's compact-summary sections (docs §5.2) and session-memory sections (docs §1.1).
COMPACT_SECTIONS = SUMMARY_SECTIONS
MEMORY_SECTIONS = tuple(heading.removeprefix("# ") for heading in SECTION_HEADINGS)


def section_coverage(text: str | None) -> dict[str, Any]:
    """Which template a summary follows and the share of its section headings present."""
    text = text or ""
    lowered = text.lower()
    best = ("none", 0.0, 0)
    for name, sections in (("compact", COMPACT_SECTIONS), ("session-memory", MEMORY_SECTIONS)):
        found = sum(section.lower() in lowered for section in sections)
        share = found / len(sections)
        if share > best[1]:
            best = (name, share, found)
    return {
        "summary_chars": len(text),
        "summary_tokens": round(len(text) / 4),
        "summary_template": best[0],
        "section_coverage": best[1],
        "sections_found": best[2],
    }


def score_compaction(facts: Sequence[Fact], dropped: set[str], context: FactIndex, future: FactIndex) -> dict[str, Any]:
    """Counts and recalls for one compaction: ``dropped`` uuids, the compacted ``context``, the ``future``."""
    lost = [f for f in facts if f.uuids & dropped]
    present = [f in context for f in lost]
    needed = [f.kind in DIRECTIVE_KINDS or f in future for f in lost]
    n_dropped = len(lost)
    n_kept = sum(present)
    n_needed = sum(needed)
    n_needed_kept = sum(p and n for p, n in zip(present, needed, strict=True))
    by_kind: dict[str, list[int]] = {}
    for fact, p, n in zip(lost, present, needed, strict=True):
        counts = by_kind.setdefault(fact.kind, [0, 0])
        if n:
            counts[0] += 1
            counts[1] += int(p)
    return {
        "dropped_records": len(dropped),
        "dropped_facts": n_dropped,
        "dropped_facts_kept": n_kept,
        "needed_facts": n_needed,
        "needed_facts_kept": n_needed_kept,
        "dropped_recall": n_kept / n_dropped if n_dropped else 1.0,
        "needed_recall": n_needed_kept / n_needed if n_needed else 1.0,
        "needed_by_kind": ",".join(f"{k}:{v[1]}/{v[0]}" for k, v in sorted(by_kind.items()) if v[0]),
    }


class _Indexes:
    """Per-record fact indexes and future indexes of one record list, computed once each."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.records = records
        self._own: dict[int, tuple[Record, FactIndex]] = {}  # by id, with the record: no id is reused
        self._future: dict[int, FactIndex] = {}

    def record(self, record: Record) -> FactIndex:
        entry = self._own.get(id(record))
        if entry is None:  # the entry holds the record, so its address is not another record's while we live
            entry = self._own[id(record)] = (record, FactIndex([render_record(record)]))
        return entry[1]

    def context(self, summary: str | None, kept: Sequence[Record]) -> FactIndex:
        return FactIndex.combine([_text_index(summary or ""), *(self.record(r) for r in kept)])

    def future(self, start: int) -> FactIndex:
        """The index of the assistant records from ``start`` on: the records' own indexes combined, and the
        records past the nearest later start already asked for taken from its index (each record's text
        is read once, however many compactions a session's replays make)."""
        found = self._future.get(start)
        if found is None:
            end = min((s for s in self._future if s > start), default=len(self.records))
            parts = [self.record(r) for r in self.records[start:end] if r.kind == "assistant"]
            if end < len(self.records):
                parts.append(self._future[end])
            found = self._future[start] = FactIndex.combine(parts)
        return found


@lru_cache(maxsize=1024)
def _text_index(text: str) -> FactIndex:
    """The index of one summary text: the configs of a tune that compact at the same point write the same
    summary, so it is indexed once (a `FactIndex` is not changed after it is built)."""
    return FactIndex([text])


def _session_facts(records: Sequence[Record]) -> list[Fact]:
    return extract_facts(records)


def fidelity_events(session: Session, events: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per compaction event of ``session`` (any number of strategies/configs in ``events``).

    Recomputes the dropped and kept record sets from the events' uuids (see the module docstring).
    """
    frame = ensure_keys(pd.DataFrame(list(events)) if not isinstance(events, pd.DataFrame) else events)
    frame = frame[frame["session_id"] == session.id]
    rows: list[dict[str, Any]] = []
    if frame.empty:
        return pd.DataFrame(rows)
    original = session.conversation()
    stripped, _ = strip_recorded_compactions(original)
    cache: dict[int, tuple[list[Record], list[Fact], list[Any], list[int], _Indexes]] = {}

    def prepared(records: list[Record]) -> tuple[list[Record], list[Fact], list[Any], list[int], _Indexes]:
        key = id(records)
        if key not in cache:
            boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
            cache[key] = (records, _session_facts(records), api_calls(records), boundaries, _Indexes(records))
        return cache[key]

    for keys, group in frame.groupby(KEYS, sort=True):
        group = group.sort_values("step", kind="stable")
        recorded = (group["kind"] == "recorded-compact").any()
        records, facts, calls, boundaries, indexes = prepared(original if recorded else stripped)
        dropped_so_far: set[str] = set()
        summary: str | None = None
        recorded_seen = 0
        for event_no, event in enumerate(group.to_dict("records")):
            step = int(event["step"])
            point = calls[step].first if step < len(calls) else len(records)
            history = records[:point]
            if event["kind"] == "recorded-compact":
                cut = boundaries[recorded_seen] if recorded_seen < len(boundaries) else point
                recorded_seen += 1
                dropped = {r.uuid for r in records[:cut] if r.uuid is not None}
            else:
                dropped = {u for u in as_list(event.get("dropped_uuids")) if u is not None}
            history_uuids = {r.uuid for r in history}
            new = (dropped & history_uuids) - dropped_so_far
            dropped_so_far |= new
            if event["kind"] == "recorded-compact":
                dropped_so_far |= dropped & history_uuids
            text = event.get("summary")
            if isinstance(text, str) and text:
                summary = text
            kept = [r for r in history if r.uuid is None or r.uuid not in dropped_so_far]
            context = indexes.context(summary, kept)
            score = score_compaction(facts, new, context, indexes.future(point))
            rows.append(
                {
                    **dict(zip(KEYS, keys, strict=True)),
                    "event": event_no,
                    "kind": event["kind"],
                    "step": step,
                    "kept_records": len(kept),
                    **score,
                    **section_coverage(event.get("summary") if isinstance(event.get("summary"), str) else None),
                }
            )
    return pd.DataFrame(rows)


#: The per-session fidelity figures `fidelity_sessions` returns (besides the keys and ``compactions``).
SESSION_COLUMNS = (
    "dropped_facts",
    "dropped_facts_kept",
    "needed_facts",
    "needed_facts_kept",
    "dropped_recall",
    "needed_recall",
    "summary_tokens",
    "section_coverage",
)


def fidelity_sessions(per_event: pd.DataFrame, steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per session × strategy × config_hash: recalls pooled over events (1.0 where nothing was dropped).

    ``steps`` (optional) lists the session × strategy cells that had no event at all, so they appear
    with 1.0 too.
    """
    columns = [*KEYS, "compactions", *SESSION_COLUMNS]
    if per_event is None or per_event.empty:
        out = pd.DataFrame(columns=columns)
    else:
        out = (
            per_event.groupby(KEYS, sort=True)
            .agg(
                compactions=("event", "size"),
                dropped_facts=("dropped_facts", "sum"),
                dropped_facts_kept=("dropped_facts_kept", "sum"),
                needed_facts=("needed_facts", "sum"),
                needed_facts_kept=("needed_facts_kept", "sum"),
                summary_tokens=("summary_tokens", "mean"),
                section_coverage=("section_coverage", "mean"),
            )
            .reset_index()
        )
        out["dropped_recall"] = share(out["dropped_facts_kept"], out["dropped_facts"], 1.0)
        out["needed_recall"] = share(out["needed_facts_kept"], out["needed_facts"], 1.0)
        out = out[columns]
    if steps is not None and len(steps):
        cells = ensure_keys(steps)[KEYS].drop_duplicates()
        out = cells.merge(out, on=KEYS, how="left") if len(out) else cells.reindex(columns=columns)
        for column in ("compactions", "dropped_facts", "dropped_facts_kept", "needed_facts", "needed_facts_kept"):
            out[column] = out[column].fillna(0).astype(int)
        for column in ("dropped_recall", "needed_recall"):
            out[column] = out[column].astype(float).fillna(1.0)
    return out.reset_index(drop=True)


def fidelity(sessions: Iterable[Session] | Mapping[str, Session], events: pd.DataFrame) -> pd.DataFrame:
    """`fidelity_events` over every session in ``sessions`` that has events."""
    by_id = session_map(sessions)
    frames = [
        fidelity_events(by_id[sid], events[events["session_id"] == sid])
        for sid in sorted(set(events.get("session_id", pd.Series(dtype=object))))
        if sid in by_id
    ]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _acompact_output(session: Session) -> str:
    texts = [r.text for r in session.conversation() if r.kind == "assistant" and r.text]
    return "\n".join(texts)


def reference_fidelity(sessions: Iterable[Session]) -> pd.DataFrame:
    """Claude's own compactions scored like a strategy's (one row per recorded compaction × source).

    ``source`` is ``compact-summary`` (the ``isCompactSummary`` message that replaced the history) or
    ``acompact-transcript`` (the raw ``<analysis>``+``<summary>`` output of the ``agent-acompact-*``
    transcript whose parent is the session; matched to the session's compactions in order).
    """
    return pd.DataFrame(reference_rows(sessions))


def reference_rows(sessions: Iterable[Session]) -> list[dict[str, Any]]:
    """`reference_fidelity`'s rows: those of each main session follow each other, in ``sessions`` order.
    A session's ``agent-acompact-*`` transcripts must be among ``sessions`` (its session group will do)."""
    items = list(sessions)
    acompact: dict[str, list[Session]] = {}
    for s in items:
        if s.agent_id and s.agent_id.startswith("acompact") and s.parent_session_id:
            acompact.setdefault(s.parent_session_id, []).append(s)
    rows = []
    for session in items:
        if session.is_subagent:
            continue
        records = session.conversation()
        boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
        if not boundaries:
            continue
        facts = _session_facts(records)
        calls = api_calls(records)
        children = sorted(
            acompact.get(session.session_id or session.id, []),
            key=lambda s: min((r.timestamp or "" for r in s.records), default=""),
        )
        indexes = _Indexes(records)
        previous = 0
        for number, cut in enumerate(boundaries):
            point = next((c.first for c in calls if c.first > cut), len(records))
            dropped = {r.uuid for r in records[previous:cut] if r.uuid is not None}
            between = records[cut + 1 : point]
            summary = next((r.text for r in between if r.is_compact_summary), "")
            others = [render_record(r) for r in between if not r.is_compact_summary]
            future = indexes.future(point)
            candidates = [("compact-summary", summary, session.id)]
            if number < len(children):
                candidates.append(("acompact-transcript", _acompact_output(children[number]), children[number].id))
            for source, text, origin in candidates:
                context = FactIndex([text, *others])
                rows.append(
                    {
                        "session_id": session.id,
                        "strategy": "claude-recorded",
                        "config_hash": source,
                        "source": source,
                        "origin": origin,
                        "event": number,
                        "step": next((c.step for c in calls if c.first > cut), len(calls)),
                        **score_compaction(facts, dropped, context, future),
                        **section_coverage(text),
                    }
                )
            previous = cut
    return rows
