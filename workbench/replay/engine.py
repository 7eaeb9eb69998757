"""The replay engine: walk a recorded session one API call at a time through a strategy.

Open loop: the recorded future does not change when we compact differently. Before each recorded API
call (a *step*: all records sharing one ``message.id``) the engine first runs the strategy's
post-sampling hook for the previous response (`Strategy.observe` sees the context sent for that call
plus the response's assistant records, as Claude Code's hook does), then appends the records recorded
since, lets the strategy decide whether to compact, and validates the request the strategy's context
produces (`workbench.request`).

Session-memory extractions are not compactions and make no event: a strategy's hook returns the
extraction's forked call (`workbench.memory.fork.ExtractionCall`) and the engine writes it on the step row
of the call before which the hook ran (``memory_extraction`` and the ``extraction_*`` columns; every other
row carries `workbench.memory.fork.NO_EXTRACTION`), where `workbench.metrics.memory_cost` prices it.

Recorded compactions (``compact_boundary`` lines and ``isCompactSummary`` messages) are data: the
default strips them and lets the strategy re-decide; a strategy with ``strips_recorded = False`` (the
``recorded`` reference) keeps them and the engine reports each as a ``recorded-compact`` event.

Token accounting (the ``token_source`` column):

* Before the first recorded usage of a segment (the session's first call, the first call after a
  recorded boundary), Claude Code's estimate is the rough size of the messages alone; the engine adds
  the session's measured overhead (system prompt, tools: first call's prompt size minus the rough size
  of its messages), so the first step reports exactly the recorded request size.
* ``recorded``: until the first compaction the context *is* the recorded one, so its size is Claude
  Code's own ``tokenCountWithEstimation`` (last recorded usage + rough estimate of what followed it).
  Where recorded compactions were stripped, the usage recorded after a boundary measured Claude Code's
  compacted context; the engine adds back what that compaction removed (``preTokens`` + the records
  between boundary and next call − that call's recorded prompt size) so the uncompacted size stays
  continuous.
* ``estimated``: after a compaction of ours, the size is the uncompacted size minus the estimated size of
  every record our compactions removed, plus that of every record they added. Both are measured with
  the replay's per-record estimator and scaled by the session's own tokens-per-estimated-token ratio
  (`session_scale`): chars/4 undercounts Claude's tokenizer by ~25% on the corpus (docs/architecture.md calibration
  table), so an unscaled estimate would leave most of a compaction's saving uncounted.

Sharing work across configs (`replay_group`): strategies of one class whose configs differ only in keys
the class declares ``compaction_only`` (what a compaction keeps, never whether or when it happens) or
``trigger_only`` (when the automatic compaction fires: `Strategy.fires`) decide identically until their
first compaction or the first call where their triggers disagree. The group replays that prefix once,
then each strategy continues from a copy of the state at that step.
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..memory.fork import NO_EXTRACTION, ExtractionCall
from ..request.normalize import MessageMemo
from ..request.validate import original_thinking_blocks
from ..strategies.base import Compaction, ContextView, RecordedCompaction, Strategy, trigger_key
from ..tokens.cache import cached_estimator
from ..tokens.context import prompt_tokens
from ..transcript.files import printable_path
from ..transcript.model import Record, Session
from ..transcript.replacements import as_sent, recorded_replacements
from ..transcript.steps import ApiCall, api_calls
from ..util.identity_memo import release_memos
from .facts import SessionFacts
from .kept import Columns, KeptIndex, changes, first_positions
from .rows import event_row, recorded_events
from .sizes import CountTable, LazyCounts, UncompactedSize, session_scale, strip_recorded_compactions
from .validation import IncrementalCheck, check_request

__all__ = [
    "ReplayResult",
    "SessionFacts",
    "replay_group",
    "replay_process",
    "replay_session",
    "session_facts",
    "session_scale",
    "strip_recorded_compactions",
]


@dataclass
class ReplayResult:
    """Rows for the ``steps`` and ``events`` tables of one replayed session."""

    session_id: str
    source: str | None
    strategy: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    #: What the replay could not model of the session (`SessionFacts`; `workbench check` words it).
    facts: SessionFacts | None = None

    @property
    def peak_context_tokens(self) -> int:
        return max((row["context_tokens"] for row in self.steps), default=0)


#: The request check's message memo (`_Prepared.messages`) is emptied when it holds more entries than this
#: many per record of the session plus `MESSAGE_MEMO_SLACK`: a masking strategy adds a few rewritten records
#: per call, so it stays far below; a strategy that rewrote every record at every call would grow it without end.
MESSAGE_MEMO_PER_RECORD = 4
MESSAGE_MEMO_SLACK = 1_000


class _Prepared:
    """Everything about a session that does not depend on the strategy's decisions (computed once)."""

    def __init__(self, session: Session, *, strip: bool, estimator: str) -> None:
        self.session = session
        self.strip = strip
        # what the requests carried: Claude Code's recorded content replacements applied (`as_sent`)
        original = as_sent(session.conversation(), recorded_replacements(session.records))
        self.records, boundaries = strip_recorded_compactions(original) if strip else (list(original), [])
        rough_all = cached_estimator("claude-rough").count_many(self.records)
        self.measure = cached_estimator(estimator)
        self.size = UncompactedSize(self.records, rough_all, boundaries)
        counted = rough_all if estimator == "claude-rough" else self.measure.count_many(self.records)
        self.calls: list[ApiCall] = api_calls(self.records)
        self.scale = session_scale(
            self.records, counted, end=boundaries[0][0] if boundaries else None, calls=self.calls
        )
        self.rough_of = CountTable(self.records, rough_all)
        # claude-padded counts only as a strategy reads them (`LazyCounts` fills the table): SM-compaction
        # reads them when it compacts, most sessions never, and looking every record up cost ~8% of a replay
        self.padded_of = CountTable()
        self.originals = original_thinking_blocks(self.records)
        # each record's API message, built once for every request check (`normalize`'s memo): a strategy
        # that compacts before every call (masking) has its whole context checked every time
        self.messages: MessageMemo = {}
        # Recursion guard (docs §4.3): the compaction call itself (and a memory extraction) never compacts.
        self.guarded = session.metadata.get("query_source") in ("compact", "session_memory")
        self.recorded, self.late = _recorded_compactions(original, self.records, boundaries, self.calls)
        # A recorded request above the default window proves the 1M window was in use (docs §4.1).
        prompts = [prompt_tokens(u) for c in self.calls if (u := c.usage(self.records)) is not None]
        self.window = 1_000_000 if prompts and max(prompts) > 200_000 else None
        self.facts = SessionFacts.of(session, window=self.window, hidden_tokens=self.size.overhead)

    @cached_property
    def uuids(self) -> list[str | None]:
        """Each record's uuid (an event names what it kept against the records before its call)."""
        return [r.uuid for r in self.records]

    @cached_property
    def first(self) -> dict[str | None, int]:
        """Each uuid's first position among the records (the order of an event's ``not_kept_uuids``)."""
        return first_positions(self.uuids)

    def view(
        self,
        items: Sequence[Record],
        tokens: int,
        step: int,
        record: Record,
        usage: int | None = None,
        recorded: RecordedCompaction | None = None,
    ) -> ContextView:
        version = record.raw.get("version")
        return ContextView(
            tuple(items),
            tokens,
            LazyCounts(items, self.rough_of, "claude-rough"),
            LazyCounts(items, self.padded_of, "claude-padded"),
            step,
            record.timestamp,
            record.model,
            self.session.is_subagent,
            usage_tokens=usage,
            version=(version if isinstance(version, str) else None) or self.session.client_version,
            window=self.window,
            recorded=recorded,
        )


def _recorded_compactions(
    original: Sequence[Record],
    records: Sequence[Record],
    boundaries: Sequence[tuple[int, Record]],
    calls: Sequence[ApiCall],
) -> tuple[dict[int, RecordedCompaction], dict[int, RecordedCompaction]]:
    """Call index → the recorded compaction made in the gap just before that call (stripped replays), and
    call index → an automatic one made before the previous call, as a compaction that fires one call late
    finds it: its tail holds the records of that call too, its post-compact size is that call's prompt."""
    summaries: dict[int, Record] = {}
    pending: Record | None = None
    for record in original:
        if record.is_compact_boundary and record.is_compact_summary:  # Codex `compacted`: both in one record
            from ..transcript.codex import compaction_summary

            if (summary := compaction_summary(record)) is not None:
                summaries[id(record)] = summary
            pending = None
        elif record.is_compact_boundary:
            pending = record
        elif record.is_compact_summary and pending is not None:
            summaries[id(pending)] = record
            pending = None
    out: dict[int, RecordedCompaction] = {}
    late: dict[int, RecordedCompaction] = {}
    firsts = [c.first for c in calls]

    def at(index: int, boundary: Record, position: int) -> RecordedCompaction:
        usage = calls[index].usage(records)
        return RecordedCompaction(
            boundary,
            summaries.get(id(boundary)),
            position=position,
            tail=firsts[index] - position,
            post_tokens=prompt_tokens(usage) if usage is not None else None,
        )

    for position, boundary in boundaries:
        index = next((i for i, first in enumerate(firsts) if first >= position), None)
        if index is None:
            continue
        out[index] = at(index, boundary, position)
        if index + 1 < len(calls) and out[index].trigger == "auto":
            late[index + 1] = at(index + 1, boundary, position)
    for index in out:
        late.pop(index, None)
    return out, late


class _Cursor:
    """One strategy's walk through a prepared session: the mutable replay state and one step of it."""

    def __init__(self, prepared: _Prepared, strategy: Strategy, state: Any = None) -> None:
        self.p = prepared
        self.strategy = strategy
        self.state = strategy.new_state() if state is None else state
        self.result = ReplayResult(prepared.session.id, prepared.session.source, strategy.name, facts=prepared.facts)
        self.context: list[Record] = []
        self.sent_before: list[Record] = []  # the context as sent for the previous call
        self.kept_index: KeptIndex | None = None  # made at the first compaction (`workbench.replay.kept`)
        self.pointer = 0
        self.removed = self.added = 0
        self.diverged = False
        self.checker = IncrementalCheck()  # the last check, redone only where the context changed since
        self.checked: int | None = None  # the context's length at the last check (None: none made)
        # strategies replayed with this one whose triggers may fire apart from its own (`replay_group`), and
        # whether one did at the last step
        self.watch: tuple[Strategy, ...] = ()
        self.disagreed = False
        self.previous_message_id: str | None = None
        self.pending: int | None = None  # removed tokens to use from the next call on (reproduced compaction)
        # the message ids of the calls a compaction came right before: the recorded response stands in for the
        # one the model would give from the compacted context (the thinking rule's `fresh_responses`)
        self.fresh: set[str] = set()
        self.reproduced: set[int] = set()  # positions of the recorded boundaries a compaction reproduced

    def recorded_for(self, index: int) -> RecordedCompaction | None:
        """The recorded compaction a compaction before call ``index`` may reproduce: the one made right
        before it, else an automatic one made before the previous call that none of ours reproduced yet."""
        found = self.p.recorded.get(index)
        if found is None:
            late = self.p.late.get(index)
            found = late if late is not None and late.position not in self.reproduced else None
        return found

    def fork(self, strategy: Strategy, *, rows: bool = True) -> _Cursor:
        """A copy of this cursor for ``strategy``: the strategy state is deep-copied, the context lists and the
        request check (`IncrementalCheck.copy`: the copy's next check is redone only where its context
        changes) are copied, records are shared (immutable: their ``__deepcopy__`` returns them, and the engine keys
        its tables by their identity). ``rows=False`` leaves the copy's result empty (a checkpoint, whose
        rows so far are a prefix of this cursor's)."""
        clone = copy.copy(self)
        clone.strategy = strategy
        clone.state = copy.deepcopy(self.state, {id(self.p): self.p, id(self.strategy): strategy})
        clone.context = list(self.context)
        clone.sent_before = list(self.sent_before)
        clone.kept_index = self.kept_index.copy() if self.kept_index is not None else None
        clone.fresh = set(self.fresh)
        clone.reproduced = set(self.reproduced)
        if rows:
            clone.result = _relabeled(self.result, strategy)
        else:
            clone.result = ReplayResult(
                self.result.session_id, self.result.source, strategy.name, facts=self.result.facts
            )
        clone.checker = self.checker.copy()
        clone.watch, clone.disagreed = (), False
        return clone

    def step(self, index: int) -> bool:
        """Replay API call ``index``; True when the strategy compacted before it."""
        p, strategy, call = self.p, self.strategy, self.p.calls[index]
        records = p.records
        extraction = None
        if index and type(strategy).observe is not Strategy.observe:  # the base hook does nothing: no view
            # The post-sampling hook of the previous response (docs §1.3): it sees the context that was
            # sent plus that response's assistant records, not yet the tool results that followed.
            previous = p.calls[index - 1]
            response = [records[i] for i in previous.indices]
            hook_tokens = p.size.before(previous.last + 1) - self.removed + self.added
            extraction = strategy.observe(
                p.view([*self.sent_before, *response], hook_tokens, previous.step, response[-1]), self.state
            )
        appended = records[self.pointer : call.first]
        self.context.extend(appended)
        if self.kept_index is not None:
            self.kept_index.appended(appended)
        self.pointer = call.first
        none_tokens = p.size.before(call.first)
        if self.pending is not None:  # the first call after a reproduced compaction has been measured
            self.removed, self.pending = self.pending, None
        tokens = none_tokens - self.removed + self.added
        usage = p.size.usage_before(call.first)
        if usage:
            usage = max(0, usage - self.removed + self.added)
        compaction = None
        recorded = self.recorded_for(index)
        self.disagreed = False
        if not p.guarded:
            view = p.view(self.context, tokens, call.step, records[call.first], usage, recorded)
            if self.watch:
                fires = strategy.fires(view)
                self.disagreed = any(other.fires(view) != fires for other in self.watch)
            if view.recorded is not None and view.recorded.trigger == "manual":
                compaction = strategy.compact_manual(view, self.state)  # the user's /compact is input
            if compaction is None:
                compaction = strategy.compact(view, self.state)
        if compaction is not None:
            before_tokens = tokens
            dropped, new, kept = changes(self.context, compaction)
            kept_columns = self._kept(compaction, kept, call.first)
            reproduced = recorded if compaction.details.get("recorded") else None
            synced = p.size.offset_at.get(reproduced.position) if reproduced is not None else None
            if reproduced is not None and synced is not None:
                # Claude Code's own compaction reproduced: the context is the recorded one again, so its size
                # is what the recording measured: the post-compact usage now, the recorded sizes from then on.
                self.reproduced.add(reproduced.position)
                self.removed, self.added = synced, 0
                post = reproduced.post_tokens
                if post is not None:
                    self.removed, self.pending = none_tokens - post, synced
            else:
                self.removed += round(p.scale * sum(p.measure.count_many(dropped)))
                self.added += round(p.scale * sum(p.measure.count_many(new)))
            tokens = none_tokens - self.removed + self.added
            self.context = list(compaction.records)
            if call.message_id is not None:
                self.fresh.add(call.message_id)
            self.diverged = synced is None  # a reproduced compaction puts the replay back on the recording
        self.sent_before = list(self.context)
        # Every request is checked, also where nothing was compacted: the records a recording appends can
        # break an invariant themselves (an interrupted tool batch, a pair the recording lost), and a replay
        # that checked only after compactions would charge that to the first strategy that compacts.
        thinking = any(b.kind == "thinking" for i in call.indices for b in records[i].blocks)
        if len(p.messages) > MESSAGE_MEMO_PER_RECORD * len(records) + MESSAGE_MEMO_SLACK:
            p.messages.clear()  # a strategy that makes new records at every call would grow it per check
        check = check_request(
            self.context,
            thinking=thinking,
            original_thinking=p.originals,
            memo=p.messages,
            incremental=self.checker,
            fresh_responses=self.fresh,
            grown=self.checked if compaction is None else None,  # nothing compacted: the context only grew
        )
        self.checked = len(self.context)
        if compaction is not None:
            self.result.events.append(
                event_row(
                    p.session,
                    strategy,
                    call.step,
                    self.previous_message_id,
                    compaction,
                    before_tokens,
                    tokens,
                    check,
                    kept_columns,
                )
            )
        self.result.steps.append(
            {
                "session_id": p.session.id,
                "file": printable_path(p.session.source),  # a session is (id, file): copies share an id
                "strategy": strategy.name,
                "step": call.step,
                "message_id": call.message_id,
                "context_tokens": tokens,
                "tokens_without_compaction": none_tokens,
                "token_source": "estimated" if self.diverged else "recorded",
                "context_records": len(self.context),
                "compacted": compaction is not None,
                "violations": len(check.violations),
                "violation_rules": ",".join(sorted({v.rule for v in check.violations})),
                "repaired": check.repaired,
                # a session-memory extraction the hook ran before this call (its forked call, priced by cost.py)
                **(extraction.columns if isinstance(extraction, ExtractionCall) else NO_EXTRACTION),
            }
        )
        self.previous_message_id = call.message_id
        return compaction is not None

    def _kept(self, compaction: Compaction, kept: Callable[[], list[Record]], first: int) -> Columns:
        """The event's ``kept_uuids`` / ``not_kept_uuids`` (`KeptIndex.event`), before the context is
        replaced; the index is made (from the context, which is then the whole history) at the first one."""
        p = self.p
        index = self.kept_index
        if index is None:
            index = self.kept_index = KeptIndex(p.first)
            index.appended(self.context)
        return index.event(self.context, compaction, kept, lambda: p.uuids[:first], first)

    def finish(self) -> ReplayResult:
        if not self.p.strip:
            self.result.events.extend(
                recorded_events(self.p.session, self.strategy, self.p.records, self.p.calls, self.p.size)
            )
        return self.result


def _relabeled(result: ReplayResult, strategy: Strategy) -> ReplayResult:
    """``result``'s rows under ``strategy``'s name (rows are never mutated once written)."""
    out = ReplayResult(result.session_id, result.source, strategy.name, facts=result.facts)
    out.steps = [{**row, "strategy": strategy.name} for row in result.steps]
    out.events = [{**row, "strategy": strategy.name} for row in result.events]
    return out


def session_facts(session: Session) -> SessionFacts:
    """What a replay of ``session`` rests on that the recording decides (`ReplayResult.facts`, without
    replaying)."""
    return _Prepared(session, strip=True, estimator="claude-rough").facts


def replay_session(session: Session, strategy: Strategy, *, estimator: str = "claude-rough") -> ReplayResult:
    """Replay one session through ``strategy``; see the module docstring for the semantics."""
    cursor = _Cursor(_Prepared(session, strip=strategy.strips_recorded, estimator=estimator), strategy)
    try:
        for index in range(len(cursor.p.calls)):
            cursor.step(index)
        return cursor.finish()
    finally:
        release_memos()  # what the strategies remembered of this session's records (`identity_memo`)


def replay_process(
    sessions: Sequence[Session], strategy: Strategy, *, estimator: str = "claude-rough"
) -> list[ReplayResult]:
    """Replay a main session and its sub-agent transcripts as the one process they ran in.

    Each session gets its own cursor; a sub-agent's state is ``strategy.new_agent_state(main state)``, so
    whatever the strategy shares between agents (Claude Code: the module state, `workbench.strategies.
    process`) is shared. API calls are replayed in timestamp order across the sessions (a sub-agent runs
    while its parent waits for the Agent tool's result); calls without timestamps keep their file order
    after the timestamped ones of the same session. Results come back in the order of ``sessions``.
    ValueError unless exactly one session is a main session and every other is its sub-agent.
    """
    try:
        mains = [s for s in sessions if not s.is_subagent]
        if len(mains) != 1:
            raise ValueError(f"replay_process needs one main session, got {len(mains)}")
        main = mains[0]
        strangers = [s.id for s in sessions if s.is_subagent and s.parent_session_id not in (main.session_id, main.id)]
        if strangers:
            raise ValueError(f"not sub-agents of {main.id}: {', '.join(strangers)}")
        main_cursor = _Cursor(_Prepared(main, strip=strategy.strips_recorded, estimator=estimator), strategy)
        cursors = {id(main): main_cursor}
        for session in sessions:
            if session is not main:
                prepared = _Prepared(session, strip=strategy.strips_recorded, estimator=estimator)
                cursors[id(session)] = _Cursor(prepared, strategy, strategy.new_agent_state(main_cursor.state))
        walks = [cursors[id(session)] for session in sessions]

        times: list[list[str]] = []  # per session: the latest timestamp seen up to each call
        for walk in walks:
            latest, running = "", []
            for call in walk.p.calls:
                latest = max(latest, walk.p.records[call.first].timestamp or "")
                running.append(latest)
            times.append(running)

        def key(rank: int, index: int) -> tuple[str, int]:
            return (times[rank][index], rank)

        heap = [(key(rank, 0), rank, 0) for rank, walk in enumerate(walks) if walk.p.calls]
        heapq.heapify(heap)
        while heap:  # merge by time, each session's calls in their own order
            _, rank, index = heapq.heappop(heap)
            walks[rank].step(index)
            if index + 1 < len(walks[rank].p.calls):
                heapq.heappush(heap, (key(rank, index + 1), rank, index + 1))
        return [walk.finish() for walk in walks]
    finally:
        release_memos()


def replay_group(
    session: Session, strategies: Sequence[Strategy], *, estimator: str = "claude-rough"
) -> list[ReplayResult]:
    """Replay ``strategies`` over one session, sharing every stretch of calls on which they agree.

    The strategies must be *prefix-equivalent* (`workbench.strategies.prefix_key` equal): one class,
    configs differing only in its ``compaction_only`` and ``trigger_only`` keys, so they decide alike until
    a compaction or a call where their triggers disagree. The group is one branch until the first such
    call; there each strategy steps it from the state before that call, and the strategies whose steps
    come out the same (the same context, sizes, rows and strategy state: those that did not compact, or
    whose compactions kept the same) go on as one branch, to split again at their next compaction or
    disagreement (a grid whose ``max_tokens`` never binds replays each ``min_tokens`` once; triggers that
    never fire on a session replay it once). Results equal independent `replay_session` calls (tests check
    it). Raises ValueError for strategies that are not prefix-equivalent.
    """
    try:
        from ..strategies.base import prefix_key

        if not strategies:
            return []
        keys = {prefix_key(s) for s in strategies}
        if len(keys) > 1:
            raise ValueError(f"replay_group needs prefix-equivalent strategies, got {len(keys)} groups")
        prepared = _Prepared(session, strip=strategies[0].strips_recorded, estimator=estimator)
        results: list[ReplayResult | None] = [None] * len(strategies)
        # branches to walk: (the strategies' positions, the cursor of the first at call `start`, start)
        branches: list[tuple[list[int], _Cursor, int]] = [
            (list(range(len(strategies))), _Cursor(prepared, strategies[0]), 0)
        ]
        while branches:
            members, cursor, start = branches.pop()
            split = _walk_branch(cursor, start, [strategies[m] for m in members[1:]])
            if split is None:  # the branch ran to the end: every member's replay is its cursor's
                done = cursor.finish()
                for m in members:
                    results[m] = done if strategies[m] is cursor.strategy else _relabeled(done, strategies[m])
                continue
            index, classes = split
            for lead, positions in classes:
                branches.append(([members[p] for p in positions], lead, index + 1))
        assert all(r is not None for r in results)
        return [r for r in results if r is not None]
    finally:
        release_memos()


#: Calls between the copies of a branch's state that its other strategies start their compaction from.
CHECKPOINT_EVERY = 8


def _walk_branch(
    cursor: _Cursor, start: int, others: Sequence[Strategy]
) -> tuple[int, list[tuple[_Cursor, list[int]]]] | None:
    """Step ``cursor`` from call ``start`` on. With ``others`` (strategies deciding as its own does until a
    compaction or until their triggers disagree), stop at its first compaction or the first call where
    another's trigger fires apart from its own: each other steps that call from a copy of the state before
    it, and the cursors are grouped by outcome. Returns (the call, [(cursor, positions in [cursor's
    strategy, *others])]) or None when the cursor reached the end."""
    calls = len(cursor.p.calls)
    cursor.watch = _apart(cursor.strategy, others)

    def snapshot(index: int) -> tuple[int, _Cursor, int, int]:  # the rows so far are the cursor's: counted
        return index, cursor.fork(cursor.strategy, rows=False), len(cursor.result.steps), len(cursor.result.events)

    checkpoint = snapshot(start) if others else None
    for index in range(start, calls):
        if checkpoint is not None and index - checkpoint[0] >= CHECKPOINT_EVERY:
            checkpoint = snapshot(index)
        if not (cursor.step(index) or cursor.disagreed) or checkpoint is None:
            continue
        cursor.watch, cursor.disagreed = (), False
        at, saved, steps_then, events_then = checkpoint
        before = saved.fork(saved.strategy, rows=False)
        before.result.steps = cursor.result.steps[:steps_then]  # rows are never changed once written
        before.result.events = cursor.result.events[:events_then]
        for earlier in range(at, index):
            if before.step(earlier):
                raise RuntimeError(f"{cursor.strategy.name} is not deterministic: compacted at {earlier} < {index}")
        classes: list[tuple[_Cursor, list[int]]] = [(cursor, [0])]
        for position, strategy in enumerate(others, start=1):
            mine = before.fork(strategy)
            mine.step(index)
            same = next((group for lead, group in classes if _same_outcome(lead, mine)), None)
            if same is not None:
                same.append(position)
            else:
                classes.append((mine, [position]))
        return index, classes
    return None


def _apart(lead: Strategy, others: Sequence[Strategy]) -> tuple[Strategy, ...]:
    """One strategy of ``others`` per trigger (`trigger_key`) other than ``lead``'s: those whose `fires` the
    walk compares with ``lead``'s at every call."""
    if not lead.trigger_only:
        return ()
    mine, apart = trigger_key(lead), dict[str, Strategy]()
    for strategy in others:
        key = trigger_key(strategy)
        if key != mine:
            apart.setdefault(key, strategy)
    return tuple(apart.values())


def _same_outcome(a: _Cursor, b: _Cursor) -> bool:
    """Whether two cursors that stepped the same call from the same state go on alike: the same context
    (the same records; those a compaction made, equal ones), sizes, bookkeeping, rows (but for the
    strategy's name) and strategy state. Any doubt (a state that cannot be compared) says no: the two then
    replay apart, as they would alone."""
    try:
        return (
            len(a.context) == len(b.context)
            and all(x is y or x == y for x, y in zip(a.context, b.context, strict=True))  # new records: by value
            and (a.removed, a.added, a.pending, a.diverged, a.checked)
            == (b.removed, b.added, b.pending, b.diverged, b.checked)
            and a.fresh == b.fresh
            and a.reproduced == b.reproduced
            and _same_kept(a.kept_index, b.kept_index)
            and len(a.result.steps) == len(b.result.steps)
            and len(a.result.events) == len(b.result.events)
            and _same_row(a.result.steps[-1], b.result.steps[-1])
            and all(_same_row(x, y) for x, y in zip(a.result.events, b.result.events, strict=True))
            and bool(a.state == b.state)
        )
    except Exception:  # a state whose comparison fails is simply not shared
        return False


def _same_kept(a: KeptIndex | None, b: KeptIndex | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.count == b.count and a.absent == b.absent


def _same_row(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    return all(a[k] is b[k] or bool(a[k] == b[k]) for k in a if k != "strategy")
