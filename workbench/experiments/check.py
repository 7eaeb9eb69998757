"""``workbench check`` / ``wb.check``: what the workbench can and cannot model of a user's own history.

One row per session. What it says, and why each matters to a result:

* ``format``, ``versions`` (Claude Code versions that wrote it) and ``unknown_versions`` (newer than the
  version table, `workbench.strategies.versions`, so replayed with its newest row);
* ``models`` and ``unpriced_models`` (not in the price table: their calls have no cost, `workbench.metrics.
  pricing`);
* ``window``: 1M when a recorded request exceeded 200k (what the replay then uses), else None (the
  model's default);
* ``hidden_tokens``: the first request's recorded size less what the file holds before it. A system prompt
  and tools are 15-37k on the dev corpus; ``resumed`` flags more than `RESUMED_TOKENS`: a resumed session or
  a fragment whose earlier history is not in the file, which no compaction of the replay can remove;
* ``compaction_agent``: a compaction or memory call's own transcript (never compacted: the recursion
  guard);
* ``recording_violations``: calls where the recording itself breaks an API rule (the ``none`` replay), with
  ``recording_rules``: a model-side-only format, a lost tool result. Strategies are compared against that;
* ``added_violations``: strategy → calls its requests break a rule where ``none``'s do not; ``loops``:
  strategy → its longest run of ineffective summarising compactions, where longer than 3
  (`workbench.metrics.guarantees`). Unsafe strategies are listed too (they are expected to add some);
* ``unknown_types``: record types the loader does not know (kept, not sent);
* ``skipped_lines``: lines the loader could not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..metrics.guarantees import added_violations, longest_ineffective_run
from ..metrics.pricing import known_price, load_pricing
from ..replay.engine import replay_session, session_facts
from ..replay.facts import RESUMED_TOKENS, SessionFacts, notes_of, version_key
from ..strategies.refill import REFILL_LIMIT
from ..strategies.registry import create, strategies
from ..transcript.model import Session

__all__ = [
    "RESUMED_TOKENS",
    "SessionCheck",
    "check_session",
    "check_sessions",
    "row_of",
    "summary",
]


@dataclass
class SessionCheck:
    """One session's row (see the module docstring)."""

    session_id: str
    file: str | None
    format: str
    calls: int
    versions: list[str] = field(default_factory=list)
    unknown_versions: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    unpriced_models: list[str] = field(default_factory=list)
    unrecognised_models: list[str] = field(default_factory=list)
    window: int | None = None
    hidden_tokens: int = 0
    resumed: bool = False
    compaction_agent: bool = False
    recording_violations: int = 0
    recording_rules: list[str] = field(default_factory=list)
    added_violations: dict[str, int] = field(default_factory=dict)
    loops: dict[str, int] = field(default_factory=dict)
    unknown_types: list[str] = field(default_factory=list)
    skipped_lines: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def problems(self) -> list[str]:
        """What affects a result, in words (empty: everything is modelled)."""
        out = notes_of(self)
        if self.unpriced_models:
            out.append(f"unpriced: {', '.join(self.unpriced_models)}")
        if self.recording_violations:
            out.append(f"recording breaks {', '.join(self.recording_rules)} at {self.recording_violations} calls")
        for name, n in self.added_violations.items():
            out.append(f"{name} adds {n} rejected calls")
        for name, n in self.loops.items():
            out.append(f"{name} {n} ineffective compactions in a row")
        if self.skipped_lines:
            out.append(f"{self.skipped_lines} unreadable lines")
        return out


def row_of(session_id: str, file: str | None, calls: int, facts: SessionFacts) -> SessionCheck:
    """A session's row from what its replay recorded (`workbench.replay.facts.SessionFacts`), before any
    strategy is compared."""
    pricing = load_pricing()
    return SessionCheck(
        session_id=session_id,
        file=file,
        format=facts.format,
        calls=calls,
        versions=list(facts.versions),
        unknown_versions=facts.unknown_versions,
        models=list(facts.models),
        unpriced_models=[m for m in facts.models if known_price(m, pricing) is None],
        unrecognised_models=facts.unrecognised_models,
        window=facts.window,
        hidden_tokens=facts.hidden_tokens,
        resumed=facts.resumed,
        compaction_agent=facts.compaction_agent,
        unknown_types=list(facts.unknown_types),
    )


def check_session(session: Session, names: Sequence[str]) -> SessionCheck:
    """The row of one session: what its ``none`` replay recorded (`row_of`), then each of ``names``
    (strategy names) replayed against it: what the recording breaks, what each strategy adds, its loops."""
    baseline = replay_session(session, create("none"))
    facts = baseline.facts if baseline.facts is not None else session_facts(session)
    row = row_of(session.id, session.source, len(baseline.steps), facts)
    row.skipped_lines = len(session.skipped)
    broken = [s for s in baseline.steps if s["violations"]]
    row.recording_violations = len(broken)
    row.recording_rules = sorted({rule for s in broken for rule in s["violation_rules"].split(",") if rule})
    for name in names:
        if name == "none":
            continue
        result = replay_session(session, create(name))
        added = added_violations(result.steps, baseline.steps)
        if added:
            row.added_violations[name] = len(added)
        run = longest_ineffective_run(result.events)
        if run > REFILL_LIMIT:
            row.loops[name] = run
    return row


def default_strategies() -> list[str]:
    """Every registered strategy (unsafe ones too: the check says how much they add)."""
    return sorted(strategies())


def check_sessions(sessions: Iterable[Session], names: Sequence[str] | None = None) -> list[SessionCheck]:
    chosen = list(names) if names is not None else default_strategies()
    return [check_session(session, chosen) for session in sessions]


def summary(rows: Sequence[SessionCheck]) -> dict[str, Any]:
    """Counts over the rows, and each strategy's sessions with added violations or loops."""
    added: dict[str, int] = {}
    loops: dict[str, int] = {}
    for row in rows:
        for name in row.added_violations:
            added[name] = added.get(name, 0) + 1
        for name in row.loops:
            loops[name] = loops.get(name, 0) + 1
    formats: dict[str, int] = {}
    for row in rows:
        formats[row.format] = formats.get(row.format, 0) + 1
    return {
        "sessions": len(rows),
        "formats": formats,
        "unknown_versions": sorted({v for r in rows for v in r.unknown_versions}, key=version_key),
        "unpriced_sessions": sum(bool(r.unpriced_models) for r in rows),
        "unpriced_models": sorted({m for r in rows for m in r.unpriced_models}),
        "window_1m_sessions": sum(r.window is not None for r in rows),
        "resumed_sessions": sum(r.resumed for r in rows),
        "recording_violation_sessions": sum(bool(r.recording_violations) for r in rows),
        "unknown_type_sessions": sum(bool(r.unknown_types) for r in rows),
        "sessions_with_added_violations": added,
        "sessions_with_loops": loops,
        "fully_modelled": sum(not r.problems for r in rows),
    }
