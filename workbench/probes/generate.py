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
rebuilt from the event alone (its ``summary`` plus the session records it kept, `event_contexts`): records a
strategy *created* earlier (an earlier compaction's summary message, cleared-result stubs) are not in the
session and so are missing from a later event's context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..online.cache import ResponseCache
from ..online.client import DEFAULT_MODEL, MESSAGES, OnlineAPIError, OnlineCaller, RetryPolicy
from ..replay.engine import strip_recorded_compactions
from ..replay.rows import kept_uuid_set, uuid_set
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .text import (
    _FULL_BLOCK,
    ANSWER_INSTRUCTION,
    ANSWER_MAX_TOKENS,
    ANSWER_SYSTEM,
    FRAME_COLUMNS,
    GENERATE_INSTRUCTION,
    GENERATE_MAX_TOKENS,
    GENERATE_SYSTEM,
    JUDGE_INSTRUCTION,
    JUDGE_MAX_TOKENS,
    JUDGE_SYSTEM,
    KIND_GUIDE,
    PROBE_KINDS,
    Answer,
    Grade,
    Probe,
    ProbeSet,
    _context_text,
    _parse_grade,
    _parse_probes,
    parse_json_reply,
    render_transcript,
)

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
        content: list[dict[str, Any]] = [
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


def event_contexts(session: Session, event: Mapping[str, Any]) -> tuple[list[Record], list[Record], list[Record]]:
    """``(dropped, kept, full)`` records of a replay event of ``session``.

    The records are the session's conversation with recorded compactions stripped (as the replay sees
    them); ``full`` is every record before the event's step (the uncompacted context), ``dropped`` those
    in ``dropped_uuids`` and ``kept`` those the event kept (``kept_uuids``, or the history but
    ``not_kept_uuids``: `workbench.replay.rows.kept_uuid_set`; records without a uuid are not tracked).
    """
    records, _ = strip_recorded_compactions(session.conversation())
    calls = api_calls(records)
    step = int(_get(event, "step", len(calls)))
    point = calls[step].first if 0 <= step < len(calls) else len(records)
    history = records[:point]
    dropped_ids = uuid_set(_get(event, "dropped_uuids"))
    columns = {name: _get(event, name) for name in ("kept_uuids", "not_kept_uuids")}
    kept_ids = kept_uuid_set(columns, history) - dropped_ids
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
