"""The report's per-session columns, computed one session group at a time.

`workbench.report.report` needs the sessions themselves for fidelity, expected and measured recovery, the
recorded bill, the cost simulation, its calibration, Claude's recorded summaries (``reference``) and the
uncompacted sizes of a ``none`` replay. Holding every session of the manifests' inputs made the report's
peak memory grow with the corpus. `SessionTables` reads them one *session group* (a main session with its
sub-agents, `workbench.transcript.groups.ranked_groups`) at a time, computes each session's pieces, and drops the
group before the next is read; what it keeps is rows and small per-event frames keyed by session.

What depends on a session alone (the bill, its notes, the recorded re-reads, the cost simulation's per-call
facts, the calibration's facts, the ``none`` sizes) comes from `workbench.reporting.session_analysis`, cached
on disk by the session's content: a group of the manifests' inputs whose wanted sessions have no events in
the replay (and no references are asked for) is answered from that cache without being loaded
(`SessionTables.add_inputs`); the others are loaded and what depends on the replay's events is computed.

Per group, not per session: `reference_rows` scores a recorded compaction with the output of the matching
``agent-acompact-*`` transcript, a sub-agent in the same group. Everything else is per session.

The tables are those of the whole-input functions they replace (`fidelity`, `expected_recovery`,
`recovery`, `bill_sessions`, `cost_sessions`, `calibrate_cost`, `reference_fidelity`, the report's ``none``
replay), row for row, value for value and in the same order: per-session frames are concatenated in the
sorted session order those functions use, the reference rows come in `load_paths` order (by rank), and
what sums over sessions is summed over the whole input as before. The cost is simulated over every session
at once from the kept per-call facts (`cost_steps` with ``call_infos``) and priced over all of them
(`cost_sessions` with ``per_step``, `calibration_table`): pandas' grouped float sums depend on the rows
around a group, so a per-session `cost_sessions` would differ in the last digits. One difference, a fix:
two files holding one session id (copies) pair each copy with its own ``agent-acompact-*`` transcript, not
both with the first copy's.

A caller's ``sessions=`` (the public ``wb.report(path, sessions=…)``) are already in memory: they are one
group, in the caller's order, analysed without the cache (a session built in memory need not hold what its
lines say).

Not streamed: the online judge probes (``--probes``). Every probe job is built and priced before any
request is sent (the budget is checked over all of them) and a job holds its session, so with probes the
sessions are loaded again and held (`held_sessions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..metrics._common import KEYS
from ..metrics.bill import BILL_COLUMNS
from ..metrics.cache_sim import SessionCallInfo
from ..metrics.calibration import CalibrationFacts, calibration_table
from ..metrics.cost import cost_sessions, cost_steps
from ..metrics.expected_recovery import EVENT_COLUMNS, expected_recovery_events
from ..metrics.expected_recovery import READ_EVENT_FIELDS as RECOVERY_EVENT_FIELDS
from ..metrics.expected_recovery import READ_STEP_FIELDS as RECOVERY_STEP_FIELDS
from ..metrics.fidelity import fidelity_events, reference_rows
from ..metrics.identity import SessionKeys
from ..metrics.instructions import READ_EVENT_FIELDS as INSTRUCTION_EVENT_FIELDS
from ..metrics.instructions import instructions_events
from ..metrics.recovery import recovery_frame
from ..transcript.groups import PlannedFile, load_planned_group, plan_groups
from ..transcript.model import Session
from ..transcript.registry import LoadReport, custom_loaders
from ..transcript.session_cache import cached_infos_if_unchanged, remembered_loader
from ..transcript.summary import SessionInfo
from .session_analysis import AnalysisCache, SessionAnalysis, analyse

__all__ = ["SessionTables", "held_sessions", "input_groups", "planned_groups"]

#: A session's position in `load_paths` order: (file position, index in its file).
Rank = tuple[int, int]


def _input_paths(runs: Sequence[Mapping[str, Any]]) -> list[Path]:
    return [Path(p) for p in sorted({p for run in runs for p in run.get("inputs", [])})]


def input_groups(
    runs: Sequence[Mapping[str, Any]], given: Iterable[Session] | Mapping[str, Session] | None
) -> Iterator[list[tuple[Rank, Session]]]:
    """The sessions to report on, ranked: the caller's (one group, in their order) or the manifests'
    ``inputs`` read one session group at a time (nothing when no run lists inputs)."""
    if given is not None:
        yield _given_group(given)
        return
    for planned in planned_groups(runs):
        if group := load_planned_group(planned, None, LoadReport()):
            yield group


def _given_group(given: Iterable[Session] | Mapping[str, Session]) -> list[tuple[Rank, Session]]:
    items = given.values() if isinstance(given, Mapping) else given
    return [((position, 0), session) for position, session in enumerate(items)]


def planned_groups(runs: Sequence[Mapping[str, Any]]) -> list[list[PlannedFile]]:
    """The session groups of the manifests' ``inputs`` as files, nothing read (`plan_groups`)."""
    paths = _input_paths(runs)
    return plan_groups(paths, LoadReport()) if paths else []


def _known_infos(planned: Sequence[PlannedFile]) -> list[tuple[Rank, SessionInfo]] | None:
    """The ranked sessions of a planned group as the parsed-session cache knows them (id, source,
    fingerprint; nothing read but each file's stamp), or None when a file is not known unchanged."""
    if custom_loaders():
        return None
    found: list[tuple[Rank, SessionInfo]] = []
    for path, _, position in planned:
        name = remembered_loader(path)
        infos = cached_infos_if_unchanged(path, name) if name else None
        if infos is None:
            return None
        found.extend(((position, index), info) for index, info in enumerate(infos))
    return found


def held_sessions(
    runs: Sequence[Mapping[str, Any]],
    given: Iterable[Session] | Mapping[str, Session] | None,
    keys: SessionKeys,
    wanted: set[str],
) -> dict[str, Session]:
    """Every wanted session at once, ``{key: session}`` (the probes need them all; module docstring)."""
    found: dict[str, Session] = {}
    for group in input_groups(runs, given):
        found.update(keys.sessions(s for _, s in group if keys.key(s.id, s.source) in wanted))
    return found


#: The step and event columns expected recovery and the instructions kept read of a session.
_STEP_READ = (*KEYS, *RECOVERY_STEP_FIELDS)
_EVENT_READ = tuple(dict.fromkeys([*KEYS, *RECOVERY_EVENT_FIELDS, *INSTRUCTION_EVENT_FIELDS]))


class SessionTables:
    """The report's per-session pieces, filled one group at a time (`add_group`), assembled at the end."""

    def __init__(
        self,
        steps: pd.DataFrame,
        events: pd.DataFrame,
        keys: SessionKeys,
        *,
        pricing: Mapping[str, Any],
        estimator: str,
        summarizer_input: str,
        references: bool = True,
    ) -> None:
        self.steps, self.events, self.keys = steps, events, keys
        #: whether to score references kept (`workbench.metrics.fidelity`: every record's text read for facts)
        self.references = references
        self.pricing, self.estimator, self.summarizer_input = pricing, estimator, summarizer_input
        self.wanted = set(steps["session_id"])
        self._steps_at = steps.groupby("session_id", sort=False).indices
        has_events = len(events) and "session_id" in events.columns
        self._events_at = events.groupby("session_id", sort=False).indices if has_events else {}
        self._in_none_run = set(steps.loc[steps["strategy"] == "none", "session_id"])
        self._calibrate = bool({"none", "recorded"} & set(steps["strategy"]))
        self._strategies = {
            key: set(values) for key, values in steps.groupby("session_id")["strategy"].unique().items()
        }
        # the columns the per-session metrics at events read (every column for the references kept, whose
        # fidelity reads more): a session's rows are taken from these, not from every column
        self._read_steps = steps if references else steps[[c for c in _STEP_READ if c in steps.columns]]
        self._read_events = events if references else events[[c for c in _EVENT_READ if c in events.columns]]
        self.cache = AnalysisCache(pricing=pricing, estimator=estimator)
        #: ``{key: rank}``: the available sessions, in `load_paths` order of their first occurrence.
        self.order: dict[str, Rank] = {}
        self.bills: dict[str, dict[str, Any]] = {}
        self.tool_calls: dict[str, bool] = {}
        self.baseline: dict[str, list[dict[str, Any]]] = {}
        self.measured: dict[str, list[dict[str, Any]]] = {}
        self.reference: dict[str, list[dict[str, Any]]] = {}
        self.fidelity: dict[str, pd.DataFrame] = {}
        self.expected: dict[str, pd.DataFrame] = {}
        self.instructions: dict[str, pd.DataFrame] = {}
        #: the cost simulation's per-call facts, ``{(key, strip): info}`` (`cost_steps`' ``call_infos``), and
        #: the session without its records (its models and metadata price the summariser and mark compaction
        #: agents)
        self.call_infos: dict[tuple[str, bool], SessionCallInfo] = {}
        self.headers: dict[str, Session] = {}
        self.calibration: dict[str, CalibrationFacts] = {}
        #: ``{key: line}``: sessions whose results rest on what a replay cannot fully model
        #: (`workbench.replay.facts.warning_lines`)
        self.warnings: dict[str, str] = {}

    def add_inputs(
        self, runs: Sequence[Mapping[str, Any]], given: Iterable[Session] | Mapping[str, Session] | None
    ) -> SessionTables:
        """The sessions of `input_groups`, one group at a time. A group of the manifests' inputs whose
        wanted sessions have no events in the replay and whose analyses are cached is not loaded at all
        (`workbench.reporting.session_analysis`); the others are loaded and analysed (`add_group`)."""
        if given is not None:
            self.add_group(_given_group(given), cached=False)
            return self
        for planned in planned_groups(runs):
            known = _known_infos(planned)
            if known is not None:
                if self._from_cache(known):
                    continue
                planned = self._to_load(planned, known)
            group = load_planned_group(planned, None, LoadReport())
            self.add_group(group)
            del group  # released before the next group is read
        return self

    def _to_load(self, planned: Sequence[PlannedFile], known: Sequence[tuple[Rank, SessionInfo]]) -> list[PlannedFile]:
        """The files of a group that must be read: those holding a wanted session that needs its records (or
        whose analysis is not cached). The wanted sessions of the other files (a main session's sub-agents
        without events, say) are taken from the analysis cache; each file loads on its own."""
        by_file: dict[int, list[tuple[Rank, SessionInfo]]] = {}
        for rank, info in known:
            by_file.setdefault(rank[0], []).append((rank, info))
        return [item for item in planned if not self._from_cache(by_file.get(item[2], []))]

    def _members(self, group: Sequence[tuple[Rank, Any]]) -> dict[str, Any]:
        """``{key: session or info}`` of the wanted ones (a later copy of a key replaces an earlier one, as in
        a dict of the whole input); each key's first rank goes to `order`."""
        members: dict[str, Any] = {}
        for rank, session in group:
            key = self.keys.key(session.id, session.source)
            if key in self.wanted:
                members[key] = session
                self.order.setdefault(key, rank)
        return members

    def _pieces(self, key: str) -> dict[str, bool]:
        """Which optional pieces of `SessionAnalysis` the report needs of the session."""
        strategies = self._strategies.get(key, set())
        return {
            "calibration": self._calibrate and bool({"none", "recorded"} & strategies),
            "uncompacted": key not in self._in_none_run and "recorded" in strategies,
        }

    def _from_cache(self, known: Sequence[tuple[Rank, SessionInfo]]) -> bool:
        """Take the group's pieces from the analysis cache when nothing of it needs its records; False
        (nothing taken) when something does or an analysis is not cached."""
        keys = {self.keys.key(info.id, info.source) for _, info in known} & self.wanted
        if self.references and keys:
            return False  # the references kept and Claude's summaries read the records
        if any(key in self._events_at for key in keys):
            return False  # fidelity, expected recovery and instructions at its events read the records
        found: dict[str, SessionAnalysis] = {}
        latest = {self.keys.key(info.id, info.source): info for _, info in known}
        for key in keys:
            info = latest[key]
            analysis = self.cache.get(key, info.source, info.fingerprint, **self._pieces(key))
            if analysis is None:
                return False
            found[key] = analysis
        self._members(known)  # their ranks, as a loaded group gives them
        for key, analysis in found.items():
            self._take(key, analysis)
            self.reference[key] = []
        return True

    def add_group(self, group: Sequence[tuple[Rank, Session]], *, cached: bool = True) -> None:
        """Compute the pieces of the group's wanted sessions (``cached``: the session-only ones through the
        analysis cache; a caller's own sessions are not, their fields need not follow from their lines)."""
        members: dict[str, Session] = {}
        for key, session in self._members(group).items():
            members[key] = session if key == session.id else replace(session, id=key)
        for key, session in members.items():
            self._add_session(key, session, cached=cached)
        found: dict[str, list[dict[str, Any]]] = {}
        for row in reference_rows(members.values()) if self.references else ():
            found.setdefault(row["session_id"], []).append(row)
        for key in members:
            self.reference[key] = found.get(key, [])

    def _rows_of(self, frame: pd.DataFrame, at: Mapping[str, Any], key: str) -> pd.DataFrame:
        return frame.iloc[at[key]] if key in at else frame.iloc[:0]

    def _take(self, key: str, analysis: SessionAnalysis) -> None:
        pieces = self._pieces(key)
        if analysis.notes:
            header = analysis.header
            self.warnings[key] = f"{header.source or header.id}: {'; '.join(analysis.notes)}"
        self.bills[key] = dict(analysis.bill)
        self.tool_calls[key] = analysis.tool_calls
        self.measured[key] = analysis.measured
        self.baseline[key] = list(analysis.uncompacted or ()) if pieces["uncompacted"] else []
        self.headers[key] = analysis.header
        for strip, info in analysis.call_infos.items():
            self.call_infos[(key, strip)] = info
        if pieces["calibration"] and analysis.calibration is not None:
            self.calibration[key] = analysis.calibration

    def _add_session(self, key: str, session: Session, *, cached: bool = True) -> None:
        pieces = self._pieces(key)
        analysis = self.cache.get(key, session.source, session.fingerprint, **pieces) if cached else None
        if analysis is None:
            analysis = analyse(session, pricing=self.pricing, estimator=self.estimator, **pieces)
            if cached:
                self.cache.put(key, session.source, analysis)
        self._take(key, analysis)
        if key in self._events_at:
            steps = self._rows_of(self._read_steps, self._steps_at, key)
            events = self._rows_of(self._read_events, self._events_at, key)
            if self.references:
                self.fidelity[key] = fidelity_events(session, events)
            self.expected[key] = expected_recovery_events(
                session, events, steps, estimator=self.estimator, pricing=self.pricing
            )
            self.instructions[key] = instructions_events(session, events)

    # -- assembly: the frames of the whole-input functions --------------------------------------------

    @property
    def available(self) -> list[str]:
        """The keys of the sessions found, in `load_paths` order."""
        return sorted(self.order, key=self.order.__getitem__)

    def _sorted_frames(self, parts: Mapping[str, pd.DataFrame]) -> list[pd.DataFrame]:
        return [parts[key] for key in sorted(parts) if not parts[key].empty]

    def uncompacted(self) -> pd.DataFrame | None:
        """Uncompacted sizes per (session, step): the ``none`` run's rows, then a ``none`` replay of the
        available sessions it lacks."""
        none = self.steps[self.steps["strategy"] == "none"] if len(self.steps) else self.steps
        frames = [none[["session_id", "step", "tokens_without_compaction"]]] if len(none) else []
        rows = [row for key in self.available for row in self.baseline[key]]
        if rows:
            frames.append(pd.DataFrame(rows)[["session_id", "step", "tokens_without_compaction"]])
        return pd.concat(frames, ignore_index=True) if frames else None

    def cost_steps(self) -> pd.DataFrame:
        """`cost_steps` of every session (the available ones with their recorded calls), cells sorted by
        `KEYS`."""
        return cost_steps(self.steps, self.events, None, pricing=self.pricing, call_infos=self.call_infos)

    def money(self, per_step: pd.DataFrame) -> pd.DataFrame:
        """`cost_sessions` of every session from its `cost_steps` rows."""
        return cost_sessions(
            self.steps,
            self.events,
            self.headers,
            pricing=self.pricing,
            summarizer_input=self.summarizer_input,  # type: ignore[arg-type]
            per_step=per_step,
        )

    def calibration_frame(self, per_step: pd.DataFrame) -> pd.DataFrame:
        """`calibrate_cost` of the available sessions from the `cost_steps` rows of every session."""
        if per_step.empty:
            return pd.DataFrame()
        cells = per_step["strategy"].isin(["none", "recorded"]) & per_step["session_id"].isin(self.calibration)
        recorded = self.steps[(self.steps["strategy"] == "recorded") & self.steps["session_id"].isin(self.calibration)]
        modelled = (
            cost_steps(recorded, self.events, None, pricing=self.pricing, misses="modelled", call_infos=self.call_infos)
            if len(recorded)
            else pd.DataFrame()
        )
        return calibration_table(per_step[cells], modelled, self.calibration)

    def bill(self) -> pd.DataFrame:
        return pd.DataFrame([self.bills[key] for key in self.available], columns=BILL_COLUMNS)

    def per_event_fidelity(self) -> pd.DataFrame:
        frames = self._sorted_frames(self.fidelity)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def instruction_sessions(self) -> pd.DataFrame:
        """Per (session, strategy, config): the user's instructions at stake summed over its compaction events
        and how many of them the compacted contexts lost (`workbench.metrics.instructions`)."""
        frames = self._sorted_frames(self.instructions)
        if not frames:
            return pd.DataFrame(columns=[*KEYS, "instructions", "instructions_lost"])
        events = pd.concat(frames, ignore_index=True)
        return events.groupby(KEYS, as_index=False)[["instructions", "instructions_lost"]].sum()

    def per_event_recovery(self) -> pd.DataFrame:
        frames = self._sorted_frames(self.expected)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEYS, *EVENT_COLUMNS])

    def measured_recovery(self) -> pd.DataFrame:
        return recovery_frame(row for key in self.available for row in self.measured[key])

    def reference_frame(self) -> pd.DataFrame:
        return pd.DataFrame([row for key in self.available for row in self.reference[key]])
