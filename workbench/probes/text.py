"""Probes without the API: the probe kinds, the prompts, the data types, transcript rendering and reply
parsing. `workbench.probes.generate` makes the calls; everything here is pure and offline-testable."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..transcript.model import Record

PROBE_KINDS: tuple[str, ...] = ("recall", "artifact", "continuation", "decision")

KIND_GUIDE: dict[str, str] = {
    "recall": "a specific fact stated in the content (a value, an error message, a name, a number, a user "
    "requirement) that an agent continuing the work might need",
    "artifact": "which files were read, created or modified, and what was done to them",
    "continuation": "what the agent should do next, as of the end of the content (the pending task or next step)",
    "decision": "a choice that was made (approach, fix, tool, rejected alternative) and the reason for it",
}

GENERATE_SYSTEM = (
    "You write evaluation probes for context compaction in coding-agent sessions. Each probe is a question "
    "whose answer is contained in a span of conversation that is about to be removed from the agent's "
    "context, with the reference answer that span supports."
)

GENERATE_INSTRUCTION = """\
The conversation span above (inside <dropped_content>) is being removed from a coding agent's context.
Write {n_per_kind} probe question(s) of each of these kinds:
{kind_lines}

Rules:
- Each question must be answerable from the dropped content alone, and specific to it (not general knowledge).
- Write the question for a reader who has not seen the content: name the subject, do not say "in the content".
- The reference answer is short (one or two sentences) and states the specifics (paths, names, values, reasons).
- Prefer facts an agent continuing this work would actually need.

Reply with JSON only, in this shape:
{{"probes": [{{"kind": "<one of: {kinds}>", "question": "...", "reference": "..."}}]}}"""

ANSWER_SYSTEM = (
    "You are a coding agent resuming a session. Everything you know about the session so far is in the "
    "context given to you. Answer questions about the session from that context only."
)

ANSWER_INSTRUCTION = """\
Question about this session: {question}

Answer from the context above only, briefly (one or two sentences, with the specifics: paths, names, values, \
reasons). If the context does not contain the answer, reply exactly "I don't know"."""

JUDGE_SYSTEM = (
    "You are a strict grader. You compare a candidate answer about a coding-agent session with reference "
    "answers and reply with a JSON score."
)

JUDGE_INSTRUCTION = """\
Probe kind: {kind}
Question: {question}

Reference answer: {reference}
{full_block}
Candidate answer: {answer}

Score the candidate answer from 0 to 1:
- 1.0: it states the specific content of the reference{full_hint} (paths, names, values, reasons) and \
contradicts nothing in it;
- 0.5: partly correct, or correct but vague / missing the specifics;
- 0.0: wrong, contradicting the reference, or "I don't know".
Intermediate values are allowed. Judge substance, not wording.

Reply with JSON only: {{"score": <number between 0 and 1>, "reason": "<one sentence>"}}"""

_FULL_BLOCK = "Answer given the full, uncompacted context (primary reference): {full}\n"

#: Columns of `probe_event`'s frame, in order.
FRAME_COLUMNS: tuple[str, ...] = (
    "session_id",
    "strategy",
    "step",
    "event_kind",
    "probe",
    "kind",
    "question",
    "reference",
    "answer",
    "full_answer",
    "score",
    "reason",
    "error",
    "model",
    "judge_model",
)

GENERATE_MAX_TOKENS = 4096
ANSWER_MAX_TOKENS = 1024
JUDGE_MAX_TOKENS = 512
#: Per-block and whole-transcript character caps of `render_transcript` (middle elided beyond them).
MAX_BLOCK_CHARS = 4000
MAX_TRANSCRIPT_CHARS = 400_000


# --------------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Probe:
    """One question about dropped content: ``kind`` (one of `PROBE_KINDS`), ``question``, ``reference``."""

    kind: str
    question: str
    reference: str


@dataclass(frozen=True)
class ProbeSet:
    """The probes generated for one span of dropped records.

    ``errors``: why items (or the whole reply) were rejected; ``raw``: the generator's reply text.
    """

    probes: tuple[Probe, ...]
    model: str
    errors: tuple[str, ...] = ()
    raw: str | None = field(default=None, repr=False)

    def __iter__(self) -> Iterator[Probe]:
        return iter(self.probes)

    def __len__(self) -> int:
        return len(self.probes)

    def __getitem__(self, index: int) -> Probe:
        return self.probes[index]

    def to_frame(self) -> pd.DataFrame:
        rows = [
            {"probe": i, "kind": p.kind, "question": p.question, "reference": p.reference} for i, p in enumerate(self)
        ]
        return pd.DataFrame(rows, columns=["probe", "kind", "question", "reference"])


@dataclass(frozen=True)
class Answer:
    """An answer text, or the ``error`` (redacted API error, empty reply) that prevented one."""

    text: str | None
    error: str | None = None


@dataclass(frozen=True)
class Grade:
    """The judge's ``score`` in [0, 1] and ``reason``, or ``error`` (score None) with the ``raw`` reply."""

    score: float | None
    reason: str | None = None
    error: str | None = None
    raw: str | None = field(default=None, repr=False)


# ------------------------------------------------------------------------------------------ rendering


def _elide(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - limit} characters elided …]\n{text[-tail:]}"


def render_transcript(
    records: Sequence[Record],
    *,
    include_thinking: bool = False,
    max_block_chars: int = MAX_BLOCK_CHARS,
    max_chars: int = MAX_TRANSCRIPT_CHARS,
) -> str:
    """Records as a plain-text transcript: ``USER:``, ``ASSISTANT:``, ``TOOL CALL <name>: <input JSON>``,
    ``TOOL RESULT <name> [error]: …``, ``SUMMARY OF EARLIER CONVERSATION:`` for compact summaries.

    Thinking is left out by default (the API ignores earlier turns' thinking, so the agent never sees it);
    images/documents become ``[image]``/``[document]``; each block is capped at ``max_block_chars`` and the
    whole at ``max_chars`` (the middle elided, with a marker saying how much).
    """
    names: dict[str, str] = {}
    lines: list[str] = []
    for record in records:
        if record.kind not in ("user", "assistant"):
            continue
        for block in record.blocks:
            kind = block.kind
            if kind == "text":
                text = block.text.strip()
                if not text:
                    continue
                if record.is_compact_summary:
                    label = "SUMMARY OF EARLIER CONVERSATION"
                else:
                    label = "ASSISTANT" if record.role == "assistant" else "USER"
                lines.append(f"{label}: {_elide(text, max_block_chars)}")
            elif kind == "thinking" and include_thinking:
                lines.append(f"ASSISTANT (thinking): {_elide(block.text.strip(), max_block_chars)}")
            elif kind in ("tool_use", "server_tool_use"):
                if block.id:
                    names[block.id] = block.name or "?"
                payload = json.dumps(block.input, ensure_ascii=False, sort_keys=True, default=str)
                lines.append(f"TOOL CALL {block.name or '?'}: {_elide(payload, max_block_chars)}")
            elif kind == "tool_result" or (block.type or "").endswith("_tool_result"):
                name = names.get(block.tool_use_id or "", "")
                flag = " [error]" if block.is_error else ""
                label = f"TOOL RESULT {name}{flag}".replace("  ", " ").strip()
                lines.append(f"{label}: {_elide(block.result_text().strip(), max_block_chars)}")
            elif kind in ("image", "document"):
                lines.append(f"{'ASSISTANT' if record.role == 'assistant' else 'USER'}: [{kind}]")
    return _elide("\n\n".join(lines), max_chars)


def _context_text(context: str | Sequence[Record], summary: str | None, **render: Any) -> str:
    body = context if isinstance(context, str) else render_transcript(context, **render)
    parts = []
    if summary and summary.strip():
        parts.append(f"SUMMARY OF EARLIER CONVERSATION: {summary.strip()}")
    if body.strip():
        parts.append(body.strip())
    return "\n\n".join(parts) if parts else "(empty context)"


# -------------------------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> Any:
    """The JSON value in a model reply: the whole text, a fenced block, or the first object/array in it.

    Raises:
        ValueError: nothing in ``text`` parses as a JSON object or array.
    """
    stripped = text.strip()
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return value
    raise ValueError(f"no JSON object in reply: {_elide(stripped, 200)!r}")


def _parse_probes(text: str, kinds: Sequence[str], n_per_kind: int) -> tuple[list[Probe], list[str]]:
    try:
        value = parse_json_reply(text)
    except ValueError as exc:
        return [], [str(exc)]
    items = value.get("probes") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return [], ["reply has no 'probes' list"]
    probes: list[Probe] = []
    errors: list[str] = []
    per_kind: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            errors.append(f"probe {index}: not an object")
            continue
        kind = str(item.get("kind") or "").strip().lower()
        question = item.get("question")
        reference = item.get("reference", item.get("answer"))
        if kind not in kinds:
            errors.append(f"probe {index}: kind {kind!r} not requested")
            continue
        if not isinstance(question, str) or not question.strip():
            errors.append(f"probe {index}: no question")
            continue
        if not isinstance(reference, str) or not reference.strip():
            errors.append(f"probe {index}: no reference answer")
            continue
        if per_kind.get(kind, 0) >= n_per_kind:
            errors.append(f"probe {index}: more than {n_per_kind} {kind} probe(s), dropped")
            continue
        per_kind[kind] = per_kind.get(kind, 0) + 1
        probes.append(Probe(kind, question.strip(), reference.strip()))
    order = {k: i for i, k in enumerate(kinds)}
    probes.sort(key=lambda p: order[p.kind])  # stable: the model's order within a kind
    return probes, errors


def _parse_grade(text: str) -> Grade:
    try:
        value = parse_json_reply(text)
    except ValueError as exc:
        return Grade(None, error=f"malformed judge reply: {exc}", raw=text)
    if not isinstance(value, dict) or "score" not in value:
        return Grade(None, error="malformed judge reply: no 'score'", raw=text)
    score = value["score"]
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return Grade(None, error=f"malformed judge reply: score {value['score']!r} is not a number", raw=text)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != score:
        return Grade(None, error=f"malformed judge reply: score {value['score']!r} is not a number", raw=text)
    if not 0.0 <= float(score) <= 1.0:
        return Grade(None, error=f"malformed judge reply: score {score!r} outside [0, 1]", raw=text)
    reason = value.get("reason")
    return Grade(float(score), reason=reason if isinstance(reason, str) else None, raw=text)
