"""Claude Code JSONL transcripts (``~/.claude/projects/<cwd>/<session>.jsonl``).

Every line becomes a `Record` (conversation lines ``user``/``assistant``/``system``/``attachment`` and
metadata lines such as ``file-history-snapshot``, ``progress``, ``summary``, ``queue-operation``) or a
`Skip` naming file, line and reason. Nothing is reordered: streamed responses split into several
``assistant`` lines sharing ``message.id`` stay separate, in file order (docs §7.4). A ``system`` line of any
subtype is a known record (``compact_boundary``, ``local_command``, ``microcompact_boundary`` with its
``microcompactMetadata``, `Record.microcompact_metadata`, …); only ``local_command`` is ever sent to the API.

Sub-agent transcripts live at ``<session>/subagents/agent-<id>.jsonl`` (docs §7.1); their records carry
the parent's ``sessionId`` and their own ``agentId``, so the Session gets id
``<parent>/agent-<agentId>`` and ``parent_session_id`` from the folder (or the records' ``sessionId``).

Claude Code v1.0.x wrote sub-agent turns *inline* in the main file instead (``isSidechain: true``, no
``agentId``). `inline_sidechain_sessions` builds each such chain into its own sub-agent session, replayed
and priced like a file-based one: the chain is the sidechain records linked by ``parentUuid`` (its root is
the sidechain record whose parent is not a sidechain record, usually ``null``: the Task prompt), the id is
``<parent>/agent-<first 8 characters of the root uuid>`` (longer if two roots of a file share them), and
``metadata["inline_in"]`` names the main session. The main session keeps every line of the file (its
`Session.conversation` leaves the sidechain records out), so it still exports byte-identical and
``lines == records + skipped`` holds over the file; an inline session is a view of lines its main session
owns (``lines`` = its records, `Session.is_inline`), which export and ``ingest`` line totals skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .files import read_lines
from .jsonio import BadInput, decode_line
from .line_raw import LineRaw
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = [
    "CHAIN_TYPES",
    "KNOWN_TYPES",
    "ClaudeCodeLoader",
    "Interner",
    "inline_sidechain_sessions",
    "parse_line",
    "record_from_json",
]

#: Conversation ("chain") entries, docs §7.2.
CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment"})
#: Every entry type Claude Code v2.1.88 writes or reads (docs §7.2), plus legacy ``progress`` and the
#: ``permission-mode`` lines of later versions.
KNOWN_TYPES = CHAIN_TYPES | frozenset(
    {
        "progress",
        "summary",
        "custom-title",
        "ai-title",
        "last-prompt",
        "task-summary",
        "tag",
        "agent-name",
        "agent-color",
        "agent-setting",
        "pr-link",
        "mode",
        "worktree-state",
        "file-history-snapshot",
        "attribution-snapshot",
        "queue-operation",
        "permission-mode",
        "speculation-accept",
        "content-replacement",
        "marble-origami-commit",
        "marble-origami-snapshot",
    }
)
CAPABILITIES = frozenset({"uuids", "message_ids", "usage", "timestamps", "thinking", "compact_boundaries"})


class LineError(ValueError):
    """A line that cannot become a Record; the message is the reason reported in the Skip."""


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


#: Fields whose values repeat on every line of a file (ids of the session, the working folder, the
#: client version, ...): `Interner` makes the records of one file share one string for each value.
_SHARED_FIELDS = ("type", "sessionId", "cwd", "version", "gitBranch", "userType", "entrypoint", "slug", "agentId")
_SHARED_MESSAGE_FIELDS = ("role", "type", "model", "stop_reason")


class Interner:
    """Makes the records of one file share the strings that repeat on every line (`_SHARED_FIELDS`, and a
    ``parentUuid`` equal to the previous line's ``uuid``): a few hundred bytes less per record (10⁶ tiny
    lines: 142 MB less), values unchanged (equal strings; the raw dicts stay equal to the parsed ones)."""

    __slots__ = ("_seen", "previous_uuid")

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}
        self.previous_uuid: Any = None

    def __call__(self, obj: dict[str, Any]) -> None:
        seen = self._seen
        for key in _SHARED_FIELDS:
            value = obj.get(key)
            if type(value) is str:
                obj[key] = seen.setdefault(value, value)
        message = obj.get("message")
        if type(message) is dict:
            for key in _SHARED_MESSAGE_FIELDS:
                value = message.get(key)
                if type(value) is str:
                    message[key] = seen.setdefault(value, value)
        parent, previous = obj.get("parentUuid"), self.previous_uuid
        if parent is not None and parent == previous:  # the common chain: parent = the line before
            obj["parentUuid"] = previous
        self.previous_uuid = obj.get("uuid")


def record_from_json(
    obj: Any,
    *,
    line: str | None = None,
    source: str | None = None,
    line_no: int | None = None,
    intern: Interner | None = None,
) -> Record:
    """Build a Record from one parsed transcript object; raises `LineError` with the reason."""
    if not isinstance(obj, dict):
        raise LineError(f"expected a JSON object, found {type(obj).__name__}")
    if intern is not None:
        intern(obj)
    kind = obj.get("type")
    if not isinstance(kind, str) or not kind:
        raise LineError("missing 'type' field")
    message = obj.get("message")
    blocks: tuple[Block, ...] = ()
    string_content = has_content = False
    role = message_id = model = stop_reason = None
    usage = None
    if kind in ("user", "assistant"):
        if not isinstance(message, Mapping):
            raise LineError(f"{kind} record without a 'message' object")
        content = message.get("content")
        if isinstance(content, str):
            blocks, string_content = (Block.text_block(content),), True
        elif isinstance(content, list):
            blocks = tuple(Block.from_raw(b) for b in content)
        else:
            raise LineError(f"{kind} message content must be a string or a list, found {type(content).__name__}")
        has_content = True
        role = _str(message.get("role")) or kind
        message_id = _str(message.get("id"))
        model = _str(message.get("model"))
        stop_reason = _str(message.get("stop_reason"))
        raw_usage = message.get("usage")
        usage = raw_usage if isinstance(raw_usage, Mapping) else None
    elif kind == "system" and isinstance(obj.get("content"), str):
        blocks, string_content = (Block.text_block(obj["content"]),), True
    return Record(
        kind=kind,
        uuid=_str(obj.get("uuid")),
        parent_uuid=_str(obj.get("parentUuid")),
        logical_parent_uuid=_str(obj.get("logicalParentUuid")),
        session_id=_str(obj.get("sessionId")),
        message_id=message_id,
        role=role,
        blocks=blocks,
        string_content=string_content,
        has_content=has_content,
        usage=usage,
        timestamp=_str(obj.get("timestamp")),
        model=model,
        subtype=_str(obj.get("subtype")),
        agent_id=_str(obj.get("agentId")),
        is_sidechain=bool(obj.get("isSidechain")),
        is_meta=bool(obj.get("isMeta")),
        is_compact_summary=bool(obj.get("isCompactSummary")),
        is_visible_in_transcript_only=bool(obj.get("isVisibleInTranscriptOnly")),
        is_api_error=bool(obj.get("isApiErrorMessage")),
        stop_reason=stop_reason,
        raw=obj if line is None else LineRaw.of(line, obj),  # the line, decoded again if read (line_raw)
        line=line,
        source=source,
        line_no=line_no,
    )


def parse_line(data: bytes, *, source: str, line_no: int, intern: Interner | None = None) -> Record | Skip:
    """One physical line (without its ``\\n``) to a Record, or a Skip with the reason."""
    try:
        obj, text = decode_line(data)
    except BadInput as exc:
        return Skip(source, line_no, exc.reason, data)
    try:
        return record_from_json(obj, line=text, source=source, line_no=line_no, intern=intern)
    except LineError as exc:
        return Skip(source, line_no, str(exc), data)


def split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Physical lines of a file and whether it ended with a newline (kept for byte-exact export)."""
    if not data:
        return [], True
    parts = data.split(b"\n")
    trailing = parts[-1] == b""
    if trailing:
        parts.pop()
    return parts, trailing


def _query_source(agent_id: str | None) -> str:
    """Which loop wrote the transcript: the compaction agent's own call (``agent-acompact-*``, Claude
    Code's ``querySource: 'compact'``), another sub-agent, or the main REPL thread."""
    if agent_id is None:
        return "repl_main_thread"
    return "compact" if agent_id.startswith("acompact") else "agent"


def inline_sidechain_sessions(main: Session) -> list[Session]:
    """The v1.0.x sub-agent chains written inline in a main session's file, one sub-agent session each."""
    if main.is_subagent:
        return []
    side = [r for r in main.records if r.is_sidechain]
    if not side:
        return []
    by_uuid = {r.uuid: r for r in side if r.uuid}
    roots: dict[int, Record] = {}

    def root_of(record: Record) -> Record:
        seen: set[str] = set()
        while record.parent_uuid in by_uuid and record.parent_uuid not in seen:
            seen.add(record.parent_uuid)
            record = by_uuid[record.parent_uuid]
        return record

    chains: dict[int, list[Record]] = {}
    for record in side:
        root = root_of(record)
        roots[id(root)] = root
        chains.setdefault(id(root), []).append(record)
    names: dict[int, str] = {}
    for key, root in roots.items():
        full = (root.uuid or f"line{root.line_no}").replace("-", "")
        others = [(r.uuid or "").replace("-", "") for k, r in roots.items() if k != key]
        width = 8
        while any(other[:width] == full[:width] for other in others):
            width += 4
            if width >= len(full):
                break
        names[key] = full[:width]
    sessions = []
    for key, chain in chains.items():
        models = tuple(dict.fromkeys(r.model for r in chain if r.model and r.model != "<synthetic>"))
        sessions.append(
            Session(
                id=f"{main.id}/agent-{names[key]}",
                records=tuple(chain),
                source=main.source,
                format="claude-code",
                session_id=main.session_id,
                parent_session_id=main.id,
                agent_id=names[key],
                models=models or main.models,
                client_version=main.client_version,
                lines=len(chain),
                trailing_newline=main.trailing_newline,
                capabilities=main.capabilities,
                metadata={"query_source": "agent", "inline_in": main.id},
            )
        )
    return sessions


class ClaudeCodeLoader:
    """Claude Code session transcripts: one session per ``.jsonl`` file."""

    name = "claude-code"
    suffixes = (".jsonl",)

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0].lstrip()
        if not first.startswith(b"{"):
            return False
        # Chain lines begin with parentUuid (docs §7.3); metadata lines with their type.
        return first.startswith((b'{"parentUuid"', b'{"type"', b'{"leafUuid"', b'{"sessionId"')) or (
            b'"sessionId"' in head and b'"type"' in head
        )

    def load(self, path: Path) -> list[Session]:
        source = str(path)
        lines: list[bytes | None]
        lines, trailing = read_lines(path)  # type: ignore[assignment]  # capped; an over-long line is a skip
        records: list[Record] = []
        skipped: list[Skip] = []
        intern = Interner()
        for index in range(len(lines)):
            chunk, lines[index] = lines[index], None  # each line's bytes are freed once it is a Record
            item = parse_line(chunk, source=source, line_no=index + 1, intern=intern)  # type: ignore[arg-type]
            (skipped if isinstance(item, Skip) else records).append(item)  # type: ignore[arg-type]
        main = self._session(path, records, skipped, len(lines), trailing)
        return [main, *inline_sidechain_sessions(main)]

    @staticmethod
    def _session(path: Path, records: list[Record], skipped: list[Skip], n_lines: int, trailing: bool) -> Session:
        session_id = next((r.session_id for r in records if r.session_id), None)
        agent_id = None
        if path.name.startswith("agent-") or (records and all(r.is_sidechain for r in records if r.is_message)):
            agent_id = next((r.agent_id for r in records if r.agent_id), None) or path.stem.removeprefix("agent-")
        parent = None
        if agent_id is not None:
            parent = path.parent.parent.name if path.parent.name == "subagents" else session_id
        models = tuple(dict.fromkeys(r.model for r in records if r.model and r.model != "<synthetic>"))
        version = next((_str(r.raw.get("version")) for r in records if r.raw.get("version")), None)
        base = parent if agent_id is not None else session_id
        sid = f"{base or path.stem}/agent-{agent_id}" if agent_id is not None else (session_id or path.stem)
        unknown = sorted({r.kind for r in records} - KNOWN_TYPES)
        return Session(
            id=sid,
            records=tuple(records),
            source=str(path),
            format="claude-code",
            session_id=session_id,
            parent_session_id=parent,
            agent_id=agent_id,
            models=models,
            client_version=version,
            skipped=tuple(skipped),
            lines=n_lines,
            trailing_newline=trailing,
            capabilities=CAPABILITIES,
            metadata={"query_source": _query_source(agent_id), **({"unknown_types": unknown} if unknown else {})},
        )


register(ClaudeCodeLoader())
