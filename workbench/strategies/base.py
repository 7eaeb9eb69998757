"""The strategy interface: a frozen validated config plus pure decisions over a context view.

A strategy never does I/O and never mutates what it is given. The replay engine asks it, before each
API call, whether and how to compact (`Strategy.compact`), and tells it after each recorded response
(`Strategy.observe`) so it can keep its own state (e.g. the session-memory extraction trigger). State is
a strategy-owned object created by `Strategy.new_state`; the engine keeps one per replayed session, so
a sub-agent transcript replayed on its own never shares state with its parent. Claude Code's module state
is per process (docs §1.2), shared by the main thread and its sub-agents: `workbench.replay.replay_process`
replays them together and `Strategy.new_agent_state` lets a strategy share what the process shares.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, PlainSerializer, SerializerFunctionWrapHandler, model_serializer

from ..transcript.model import Record, canonical_json

__all__ = [
    "Compaction",
    "ContextView",
    "NameSet",
    "RecordedCompaction",
    "Strategy",
    "StrategyConfig",
    "config_hash",
    "for_window",
    "prefix_key",
    "trigger_key",
]


#: A set of names in a config. Serialised to JSON sorted: a frozenset iterates in hash order, which
#: changes between processes, and config hashes / cell ids / ``--json`` output must not.
NameSet = Annotated[frozenset[str], PlainSerializer(sorted, return_type=list[str], when_used="json")]


class StrategyConfig(BaseModel):
    """Base for every strategy config: frozen, unknown keys rejected, values validated.

    Some fields, left unset, are resolved at each call from the recording (`resolved_when_unset`: a
    ``context_window`` field takes the window the recording proves, `for_window`; a trigger takes its
    version's constants, `workbench.strategies.triggers.for_version`). A dump leaves those out unless they
    were set, so a config written out (a sweep's ``config_json``, a cell's identity) and read back resolves
    as the original did: writing ``context_window: 200000`` would pin a 1M-window session to 200k.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
    #: Fields resolved at each call when not set (besides ``context_window``, which always is).
    resolved_when_unset: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _without_unset_resolved(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        auto = self.resolved_when_unset | ({"context_window"} if "context_window" in type(self).model_fields else set())
        return {k: v for k, v in data.items() if k not in auto or k in self.model_fields_set}


C = TypeVar("C", bound=StrategyConfig)


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction Claude Code really made just before the API call a view is built for.

    ``boundary``/``summary`` are the recorded ``compact_boundary`` and ``isCompactSummary`` records;
    ``position`` where the boundary stood in the replayed (stripped) record list; ``tail`` how many of
    the view's last records were written after the boundary (they were sent after the compaction, so a
    reproduction keeps them); ``post_tokens`` the prompt size of the first recorded API call after it
    (the post-compact usage), None when the session ends first.
    """

    boundary: Record
    summary: Record | None
    position: int
    tail: int
    post_tokens: int | None

    @property
    def trigger(self) -> str | None:
        value = self.boundary.compact_metadata.get("trigger")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ContextView:
    """What the agent would send before one API call, as the engine sees it.

    ``records`` is the current (possibly already compacted) context; ``tokens`` the engine's estimate of
    its size (``claude-context`` semantics, see `workbench.replay`); ``padded``/``rough`` per-record
    counts aligned with ``records`` (computed on first access: most calls never need them).
    ``usage_tokens`` is ``tokenCountFromLastAPIResponse`` of the same context (the last response's usage
    total; 0 before any response, None for formats without usage); ``version`` the Claude Code version
    that made the call (None when not recorded); ``window`` the context window the recording proves
    (1M when a recorded request exceeded 200k), None otherwise; ``recorded`` the compaction Claude Code
    made right before this call, if any (``summarizer=recorded`` reproduces it).
    """

    records: tuple[Record, ...]
    tokens: int
    rough: Sequence[int]
    padded: Sequence[int]
    step: int
    timestamp: str | None = None
    model: str | None = None
    is_subagent: bool = False
    usage_tokens: int | None = None
    version: str | None = None
    window: int | None = None
    recorded: RecordedCompaction | None = None


@dataclass(frozen=True)
class Compaction:
    """One compaction decision: the new context and what it cost.

    ``start``/``naive_start`` are indices into the context the strategy was given: records
    ``[start, len)`` were kept verbatim (``naive_start`` is where the strategy's window alone would
    have cut, before any API-invariant adjustment). ``added`` are the records the compaction created
    (boundary, summary, …) and ``records`` the full new context. ``changed_at``, when not None, says the
    compaction replaced only the records at those positions (ascending; ``records`` has the given context's
    length and the same record objects everywhere else: `workbench.strategies.rewrite.in_place`), so the
    engine reads what changed there instead of comparing the whole context.
    """

    kind: str
    trigger: str
    records: tuple[Record, ...]
    dropped: tuple[str | None, ...]
    added: tuple[Record, ...] = ()
    start: int | None = None
    naive_start: int | None = None
    summary: str | None = None
    fallbacks: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    changed_at: tuple[int, ...] | None = None


class Strategy:
    """Base class. Subclasses set ``name``, ``description``, ``Config`` and implement `compact`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: What the strategy models: the repository (or document), file and version or commit its constants
    #: come from, e.g. ``openai/codex codex-rs/core/src/compact.rs @ rust-v0.58.0``. A strategy of the
    #: workbench's own design says so (``workbench (own design): ...``).
    source: ClassVar[str] = ""
    unsafe: ClassVar[bool] = False
    #: Which compaction kinds this strategy can emit; the replay engine keeps its records intact.
    strips_recorded: ClassVar[bool] = True
    #: Config keys (dotted for nested configs) that only shape *what* a compaction keeps or writes, never
    #: whether or when one happens nor the state before it; `workbench.replay.replay_group` shares the
    #: replay prefix across configs that differ only in these.
    compaction_only: ClassVar[frozenset[str]] = frozenset()
    #: Config keys (dotted) that decide only *whether* the automatic compaction fires at a call, through
    #: `fires`, and what a compaction keeps, never the state between compactions: `replay_group` also shares
    #: the replay across configs that differ in these, splitting at the first call where their `fires`
    #: disagree. A class that declares any implements `fires`.
    trigger_only: ClassVar[frozenset[str]] = frozenset()
    Config: ClassVar[type[StrategyConfig]] = StrategyConfig

    def __init__(self, config: StrategyConfig | dict[str, Any] | None = None) -> None:
        if config is None:
            config = self.Config()
        elif isinstance(config, dict):
            config = self.Config(**config)
        elif not isinstance(config, self.Config):
            raise TypeError(f"{self.name} expects a {self.Config.__name__}, got {type(config).__name__}")
        self.config = config

    def new_state(self) -> Any:
        return None

    def new_agent_state(self, parent: Any) -> Any:
        """State for a sub-agent running in the same process as the agent whose state is ``parent``
        (`workbench.replay.replay_process`). Default: independent state, as if in its own process."""
        return self.new_state()

    def observe(self, view: ContextView, state: Any) -> Any:
        """Called after each recorded response has been appended (post-sampling hook position).

        Returns None, or the `workbench.memory.fork.ExtractionCall` of a session-memory extraction the
        hook ran (Claude Code's forked call, docs §1.3): the engine records it on the step row of the next
        call, where `workbench.metrics.memory_cost` prices it. A class that keeps this no-op is not
        called, and the engine builds no view for it.
        """
        return None

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        raise NotImplementedError

    def fires(self, view: ContextView) -> bool:
        """Whether the automatic trigger fires before this call (asked of classes with ``trigger_only``;
        `compact` decides with it, so the two cannot drift apart)."""
        raise NotImplementedError(f"{type(self).__name__} declares no trigger_only keys")

    def compact_manual(self, view: ContextView, state: Any) -> Compaction | None:
        """The user ran ``/compact`` before this call (a recorded manual compaction). Strategies that model
        Claude Code's command compact here whatever the size; the default ignores it."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"


def for_window(config: C, view: ContextView) -> C:
    """``config`` with ``context_window`` set to the window the recording proves (`ContextView.window`: 1M when
    a recorded request exceeded 200k), when the config has that field and it was not set explicitly. A peer
    runs against its model's window; 200k is only the default for a model whose window the recording does
    not show, and thresholds of a 200k window on a 1M session fire at a fifth of the real size."""
    window = view.window
    fields = type(config).model_fields
    if window is None or "context_window" not in fields or "context_window" in config.model_fields_set:
        return config
    return config.model_copy(update={"context_window": window})


def dropped_uuids(records: Sequence[Record]) -> tuple[str | None, ...]:
    return tuple(r.uuid for r in records)


def config_hash(strategy: str, config: Mapping[str, Any] | None) -> str:
    """Content hash of (strategy name, resolved config): 12 hex digits, stable across machines (the
    ``config_hash`` column of every result; `workbench.metrics` re-exports it)."""
    text = canonical_json({"strategy": strategy, "config": dict(config or {})})
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _without(config: dict[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    for path in paths:
        node = config
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(leaf, None)
    return config


def prefix_key(strategy: Strategy) -> str:
    """Strategies with equal keys decide identically until their first compaction or the first call where
    their triggers disagree (`trigger_key`): same class, same config except the class's ``compaction_only``
    and ``trigger_only`` keys (dotted paths into nested configs)."""
    config = _without(strategy.config.model_dump(mode="json"), strategy.compaction_only | strategy.trigger_only)
    return f"{type(strategy).__module__}.{type(strategy).__qualname__}:{json.dumps(config, sort_keys=True)}"


def trigger_key(strategy: Strategy) -> str:
    """The values of ``strategy``'s ``trigger_only`` keys: prefix-equivalent strategies with equal keys fire
    alike at every call (`replay_group` asks `Strategy.fires` only of those whose key differs)."""
    config = strategy.config.model_dump(mode="json")
    values = {path: _value(config, path) for path in sorted(strategy.trigger_only)}
    return json.dumps(values, sort_keys=True)


def _value(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node
