"""Anthropic Messages API requests: ``{"model", "system", "messages", ...}`` as JSON, or JSONL of them.

Each request becomes one Session whose records are its messages, in order. The format has no uuids,
message ids, usage or timestamps; records get positional uuids (``<request>:<index>``) so keep windows
can name them, and the Session's ``capabilities`` say what is missing so metrics that need it report
"not available". The request's other fields (system, tools, max_tokens, thinking …) are kept in
``Session.metadata["request"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .claude_code import LineError
from .files import read_document, read_lines
from .jsonio import BadInput, decode_json_document, decode_json_line, unreadable_session
from .model import Block, Record, Session, Skip, canonical_json
from .registry import register

__all__ = ["AnthropicMessagesLoader", "session_from_request"]

FORMAT = "anthropic-messages"


def _records(request: dict[str, Any], source: str, prefix: str) -> tuple[list[Record], list[Skip]]:
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise LineError("request has no 'messages' list")
    records: list[Record] = []
    skipped: list[Skip] = []
    for index, message in enumerate(messages):
        where = f"{prefix}messages.{index}"
        if not isinstance(message, dict):
            skipped.append(Skip(source, index + 1, f"{where}: expected an object"))
            continue
        role = message.get("role")
        content = message.get("content")
        if role not in ("user", "assistant"):
            skipped.append(Skip(source, index + 1, f"{where}: role must be 'user' or 'assistant', found {role!r}"))
            continue
        blocks: tuple[Block, ...]
        if isinstance(content, str):
            blocks, string_content = (Block.text_block(content),), True
        elif isinstance(content, list):
            blocks, string_content = tuple(Block.from_raw(b) for b in content), False
        else:
            skipped.append(Skip(source, index + 1, f"{where}: content must be a string or a list"))
            continue
        records.append(
            Record(
                kind=role,
                uuid=f"{prefix}{index}",
                role=role,
                blocks=blocks,
                string_content=string_content,
                has_content=True,
                model=request.get("model") if role == "assistant" else None,
                raw={"type": role, "message": message},
                line=None,
                source=source,
                line_no=index + 1,
            )
        )
    return records, skipped


def session_from_request(request: Any, *, source: str, session_id: str) -> Session:
    if not isinstance(request, dict):
        raise LineError(f"expected a request object, found {type(request).__name__}")
    records, skipped = _records(request, source, "" if ":" in session_id else f"{session_id}:")
    model = request.get("model")
    return Session(
        id=session_id,
        records=tuple(records),
        source=source,
        format="anthropic-messages",
        session_id=session_id,
        models=(model,) if isinstance(model, str) else (),
        skipped=tuple(skipped),
        lines=len(records) + len(skipped),
        capabilities=frozenset({"thinking"}),
        metadata={"request": {k: v for k, v in request.items() if k != "messages"}},
    )


class AnthropicMessagesLoader:
    """Messages API request bodies (``.json``: one request; ``.jsonl``: one request per line)."""

    name = "anthropic-messages"
    suffixes = (".json", ".jsonl")

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.lstrip()[:1]
        if first != b"{":
            return False
        line = head.split(b"\n", 1)[0]
        sample = line if path.suffix == ".jsonl" else head
        if b'"tool_calls"' in sample or b'"role": "tool"' in sample or b'"role":"tool"' in sample:
            return False  # OpenAI chat format: the chat-jsonl loader's
        return b'"messages"' in sample and b'"role"' in head

    def load(self, path: Path) -> list[Session]:
        source = str(path)
        if path.suffix == ".json":
            data = read_document(path)
            try:
                request = decode_json_document(data)
                return [session_from_request(request, source=source, session_id=path.stem)]
            except BadInput as exc:
                return [unreadable_session(path, FORMAT, f"not a Messages request: {exc.reason}", exc.line, data)]
            except LineError as exc:
                return [unreadable_session(path, FORMAT, f"not a Messages request: {exc}", 1, data)]
        sessions = []
        lines, _ = read_lines(path)
        for number, chunk in enumerate(lines, start=1):
            sid = f"{path.stem}:{number}"
            try:
                sessions.append(session_from_request(decode_json_line(chunk), source=source, session_id=sid))
            except (BadInput, LineError) as exc:
                reason = f"not a Messages request: {exc.reason if isinstance(exc, BadInput) else exc}"
                sessions.append(unreadable_session(path, FORMAT, reason, number, chunk, sid))
        return sessions


def request_json(session: Session) -> str:
    """The session back as one Messages request body (the export of this format)."""
    body = dict(session.metadata.get("request", {}))
    body["messages"] = [{"role": r.role, "content": r.message_content()} for r in session.records]
    return canonical_json(body)


register(AnthropicMessagesLoader())
