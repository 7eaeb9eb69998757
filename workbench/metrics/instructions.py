"""User instructions across a compaction: did the compacted context keep them, did the user have to repeat them?

Losing what the user told the agent is the compaction complaint Claude Code users raise most
(anthropics/claude-code#3841, anthropics/claude-code#9796, anthropics/claude-code#13919,
anthropics/claude-code#21925, anthropics/claude-code#22376, anthropics/claude-code#36068: rules, skills
and the last request's instructions forgotten after a compaction). This module measures it on both sides,
as recovery does for files (`workbench.metrics.recovery`, `workbench.metrics.expected_recovery`):

**Instructions.** Only what the user typed counts: user-role text that is not a tool result, not meta, not
a compaction summary, with tagged blocks (``<system-reminder>``, ``<command-message>`` …) removed; a
message that *is* a notification (``<task-notification>``, ``<local-command-stdout>``, ``<bash-input>``,
Codex's ``<environment_context>`` and AGENTS.md messages …) is not a prompt, and of a slash command only
its ``<command-args>`` count; of a SWE-agent trajectory only the task statement (its first user message
that is not a demonstration: the others are observations). Instructions in the CLAUDE.md/AGENTS.md files
and skills are not in the recorded messages and are not measured. From the prompts before a compaction:

* ``constraint``: each sentence (split at line breaks and ``.``/``!``/``?``/``;``) of every prompt but the
  last that has a constraint marker (`MARKERS`: *always, never, don't, do not, must, make sure, ensure,
  only, instead, rather than, avoid, prefer, should, remember, stop, keep, from now on, important* and
  their German equivalents *immer, nie, muss, stelle sicher, stattdessen, nur, sollte, wichtig, merke
  dir* …);
* ``request``: the last prompt before the compaction, whole (the last with at least `MIN_STEMS`
  content words: a bare "continue" or "yes" states nothing to lose).

Each is reduced to its *content stems* (`stems`): words of at least 3 letters without stop words and
the markers themselves (English and German), an English ``-s``/``-es``/``-ed``/``-ing`` removed, cut to
6 characters (``committing`` and ``commits`` are ``commit``). An instruction needs `MIN_STEMS` of them.

**Kept** (predicted, per compaction event, `instructions_events`, any strategy): an instruction is kept
when its record is still in the compacted context (not dropped), or when the compacted context's text
(the summary, re-attached text, the kept records) *states* it: at least `KEPT_SHARE` (0.6, the
threshold fidelity uses for directives, `workbench.metrics.facts`) of its stems occur in that text,
so a paraphrase that keeps the content words ("the user wants no direct commits to main") counts and a
translation does not. Columns: ``instructions`` (at stake: every instruction given before the event),
``instructions_lost``, ``instructions_kept`` (the share kept; 1.0 when there is none, so read it with
``instructions``), ``last_request_kept`` (1.0/0.0; null without a request).

**Repeated** (measured, per recorded compaction, `repeated_instructions`): the user prompts after a
recorded ``compact_boundary`` (to the next one or the session end, ``user_prompts_after``) and of the
instructions given before it, those a later prompt *restates* (``instructions_repeated``, each counted
once): a constraint when one sentence of a later prompt holds at least `RESTATE_SHARE` of its stems
(and at least two), the request when a later prompt as a whole does. The user repeating an
instruction is what having lost it cost them; it is observed only when the user typed again
(``user_prompts_after`` > 0).

The stems are a bag of words: a summary that writes "commits to main" for "never commit to main" keeps
the instruction by this rule. The kept measures are validated against ``instructions_repeated`` on the real compactions
by `workbench.metrics.validation`; on the open corpus no user restated an instruction after any of its 15
recorded compactions (12 of them followed by a prompt), so that correlation is undefined there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pandas as pd

from ..replay.engine import strip_recorded_compactions
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from ._common import KEYS, as_list, cell_events, ensure_keys
from .facts import DIRECTIVE_THRESHOLD

__all__ = [
    "EVENT_COLUMNS",
    "KEPT_SHARE",
    "MARKERS",
    "MIN_STEMS",
    "REPEATED_COLUMNS",
    "RESTATE_SHARE",
    "Instruction",
    "instructions",
    "instructions_events",
    "instructions_frame",
    "repeated_instructions",
    "restates",
    "stated",
    "stems",
    "user_prompt",
]

#: Share of an instruction's stems a compacted context must hold to keep it (fidelity's directive rule).
KEPT_SHARE = DIRECTIVE_THRESHOLD
#: Share of an instruction's stems a later prompt (sentence) must hold to restate it.
RESTATE_SHARE = 0.6
#: Content stems an instruction needs (fewer state nothing a summary or a later prompt could match).
MIN_STEMS = 2
#: Stems a restating sentence shares with the instruction at least.
RESTATE_MIN = 2

#: Words that make a sentence a constraint (English and German), matched case-insensitively as words.
MARKERS = (
    "always",
    "never",
    "don't",
    "dont",
    "do not",
    "must",
    "mustn't",
    "make sure",
    "ensure",
    "only",
    "instead",
    "rather than",
    "avoid",
    "prefer",
    "should",
    "shouldn't",
    "remember",
    "stop",
    "keep",
    "from now on",
    "no longer",
    "important",
    "immer",
    "nie",
    "niemals",
    "muss",
    "musst",
    "müssen",
    "stelle sicher",
    "stell sicher",
    "sicherstellen",
    "sicher gehen",
    "achte darauf",
    "stattdessen",
    "anstatt",
    "nur",
    "sollst",
    "sollte",
    "solltest",
    "vermeide",
    "merke dir",
    "merk dir",
    "wichtig",
)
_MARKER = re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(m) for m in MARKERS) + r")(?![\w'])", re.IGNORECASE)
_NOT_PROMPT = re.compile(
    r"^\s*(?:<(?:task-notification|local-command-stdout|local-command-stderr|bash-input|bash-stdout|bash-stderr"
    r"|user-memory-input|environment_context|user_instructions)\b|# AGENTS\.md instructions for )"
)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_TAGGED = re.compile(r"<([a-z][\w-]*)(?:\s[^>]*)?>.*?</\1>", re.DOTALL)
_SENTENCE = re.compile(r"\n+|(?<=[.!?;])\s+")
_WORD = re.compile(r"[^\W\d_][\w'’-]*[^\W_]|[^\W\d_]")
_SUFFIXES = ("ing", "ed", "es", "s")
STEM_LENGTH = 6
_STOP_WORDS = """
the and for you are not but all any can has had its was our out who why how use used using get got let
that this with from have will would should could there their them then than what when where which while
about into your just like also make sure please want need some more other only each very been were does
done here they these those being because after before over under again it's i'm can't don't let's
yes okay thanks thank now still already just even really maybe well also
der die das den dem des ein eine einen einem einer eines und oder aber auch noch ich du wir ihr sie
er es mir dir uns euch mich dich sich mein dein unser unsere ist sind war waren hat haben habe hast
wird werden wurde kann kannst können mit von zum zur auf für bei aus nach wie was wo wenn dass daß
nicht kein keine keinen dann jetzt hier da bitte ja nein doch mal schon so als am im ins an um
diese dieser dieses diesen ob oder weil"""
_STOP = frozenset(_STOP_WORDS.split()) | {w for m in MARKERS for w in m.split()}


@dataclass(frozen=True)
class Instruction:
    """One user instruction: ``constraint`` (a sentence with a marker) or ``request`` (the last prompt)."""

    kind: str
    text: str
    stems: frozenset[str]
    index: int  # index of its record in the records given
    uuid: str | None
    line: int | None


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    return word[:STEM_LENGTH]


@lru_cache(maxsize=4096)
def stems(text: str) -> frozenset[str]:
    """The content stems of ``text`` (see the module docstring); remembered: a summary and the prompts of a
    session are read once per compaction of every config."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower().replace("’", "'")):
        if len(word) >= 3 and word not in _STOP:
            out.add(_stem(word))
    return frozenset(out)


def user_prompt(record: Record) -> str:
    """What the user typed in ``record`` ("" for anything else: tool results, meta, summaries, notices)."""
    if record.kind != "user" or record.is_meta or record.is_compact_summary or record.is_compact_boundary:
        return ""
    if any(b.kind == "tool_result" for b in record.blocks):
        return ""
    text = "\n".join(b.text for b in record.blocks if b.kind == "text")
    if _NOT_PROMPT.match(text):
        return ""
    if "<command-name>" in text:
        return " ".join(m.strip() for m in _ARGS.findall(text))
    text = _TAGGED.sub(" ", text).strip()
    if text.startswith("[Request interrupted") or text.startswith("Caveat:"):
        return ""
    return text


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _swe_agent_message(record: Record) -> bool:
    raw = record.raw
    return isinstance(raw, Mapping) and "agent" in raw and raw.get("role") == "user" and not raw.get("is_demo")


def _observation(records: Sequence[Record], index: int) -> bool:
    """A SWE-agent demonstration, or an observation sent as user text (every user message after the task)."""
    raw = records[index].raw
    if isinstance(raw, Mapping) and raw.get("is_demo"):
        return True
    if not _swe_agent_message(records[index]):
        return False
    return any(_swe_agent_message(r) for r in records[:index])


def _prompts(records: Sequence[Record], start: int, end: int) -> list[tuple[int, str]]:
    out = []
    for index in range(max(start, 0), min(end, len(records))):
        text = user_prompt(records[index])
        if text and not _observation(records, index):
            out.append((index, text))
    return out


def instructions(records: Sequence[Record], end: int | None = None) -> list[Instruction]:
    """The user's instructions in ``records[:end]``: constraint sentences and the last request."""
    prompts = _prompts(records, 0, len(records) if end is None else end)
    last = next((n for n in range(len(prompts) - 1, -1, -1) if len(stems(prompts[n][1])) >= MIN_STEMS), None)
    out = []
    for number, (index, text) in enumerate(prompts):
        record = records[index]
        if number == last:
            out.append(Instruction("request", text, stems(text), index, record.uuid, record.line_no))
            continue
        for sentence in _sentences(text):
            found = stems(sentence)
            if len(found) >= MIN_STEMS and _MARKER.search(sentence):
                out.append(Instruction("constraint", sentence, found, index, record.uuid, record.line_no))
    return out


def stated(instruction: Instruction, text_stems: frozenset[str] | set[str]) -> bool:
    """Whether a text with ``text_stems`` states ``instruction`` (at least `KEPT_SHARE` of its stems)."""
    if not instruction.stems:
        return True
    return len(instruction.stems & text_stems) >= KEPT_SHARE * len(instruction.stems)


def restates(instruction: Instruction, prompt: str) -> bool:
    """Whether a later ``prompt`` restates ``instruction`` (a constraint in one sentence, a request whole)."""
    parts = [prompt] if instruction.kind == "request" else _sentences(prompt)
    for part in parts:
        shared = len(instruction.stems & stems(part))
        if shared >= RESTATE_MIN and shared >= RESTATE_SHARE * len(instruction.stems):
            return True
    return False


#: Columns of `repeated_instructions` (the measured side, in `workbench.metrics.recovery`'s rows).
REPEATED_COLUMNS = ("user_prompts_after", "instructions_repeated")


def repeated_instructions(records: Sequence[Record], cut: int, end: int) -> dict[str, int]:
    """The user prompts in ``records[cut+1:end]`` and how many instructions of ``records[:cut]`` they restate."""
    given = instructions(records, cut)
    later = [text for _, text in _prompts(records, cut + 1, end)]
    repeated = sum(any(restates(instruction, text) for text in later) for instruction in given)
    return {"user_prompts_after": len(later), "instructions_repeated": repeated}


#: The event fields `instructions_events` reads (an event row has many more, some large).
READ_EVENT_FIELDS = ("step", "kind", "dropped_uuids", "summary", "added_text")
#: Per-event columns of `instructions_events` (besides the keys).
EVENT_COLUMNS = ("event", "kind", "step", "instructions", "instructions_lost", "instructions_kept", "last_request_kept")


class _Stems:
    """Per-record stems of one record list, computed once each."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.records = records
        self.own: dict[int, frozenset[str]] = {}

    def of(self, index: int) -> frozenset[str]:
        if index not in self.own:
            self.own[index] = stems(self.records[index].text)
        return self.own[index]


def _score(given: Sequence[Instruction], dropped: set[str], carrier: set[str]) -> dict[str, Any]:
    kept = [(i.uuid is not None and i.uuid not in dropped) or stated(i, carrier) for i in given]
    request = [k for i, k in zip(given, kept, strict=True) if i.kind == "request"]
    return {
        "instructions": len(given),
        "instructions_lost": len(given) - sum(kept),
        "instructions_kept": sum(kept) / len(given) if given else 1.0,
        "last_request_kept": float(request[0]) if request else None,
    }


def instructions_events(session: Session, events: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per compaction event of ``session`` (any strategies/configs in ``events``): of the user's
    instructions given before it, how many the compacted context keeps (columns `EVENT_COLUMNS`).

    The compacted context is rebuilt as `workbench.metrics.fidelity` rebuilds it: the records not dropped so
    far plus the event's summary (the last non-empty one) and re-attached text; for a ``recorded-compact``
    event everything before the recording's ``compact_boundary`` is dropped and the instructions at stake
    are those typed before it.
    """
    frame = ensure_keys(pd.DataFrame(list(events)) if not isinstance(events, pd.DataFrame) else events)
    frame = frame[frame["session_id"] == session.id] if len(frame) else frame
    if frame.empty:
        return pd.DataFrame(columns=[*KEYS, *EVENT_COLUMNS])
    original = session.conversation()
    stripped, _ = strip_recorded_compactions(original)
    prepared: dict[bool, tuple[list[Record], list[Any], list[int], _Stems]] = {}
    rows: list[dict[str, Any]] = []
    # the events by cell in key order, each cell's by step, as dicts of the fields read (an event row also
    # lists every record it kept or dropped)
    for keys, group in cell_events(frame, READ_EVENT_FIELDS):
        recorded = any(event["kind"] == "recorded-compact" for event in group)
        if recorded not in prepared:
            records = original if recorded else stripped
            boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
            prepared[recorded] = (records, api_calls(records), boundaries, _Stems(records))
        records, calls, boundaries, own = prepared[recorded]
        dropped_so_far: set[str] = set()
        summary = ""
        recorded_seen = 0
        for number, event in enumerate(group):
            step = int(event["step"])
            point = calls[step].first if step < len(calls) else len(records)
            horizon = point
            if event["kind"] == "recorded-compact":
                horizon = boundaries[recorded_seen] if recorded_seen < len(boundaries) else point
                recorded_seen += 1
                dropped = {r.uuid for r in records[:horizon] if r.uuid is not None}
            else:
                dropped = {u for u in as_list(event.get("dropped_uuids")) if u is not None}
            dropped_so_far |= dropped
            text = event.get("summary")
            if isinstance(text, str) and text:
                summary = text
            added = event.get("added_text") if isinstance(event.get("added_text"), str) else ""
            carrier = set(stems(summary)) | stems(added or "")
            for index in range(point):
                uuid = records[index].uuid
                if uuid is None or uuid not in dropped_so_far:
                    carrier |= own.of(index)
            rows.append(
                {
                    **dict(zip(KEYS, keys, strict=True)),
                    "event": number,
                    "kind": event["kind"],
                    "step": step,
                    **_score(instructions(records, horizon), dropped_so_far, carrier),
                }
            )
    return pd.DataFrame(rows, columns=[*KEYS, *EVENT_COLUMNS])


def instructions_frame(sessions: Iterable[Session], events: pd.DataFrame) -> pd.DataFrame:
    """`instructions_events` over every session of ``sessions`` that has events."""
    frames = [instructions_events(s, events) for s in sessions]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEYS, *EVENT_COLUMNS])
