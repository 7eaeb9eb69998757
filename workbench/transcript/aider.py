"""Aider chat history markdown (``.aider.chat.history.md``).

Aider appends to one markdown file: ``# aider chat started at <local time>`` opens a run (→ one
Session per run, id ``<file>:<n>``), user input lines are prefixed ``#### ``, aider's own console
output is a ``> `` blockquote, and the model's reply is plain markdown. Items are the file's blocks:
a run header, a run of ``####`` lines, a run of ``>`` lines, a run of reply lines (blank lines inside a
reply belong to it; blank lines between blocks are separators, not items). Each block becomes one
Record whose ``raw`` is ``{"type", "start_line", "end_line", "text"}`` with the block's exact source text:

* header → kind ``session_start`` (``timestamp`` = the header time, local, no zone);
* ``####`` → kind ``user`` (``subtype`` ``command`` for ``/…`` commands, ``confirm`` for answers to
  aider's ``(Y)es/(N)o`` questions); the two trailing spaces aider adds for markdown breaks are removed;
* ``>`` → kind ``tool_output`` (aider's console: warnings, errors, ``Tokens: …`` lines, edits applied).
  Not sent to the model;
* reply → kind ``assistant``; ``<thinking-content-…>`` sections become ``thinking`` blocks.

Lines before the first header (other than blanks) form a session ``<file>:0``.

What the format lacks: the real prompt (system prompt, repo map, file contents, aider's reflection
messages), tool calls (aider edits through text formats), message ids, uuids (positional
``<session>:<index>``), per-message timestamps and exact usage (only rounded ``Tokens: 9.7k sent`` lines
in tool output). Markdown is ambiguous: a reply line that itself starts with ``#### `` or ``> `` is read
as user input / tool output. Model names come from ``> Model:`` / ``> Main model:`` lines.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from .files import OversizedLine, oversized_reason, read_lines
from .model import Block, Record, Session, Skip
from .registry import register

__all__ = ["AiderHistoryLoader", "parse_history"]

FORMAT = "aider"
HEADER = "# aider chat started at "
_THINK = re.compile(r"<thinking-content-[0-9a-f]+>\n?(.*?)\n?</thinking-content-[0-9a-f]+>", re.S)
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")


def _line_kind(line: str) -> str:
    if line.startswith(HEADER):
        return "session_start"
    if line == "####" or line.startswith("#### "):
        return "user"
    if line == ">" or line.startswith("> "):
        return "tool_output"
    if not line.strip():
        return "blank"
    return "assistant"


def _blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """(kind, first index, last index) of each block; blank lines only join reply lines."""
    blocks: list[tuple[str, int, int]] = []
    for index, line in enumerate(lines):
        kind = _line_kind(line)
        if kind == "blank":
            continue
        if blocks and kind == blocks[-1][0] and kind != "session_start":
            _, start, end = blocks[-1]
            gap = lines[end + 1 : index]
            if kind == "assistant" or not gap:
                blocks[-1] = (kind, start, index)
                continue
        blocks.append((kind, index, index))
    return blocks


def _strip(line: str, prefix: str) -> str:
    body = line[len(prefix) :] if line.startswith(prefix) else line[len(prefix.rstrip()) :]
    return body[:-2] if body.endswith("  ") else body


def _content(kind: str, text_lines: list[str]) -> tuple[tuple[Block, ...], bool]:
    if kind == "user":
        return (Block.text_block("\n".join(_strip(x, "#### ") for x in text_lines)),), True
    if kind == "tool_output":
        return (Block.text_block("\n".join(_strip(x, "> ") for x in text_lines)),), True
    if kind == "session_start":
        return (), False
    text = "\n".join(text_lines)
    blocks: list[Block] = []
    pos = 0
    for match in _THINK.finditer(text):
        before = text[pos : match.start()].strip("\n")
        if before:
            blocks.append(Block.text_block(before))
        blocks.append(Block("thinking", {"type": "thinking", "thinking": match.group(1)}))
        pos = match.end()
    if not blocks:
        return (Block.text_block(text),), True
    rest = text[pos:].strip("\n")
    if rest:
        blocks.append(Block.text_block(rest))
    return tuple(blocks), False


def parse_history(text: str, *, source: str, stem: str, replaced: bool = False) -> list[Session]:
    """Sessions of a history text; ``replaced``: the text was decoded with U+FFFD replacements, so
    blocks holding U+FFFD become Skips (they are not what was recorded)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    groups: list[list[tuple[str, int, int]]] = [[]]
    for block in _blocks(lines):
        if block[0] == "session_start":
            groups.append([])
        groups[-1].append(block)
    sessions = []
    for number, group in enumerate(groups):
        if not group:
            continue
        sid = f"{stem}:{number}"
        records: list[Record] = []
        skipped: list[Skip] = []
        model: str | None = None
        models: list[str] = []
        for index, (kind, start, end) in enumerate(group):
            block_lines = lines[start : end + 1]
            block_text = "\n".join(block_lines)
            raw = {"type": kind, "start_line": start + 1, "end_line": end + 1, "text": block_text}
            blocks, string_content = _content(kind, block_lines)
            subtype = timestamp = None
            if kind == "session_start":
                timestamp = block_lines[0][len(HEADER) :].strip().replace(" ", "T", 1)
            elif kind == "tool_output":
                for line in blocks[0].text.split("\n"):
                    found = _MODEL.match(line)
                    if found:
                        model = found.group(1)
                        models.append(model)
            elif kind == "user":
                body = blocks[0].text
                subtype = "command" if body.startswith("/") else "confirm" if "(Y)es/(N)o" in body else None
            if replaced and "\ufffd" in block_text:
                skipped.append(
                    Skip(source, start + 1, f"{kind} block (lines {start + 1}-{end + 1}) holds invalid UTF-8")
                )
                continue
            records.append(
                Record(
                    kind=kind,
                    uuid=f"{sid}:{index}",
                    session_id=sid,
                    role=kind if kind in ("user", "assistant") else None,
                    blocks=blocks,
                    string_content=string_content,
                    has_content=kind != "session_start",
                    timestamp=timestamp,
                    subtype=subtype,
                    model=model if kind == "assistant" else None,
                    raw=raw,
                    source=source,
                    line_no=start + 1,
                )
            )
        caps = {"thinking"} if any(b.kind == "thinking" for r in records for b in r.blocks) else set()
        started = records[0].timestamp if records and records[0].kind == "session_start" else None
        sessions.append(
            Session(
                id=sid,
                records=tuple(records),
                source=source,
                format=FORMAT,
                session_id=sid,
                models=tuple(dict.fromkeys(models)),
                skipped=tuple(skipped),
                lines=len(group),
                capabilities=frozenset(caps),
                metadata={"started_at": started} if started else {},
            )
        )
    return sessions


class AiderHistoryLoader:
    """Aider's markdown chat history: one Session per ``# aider chat started at`` run."""

    name = FORMAT
    suffixes = (".md",)

    def sniff(self, path: Path, head: bytes) -> bool:
        return HEADER.encode() in head[:4096] or path.name.endswith("aider.chat.history.md")

    def load(self, path: Path) -> list[Session]:
        lines, trailing = read_lines(path)  # a line over the cap is read as blank and reported (below)
        data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
        over = [(number, line.size) for number, line in enumerate(lines, 1) if isinstance(line, OversizedLine)]
        return _with_oversized(self._load(path, data), over, str(path))

    def _load(self, path: Path, data: bytes) -> list[Session]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            text = data.decode("utf-8", errors="replace")
            sessions = parse_history(text, source=str(path), stem=path.stem, replaced=True)
            if not sessions:
                return [
                    Session(
                        id=f"{path.stem}:0",
                        records=(),
                        source=str(path),
                        format=FORMAT,
                        lines=1,
                        skipped=(Skip(str(path), line, f"invalid UTF-8 at byte {exc.start}", data),),
                    )
                ]
            return sessions
        return parse_history(text, source=str(path), stem=path.stem) or [
            Session(
                id=f"{path.stem}:0",
                records=(),
                source=str(path),
                format=FORMAT,
                lines=1,
                skipped=(Skip(str(path), 1, "no aider chat content (empty file)"),),
            )
        ]


def _with_oversized(sessions: list[Session], over: list[tuple[int, int]], source: str) -> list[Session]:
    """Each line over the cap as a Skip of the session (run) it falls in."""
    for number, size in over:
        index = 0
        for i, session in enumerate(sessions):
            if session.records and (session.records[0].line_no or 0) <= number:
                index = i
        session = sessions[index]
        skip = Skip(source, number, oversized_reason(size))
        sessions[index] = replace(
            session,
            skipped=tuple(sorted((*session.skipped, skip), key=lambda s: s.line)),
            lines=session.lines + 1,
        )
    return sessions


register(AiderHistoryLoader())
