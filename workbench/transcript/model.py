"""Canonical, lossless transcript model.

A `Record` is one line (or item) of a recorded transcript, a `Session` the ordered records of one
conversation, a `Corpus` a lazy iterable of sessions. They are immutable value objects: loaders build
them, strategies derive new ones with `Record.with_blocks` / `dataclasses.replace`, nothing mutates.

Streaming splits stay as they were recorded: Claude Code writes one streamed API response as several
`assistant` lines that share `message.id` (docs §7.4); each is its own Record,
in file order, exactly like Claude Code's in-memory message array.

No strategy logic lives here.
"""

from __future__ import annotations

import hashlib
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .block import BLOCK_KINDS, Block, canonical_json

#: Upper bound of a credible token count in one API call (windows are 1-2 M tokens today).
MAX_TOKENS = 10**9


def credible_count(value: Any) -> int | None:
    """``value`` as a credible token count (an integer ``0 <= n <= MAX_TOKENS``; an integral float is that
    integer), else None: NaN, infinity, ``10**30``, negatives, booleans and strings are not counts."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_TOKENS else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and 0 <= value <= MAX_TOKENS:
        return int(value)
    return None


def is_count_key(key: Any) -> bool:
    """``compactMetadata`` keys that hold token counts (``preTokens``, ``postTokens``, ``tokensSaved``)."""
    return isinstance(key, str) and key.endswith(("Tokens", "tokensSaved"))


__all__ = [
    "BLOCK_KINDS",
    "Block",
    "Corpus",
    "Record",
    "Session",
    "Skip",
    "canonical_json",
]

RecordKind = str  # the transcript line's ``type``: user, assistant, system, progress, summary, …


@dataclass(frozen=True, slots=True)
class Record:
    """One transcript line (or one item of another format), with the fields compaction needs.

    ``blocks`` is the message content as blocks. A user message recorded with *string* content has a
    single text block and ``string_content=True``: the two Claude Code estimators treat string and array
    content differently (docs §3.4 vs §6), so the distinction is kept.

    ``line`` is the exact source text of the line (without its newline) and ``raw`` its parsed JSON (a
    read-only Mapping; for a Claude Code line a `line_raw.LineRaw`, decoded again from ``line`` when read);
    ``modified`` is False only while the record is byte-for-byte what was loaded.
    """

    kind: RecordKind
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    role: str | None = None
    blocks: tuple[Block, ...] = ()
    string_content: bool = False
    has_content: bool = False
    usage: Mapping[str, Any] | None = None
    timestamp: str | None = None
    model: str | None = None
    subtype: str | None = None
    agent_id: str | None = None
    is_sidechain: bool = False
    is_meta: bool = False
    is_compact_summary: bool = False
    is_visible_in_transcript_only: bool = False
    is_api_error: bool = False
    stop_reason: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    line: str | None = field(default=None, compare=False, repr=False)
    source: str | None = field(default=None, compare=False, repr=False)
    line_no: int | None = None
    modified: bool = False
    _key: str | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------------ derived views
    @property
    def is_message(self) -> bool:
        """A user or assistant conversation message."""
        return self.kind in ("user", "assistant")

    @property
    def is_compact_boundary(self) -> bool:
        return self.kind == "system" and self.subtype == "compact_boundary"

    @property
    def is_microcompact_boundary(self) -> bool:
        """Claude Code's record of a microcompact (``microcompact_boundary``, 2.1.x): tool results cleared in
        place. Not an API message and not a chain break: the conversation around it stays (docs §3.5)."""
        return self.kind == "system" and self.subtype == "microcompact_boundary"

    @property
    def microcompact_metadata(self) -> Mapping[str, Any]:
        """``microcompactMetadata`` as recorded (``trigger``, ``preTokens``, ``tokensSaved``,
        ``compactedToolIds``, ``clearedAttachmentUUIDs``); empty when absent or not an object."""
        value = self.raw.get("microcompactMetadata")
        return value if isinstance(value, Mapping) else {}

    def tool_uses(self) -> list[Block]:
        return [b for b in self.blocks if b.kind == "tool_use"]

    def tool_results(self) -> list[Block]:
        return [b for b in self.blocks if b.kind == "tool_result"]

    def tool_use_ids(self) -> list[str]:
        return [b.id for b in self.blocks if b.kind == "tool_use" and b.id is not None]

    def tool_result_ids(self) -> list[str]:
        return [b.tool_use_id for b in self.blocks if b.kind == "tool_result" and b.tool_use_id is not None]

    @property
    def text(self) -> str:
        """Concatenated text of the text blocks (newline separated)."""
        return "\n".join(b.text for b in self.blocks if b.kind == "text")

    @property
    def has_text_blocks(self) -> bool:
        """Claude Code's ``hasTextBlocks`` (docs §2.2)."""
        if self.kind == "assistant":
            return any(b.kind == "text" for b in self.blocks)
        if self.kind == "user":
            if self.string_content:
                return bool(self.blocks and self.blocks[0].text)
            return any(b.kind == "text" for b in self.blocks)
        return False

    @property
    def compact_metadata(self) -> Mapping[str, Any]:
        """``compactMetadata`` as recorded, less any token count (``preTokens``, ``postTokens``, ...) that is
        not a credible one (`credible_count`): treated as missing, as in ``usage`` (`workbench.transcript.
        sanitize` warns about it at load)."""
        value = self.raw.get("compactMetadata")
        if not isinstance(value, Mapping):
            return {}
        if all(credible_count(v) is not None for k, v in value.items() if is_count_key(k)):
            return value
        return {k: v for k, v in value.items() if not is_count_key(k) or credible_count(v) is not None}

    @property
    def content_key(self) -> str:
        """A content hash of the record: of its exact source line while unmodified (cheap: no
        re-serialisation), else of kind, role and content."""
        if self._key is None:  # memoised: records are immutable
            if not self.modified and self.line is not None:
                key = _hash(self.line)
            else:
                key = _hash(f"{self.kind}\x00{self.role}\x00{self.string_content}\x00{self.content_json()}")
            object.__setattr__(self, "_key", key)
        return self._key  # type: ignore[return-value]

    def content_json(self) -> str:
        if self.string_content and self.blocks:
            return canonical_json(self.blocks[0].text)
        return canonical_json([dict(b.raw) for b in self.blocks])

    def message_content(self) -> str | list[dict[str, Any]]:
        """The content as the API sees it: a string or a list of block dicts."""
        if self.string_content and self.blocks:
            return self.blocks[0].text
        return [dict(b.raw) for b in self.blocks]

    # ------------------------------------------------------------------ derivation
    def with_blocks(self, blocks: Iterable[Block], *, string_content: bool = False) -> Record:
        """A modified copy with new content blocks (the raw line no longer applies)."""
        return replace(
            self, blocks=tuple(blocks), string_content=string_content, has_content=True, modified=True, _key=None
        )

    def to_json(self) -> dict[str, Any]:
        """The record as a transcript JSON object (the raw object, content replaced if modified)."""
        if not self.modified:
            return dict(self.raw)
        out: dict[str, Any] = dict(self.raw) if self.raw else {"type": self.kind, "uuid": self.uuid}
        if self.kind in ("user", "assistant"):
            message = dict(out.get("message") or {"role": self.role})
            message["content"] = self.message_content()
            out["message"] = message
        return out

    def to_line(self) -> str:
        if not self.modified and self.line is not None:
            return self.line
        return canonical_json(self.to_json())

    def __deepcopy__(self, memo: dict[int, Any]) -> Record:
        return self  # immutable: a replay fork shares records

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as a call of `_restore_record` with every field, in order (the parsed-session cache holds
        millions of records). The default of a frozen slots dataclass, ``_dataclass_setstate``, walks
        ``fields()`` for every object it restores (three times as slow to load as the constructor), and the
        constructor sets each field by name through ``object.__setattr__`` (2.3x as slow as `_restore_record`
        on the 8x corpus's 71,360 records)."""
        return _restore_record, _record_fields(self)


#: Every field of a Record in constructor order (all are ``init`` fields), read as one tuple.
_record_fields = operator.attrgetter(*(f.name for f in fields(Record)))


def _record_restorer() -> Callable[..., Record]:
    """``_restore_record(*fields)``: a Record with these field values, made without ``__init__``: a new
    object whose slots are set by their descriptors, one line per field (generated like the dataclass's own
    ``__init__``, which goes through ``object.__setattr__`` by name instead). Only for values a Record
    already had (pickling): nothing is validated or defaulted."""
    names = [f.name for f in fields(Record)]
    assert set(names) == set(Record.__slots__), "every slot is a field"
    body = "".join(f"    set_{name}(record, {name})\n" for name in names)
    source = f"def _restore_record({', '.join(names)}):\n    record = new(Record)\n{body}    return record\n"
    namespace: dict[str, Any] = {"new": object.__new__, "Record": Record}
    namespace.update({f"set_{name}": getattr(Record, name).__set__ for name in names})
    exec(source, namespace)  # generated from the field names above, nothing else
    restore: Callable[..., Record] = namespace["_restore_record"]
    restore.__module__, restore.__qualname__ = __name__, "_restore_record"  # what pickle names
    return restore


_restore_record = _record_restorer()


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Skip:
    """A source line that could not become a Record, and why. ``data`` keeps its bytes for export."""

    file: str
    line: int
    reason: str
    data: bytes = field(default=b"", repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weak references: memos that must not keep it alive
class Session:
    """The ordered records of one conversation plus what is known about where it came from.

    ``id`` is unique within a corpus: the recorded ``sessionId`` for a main session, and
    ``<parent sessionId>/agent-<agentId>`` for a sub-agent transcript (whose records carry the
    parent's ``sessionId``). ``capabilities`` says what the format records (``message_ids``, ``usage``,
    ``thinking``, …) so metrics can answer "not available" instead of inventing a value.
    """

    id: str
    records: tuple[Record, ...]
    source: str | None = None
    format: str = "unknown"
    session_id: str | None = None
    parent_session_id: str | None = None
    agent_id: str | None = None
    models: tuple[str, ...] = ()
    client_version: str | None = None
    skipped: tuple[Skip, ...] = ()
    lines: int = 0
    trailing_newline: bool = True
    capabilities: frozenset[str] = frozenset()
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    _fingerprint: str | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def is_subagent(self) -> bool:
        return self.agent_id is not None

    @property
    def is_inline(self) -> bool:
        """A view of lines another session's file owns (v1.0.x inline sub-agent chains): export, round trip
        and line totals count those lines once, in the owning session."""
        return bool(self.metadata.get("inline_in"))

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def conversation(self) -> list[Record]:
        """The records on this session's own chain: main-thread records of a main session (older
        Claude Code versions wrote sub-agent ``isSidechain`` lines into the main file), all of a
        sub-agent transcript."""
        return [r for r in self.records if r.is_sidechain == self.is_subagent]

    def with_records(self, records: Iterable[Record]) -> Session:
        return replace(self, records=tuple(records))

    @property
    def fingerprint(self) -> str:
        """Content hash of the session's lines, stable across machines and paths (memoised: a sweep
        names every cell by it)."""
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=16)
            for record in self.records:
                digest.update(record.to_line().encode("utf-8", "surrogatepass"))
                digest.update(b"\n")
            object.__setattr__(self, "_fingerprint", digest.hexdigest())
        return self._fingerprint  # type: ignore[return-value]


class Corpus:
    """A lazy, re-iterable collection of sessions (loading happens on iteration)."""

    def __init__(self, factory: Callable[[], Iterable[Session]], *, description: str = "") -> None:
        self._factory = factory
        self.description = description

    @classmethod
    def of(cls, sessions: Iterable[Session]) -> Corpus:
        items = tuple(sessions)
        return cls(lambda: items, description=f"{len(items)} sessions")

    def __iter__(self) -> Iterator[Session]:
        return iter(self._factory())

    def sessions(self) -> list[Session]:
        return list(self)

    def __repr__(self) -> str:
        return f"Corpus({self.description!r})"
