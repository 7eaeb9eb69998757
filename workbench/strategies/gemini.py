"""``gemini-cli``: Gemini CLI chat compression, then tool output masking, before every request.

Source: google-gemini/gemini-cli ``packages/core/src/context/chatCompressionService.ts`` at commit
5411f113 (2026-08-21, ``@google/gemini-cli-core`` 0.56.0-nightly.20260806; the file lived in
``packages/core/src/services/`` before commit fd5c103f, 2026-03-31), driven by ``GeminiClient`` in
``packages/core/src/core/client.ts`` (``tryCompressChat``, then ``tryMaskToolOutputs``). Verified there:

* **Trigger.** Nothing happens while the last prompt's token count is below ``threshold × tokenLimit``
  (``DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5``, the ``model.compressionThreshold`` setting): compression
  fires at exactly the threshold.
* **Function-response budget.** Before the split, newest to oldest, function responses are kept whole
  while they fit in **50,000** tokens (``COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET``); past it each one is
  saved to a file and replaced by ``formatTruncatedToolOutput``: unchanged when it has at most
  ``getTruncateToolOutputThreshold()`` characters, = min(4 × (tokenLimit − last prompt tokens), 40,000)
  (``DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD``), otherwise its first 20% and last 80% of that many
  characters around an omission note. The replacement's tokens count against the budget. (The function's
  comment still speaks of "the last 30 lines"; the code does not.)
* **Split.** ``findCompressSplitPoint(history, 1 − 0.3)`` (``COMPRESSION_PRESERVE_THRESHOLD``): sizes are
  ``JSON.stringify`` lengths; the legal split points are user contents without a functionResponse; the
  first at or past 70% of the characters wins; with none, everything is compressed when the last content
  is a model turn without a functionCall, otherwise the last legal point is used. Split 0: NOOP.
* **Summariser input.** The compressed part as it was (untruncated) when its token count is below the
  model's limit, otherwise the truncated part. A previous ``<state_snapshot>`` in it must be merged.
* **Verification turn** (google-gemini/gemini-cli#15710): a second call on the same history plus the first
  snapshot asks the model whether it omitted technical details, file paths, tool results or user
  constraints and to output a FINAL improved ``<state_snapshot>``, or repeat it; its answer replaces the
  first snapshot (the first is kept when the answer is empty).
* **New history** = [user: the snapshot] + [model: "Got it. Thanks for the additional context!"] + the
  kept (truncated) tail.
* **Inflated result.** The new history's token count is compared with the last prompt's: when it is
  *larger* the result is discarded (``COMPRESSION_FAILED_INFLATED_TOKEN_COUNT``; equal is accepted), and
  the client remembers the failure (``hasFailedCompressionAttempt``): from then on automatic compression
  only applies the function-response truncation (``CONTENT_TRUNCATED``, kept when it lowers the count,
  else NOOP) and never calls the summariser again in the session.
* **Masking** (``tool_output_masking``, on: the client masks before every request, whatever compression
  did): `workbench.strategies.gemini_masking`, applied to the compressed context when both happen.

Modelled here: the snapshot is written offline (`workbench.summarize.offline`) in the seven
``<state_snapshot>`` sections of ``getCompressionPrompt`` (``packages/core/src/prompts/snippets.ts``:
overall_goal, active_constraints, key_knowledge, artifact_trail, file_system_state, recent_actions,
task_state). The verification turn is modelled as a second offline pass that looks for the file paths the
compressed history mentions and the first snapshot lacks, and adds them; both calls are recorded in the
event's details (``summarizer_calls``, ``summarizer_input_tokens``, ``summarizer_output_tokens``: the second
call reads the history plus the first snapshot). The summariser's own reasoning (``<scratchpad>``) is not
written. The experimental ContextManager (``experimental.contextManagement``, off by default), which
replaces this compression when enabled, is `workbench.strategies.gemini_generalist` (``gemini-generalist``,
its "Generalist" profile). Not modelled: the PreCompress hook, a forced ``/compress``.

Mapping: a Gemini **Content** is one API message (`api_messages`: one response, or consecutive user
records merged), its size the JSON length of its records' content; a functionResponse part is a
tool_result block. The request being sent (the trailing user message, e.g. the pending tool results) is
not part of the history Gemini compresses: it is appended after compression, so it is never split off.
The last prompt's token count is the view's size (Gemini's is the previous request's prompt count, without
the request about to be sent, so the replay can fire one call earlier); the new count is chars/4 of the
new history's records (Gemini counts the history's parts only, without the system instruction and tools).
Tokens for the function-response budget are chars/4 (Gemini's ``estimateTokenCountSync`` is a character
estimate too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pydantic import Field

from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .gemini_masking import MaskingConfig, MaskingMemo, mask_tool_outputs
from .recent_window import api_messages, assistant_note, user_note
from .refill import RefillGuard, guarded
from .registry import register
from .rewrite import in_place

__all__ = [
    "ACK",
    "SNAPSHOT_SECTIONS",
    "GeminiCli",
    "GeminiConfig",
    "GeminiState",
    "find_compress_split_point",
    "state_snapshot",
    "truncate_function_responses",
    "verify_snapshot",
]

SOURCE = "google-gemini/gemini-cli packages/core/src/context/chatCompressionService.ts @ 5411f113"
ACK = "Got it. Thanks for the additional context!"
SNAPSHOT_SECTIONS = (
    "overall_goal",
    "active_constraints",
    "key_knowledge",
    "artifact_trail",
    "file_system_state",
    "recent_actions",
    "task_state",
)
#: The instruction after the history in the first call (``anchorInstruction`` + scratchpad request) and the
#: verification prompt, by their size only: what the two calls read beyond the history.
FIRST_CALL_INSTRUCTION_TOKENS = 60
VERIFY_PROMPT_TOKENS = 75


class GeminiConfig(StrategyConfig):
    context_window: int = Field(200_000, gt=0, description="tokenLimit(model)")
    compression_threshold: float = Field(0.5, gt=0, le=1, description="model.compressionThreshold")
    preserve_fraction: float = Field(0.3, gt=0, lt=1, description="COMPRESSION_PRESERVE_THRESHOLD")
    function_response_token_budget: int = Field(50_000, ge=0, description="COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET")
    truncate_tool_output_chars: int = Field(
        40_000, ge=1, description="DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD (characters)"
    )
    verify: bool = Field(True, description="the second, verification turn of the summariser")
    tool_output_masking: bool = Field(True, description="toolOutputMaskingService after compression")
    masking: MaskingConfig = MaskingConfig()


def find_compress_split_point(
    sizes: Sequence[int], legal: Sequence[bool], last_is_plain_model: bool, fraction: float
) -> int:
    """``findCompressSplitPoint`` over content sizes; ``legal[i]``: user content without functionResponse."""
    target = sum(sizes) * fraction
    count = 0
    last_split = 0
    for i, size in enumerate(sizes):
        if legal[i]:
            if count >= target:
                return i
            last_split = i
        count += size
    return len(sizes) if last_is_plain_model else last_split


def truncated_output(text: str, max_chars: int) -> str:
    """``formatTruncatedToolOutput``: unchanged up to ``max_chars``, else its first 20% and last 80% of
    ``max_chars`` characters around an omission note (the saved file's path is a stand-in)."""
    if len(text) <= max_chars:
        return text
    head = max_chars // 5
    tail = max_chars - head
    omitted = len(text) - head - tail
    return (
        f"Output too large. Showing first {head:,} and last {tail:,} characters. For full output see: "
        f".gemini/tmp/tool-outputs/compression.txt\n{text[:head]}\n\n... [{omitted:,} characters omitted] ...\n\n"
        f"{text[-tail:]}"
    )


def truncate_function_responses(records: Sequence[Record], budget: int, max_chars: int) -> tuple[list[Record], int]:
    """``truncateHistoryToBudget``: newest first, function responses whole while they fit in ``budget``
    tokens; past it each is replaced by `truncated_output` (whose tokens count against the budget). Returns
    the records and how many responses were shortened."""
    used = 0
    out: list[Record] = []
    truncated = 0
    for record in reversed(records):
        if record.kind != "user" or not record.tool_results():
            out.append(record)
            continue
        blocks = []
        for block in reversed(record.blocks):
            if block.kind != "tool_result":
                blocks.append(block)
                continue
            text = block.result_text()
            cost = rough_tokens(text)
            if used + cost <= budget:
                used += cost
                blocks.append(block)
                continue
            short = truncated_output(text, max_chars)
            used += rough_tokens(short)
            if short == text:
                blocks.append(block)
                continue
            blocks.append(Block(block.kind, {**block.raw, "content": short}))
            truncated += 1
        blocks.reverse()
        out.append(record.with_blocks(blocks) if blocks != list(record.blocks) else record)
    out.reverse()
    return out, truncated


_SECTION = re.compile(r"^(\d+)\.\s+[^:\n]+:[ \t]*$", re.MULTILINE)


def offline_sections(records: Sequence[Record]) -> dict[int, str]:
    """The offline summary's nine section bodies by number (1-9), each dedented and stripped."""
    from ..summarize.offline import OfflineSummarizer

    text = OfflineSummarizer().summarize(records)
    body = text.split("<summary>", 1)[-1].rsplit("</summary>", 1)[0]
    marks = list(_SECTION.finditer(body))
    out: dict[int, str] = {}
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        chunk = body[mark.end() : following.start() if following else len(body)]
        out[int(mark.group(1))] = "\n".join(line.strip() for line in chunk.strip().splitlines())
    return out


def state_snapshot(records: Sequence[Record]) -> str:
    """The offline ``<state_snapshot>`` of ``records`` in the seven sections of ``getCompressionPrompt``."""
    s = offline_sections(records)

    def join(*numbers: int) -> str:
        return "\n".join(s[n] for n in numbers if s.get(n)) or "(none)"

    bodies = {
        "overall_goal": join(1),
        "active_constraints": join(6),
        "key_knowledge": join(2, 4),
        "artifact_trail": join(5),
        "file_system_state": join(3),
        "recent_actions": join(8),
        "task_state": join(7, 9),
    }
    inner = "\n".join(f"    <{name}>\n{_indent(bodies[name])}\n    </{name}>" for name in SNAPSHOT_SECTIONS)
    return f"<state_snapshot>\n{inner}\n</state_snapshot>"


def _indent(text: str) -> str:
    return "\n".join(f"        {line}" if line else "" for line in text.splitlines())


_PATH = re.compile(r"(?<![\w./-])(?:/|\./)?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8}\b")


def mentioned_paths(records: Sequence[Record]) -> list[str]:
    """File paths the records mention (user text, tool inputs, tool results), first mention first."""
    seen: dict[str, None] = {}
    for record in records:
        texts = [b.text for b in record.blocks if b.kind == "text"]
        texts += [str(b.input) for b in record.tool_uses()] if record.kind == "assistant" else []
        texts += [b.result_text() for b in record.tool_results()] if record.kind == "user" else []
        for text in texts:
            for match in _PATH.finditer(text):
                seen.setdefault(match.group(0), None)
    return list(seen)


def verify_snapshot(snapshot: str, records: Sequence[Record], limit: int = 40) -> tuple[str, int]:
    """The verification turn, offline: the file paths ``records`` mention that ``snapshot`` omits are added
    to its ``<file_system_state>`` (at most ``limit``); with none missing the snapshot is repeated. Returns
    the final snapshot and how many paths were added."""
    missing = [p for p in mentioned_paths(records) if p not in snapshot][:limit]
    if not missing:
        return snapshot, 0
    lines = "\n".join(f"        - MENTIONED: `{p}`" for p in missing)
    return snapshot.replace("    </file_system_state>", f"{lines}\n    </file_system_state>", 1), len(missing)


@dataclass
class JsonSizes:
    """``len(record.content_json())`` of the records seen, by identity: one session's replay asks it for every
    record at every call past the threshold (json.dumps was half of that replay). Records are immutable and
    each entry holds its record, so an id is not reused while it is there; emptied past 4 entries per record
    asked about plus 1,000 (the truncated tool results are new records at every call)."""

    sizes: dict[int, tuple[Record, int]] = field(default_factory=dict)

    def of(self, records: Sequence[Record]) -> list[int]:
        if len(self.sizes) > 4 * len(records) + 1_000:
            self.sizes.clear()
        out = []
        for record in records:
            hit = self.sizes.get(id(record))
            if hit is None:
                hit = self.sizes[id(record)] = (record, len(record.content_json()))
            out.append(hit[1])
        return out


@dataclass
class GeminiState:
    """The record sizes memo, the refill stop (`workbench.strategies.refill`), the client's
    ``hasFailedCompressionAttempt`` and the masking memo."""

    sizes: JsonSizes = field(default_factory=JsonSizes)
    refill: RefillGuard = field(default_factory=RefillGuard)
    failed: bool = False
    masking: MaskingMemo = field(default_factory=MaskingMemo)


def _rough(records: Sequence[Record]) -> list[int]:
    """chars/4 per record, as the view's ``rough`` counts (the ``claude-rough`` estimator)."""
    from ..tokens.estimators import get_estimator

    return list(get_estimator("claude-rough").count_many(records))


def _recount(kind: str, view: ContextView, result: Compaction | None, records: Sequence[Record]) -> Compaction:
    """``result`` (or an in-place compaction of ``view``) with its context replaced by ``records``: what
    was dropped and added is read again against the view's records, by identity."""
    if result is None:
        return in_place(kind, "tool_output_masking", view.records, records, {})
    old = {id(r) for r in view.records}
    new = {id(r) for r in records}
    return replace(
        result,
        records=tuple(records),
        dropped=tuple(r.uuid for r in view.records if id(r) not in new),
        added=tuple(r for r in records if id(r) not in old),
        changed_at=None,
    )


@register
class GeminiCli(Strategy):
    """Gemini CLI: compression at 0.5 of the window keeping the last 30% of characters, a verified
    snapshot, inflated results discarded; then tool output masking."""

    name = "gemini-cli"
    description = (
        "Gemini CLI compression at 50% of the window: verified snapshot + last ~30% by chars, split at a user "
        "turn; then tool output masking."
    )
    source = SOURCE
    Config = GeminiConfig

    def new_state(self) -> GeminiState:
        return GeminiState()

    def compact(self, view: ContextView, state: GeminiState | None) -> Compaction | None:
        state = state if state is not None else GeminiState()
        config = for_window(self.config, view)
        assert isinstance(config, GeminiConfig)
        fires = view.tokens >= config.compression_threshold * config.context_window
        result = guarded(state.refill, view, fires, lambda v: self._compress(v, config, state))
        if not config.tool_output_masking:
            return result
        masked = mask_tool_outputs(result.records if result else view.records, config.masking, state.masking)
        if masked is None:
            return result
        records, counts = masked
        out = _recount(self.name, view, result, records)
        return replace(out, details={**out.details, "masking": counts})

    def _compress(self, view: ContextView, config: GeminiConfig, state: GeminiState) -> Compaction | None:
        max_chars = max(1, min(4 * (config.context_window - view.tokens), config.truncate_tool_output_chars))
        records, truncated = truncate_function_responses(view.records, config.function_response_token_budget, max_chars)
        if state.failed:
            return self._truncate_only(view, records, truncated)
        messages = api_messages(records)
        if messages and messages[-1].role == "user":
            history, pending = messages[:-1], messages[-1].first
        else:
            history, pending = messages, len(records)
        if not history:
            return None
        chars = state.sizes.of(records)
        sizes = [sum(chars[m.first : m.end]) for m in history]
        legal = [m.role == "user" and not m.has_tool_result for m in history]
        last = history[-1]
        split = find_compress_split_point(
            sizes, legal, last.role == "assistant" and not last.has_tool_use, 1 - config.preserve_fraction
        )
        if split <= 0:
            return None
        start = history[split].first if split < len(history) else pending
        original = view.records[:start]
        original_tokens = sum(view.rough[:start])
        compressed = original if original_tokens < config.context_window else records[:start]
        read = original_tokens if compressed is original else sum(_rough(compressed))
        first = state_snapshot(compressed)
        calls_in = [read + FIRST_CALL_INSTRUCTION_TOKENS]
        calls_out = [rough_tokens(first)]
        text, added_paths = first, 0
        if config.verify:
            text, added_paths = verify_snapshot(first, compressed)
            calls_in.append(read + calls_out[0] + VERIFY_PROMPT_TOKENS)
            calls_out.append(rough_tokens(text))
        added = (user_note(text, self.name, str(view.step), event=True), assistant_note(ACK, self.name, str(view.step)))
        new = (*added, *records[start:])
        new_tokens = sum(_rough(new))
        if new_tokens > view.tokens:
            state.failed = True
            return None
        originals = {id(r) for r in view.records}
        kept = {id(r) for r in records[start:]}
        return Compaction(
            kind=self.name,
            trigger="tokens",
            records=new,
            dropped=tuple(r.uuid for r in view.records[:start])
            + tuple(r.uuid for r in view.records[start:] if id(r) not in kept),
            added=added + tuple(r for r in records[start:] if id(r) not in originals),
            start=start,
            summary=text,
            details={
                "status": "COMPRESSED",
                "split_content": split,
                "contents": len(history),
                "truncated_function_responses": truncated,
                "new_tokens": new_tokens,
                "summarizer_calls": len(calls_in),
                "summarizer_input_tokens": calls_in,
                "summarizer_output_tokens": calls_out,
                "verification_added_paths": added_paths,
            },
        )

    def _truncate_only(self, view: ContextView, records: list[Record], truncated: int) -> Compaction | None:
        """After an inflated result: ``CONTENT_TRUNCATED`` when the truncation lowers the count, else NOOP."""
        if not truncated:
            return None
        new_tokens = sum(_rough(records))
        if new_tokens >= view.tokens:
            return None
        result = in_place(
            self.name,
            "tokens",
            view.records,
            records,
            {"status": "CONTENT_TRUNCATED", "truncated_function_responses": truncated, "new_tokens": new_tokens},
        )
        return result
