"""``gemini-generalist``: Gemini CLI's experimental ContextManager with its "Generalist" profile.

Source: google-gemini/gemini-cli ``packages/core/src/context/config/profiles.ts`` (``generalistProfile``) at
commit 5411f113 (2026-08-21, ``@google/gemini-cli-core`` 0.56.0-nightly.20260806), with the pipeline it
configures: ``contextManager.ts`` (``renderHistory``, ``evaluateTriggers``), ``graph/render.ts``,
``graph/toGraph.ts``, ``pipeline/orchestrator.ts``, ``pipeline/contextWorkingBuffer.ts``, the processors
``toolMaskingProcessor.ts``, ``nodeDistillationProcessor.ts``, ``stateSnapshotProcessor.ts`` and
``stateSnapshotAsyncProcessor.ts``, ``utils/snapshotGenerator.ts``, ``utils/formatNodesForLlm.ts``, and
``core/client.ts`` (``processTurn``). It is on only with ``experimental.contextManagement`` (``enabled``,
false by default); it then *replaces* chat compression (`workbench.strategies.gemini`): ``processTurn``
calls ``contextManager.renderHistory`` instead of ``tryCompressChat``, and still calls
``tryMaskToolOutputs`` afterwards. Verified there:

* **Graph.** Every Content part is a node (``toGraph.ts``): a functionCall or functionResponse part is a
  ``TOOL_EXECUTION`` node, other user parts ``USER_PROMPT``, other model parts ``AGENT_THOUGHT``, a user
  text that parses as the snapshot JSON a ``SNAPSHOT``. Budgets count the graph only (the calibrated
  calculator subtracts the system instruction and tools from the API's count).
* **Immediate Sanitization** (trigger ``new_message``): runs on the pending request only (the preview
  buffer of ``renderHistory``); ``client.ts`` sends the processed request and records it as the durable
  history. ``ToolMasking`` replaces every string of a functionResponse (or functionCall args) longer than
  ``tokensToChars(8,000)`` characters, unless already masked, by ``<tool_output_masked>`` with its size,
  line count and the path of the file it was saved to; the outputs of ``activate_skill``, ``ask_user``,
  ``enter_plan_mode`` and ``exit_plan_mode`` are never masked. ``BlobDegradation`` turns inline media into
  text. ``ImmediateNodeDistillation`` sends a user text, model text or function response longer than
  ``tokensToChars(15,000)`` characters to a model ("drastically shorten ... Return ONLY the compressed
  summary") and keeps the answer when it has fewer tokens (a response becomes ``{"summary": ...}``).
* **Aged-out drafts** (``evaluateTriggers``, trigger ``nodes_aged_out``): when the graph plus the pending
  request exceeds **65,000** tokens (``retainedTokens``), the nodes whose newer nodes already total more
  than 65,000 are aged out (the pending turn is protected). Once the deficit (total − 65,000) exceeds the
  deficit of the previous draft by more than **5,000** (``coalescingThresholdTokens``; it is lowered to a
  smaller deficit and reset to 0 when nothing is aged out) the async pipeline ``StateSnapshotAsync``
  (``accumulate``) writes a draft in the background: it takes the newest draft from the inbox (or, with
  none, the newest snapshot among the targets as baseline), asks the snapshot model for a JSON patch of
  the aged-out nodes, merges it and publishes a ``PROPOSED_SNAPSHOT`` whose consumed ids are the previous
  ones plus the targets. It does not change the history.
* **Emergency Backstop** (``render.ts``, trigger ``gc_backstop``): when the graph plus the pending request
  exceeds **150,000** tokens (``maxTokens``; equal does not fire), the nodes whose newer nodes total more
  than 65,000 (``gcStrategy`` ``bulk``), less the pending turn, are the targets of ``StateSnapshotSync``
  (``target: 'max'``): the newest inbox draft whose consumed ids are all among the targets is spliced in
  (one user snapshot node replaces those nodes where the first of them stood, and the draft is consumed);
  otherwise a snapshot is written synchronously over all the targets (fewer than 2: nothing), the newest
  snapshot among them read as the previous state and replaced too. The result is committed to the durable
  history (``setHistory``).
* **Snapshot** (``snapshotGenerator.ts``): a JSON state ``{active_tasks, discovered_facts,
  constraints_and_preferences, recent_arc}``. The model returns a patch (new facts, constraints and tasks,
  resolved task ids, obsolete indices, a 1-2 sentence ``chronological_summary``); the merge appends,
  keeps the last **5** arc entries (``maxSummaryTurns``) and, while the state exceeds **4,000** tokens
  (``maxStateTokens``), drops the oldest fact, else constraint, else arc entry, else task. The transcript
  it reads truncates each function response to 2,000 characters.
* **Not reached.** The ``Normalization`` pipeline (``NodeDistillation`` at 3,000 tokens, ``NodeTruncation``
  to 4,000 tokens per node) is triggered by ``retained_exceeded``, which nothing emits at this commit
  (``contextManager.ts`` emits ``nodes_added``, ``nodes_aged_out`` and ``normalized_exceeded``;
  ``render.ts`` ``gc_backstop``): the Generalist profile never truncates nor distils an old node. Nor does
  a later draft ever apply: a draft built on a snapshot's baseline carries that snapshot's consumed ids,
  which are no longer in the graph, so after the first backstop every backstop writes its snapshot
  synchronously (the drafts are still written, and paid for).
* **Masking** (``tool_output_masking``): ``tryMaskToolOutputs`` (`workbench.strategies.gemini_masking`)
  still runs on the durable history after the render.

Modelled here, per API call: the client's masking of the history (it ran after the previous render;
its result is what this call's render starts from), the sanitization of the request being sent, the
draft trigger, then the backstop. Snapshots and distillations are written offline
(`workbench.summarize.offline`) in the shape of the model's answer: the patch's facts are the offline
summary's technical concepts, files, errors and problem solving lines, its constraints the user messages,
its tasks the pending tasks, its chronological summary the first line of the current work; the offline
patch resolves no task and marks nothing obsolete, and leaves out items the state already holds
[assumed]. Each model call is charged as a summary call in an event's ``summarizer_input_tokens`` /
``summarizer_output_tokens``: a snapshot or distillation on its own event; a background draft (it changes
nothing, so it has no event of its own) on the next event that carries a summary
(``earlier_calls_charged`` counts them there), so drafts written after a session's last such event are
not priced.

Mapping [assumed]: a node is a record (Claude Code writes one content block per assistant record and one
tool_result per user record); node tokens are chars/4 (the calibrated calculator converts with the
ratio it learns from the API's counts, 3 characters per token before the first calibration), so the
character limits are 4 × the token limits; a functionResponse's response is its tool_result text, one
string. The request being sent is the trailing user message (``lateBindPrompt``: the pending turn, never
aged out). The deviations the replay needs: Gemini repairs a cut that leaves a tool result without its
call by synthesising the call with empty arguments and a "[Continuing from previous AI thoughts...]" turn
(``utils/historyHardening.ts``), and strips every thought part; here the cut moves earlier to an
API-safe point (`workbench.strategies.recent_window.safe_cut`, ``naive_start`` is Gemini's cut) and
thinking blocks are kept. Inline media (``BlobDegradation``) is not modelled.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, model_validator

from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, NameSet, Strategy, StrategyConfig
from .gemini import offline_sections
from .gemini_masking import EXEMPT_TOOLS, MASKED_TAG, MaskingConfig, MaskingMemo, mask_tool_outputs
from .recent_window import api_messages, safe_cut, user_note
from .refill import RefillGuard
from .registry import register

__all__ = [
    "Draft",
    "GeminiGeneralist",
    "GeneralistConfig",
    "GeneralistState",
    "aged_out",
    "masked_string",
    "merge_state",
]

SOURCE = "google-gemini/gemini-cli packages/core/src/context/config/profiles.ts @ 5411f113"
#: ``formatNodesForLlm``'s default ``maxToolResponseChars``: what a snapshot call reads of each response.
SNAPSHOT_TOOL_CHARS = 2_000
#: The snapshot call's system prompt and headers, and the distillation's system instruction, by size only
#: (about 930 and 300 characters at the commit).
SNAPSHOT_PROMPT_TOKENS = 260
DISTILL_PROMPT_TOKENS = 75
STATE_KEYS = ("active_tasks", "discovered_facts", "constraints_and_preferences", "recent_arc")


class GeneralistConfig(StrategyConfig):
    max_tokens: int = Field(150_000, gt=0, description="budget.maxTokens (the backstop fires above it)")
    retained_tokens: int = Field(65_000, gt=0, description="budget.retainedTokens")
    coalescing_threshold_tokens: int = Field(5_000, ge=0, description="budget.coalescingThresholdTokens")
    masking_threshold_tokens: int = Field(8_000, gt=0, description="ToolMasking stringLengthThresholdTokens")
    distillation_threshold_tokens: int = Field(
        15_000, gt=0, description="ImmediateNodeDistillation nodeThresholdTokens"
    )
    max_state_tokens: int = Field(4_000, gt=0, description="StateSnapshotSync/Async maxStateTokens")
    max_summary_turns: int = Field(5, gt=0, description="StateSnapshotSync/Async maxSummaryTurns")
    chars_per_token: float = Field(4.0, gt=0, description="the calculator's calibrated characters per token")
    unmaskable_tools: NameSet = EXEMPT_TOOLS
    tool_output_masking: bool = Field(True, description="toolOutputMaskingService after the render")
    masking: MaskingConfig = MaskingConfig()

    @model_validator(mode="after")
    def _retained_below_max(self) -> GeneralistConfig:
        if self.retained_tokens >= self.max_tokens:
            raise ValueError("retained_tokens must be below max_tokens")
        return self


@dataclass(frozen=True)
class Draft:
    """A ``PROPOSED_SNAPSHOT`` (``accumulate``): the state JSON and the node ids it consumes."""

    text: str
    consumed: tuple[str, ...]


@dataclass
class GeneralistState:
    """The draft coalescing deficit, the inbox, the draft written in the background at the last call (in
    the inbox from the next call: ``renderHistory`` waits for the pipelines first), the consumed ids of
    each snapshot made, model calls not charged yet, the refill stop and the masking memo."""

    last_deficit: int = 0
    inbox: list[Draft] = field(default_factory=list)
    in_flight: Draft | None = None
    snapshots: dict[str, tuple[str, ...]] = field(default_factory=dict)
    uncharged: list[tuple[int, int]] = field(default_factory=list)
    refill: RefillGuard = field(default_factory=RefillGuard)
    masking: MaskingMemo = field(default_factory=MaskingMemo)


def _key(record: Record) -> str:
    return record.uuid or f"@{id(record)}"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def masked_string(text: str, tool: str, call_id: str) -> str:
    """``ToolMasking``'s replacement of one string (the saved file's directory is a stand-in)."""
    size_mb = len(text.encode("utf-8", "surrogatepass")) / 1024 / 1024
    lines = text.count("\n") + 1
    name = f"{(tool or 'unknown').lower()}_{(call_id or 'unknown').lower()}_observation_{_digest(text)}.txt"
    return (
        f"<{MASKED_TAG}>\n[Tool observation string ({size_mb:.2f}MB, {lines} lines) masked to preserve context "
        f"window. Full string saved to: .gemini/tmp/tool-outputs/{name}]\n</{MASKED_TAG}>"
    )


def aged_out(tokens: Sequence[int], retained: int, end: int) -> int:
    """How many leading nodes are aged out: those whose newer nodes total more than ``retained`` tokens
    (a prefix), among the first ``end`` (the pending turn is protected)."""
    newer = 0
    count = 0
    for i in range(len(tokens) - 1, -1, -1):
        if newer > retained:
            count = i + 1
            break
        newer += tokens[i]
    return min(count, end)


def _lines(text: str | None) -> list[str]:
    out = []
    for line in (text or "").splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if line and line.lower() not in {"(none)", "none", "none."}:
            out.append(line)
    return out


def _patch(records: Sequence[Record]) -> dict[str, Any]:
    """The offline stand-in for the snapshot model's JSON patch of ``records``."""
    s = offline_sections(records)
    arc = _lines(s.get(8))
    return {
        "new_facts": [line for n in (2, 3, 4, 5) for line in _lines(s.get(n))],
        "new_constraints": _lines(s.get(6)),
        "new_tasks": [{"description": line} for line in _lines(s.get(7)) if not line.startswith("No ")],
        "chronological_summary": arc[0] if arc else "",
    }


def _parse_state(text: str | None) -> dict[str, list[Any]]:
    empty: dict[str, list[Any]] = {key: [] for key in STATE_KEYS}
    if not text:
        return empty
    try:
        parsed = json.loads(text)
    except ValueError:
        return empty
    if not isinstance(parsed, dict):
        return empty
    return {key: list(parsed[key]) if isinstance(parsed.get(key), list) else [] for key in STATE_KEYS}


def merge_state(previous: str | None, patch: dict[str, Any], max_turns: int, max_tokens: int, cpt: float) -> str:
    """``synthesizeSnapshot``'s merge: append the patch's new items (the offline patch's items the state
    already holds are left out), keep the last ``max_turns`` arc entries, then drop the oldest fact, else
    constraint, else arc entry, else task while the JSON exceeds ``max_tokens`` (characters / ``cpt``)."""
    state = _parse_state(previous)
    facts, constraints = state["discovered_facts"], state["constraints_and_preferences"]
    facts += [f for f in dict.fromkeys(patch["new_facts"]) if f not in facts]
    constraints += [c for c in dict.fromkeys(patch["new_constraints"]) if c not in constraints]
    known = {t.get("description") for t in state["active_tasks"] if isinstance(t, dict)}
    for task in patch["new_tasks"]:
        if task["description"] not in known:
            known.add(task["description"])
            state["active_tasks"].append({"id": f"task_{_digest(task['description'])[:8]}", **task})
    if patch["chronological_summary"]:
        state["recent_arc"] = [*state["recent_arc"], patch["chronological_summary"]][-max_turns:]
    order = ("discovered_facts", "constraints_and_preferences", "recent_arc", "active_tasks")
    text = json.dumps(state, ensure_ascii=False)
    while len(text) / cpt > max_tokens:
        key = next((k for k in order if state[k]), None)
        if key is None:
            break
        state[key].pop(0)
        text = json.dumps(state, ensure_ascii=False)
    return text


def _read_tokens(record: Record) -> int:
    """What a snapshot call reads of one node: a tool result truncated to 2,000 characters."""
    if record.kind == "user" and record.tool_results():
        return sum(min(len(b.result_text()), SNAPSHOT_TOOL_CHARS) for b in record.tool_results()) // 4 + 10
    return rough_tokens(record.content_json())


def _synthesize(
    records: Sequence[Record], previous: str | None, config: GeneralistConfig
) -> tuple[str, tuple[int, int]]:
    """A snapshot of ``records`` merged into ``previous``, and the call's (input, output) tokens."""
    patch = _patch(records)
    text = merge_state(previous, patch, config.max_summary_turns, config.max_state_tokens, config.chars_per_token)
    read = SNAPSHOT_PROMPT_TOKENS + rough_tokens(previous or "") + sum(_read_tokens(r) for r in records)
    return text, (read, rough_tokens(json.dumps(patch, ensure_ascii=False)))


def _distilled(text: str) -> str:
    """The offline stand-in for the distillation model's "compressed summary" of one node's text."""
    note = user_note(text, "gemini-generalist-distill")
    sections = offline_sections([note])
    return "\n".join(body for _, body in sorted(sections.items()) if body and body != "(none)") or text[:2_000]


def _is_snapshot_text(text: str) -> bool:
    """``isSnapshotState``: a JSON object with the four state arrays."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and all(isinstance(parsed.get(k), list) for k in STATE_KEYS)


@register
class GeminiGeneralist(Strategy):
    """Gemini CLI's ContextManager, Generalist profile: large request strings masked at once, background
    state-snapshot drafts past 65k, and above 150k everything older than the newest 65k replaced by a
    JSON state snapshot."""

    name = "gemini-generalist"
    description = (
        "Gemini CLI ContextManager (Generalist profile, experimental): mask request strings >8k tokens; above "
        "150k replace all but the newest 65k with a JSON state snapshot (background drafts past 65k)."
    )
    source = SOURCE
    Config = GeneralistConfig

    def new_state(self) -> GeneralistState:
        return GeneralistState()

    def compact(self, view: ContextView, state: GeneralistState | None) -> Compaction | None:
        state = state if state is not None else GeneralistState()
        config = self.config
        assert isinstance(config, GeneralistConfig)
        if state.in_flight is not None:
            state.inbox.append(state.in_flight)
            state.in_flight = None
        records = list(view.records)
        details: dict[str, Any] = {}
        if config.tool_output_masking:
            masked = mask_tool_outputs(records, config.masking, state.masking)
            if masked is not None:
                records, details["masking"] = masked
        pending = self._pending_start(records)
        calls: list[tuple[int, int]] = []
        summary: str | None
        distilled = self._sanitize(records, pending, config, details, calls)
        tokens = self._tokens(view, records)
        total = sum(tokens)
        self._draft(records, tokens, total, pending, config, state)
        backstop = None
        if total <= config.max_tokens:
            state.refill.below()
        elif state.refill.allows():
            backstop = self._backstop(view, records, tokens, pending, config, state)
            if backstop is not None:
                state.refill.compacted()
        if backstop is not None:
            new, summary, snapshot_details = backstop
            call = snapshot_details.pop("call")
            details.update(snapshot_details)
            if call is not None:
                calls.append(call)
        else:
            new, summary = tuple(records), "\n\n".join(distilled) or None
        if summary is None:  # no summary on this call's event (or no event): its calls wait for the next one
            state.uncharged.extend(calls)
            calls = []
            if all(map(operator.is_, records, view.records)):
                return None
        else:
            calls = [*state.uncharged, *calls]
            details["earlier_calls_charged"] = len(state.uncharged)
            state.uncharged.clear()
        if calls:
            details["summarizer_calls"] = len(calls)
            details["summarizer_input_tokens"] = [c[0] for c in calls]
            details["summarizer_output_tokens"] = [c[1] for c in calls]
        return self._event(view, new, summary, details, backstop is not None)

    @staticmethod
    def _pending_start(records: Sequence[Record]) -> int:
        messages = api_messages(records)
        return messages[-1].first if messages and messages[-1].role == "user" else len(records)

    @staticmethod
    def _tokens(view: ContextView, records: Sequence[Record]) -> list[int]:
        from ..tokens.estimators import get_estimator

        known = {id(r): n for r, n in zip(view.records, view.rough, strict=True)}
        missing = [r for r in records if id(r) not in known]
        if missing:
            known.update(zip(map(id, missing), get_estimator("claude-rough").count_many(missing), strict=True))
        return [known[id(r)] for r in records]

    def _sanitize(
        self,
        records: list[Record],
        pending: int,
        config: GeneralistConfig,
        details: dict[str, Any],
        calls: list[tuple[int, int]],
    ) -> list[str]:
        """``Immediate Sanitization`` of the request being sent (``records[pending:]``), in place: masking,
        then distillation. Returns the distillations written."""
        mask_chars = config.masking_threshold_tokens * config.chars_per_token
        distill_chars = config.distillation_threshold_tokens * config.chars_per_token
        names = {b.id: b.name or "" for r in records[:pending] if r.kind == "assistant" for b in r.tool_uses()}
        masked = 0
        written: list[str] = []
        for index in range(pending, len(records)):
            record = records[index]
            if record.kind != "user":
                continue
            blocks = list(record.blocks)
            for position, block in enumerate(blocks):
                if block.kind == "tool_result":
                    text = block.result_text()
                    name = names.get(block.tool_use_id, "")
                    if name not in config.unmaskable_tools and len(text) > mask_chars and f"<{MASKED_TAG}>" not in text:
                        text = masked_string(text, name, block.tool_use_id or "")
                        masked += 1
                    elif len(text) > distill_chars:
                        short = _distilled(text)
                        calls.append((rough_tokens(text) + DISTILL_PROMPT_TOKENS, rough_tokens(short)))
                        if rough_tokens(short) >= rough_tokens(text):
                            continue
                        text = json.dumps({"summary": short}, ensure_ascii=False)
                        written.append(short)
                    else:
                        continue
                    blocks[position] = Block(block.kind, {**block.raw, "content": text})
                elif block.kind == "text" and len(block.text) > distill_chars:
                    short = _distilled(block.text)
                    calls.append((rough_tokens(block.text) + DISTILL_PROMPT_TOKENS, rough_tokens(short)))
                    if rough_tokens(short) < rough_tokens(block.text):
                        blocks[position] = Block.text_block(short)
                        written.append(short)
            if any(a is not b for a, b in zip(blocks, record.blocks, strict=True)):
                records[index] = record.with_blocks(blocks, string_content=record.string_content and len(blocks) == 1)
        if masked:
            details["request_strings_masked"] = masked
        if written:
            details["request_nodes_distilled"] = len(written)
        return written

    def _baseline(self, targets: Sequence[Record], state: GeneralistState) -> tuple[int, str, tuple[str, ...]] | None:
        """``findLatestSnapshotBaseline``: the newest snapshot among ``targets`` (index, text, consumed ids)."""
        for index in range(len(targets) - 1, -1, -1):
            record = targets[index]
            if record.kind == "user" and _is_snapshot_text(record.text):
                return index, record.text.strip(), state.snapshots.get(_key(record), ())
        return None

    def _draft(
        self,
        records: Sequence[Record],
        tokens: Sequence[int],
        total: int,
        pending: int,
        config: GeneralistConfig,
        state: GeneralistState,
    ) -> None:
        """``evaluateTriggers``' ``nodes_aged_out`` and the background ``StateSnapshotAsync`` it starts."""
        if total <= config.retained_tokens:
            return
        count = aged_out(tokens, config.retained_tokens, pending)
        if not count:
            state.last_deficit = 0
            return
        deficit = total - config.retained_tokens
        state.last_deficit = min(state.last_deficit, deficit)
        if deficit <= state.last_deficit + config.coalescing_threshold_tokens:
            return
        state.last_deficit = deficit
        targets = records[:count]
        summarize = list(targets)
        previous: str | None
        previous_ids: tuple[str, ...]
        if state.inbox:
            taken = state.inbox.pop()
            previous, previous_ids = taken.text, taken.consumed
        else:
            baseline = self._baseline(targets, state)
            previous, previous_ids = (baseline[1], baseline[2]) if baseline else (None, ())
        if previous is not None:
            summarize = [r for r in summarize if not (r.kind == "user" and r.text.strip() == previous)]
        if not summarize:
            return
        text, call = _synthesize(summarize, previous, config)
        state.uncharged.append(call)
        state.in_flight = Draft(text, (*previous_ids, *map(_key, targets)))

    def _backstop(
        self,
        view: ContextView,
        records: Sequence[Record],
        tokens: Sequence[int],
        pending: int,
        config: GeneralistConfig,
        state: GeneralistState,
    ) -> tuple[tuple[Record, ...], str, dict[str, Any]] | None:
        """``render``'s ``gc_backstop`` and ``StateSnapshotSync`` (``target: 'max'``)."""
        count = aged_out(tokens, config.retained_tokens, pending)
        targets = records[:count]
        ids = {_key(r) for r in targets}
        for draft in reversed(state.inbox):
            if all(i in ids for i in draft.consumed):
                consumed = set(draft.consumed)
                text, call, path = draft.text, None, "inbox"
                state.inbox.remove(draft)
                break
        else:
            if len(targets) < 2:
                return None
            summarize = list(targets)
            baseline = self._baseline(targets, state)
            previous = None
            if baseline is not None:
                previous = baseline[1]
                del summarize[baseline[0]]
            text, call = _synthesize(summarize, previous, config)
            consumed, path = ids, "sync"
        positions = [i for i, r in enumerate(records) if _key(r) in consumed]
        if not positions:
            return None
        cut = positions[-1] + 1
        start = safe_cut(records, cut)
        first = positions[0]
        if start <= first:
            return None
        snapshot = user_note(text, self.name, str(view.step), event=True)
        state.snapshots[_key(snapshot)] = tuple(sorted(consumed))
        middle = [r for r in records[first:start] if _key(r) not in consumed]
        new = (*records[:first], snapshot, *middle, *records[start:])
        details: dict[str, Any] = {
            "status": "SNAPSHOT",
            "snapshot_source": path,
            "aged_out_nodes": count,
            "consumed_nodes": len(positions),
            "naive_start": cut,
            "start": start,
            "new_tokens": sum(tokens[:first]) + rough_tokens(text) + sum(tokens[start:]),
            "call": call,
        }
        return new, text, details

    def _event(
        self, view: ContextView, new: Sequence[Record], summary: str | None, details: dict[str, Any], snapshot: bool
    ) -> Compaction:
        details = {k: v for k, v in details.items() if v is not None}
        old = {id(r) for r in view.records}
        kept = {id(r) for r in new}
        start = details.pop("start", None) if snapshot else None
        naive = details.pop("naive_start", None) if snapshot else None
        return Compaction(
            kind=self.name,
            trigger="gc_backstop" if snapshot else "new_message",
            records=tuple(new),
            dropped=tuple(r.uuid for r in view.records if id(r) not in kept),
            added=tuple(r for r in new if id(r) not in old),
            start=start,
            naive_start=naive,
            summary=summary,
            details=details,
        )
