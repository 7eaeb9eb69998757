"""Judge probes (online, optional): questions about what a compaction dropped, answered from what it kept.

Probe-based evaluation after Factory.ai's "Evaluating Context Compression for AI Agents" (docs/peers.md
§2.4: the early part of a session is compressed, then probes are asked; probe types Recall, Artifact,
Continuation, Decision; an LLM judge scores the answers). Factory scores 0–5 on six dimensions; here the
judge gives one score in ``[0, 1]`` per probe (see *Scoring*). Offline, string-level counterparts are
`workbench.metrics.fidelity` (facts from the dropped records, ``needed_recall``).

Pipeline for one compaction event (`probe_event`), three kinds of Messages API call, each cached on disk
by content hash (`workbench.online.cache.ResponseCache`: same prompt, model and parameters → no request):

1. **Generate** (`generate_probes`, one call per event): the dropped records rendered as a plain-text
   transcript (`render_transcript`) inside ``<dropped_content>``, system prompt `GENERATE_SYSTEM`, the
   instruction `GENERATE_INSTRUCTION` asking for ``n_per_kind`` probes of each requested kind as JSON
   ``{"probes": [{"kind", "question", "reference"}]}``. The kinds (`KIND_GUIDE`):

   * ``recall``: a specific fact stated in the dropped content (a value, an error message, a name);
   * ``artifact``: which files were read, created or changed, and how;
   * ``continuation``: what the agent should do next, as of the end of the dropped content;
   * ``decision``: a choice made in the dropped content and why.

   The question is written for someone who has not seen the dropped content; the reference answer is
   the short answer the dropped content supports.
2. **Answer** (`answer_probes`, one call per probe: docs/peers.md §2.5 reports a questions-per-prompt
   effect on recall benchmarks, so questions are never batched): system prompt `ANSWER_SYSTEM`, one user
   message with the context inside ``<context>`` (the compaction's summary, then the kept records as a
   transcript; the context block carries ``cache_control`` so the API's prompt cache serves the probes
   of one context) followed by the question (`ANSWER_INSTRUCTION`). The model is told to answer from the
   context only and to say "I don't know" otherwise.
3. **Grade** (`grade`, one call per probe): system prompt `JUDGE_SYSTEM`, the probe's kind, question and
   reference answer, optionally the answer given the *full* (uncompacted) context, and the candidate
   answer (`JUDGE_INSTRUCTION`); the judge replies ``{"score": <0..1>, "reason": "..."}``.

Every call is a single user message (no tools, no thinking, no sampling parameters: the installed SDK's
``messages.create`` takes no ``temperature``); ``max_tokens`` is 4096 / 1024 / 512 for generate / answer /
judge. Repeatability comes from the cache: the same event, kinds, models and prompts never ask twice.

The context is sent as a transcript in one user message rather than replayed as API messages: recorded
``tool_use`` blocks would need tool definitions, and every strategy's context (summary text, kept records,
cleared tool results) renders the same way, so answers differ only by what the context holds.

**Scoring.** The judge's rubric (`JUDGE_INSTRUCTION`): 1.0 the candidate states the reference's specific
content (paths, names, values, reasons) with nothing contradicting it; 0.5 partly correct or correct but
vague; 0.0 wrong, contradicting, or "I don't know". Intermediate values are allowed. With
``against="full"`` (`probe_event`) the answer given the full context (every record before the event, no
summary) is the primary reference and the generator's reference answer a secondary one: the score then
measures what compaction lost rather than what the answering model knows.

**Robust parsing** (`parse_json_reply`): the whole reply, else each fenced block (```json … ```), else the
first JSON object/array starting anywhere in the text (trailing prose ignored). A reply that still does
not parse, a missing or non-numeric score, or one outside ``[0, 1]`` is recorded as that probe's
``error`` (score ``None``; `Grade.raw` keeps the reply): never an exception. Probes of an unknown kind or without
question/reference are skipped and reported in `ProbeSet.errors`. API failures of answer or judge calls
become that probe's ``error``; a failed generation call raises `OnlineAPIError` from `generate_probes` and
becomes a single error row in `probe_event`. Error messages are those of `OnlineAPIError` (the API key
redacted); the frame never holds request headers.

**Frame** (`probe_event`): one row per probe with ``session_id, strategy, step, event_kind, probe, kind,
question, reference, answer, full_answer, score, reason, error, model, judge_model``. Events without
dropped records (nothing to ask about) give an empty frame. Not supported: ``recorded-compact`` events
(their dropped span is implicit, see `workbench.metrics.fidelity`: empty frame). The compacted context is
rebuilt from the event alone (its ``summary`` plus the session records listed in ``kept_uuids``): records a
strategy *created* earlier (an earlier compaction's summary message, cleared-result stubs) are not in the
session and so are missing from a later event's context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..replay.engine import strip_recorded_compactions
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .cache import ResponseCache
from .client import DEFAULT_MODEL, MESSAGES, OnlineAPIError, OnlineCaller, RetryPolicy

__all__ = [
    "ANSWER_INSTRUCTION",
    "ANSWER_SYSTEM",
    "FRAME_COLUMNS",
    "GENERATE_INSTRUCTION",
    "GENERATE_SYSTEM",
    "JUDGE_INSTRUCTION",
    "JUDGE_SYSTEM",
    "KIND_GUIDE",
    "PROBE_KINDS",
    "Answer",
    "Grade",
    "Probe",
    "ProbeSet",
    "answer_probes",
    "event_contexts",
    "generate_probes",
    "grade",
    "parse_json_reply",
    "probe_event",
    "render_transcript",
]

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


# ------------------------------------------------------------------------------------------ API calls


def _caller(model: str, client: Any, cache: ResponseCache | bool | None, retry: RetryPolicy | None) -> OnlineCaller:
    return OnlineCaller(model, client=client, cache=cache, retry=retry)


def _params(model: str, system: str, content: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": content}],
    }


def _text(response: Mapping[str, Any]) -> str:
    return "".join(
        str(b.get("text", "")) for b in response.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def generate_probes(
    records_dropped: Sequence[Record] | str,
    *,
    kinds: Sequence[str] = PROBE_KINDS,
    n_per_kind: int = 1,
    model: str = DEFAULT_MODEL,
    client: Any = None,
    cache: ResponseCache | bool | None = True,
    retry: RetryPolicy | None = None,
    include_thinking: bool = False,
) -> ProbeSet:
    """Probes about ``records_dropped`` (records, or an already rendered transcript): one cached call.

    A reply that does not parse gives an empty `ProbeSet` with the reason in ``errors``.

    Raises:
        ValueError: unknown kind, ``n_per_kind < 1`` or nothing to ask about.
        OnlineAPIError: the request failed (after retries); its message is redacted of the key.
        MissingAPIKeyError: no client and no ``ANTHROPIC_API_KEY``.
    """
    kinds = tuple(dict.fromkeys(k.lower() for k in kinds))
    unknown = [k for k in kinds if k not in KIND_GUIDE]
    if unknown or not kinds:
        raise ValueError(f"unknown probe kind(s) {unknown}; known: {list(PROBE_KINDS)}")
    if n_per_kind < 1:
        raise ValueError("n_per_kind must be >= 1")
    transcript = (
        records_dropped
        if isinstance(records_dropped, str)
        else render_transcript(records_dropped, include_thinking=include_thinking)
    )
    if not transcript.strip():
        raise ValueError("no dropped content to generate probes from")
    instruction = GENERATE_INSTRUCTION.format(
        n_per_kind=n_per_kind,
        kind_lines="\n".join(f"- {k}: {KIND_GUIDE[k]}" for k in kinds),
        kinds=", ".join(kinds),
    )
    content = [{"type": "text", "text": f"<dropped_content>\n{transcript}\n</dropped_content>\n\n{instruction}"}]
    params = _params(model, GENERATE_SYSTEM, content, GENERATE_MAX_TOKENS)
    response = _caller(model, client, cache, retry)._request(MESSAGES, params)
    text = _text(response)
    probes, errors = _parse_probes(text, kinds, n_per_kind)
    if not probes and not errors:
        errors.append("the generator returned no probes")
    return ProbeSet(tuple(probes), model, tuple(errors), raw=text)


def answer_probes(
    context_records_or_text: Sequence[Record] | str,
    probes: ProbeSet | Sequence[Probe],
    *,
    summary: str | None = None,
    model: str = DEFAULT_MODEL,
    client: Any = None,
    cache: ResponseCache | bool | None = True,
    retry: RetryPolicy | None = None,
    include_thinking: bool = False,
) -> list[Answer]:
    """One answer per probe given the context (``summary`` first, then the records or text): one cached
    call per probe. API failures and empty replies become that probe's ``Answer.error``."""
    context = _context_text(context_records_or_text, summary, include_thinking=include_thinking)
    caller = _caller(model, client, cache, retry)
    answers: list[Answer] = []
    for probe in probes:
        content = [
            {"type": "text", "text": f"<context>\n{context}\n</context>", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": ANSWER_INSTRUCTION.format(question=probe.question)},
        ]
        try:
            response = caller._request(MESSAGES, _params(model, ANSWER_SYSTEM, content, ANSWER_MAX_TOKENS))
        except OnlineAPIError as err:
            answers.append(Answer(None, error=f"answer call failed: {err.message}"))
            continue
        text = _text(response).strip()
        answers.append(Answer(text) if text else Answer(None, error="empty answer"))
    return answers


def _answer_text(answer: Answer | str | None) -> tuple[str | None, str | None]:
    if isinstance(answer, Answer):
        return answer.text, answer.error
    return answer, None


def grade(
    probes: ProbeSet | Sequence[Probe],
    answers: Sequence[Answer | str],
    *,
    full_answers: Sequence[Answer | str] | None = None,
    model: str = DEFAULT_MODEL,
    client: Any = None,
    cache: ResponseCache | bool | None = True,
    retry: RetryPolicy | None = None,
) -> list[Grade]:
    """The judge's `Grade` of each answer against the probe's reference (and, when ``full_answers`` are
    given, against the answer given the full context, as the primary reference): one cached call per
    probe. Malformed judge replies and API failures become that probe's ``Grade.error``, never raised;
    a probe whose answer is missing is not sent to the judge."""
    probes = list(probes)
    if len(answers) != len(probes) or (full_answers is not None and len(full_answers) != len(probes)):
        raise ValueError("probes, answers (and full_answers) must have the same length")
    caller = _caller(model, client, cache, retry)
    grades: list[Grade] = []
    for index, probe in enumerate(probes):
        answer, answer_error = _answer_text(answers[index])
        if answer is None:
            grades.append(Grade(None, error=answer_error or "no answer"))
            continue
        full_block, full_hint = "", ""
        if full_answers is not None:
            full, full_error = _answer_text(full_answers[index])
            if full is None:
                grades.append(Grade(None, error=f"no full-context answer: {full_error or 'missing'}"))
                continue
            full_block, full_hint = _FULL_BLOCK.format(full=full), "s (above all the full-context answer)"
        prompt = JUDGE_INSTRUCTION.format(
            kind=probe.kind,
            question=probe.question,
            reference=probe.reference,
            full_block=full_block,
            full_hint=full_hint,
            answer=answer,
        )
        params = _params(model, JUDGE_SYSTEM, [{"type": "text", "text": prompt}], JUDGE_MAX_TOKENS)
        try:
            response = caller._request(MESSAGES, params)
        except OnlineAPIError as err:
            grades.append(Grade(None, error=f"judge call failed: {err.message}"))
            continue
        grades.append(_parse_grade(_text(response)))
    return grades


# ---------------------------------------------------------------------------------------------- events


def _get(event: Any, name: str, default: Any = None) -> Any:
    value = event.get(name, default) if hasattr(event, "get") else getattr(event, name, default)
    return default if value is None else value


def _uuids(value: Any) -> set[str]:
    if value is None or isinstance(value, float):
        return set()
    if isinstance(value, str):
        return {value} if value else set()
    return {u for u in value if isinstance(u, str)}


def event_contexts(session: Session, event: Mapping[str, Any]) -> tuple[list[Record], list[Record], list[Record]]:
    """``(dropped, kept, full)`` records of a replay event of ``session``.

    The records are the session's conversation with recorded compactions stripped (as the replay sees
    them); ``full`` is every record before the event's step (the uncompacted context), ``dropped`` those
    in ``dropped_uuids`` and ``kept`` those in ``kept_uuids`` (records without a uuid are not tracked).
    """
    records, _ = strip_recorded_compactions(session.conversation())
    calls = api_calls(records)
    step = int(_get(event, "step", len(calls)))
    point = calls[step].first if 0 <= step < len(calls) else len(records)
    history = records[:point]
    dropped_ids = _uuids(_get(event, "dropped_uuids"))
    kept_ids = _uuids(_get(event, "kept_uuids")) - dropped_ids
    dropped = [r for r in history if r.uuid is not None and r.uuid in dropped_ids]
    kept = [r for r in history if r.uuid is not None and r.uuid in kept_ids]
    return dropped, kept, history


def _rows(base: Mapping[str, Any], items: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{**base, **item} for item in items], columns=list(FRAME_COLUMNS))


def probe_event(
    session: Session,
    event: Mapping[str, Any],
    *,
    kinds: Sequence[str] = PROBE_KINDS,
    n_per_kind: int = 1,
    model: str = DEFAULT_MODEL,
    judge_model: str | None = None,
    against: str = "reference",
    client: Any = None,
    cache: ResponseCache | bool | None = True,
    retry: RetryPolicy | None = None,
    include_thinking: bool = False,
) -> pd.DataFrame:
    """Generate probes from what ``event`` dropped, answer them from what it kept (summary + kept records),
    grade the answers: one row per probe (`FRAME_COLUMNS`).

    ``against="reference"`` grades against the generator's reference answer; ``against="full"`` also
    answers every probe from the full context (``full_answer``) and grades against that first.
    ``model`` generates and answers, ``judge_model`` (default ``model``) grades. A failed generation
    (API error or a reply without usable probes) is one row with ``error`` set and no probe.
    """
    if against not in ("reference", "full"):
        raise ValueError("against must be 'reference' or 'full'")
    judge_model = judge_model or model
    base = {
        "session_id": session.id,
        "strategy": _get(event, "strategy"),
        "step": int(_get(event, "step", -1)),
        "event_kind": _get(event, "kind"),
        "model": model,
        "judge_model": judge_model,
    }
    dropped, kept, full = event_contexts(session, event)
    if not dropped:
        return _rows(base, [])
    common = {"client": client, "cache": cache, "retry": retry}
    try:
        probes = generate_probes(
            dropped, kinds=kinds, n_per_kind=n_per_kind, model=model, include_thinking=include_thinking, **common
        )
    except OnlineAPIError as err:
        return _rows(base, [{"error": f"probe generation failed: {err.message}"}])
    if not probes.probes:
        return _rows(base, [{"error": "probe generation failed: " + "; ".join(probes.errors)}])
    summary = _get(event, "summary")
    summary = summary if isinstance(summary, str) else None
    answers = answer_probes(kept, probes, summary=summary, model=model, include_thinking=include_thinking, **common)
    full_answers = (
        answer_probes(full, probes, model=model, include_thinking=include_thinking, **common)
        if against == "full"
        else None
    )
    grades = grade(probes, answers, full_answers=full_answers, model=judge_model, **common)
    items = []
    for index, (probe, answer, verdict) in enumerate(zip(probes, answers, grades, strict=True)):
        items.append(
            {
                "probe": index,
                "kind": probe.kind,
                "question": probe.question,
                "reference": probe.reference,
                "answer": answer.text,
                "full_answer": full_answers[index].text if full_answers is not None else None,
                "score": verdict.score,
                "reason": verdict.reason,
                "error": verdict.error,
            }
        )
    return _rows(base, items)
