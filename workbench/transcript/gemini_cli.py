"""Gemini CLI recorded API responses (``*.responses``: the JSONL its fake content generator replays).

Each line is one API call's response: ``{"method": "generateContentStream", "response": [chunk, ...]}``
or ``{"method": "generateContent", "response": {...}}`` (``countTokens``/``embedContent`` lines, if
present, become kind ``event``). Items are lines; each call becomes one ``assistant`` Record (``raw`` =
the parsed line, ``line`` = its exact text) whose blocks merge the stream's parts in order: consecutive
``text`` deltas join into one text block, ``thought: true`` parts into one ``thinking`` block,
``functionCall`` parts become ``tool_use`` (id = ``functionCall.id`` when recorded, else positional
``<session>:<line>:call<k>``). ``stop_reason`` is the last ``finishReason``; ``usage`` is the last
chunk's ``usageMetadata`` in Anthropic keys (``input_tokens`` = prompt − cached,
``cache_read_input_tokens`` = cached, ``output_tokens`` = candidates + thoughts). ``subtype`` is the
method: ``generateContent`` calls are Gemini CLI's side queries (e.g. the chat-compression summary,
flagged ``is_compact_summary`` when its text holds a ``<state_snapshot>``).

What the format lacks — it is MODEL SIDE ONLY: no requests, so no user turns, no system prompt, no
``functionResponse`` results (every ``tool_use`` is unpaired), no tool definitions. It also has no
message ids, uuids (positional ``<session>:<line>``), timestamps or model names. What can be replayed:
the sequence of model outputs and their recorded prompt sizes (``usage``), i.e. the context-growth
curve and where compression happened; not a re-sendable conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .files import read_lines
from .jsonio import BadInput, decode_json_line
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = ["GeminiResponsesLoader", "record_from_call"]

FORMAT = "gemini-cli"
METHODS = ("generateContentStream", "generateContent", "countTokens", "embedContent")


class _LineError(ValueError):
    pass


def _usage(meta: Any) -> dict[str, int] | None:
    if not isinstance(meta, Mapping):
        return None

    def num(key: str) -> int | None:
        value = meta.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    prompt, cached = num("promptTokenCount"), num("cachedContentTokenCount")
    candidates, thoughts = num("candidatesTokenCount"), num("thoughtsTokenCount")
    out: dict[str, int] = {}
    if prompt is not None:
        out["input_tokens"] = prompt - (cached or 0)
    if cached is not None:
        out["cache_read_input_tokens"] = cached
    if candidates is not None or thoughts is not None:
        out["output_tokens"] = (candidates or 0) + (thoughts or 0)
    return out or None


def _blocks(chunks: list[Any], prefix: str) -> tuple[list[Block], str | None, Any]:
    blocks: list[dict[str, Any]] = []
    finish = usage = None
    calls = 0
    for chunk in chunks:
        if not isinstance(chunk, Mapping):
            raise _LineError(f"response chunk is a {type(chunk).__name__}, not an object")
        usage = chunk.get("usageMetadata", usage)
        candidates = chunk.get("candidates")
        if candidates is not None and not isinstance(candidates, list):
            raise _LineError(f"'candidates' is a {type(candidates).__name__}, not a list")
        for candidate in candidates or ():
            if not isinstance(candidate, Mapping):
                continue
            finish = candidate.get("finishReason", finish)
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, Mapping) else None
            if parts is not None and not isinstance(parts, list):
                raise _LineError(f"'content.parts' is a {type(parts).__name__}, not a list")
            for part in parts or ():
                if not isinstance(part, Mapping):
                    continue
                if isinstance(part.get("functionCall"), Mapping):
                    call = part["functionCall"]
                    call_id = call.get("id") if isinstance(call.get("id"), str) else f"{prefix}:call{calls}"
                    calls += 1
                    args = call.get("args")
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": call_id,
                            "name": call.get("name") if isinstance(call.get("name"), str) else "",
                            "input": dict(args) if isinstance(args, Mapping) else {},
                        }
                    )
                elif isinstance(part.get("text"), str):
                    kind, key = ("thinking", "thinking") if part.get("thought") else ("text", "text")
                    if not part["text"]:
                        continue
                    if blocks and blocks[-1]["type"] == kind:
                        blocks[-1][key] += part["text"]
                    else:
                        blocks.append({"type": kind, key: part["text"]})
                else:
                    other = {k: v for k, v in part.items() if k != "thoughtSignature"}
                    if other:
                        blocks.append({"type": "gemini_part", "part": dict(part)})
    return [Block.from_raw(b) for b in blocks], finish if isinstance(finish, str) else None, usage


def record_from_call(obj: Any, *, sid: str, line_no: int, source: str, line: str | None = None) -> Record:
    if not isinstance(obj, Mapping):
        raise _LineError(f"expected an object, found {type(obj).__name__}")
    method = obj.get("method")
    if method not in METHODS:
        raise _LineError(f"unknown method {method!r}")
    response = obj.get("response")
    uuid = f"{sid}:{line_no}"
    if method in ("countTokens", "embedContent"):
        return Record(
            kind="event",
            uuid=uuid,
            subtype=method,
            raw=dict(obj),
            line=line,
            source=source,
            line_no=line_no,
            session_id=sid,
        )
    chunks = response if isinstance(response, list) else [response]
    if response is None:
        raise _LineError("no 'response'")
    blocks, finish, usage = _blocks(chunks, uuid)
    last = chunks[-1] if chunks and isinstance(chunks[-1], Mapping) else {}
    model = last.get("modelVersion")
    message_id = last.get("responseId")
    text = "".join(b.text for b in blocks if b.kind == "text")
    return Record(
        kind="assistant",
        uuid=uuid,
        session_id=sid,
        role="assistant",
        blocks=tuple(blocks),
        has_content=True,
        usage=_usage(usage),
        model=model if isinstance(model, str) else None,
        message_id=message_id if isinstance(message_id, str) else None,
        subtype=method,
        stop_reason=finish,
        is_compact_summary=method == "generateContent" and "<state_snapshot>" in text,
        raw=dict(obj),
        line=line,
        source=source,
        line_no=line_no,
    )


class GeminiResponsesLoader:
    """Gemini CLI ``.responses`` files: one Session per file (see the module docstring)."""

    name = FORMAT
    suffixes = (".responses",)

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.lstrip().startswith(b"{") and b'"method"' in head.split(b"\n", 1)[0]

    def load(self, path: Path) -> list[Session]:
        source, sid = str(path), path.stem
        lines, trailing = read_lines(path)
        records: list[Record] = []
        skipped: list[Skip] = []
        for number, chunk in enumerate(lines, start=1):
            try:
                obj = decode_json_line(chunk)
                text = chunk.decode("utf-8")
                records.append(record_from_call(obj, sid=sid, line_no=number, source=source, line=text))
            except BadInput as exc:
                skipped.append(Skip(source, number, exc.reason, chunk))
            except _LineError as exc:
                skipped.append(Skip(source, number, str(exc), chunk))
        caps = {"usage"} if any(r.usage for r in records) else set()
        if any(b.kind == "thinking" for r in records for b in r.blocks):
            caps.add("thinking")
        return [
            Session(
                id=sid,
                records=tuple(records),
                source=source,
                format=FORMAT,
                session_id=sid,
                models=tuple(dict.fromkeys(r.model for r in records if r.model)),
                skipped=tuple(skipped),
                lines=len(lines),
                trailing_newline=trailing,
                capabilities=frozenset(caps),
                metadata={"model_side_only": True},
            )
        ]


register(GeminiResponsesLoader())
