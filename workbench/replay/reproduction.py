"""Where Claude Code really compacted, and whether the version table reproduces it.

Every recorded compaction of a Claude Code session (a ``compact_boundary`` line) is matched with what the
replay does on the same session with the recorded compactions stripped:

* ``full-compact --set summarizer=recorded`` (Claude Code's full compaction at the recorded version's
  threshold, with Claude's own summaries, so the context after each compaction is the recorded one) for
  every recorded compaction, first and later;
* ``claude-code`` (the whole pipeline of that version) for the first automatic one of each session: after
  it, the context is the pipeline's own and no longer the recording's.

A compaction is *reproduced* when ours fires before the same API call as the recorded one or before the
next (``0 <= delta <= 1`` calls). The rows name the version, the model, the table row and threshold used,
``preTokens``, and from 2.1.114 ``postTokens`` beside our size after the compaction.

Every recorded microcompact (a ``microcompact_boundary`` line, 2.1.12–2.1.19) is matched the same way with
the legacy microcompact of the ``claude-code`` replay (`workbench.strategies.microcompact.legacy_microcompact`):
the call it fires before and its ``tokensSaved`` against the recorded one, and whether the version table has
the version run it at all.

Compaction-agent transcripts (``query_source`` ``compact`` / ``session_memory``; 2.1.74–2.1.81 wrote them
starting with a copy of the previous boundary and summary) hold no compaction of their own and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..strategies import create
from ..strategies.base import Compaction, ContextView, Strategy
from ..strategies.triggers import AutoCompactTrigger, for_version
from ..strategies.versions import version_constants
from ..transcript.model import Session
from ..transcript.steps import api_calls
from .engine import replay_session

__all__ = [
    "REPRODUCED",
    "MicrocompactReproduction",
    "RecordedCompaction",
    "RecordedMicrocompact",
    "Reproduction",
    "microcompact_reproduction",
    "recorded_compactions",
    "recorded_microcompacts",
    "reproduce",
    "reproduce_microcompacts",
    "reproduction",
    "summary_by_row",
]

#: How many calls late a compaction may fire and still count as reproduced.
REPRODUCED = range(0, 2)


@dataclass(frozen=True)
class RecordedCompaction:
    """One ``compact_boundary`` of a recording. ``step``: the API calls made before it (so the step of
    the first call after it); ``model``: the model of the last call before it."""

    session_id: str
    file: str | None
    step: int
    trigger: str | None
    pre_tokens: int | None
    post_tokens: int | None
    version: str | None
    model: str | None


def recorded_compactions(session: Session) -> list[RecordedCompaction]:
    """The recorded compactions of ``session``'s own conversation, in order (none for a compaction agent)."""
    if session.metadata.get("query_source") in ("compact", "session_memory"):
        return []
    records = session.conversation()
    calls = api_calls(records)
    out = []
    for index, record in enumerate(records):
        if not record.is_compact_boundary:
            continue
        before = [c for c in calls if c.first < index]
        meta = record.compact_metadata
        version = record.raw.get("version")
        out.append(
            RecordedCompaction(
                session_id=session.id,
                file=session.source,
                step=len(before),
                trigger=meta.get("trigger"),
                pre_tokens=meta.get("preTokens"),
                post_tokens=meta.get("postTokens"),
                version=version if isinstance(version, str) else session.client_version,
                model=records[before[-1].first].model if before else None,
            )
        )
    return out


@dataclass(frozen=True)
class Reproduction:
    """A recorded compaction and what the replay made of it (None: no compaction of ours matched)."""

    recorded: RecordedCompaction
    row: str
    threshold: int
    full_compact_step: int | None
    full_compact_tokens_before: int | None
    full_compact_tokens_after: int | None
    first_auto: bool  # the session's first automatic compaction (the only one `claude-code` is held to)
    claude_code_step: int | None  # our first automatic compaction, on the first automatic row only

    @property
    def label_threshold(self) -> str:
        return f"{self.row}, {self.threshold:,}"

    @property
    def post_tokens_error(self) -> float | None:
        """Our size after the compaction against the recorded ``postTokens`` (2.1.114+), as a share of it."""
        post, ours = self.recorded.post_tokens, self.full_compact_tokens_after
        return None if not post or ours is None else (ours - post) / post

    @property
    def full_compact_hit(self) -> bool:
        return self.full_compact_step is not None and self.full_compact_step - self.recorded.step in REPRODUCED

    @property
    def claude_code_hit(self) -> bool | None:
        """None where the row is not its session's first automatic compaction."""
        if not self.first_auto:
            return None
        return self.claude_code_step is not None and self.claude_code_step - self.recorded.step in REPRODUCED

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self.recorded),
            "row": self.row,
            "threshold": self.threshold,
            "full_compact_step": self.full_compact_step,
            "full_compact_tokens_before": self.full_compact_tokens_before,
            "full_compact_tokens_after": self.full_compact_tokens_after,
            "full_compact_hit": self.full_compact_hit,
            "post_tokens_error": self.post_tokens_error,
            "first_auto": self.first_auto,
            "claude_code_step": self.claude_code_step,
            "claude_code_hit": self.claude_code_hit,
        }


def reproduction(session: Session) -> list[Reproduction]:
    """The rows of one session (empty when it recorded no compaction)."""
    recorded = recorded_compactions(session)
    if not recorded:
        return []
    events = replay_session(session, create("full-compact", {"summarizer": "recorded"})).events
    ours = [e for e in events if e["kind"] == "full-compact"]
    autos = [r for r in recorded if r.trigger == "auto"]
    first_cc: int | None = None
    if autos:
        pipeline = replay_session(session, create("claude-code")).events
        first_cc = next((e["step"] for e in pipeline if e["trigger"] == "auto"), None)
    rows = []
    used: set[int] = set()
    for compaction in recorded:
        row = version_constants(compaction.version)
        threshold = for_version(AutoCompactTrigger(), row, compaction.model).threshold
        # ours that matches: same trigger, the nearest not yet matched at or after the recorded step
        match = next(
            (
                e
                for i, e in enumerate(ours)
                if i not in used and e["trigger"] == compaction.trigger and e["step"] >= compaction.step
            ),
            None,
        )
        if match is not None:
            used.add(ours.index(match))
        is_first_auto = bool(autos) and compaction is autos[0]
        rows.append(
            Reproduction(
                recorded=compaction,
                row=row.label,
                threshold=threshold,
                full_compact_step=None if match is None else match["step"],
                full_compact_tokens_before=None if match is None else match["tokens_before"],
                full_compact_tokens_after=None if match is None else match["tokens_after"],
                first_auto=is_first_auto,
                claude_code_step=first_cc if is_first_auto else None,
            )
        )
    return rows


def reproduce(sessions: Iterable[Session]) -> list[Reproduction]:
    """`reproduction` of every Claude Code session of ``sessions`` (sub-agents included: they compact too)."""
    return [row for session in sessions if session.format == "claude-code" for row in reproduction(session)]


@dataclass(frozen=True)
class RecordedMicrocompact:
    """One ``microcompact_boundary`` of a recording (``microcompactMetadata``). ``step``: the API calls made
    before it; ``model``: the model of the last call before it."""

    session_id: str
    file: str | None
    step: int
    trigger: str | None
    pre_tokens: int | None
    tokens_saved: int | None
    compacted_tool_ids: tuple[str, ...]
    version: str | None
    model: str | None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def recorded_microcompacts(session: Session) -> list[RecordedMicrocompact]:
    """The recorded microcompacts of ``session``'s own conversation, in order."""
    if session.metadata.get("query_source") in ("compact", "session_memory"):
        return []
    records = session.conversation()
    if not any(record.is_microcompact_boundary for record in records):
        return []
    calls = api_calls(records)
    out = []
    for index, record in enumerate(records):
        if not record.is_microcompact_boundary:
            continue
        before = [c for c in calls if c.first < index]
        meta = record.microcompact_metadata
        ids = meta.get("compactedToolIds")
        version = record.raw.get("version")
        trigger = meta.get("trigger")
        out.append(
            RecordedMicrocompact(
                session_id=session.id,
                file=session.source,
                step=len(before),
                trigger=trigger if isinstance(trigger, str) else None,
                pre_tokens=_count(meta.get("preTokens")),
                tokens_saved=_count(meta.get("tokensSaved")),
                compacted_tool_ids=tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else (),
                version=version if isinstance(version, str) else session.client_version,
                model=records[before[-1].first].model if before else None,
            )
        )
    return out


@dataclass(frozen=True)
class MicrocompactReproduction:
    """A recorded microcompact and the legacy microcompact of the ``claude-code`` replay that matches it
    (the nearest at or after the recorded call not matched before; None: none). ``runs``: whether the
    version table has the recorded version run the legacy microcompact at all."""

    recorded: RecordedMicrocompact
    row: str
    runs: bool
    step: int | None
    tokens_saved: int | None
    compacted_tool_ids: tuple[str, ...] | None

    @property
    def hit(self) -> bool:
        return self.step is not None and self.step - self.recorded.step in REPRODUCED

    @property
    def tokens_saved_error(self) -> float | None:
        """Our ``tokensSaved`` against the recorded one, as a share of it."""
        recorded, ours = self.recorded.tokens_saved, self.tokens_saved
        return None if not recorded or ours is None else (ours - recorded) / recorded

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self.recorded),
            "compacted_tool_ids": list(self.recorded.compacted_tool_ids),
            "row": self.row,
            "runs": self.runs,
            "microcompact_step": self.step,
            "microcompact_tokens_saved": self.tokens_saved,
            "microcompact_tool_ids": None if self.compacted_tool_ids is None else list(self.compacted_tool_ids),
            "hit": self.hit,
            "tokens_saved_error": self.tokens_saved_error,
        }


def _noting_microcompacts(strategy: Strategy) -> list[tuple[int, Mapping[str, Any]]]:
    """Make ``strategy`` note each legacy microcompact it makes (the call's step and the microcompact's
    ``details``: ``tokens_saved``, ``compacted_tool_ids``), also where an auto-compaction at the same call
    carries it; returns the list it fills."""
    noted: list[tuple[int, Mapping[str, Any]]] = []
    decide = strategy.compact

    def compact(view: ContextView, state: Any) -> Compaction | None:
        result = decide(view, state)
        if result is not None:
            details = result.details if result.kind == "microcompact" else result.details.get("microcompact")
            if isinstance(details, Mapping) and "compacted_tool_ids" in details:
                noted.append((view.step, details))
        return result

    setattr(strategy, "compact", compact)  # noqa: B010 - an instance's own decision, observed
    return noted


def microcompact_reproduction(session: Session) -> list[MicrocompactReproduction]:
    """The microcompact rows of one session (empty when it recorded none)."""
    recorded = recorded_microcompacts(session)
    if not recorded:
        return []
    strategy = create("claude-code")
    noted = _noting_microcompacts(strategy)
    replay_session(session, strategy)
    used: set[int] = set()
    rows = []
    for micro in recorded:
        row = version_constants(micro.version)
        match = next((i for i, (step, _) in enumerate(noted) if i not in used and step >= micro.step), None)
        details: Mapping[str, Any] = {}
        if match is not None:
            used.add(match)
            details = noted[match][1]
        saved = details.get("tokens_saved")
        rows.append(
            MicrocompactReproduction(
                recorded=micro,
                row=row.label,
                runs=row.runs_legacy_microcompact(micro.version),
                step=None if match is None else noted[match][0],
                tokens_saved=saved if isinstance(saved, int) else None,
                compacted_tool_ids=None if match is None else tuple(details.get("compacted_tool_ids", ())),
            )
        )
    return rows


def reproduce_microcompacts(sessions: Iterable[Session]) -> list[MicrocompactReproduction]:
    """`microcompact_reproduction` of every Claude Code session of ``sessions``."""
    return [row for s in sessions if s.format == "claude-code" for row in microcompact_reproduction(s)]


def summary_by_row(rows: Iterable[Reproduction]) -> dict[str, dict[str, int]]:
    """Per version-table row: automatic compactions recorded and reproduced by ``full-compact``, first
    automatic ones and those reproduced by ``claude-code``, and manual ones (replayed as commands)."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = out.setdefault(
            row.row, {"auto": 0, "full_compact_hits": 0, "first_auto": 0, "claude_code_hits": 0, "manual": 0}
        )
        if row.recorded.trigger != "auto":
            counts["manual"] += 1
            continue
        counts["auto"] += 1
        counts["full_compact_hits"] += row.full_compact_hit
        counts["first_auto"] += row.first_auto
        counts["claude_code_hits"] += bool(row.claude_code_hit)
    return out


def markdown_table(rows: Iterable[Reproduction]) -> list[str]:
    """The rows as a markdown table (the per-version evidence in docs/replay.md): one line per recorded compaction."""
    out = [
        "| session | version | model | row (threshold) | recorded: call, trigger, preTokens | `full-compact` | "
        "`claude-code` (first) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        rec = row.recorded
        ours = "-" if row.full_compact_step is None else str(row.full_compact_step)
        verdict = "hit" if row.full_compact_hit else "**miss**"
        if row.first_auto:
            first = "-" if row.claude_code_step is None else str(row.claude_code_step)
            pipeline = f"{first} {'hit' if row.claude_code_hit else '**miss**'}"
        else:
            pipeline = ""
        pre = "-" if rec.pre_tokens is None else f"{rec.pre_tokens:,}"
        out.append(
            f"| {rec.session_id[:8]} | {rec.version} | {rec.model} | {row.row} ({row.threshold:,}) | "
            f"{rec.step}, {rec.trigger}, {pre} | {ours} {verdict} | {pipeline} |"
        )
    return out
