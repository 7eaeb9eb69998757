"""Claude Code-shaped sessions of the shapes users' histories have and the open corpus lacks, in memory.

`shaped_session` builds one `Session` from a `Shape`: a resumed session or fragment whose first request
already carries ``hidden_tokens`` the file does not hold (the replay counts them with the system prompt),
a 1M-window model (``model`` with ``[1m]``; recorded usage above 200k), parallel tool batches written the
way Claude Code streams them (one ``assistant`` record per block sharing ``message.id``, results interleaved
right after their tool_use or after the batch), responses without thinking inside a tool loop, a huge tool
result, a result over Claude Code's 50,000-character budget that the transcript keeps whole while the
request carried a preview recorded in a ``content-replacement`` line (docs §3.7,
`workbench.transcript.replacements`), and a recording that already breaks a pair (a tool_use whose result
was never written, then a new prompt), and a session of a version that ran the automatic microcompact
(1.0.68–2.1.20, ``microcompact_warning``): before a call whose context is at or above the warning threshold,
old tool results are cleared as that microcompact clears them (`_microcompact`), a ``microcompact_boundary``
line records it as 2.1.12–2.1.19 wrote it, the transcript keeps the results whole and the usage from then on
counts them cleared. Usage is consistent with the content: every call's prompt is ``hidden_tokens`` plus
chars/4 of what was sent, as in `tests/replay/synthetic.py`. The facts behind the shapes:
docs §7.4 (streamed records), §3.3–§3.5 (cleared text, ``microcompactMetadata``),
corpus/SOURCES.md (shape facts), the sessions `workbench check` reports (resumed and 1M sessions in
claude-code-more), the readings of the legacy microcompact in `workbench.strategies.versions`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from ..tokens.estimators import get_estimator
from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record, Session
from ..transcript.replacements import as_sent

__all__ = ["MICROCOMPACT_TOOLS", "Shape", "shaped_session"]

#: The legacy microcompact's documented constants (v2.0.76 ``Vd``, v2.1.63 ``G3Y``/``Z3Y``/``f3Y``): the newest
#: results kept, the compactable tokens left in place, the least saving worth a clearing.
_KEEP_RECENT, _KEEP_TOKENS, _MIN_SAVINGS = 3, 40_000, 20_000
_CLEARED = "[Old tool result content cleared]"
#: The tools a microcompact session calls in turn: three the microcompact clears, one it never touches.
MICROCOMPACT_TOOLS = ("Read", "Bash", "Grep", "TodoWrite")
_COMPACTABLE = frozenset({"Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"})


@dataclass(frozen=True)
class Shape:
    """What one generated session looks like (see the module docstring)."""

    calls: int = 30
    batch: int = 1  # tool_use blocks per response (a parallel batch when > 1)
    interleaved: bool = True  # results right after each tool_use record, else after the whole batch
    thinking: float = 0.5  # share of responses inside a loop that start with thinking (loop openers always do)
    result_chars: int = 4_000
    huge_result_at: int | None = None  # the call whose first result is 600k characters
    replaced_at: int | None = None  # the call whose first result (120k characters) was sent as a preview
    hidden_tokens: int = 15_000  # system prompt and tools, plus history the file does not hold when resumed
    model: str = "claude-opus-4-6"
    broken_at: int | None = None  # the call whose tool_use never gets a result (a new prompt follows)
    prompt_every: int = 6  # a user prompt opens a new tool loop every this many calls
    version: str = "2.1.88"  # the Claude Code version written on every record
    #: the warning threshold (the version's auto-compact threshold − 20,000) of a session whose Claude Code
    #: ran the legacy microcompact; None: it did not
    microcompact_warning: int | None = None
    seed: int = 0


def shaped_session(shape: Shape, session_id: str = "shaped") -> Session:
    """One session of ``shape`` (deterministic for a shape)."""
    rng = random.Random(shape.seed)
    rough = get_estimator("claude-rough")
    records: list[Record] = []
    sent = 0  # chars/4 of what the records so far put into a request

    def add(record: Record, as_sent: Record | None = None) -> None:
        nonlocal sent
        records.append(record)
        sent += rough.count(as_sent or record)

    def record(kind: str, blocks: list[dict[str, Any]], *, mid: str | None = None, string: str | None = None) -> Record:
        n = len(records)
        return Record(
            kind=kind,
            uuid=f"{session_id}-{n}",
            parent_uuid=records[-1].uuid if records else None,
            role=kind,
            message_id=mid,
            timestamp=f"2026-11-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
            blocks=(Block.text_block(string),) if string is not None else tuple(Block.from_raw(b) for b in blocks),
            string_content=string is not None,
            has_content=True,
            model=shape.model if kind == "assistant" else None,
            session_id=session_id,
            raw={"version": shape.version},
        )

    def usage(output: int) -> dict[str, int]:
        return {
            "input_tokens": 3,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": shape.hidden_tokens + sent,
            "output_tokens": output,
        }

    cleared: set[str] = set()
    last_usage = (0, 0)  # the last response's usage total and the position after its records

    for call in range(shape.calls):
        opens = call % shape.prompt_every == 0
        if opens:
            add(record("user", [], string=f"Prompt {call}: fix the failing test in src/mod{call}.py"))
        if shape.microcompact_warning is not None:
            total, after = last_usage
            size = total + sum(rough.count(r) for r in records[after:])  # tokenCountWithEstimation (docs §6)
            boundary = _microcompact(records, cleared, size, shape.microcompact_warning, session_id, shape.version)
            if boundary is not None:
                records.append(boundary)
                sent -= boundary.raw["microcompactMetadata"]["tokensSaved"] - _cleared_tokens(boundary)
        mid = f"msg_{session_id}_{call}"
        blocks: list[dict[str, Any]] = []
        if opens or rng.random() < shape.thinking:
            blocks.append({"type": "thinking", "thinking": f"plan for call {call}", "signature": "sig"})
        last = call == shape.calls - 1
        names = MICROCOMPACT_TOOLS if shape.microcompact_warning is not None else ("Bash",)
        uses = [
            {
                "type": "tool_use",
                "id": f"toolu_{call}_{k}",
                "name": names[(call * shape.batch + k) % len(names)],
                "input": {"command": f"run {call}.{k}"},
            }
            for k in range(0 if last else shape.batch)
        ]
        if last:
            blocks.append({"type": "text", "text": "Done."})
        at_usage = usage(40)
        pending: list[Record] = []
        for block in [*blocks, *uses]:
            rec = record("assistant", [block], mid=mid)
            add(replace(rec, usage=at_usage))
            last_usage = (sum(at_usage.values()), len(records))
            if block["type"] == "tool_use":
                if call == shape.broken_at:
                    continue
                chars = 600_000 if call == shape.huge_result_at and block is uses[0] else shape.result_chars
                chars = 120_000 if call == shape.replaced_at and block is uses[0] else chars
                content = f"ok {block['id']} " + "x" * chars
                result = record("user", [{"type": "tool_result", "tool_use_id": block["id"], "content": content}])
                if shape.interleaved:
                    add(result)
                else:
                    pending.append(result)
        for result in pending:
            add(result)
        if call == shape.replaced_at and uses:
            records.append(_budget(records, uses, session_id))
            sent = sum(rough.count(r) for r in as_sent(records))  # the usage counts the previews
        if call == shape.broken_at:
            add(record("user", [], string="[Request interrupted by user] Start again from the last step."))
    return Session(
        id=session_id,
        records=tuple(records),
        source=f"<shaped {session_id}>",
        format="claude-code",
        session_id=session_id,
        models=(shape.model,),
        client_version=shape.version,
        capabilities=frozenset({"usage", "message_ids", "uuids", "timestamps", "thinking"}),
    )


def _microcompact(
    records: list[Record], cleared: set[str], size: int, warning: int, session_id: str, version: str
) -> Record | None:
    """The ``microcompact_boundary`` line of the legacy microcompact before the next call, or None when it does
    not run: at or above ``warning``, keep the newest 3 compactable results, clear from the oldest while the
    compactable results left (the kept ones included) hold more than 40,000 tokens, and only when that saves
    20,000 or more. Adds the cleared ids to ``cleared`` (the request no longer holds their content)."""
    if size < warning:
        return None
    names = {b.id: b.name for r in records if r.kind == "assistant" for b in r.tool_uses()}
    tokens: dict[str, int] = {}
    for r in records:
        for b in r.tool_results() if r.kind == "user" else ():
            if b.tool_use_id and names.get(b.tool_use_id) in _COMPACTABLE and b.tool_use_id not in cleared:
                tokens[b.tool_use_id] = tokens.get(b.tool_use_id, 0) + rough_tokens(b.result_text())
    order = [i for i in names if i in tokens]
    keep = set(order[-_KEEP_RECENT:])
    left, saved, ids = sum(tokens.values()), 0, []
    for tool_id in order:
        if tool_id not in keep and left - saved > _KEEP_TOKENS:
            ids.append(tool_id)
            saved += tokens[tool_id]
    if saved < _MIN_SAVINGS:
        return None
    cleared.update(ids)
    metadata = {
        "trigger": "auto",
        "preTokens": size,
        "tokensSaved": saved,
        "compactedToolIds": ids,
        "clearedAttachmentUUIDs": [],
    }
    uuid = f"{session_id}-mc-{len(records)}"
    parent_uuid = records[-1].uuid if records else None
    raw = {
        "type": "system",
        "subtype": "microcompact_boundary",
        "content": "Context microcompacted",
        "level": "info",
        "isMeta": False,
        "sessionId": session_id,
        "uuid": uuid,
        "parentUuid": parent_uuid,
        "version": version,
        "microcompactMetadata": metadata,
    }
    return Record(
        kind="system",
        uuid=uuid,
        parent_uuid=parent_uuid,
        subtype="microcompact_boundary",
        blocks=(Block.text_block("Context microcompacted"),),
        string_content=True,
        session_id=session_id,
        raw=raw,
    )


def _cleared_tokens(boundary: Record) -> int:
    """What the cleared results still put into a request: the cleared text, once per result."""
    return len(boundary.raw["microcompactMetadata"]["compactedToolIds"]) * rough_tokens(_CLEARED)


def _budget(records: list[Record], uses: list[dict[str, Any]], session_id: str) -> Record:
    """Claude Code's budget over the batch just written (docs §3.7): a result over 50,000 characters, then the
    largest until the batch is within 200,000, becomes a preview; one ``content-replacement`` line records it."""
    ids = {u["id"] for u in uses}
    results = [r for r in records if r.blocks and r.blocks[0].kind == "tool_result" and r.blocks[0].tool_use_id in ids]
    total = sum(len(str(r.blocks[0].raw["content"])) for r in results)
    replacements = []
    for result in sorted(results, key=lambda r: -len(str(r.blocks[0].raw["content"]))):
        block = result.blocks[0]
        if total <= 200_000 and len(block.raw["content"]) <= 50_000:
            break
        preview = (
            f"<persisted-output>\nOutput too large ({len(block.raw['content']) // 1000}KB). Full output saved to: "
            f"/tmp/{session_id}/tool-results/{block.tool_use_id}.txt\n\nPreview (first 2KB):\n"
            f"{str(block.raw['content'])[:2000]}\n...\n</persisted-output>"
        )
        total -= len(block.raw["content"]) - len(preview)
        replacements.append({"kind": "tool-result", "toolUseId": block.tool_use_id, "replacement": preview})
    raw = {"type": "content-replacement", "sessionId": session_id, "replacements": replacements}
    return Record(kind="content-replacement", session_id=session_id, raw=raw)
