"""Anthropic API on-demand compaction and the TypeScript SDK's client-side ``CompactionControl``
(docs/peers.md §1.9 and its "Late 2026" section). Threshold compaction ``compact_20260112`` is
``server-compact`` (`workbench.strategies.context_editing`).

Sources, as read:

* API docs, mirrored as Markdown in ``gpambrozio/ClaudeDocs``: ``docs-md/api/build-with-claude/
  compaction-on-demand.md`` @ 0b87af04 and ``compaction-background.md`` @ 22b170d8 (platform.claude.com
  /docs/en/build-with-claude/compaction-on-demand, /compaction-background; beta ``compact-2026-09-04``).
* ``anthropics/anthropic-sdk-typescript`` @ bfa9197f (0.120.0, 2026-08-19): ``src/lib/tools/
  CompactionControl.ts`` (last changed 0b536ae0) and ``src/lib/tools/BetaToolRunner.ts``
  (``#checkAndCompact``). The 0.120.0 SDK marks ``compactionControl`` deprecated in favour of
  ``compact_20260112``; the constants are those peers.md quotes from 0.81.0.

**``on-demand-compact``** (``compact-2026-09-04``, top-level ``"compaction": {"type": "summarize"}``).
The application decides when: the docs' loop adds the last response's input (with prompt caching: plus
cache read and cache creation) and output tokens, and compacts after a completed turn when that total
*passes* its limit (``>``). The compaction request carries the conversation as it stands, with the same
``system`` and ``tools``; the API summarises every message once and returns one ``compaction`` block and
no reply (``stop_reason: "compaction"``). The block then goes first and the summarised messages are
removed; later turns follow it unchanged. Its cost: the summarisation call is billed and rate-limited,
reported as the ``compaction`` entry of ``usage.iterations``, with top-level ``input_tokens`` and
``output_tokens`` zero; sending the block back later adds no compaction cost. The API rejects the request
when the last assistant turn ends in a tool call with no result yet; here the strategy then waits for a
later call. ``instructions`` (non-blank, at most 16,384 characters) replaces the summarisation prompt.

**``background-compact``**: the same request sent off the conversation's path. The conversation goes
on over its full history; when the block arrives, exactly the messages the request held are dropped from
the front, the block takes their place and every turn appended since stays after it. No second request
is sent while one is pending; the swapped history goes out on the first request after the block
arrives, as the docs ask. In a conversation that uses thinking, a block whose swap would put a response
without leading thinking right after it is not swapped in (the history is kept, as when no summary comes
back, and a later call may compact again): that response, inside a loop in the full history, would open
the trailing tool loop, which the validator rejects (``final_assistant_missing_thinking``). Whether the
API accepts it behind a compaction block is not documented [A]; the discarded summary's cost is not
counted.

**``sdk-compaction-control``** (TS SDK tool runner ``compactionControl``): after each response, when its
``input_tokens + cache_creation_input_tokens + cache_read_input_tokens + output_tokens`` is at least
``contextTokenThreshold`` (``DEFAULT_TOKEN_THRESHOLD = 100_000``), the runner sends a separate request
(``model`` or the runner's model, no ``system``, no tools) of the history *without* that response plus a
user message with the summary prompt (five sections, "Wrap your summary in <summary></summary> tags"),
and replaces the whole history by one user message holding the reply. The response that triggered it is
dropped with its tool calls unexecuted; the runner asks the model again from the summary.

Mapping. A call's "last response" is the last API call in the context (`api_calls`); its usage total is
`ContextView.usage_tokens` (the engine's, corrected for what compactions removed; the view's size where a
format records no usage). A completed turn is the context before a call: tool results already appended.
Where a real user prompt follows the last response (a new turn), the on-demand compaction was made before
it was appended, so the prompt stays after the block. The block is rendered as a compact boundary plus a
user-role summary (the Messages validator knows no ``compaction`` block); the offline summariser writes
it. Each event's ``details["compaction_usage"]`` says where the real API reports the compaction's cost
and what that call reads and writes (estimated tokens).

Assumed [A], not established from a source:

* the on-demand limit: the docs leave it to the application ("near your real input budget", below the
  context window; their sample uses 2,500 to show a compaction). ``compact_at_tokens`` defaults to
  150,000, the default trigger of ``compact_20260112``.
* how long a background summary takes: ``arrives_after_calls`` (default 1) calls after the request.
* a summarisation that ends without a summary (``max_tokens``, ``refusal``, ``tool_use``…) is not
  modelled: every request here returns a block.
* ``keep-recent-turns`` (the on-demand variant that sends only older turns) is not modelled.
* ``sdk-compaction-control``'s summary ``model``: recorded in the event, but the cost metrics price the
  summary at the session's model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, field_validator

from ..request.invariants import summary_record
from ..request.normalize import is_sent, normalize
from ..tokens.js import rough_tokens
from ..transcript.model import Record
from ..transcript.steps import ApiCall, api_calls
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .recent_window import is_prompt, user_note
from .records import compact_boundary, summary_message
from .refill import RefillGuard, guarded
from .registry import register
from .rewrite import extends

__all__ = [
    "COMPACTION_BETA",
    "COMPACT_AT_TOKENS",
    "DEFAULT_SUMMARY_PROMPT_CHARS",
    "DEFAULT_TOKEN_THRESHOLD",
    "INSTRUCTIONS_MAX_CHARS",
    "SDK_SUMMARY_SECTIONS",
    "BackgroundCompact",
    "BackgroundCompactConfig",
    "BackgroundState",
    "OnDemandCompact",
    "OnDemandCompactConfig",
    "SdkCompactionControl",
    "SdkCompactionControlConfig",
    "conversation_tokens",
    "opens_loop_without_thinking",
    "sdk_summary",
]

#: The beta header of on-demand compaction (compaction-on-demand.md front matter).
COMPACTION_BETA = "compact-2026-09-04"
#: ``instructions`` may be up to this many characters (compaction-on-demand.md, "Write your own summarization prompt").
INSTRUCTIONS_MAX_CHARS = 16_384
#: [A] The on-demand limit: no documented default; the threshold compaction's default trigger.
COMPACT_AT_TOKENS = 150_000
#: ``CompactionControl.ts``: the runner compacts when the last response's usage total reaches it.
DEFAULT_TOKEN_THRESHOLD = 100_000
#: The length of ``DEFAULT_SUMMARY_PROMPT`` (CompactionControl.ts), for the summary request's input estimate.
DEFAULT_SUMMARY_PROMPT_CHARS = 1_323
#: The five parts of ``DEFAULT_SUMMARY_PROMPT`` (CompactionControl.ts), in order.
SDK_SUMMARY_SECTIONS: tuple[str, ...] = (
    "Task Overview",
    "Current State",
    "Important Discoveries",
    "Next Steps",
    "Context to Preserve",
)
#: Which of the offline summariser's sections (docs §5.2 names) fill each SDK part.
_SDK_PARTS: dict[str, tuple[str, ...]] = {
    "Task Overview": ("Primary Request and Intent",),
    "Current State": ("Current Work", "Files and Code Sections"),
    "Important Discoveries": ("Key Technical Concepts", "Errors and fixes", "Problem Solving"),
    "Next Steps": ("Pending Tasks", "Optional Next Step"),
    "Context to Preserve": ("All user messages",),
}
_SECTION = re.compile(r"^(\d+)\. ([^\n]+):$", re.MULTILINE)
_THINKING = frozenset({"thinking", "redacted_thinking"})


def conversation_tokens(view: ContextView) -> int:
    """The last response's usage total (input + cache creation + cache read + output: what the next
    request re-sends); the view's size for a format without usage. 0 before any response of the current
    context."""
    return view.usage_tokens if view.usage_tokens is not None else view.tokens


def _last_call(records: Sequence[Record]) -> ApiCall | None:
    calls = api_calls(records)
    return calls[-1] if calls else None


def _unanswered(records: Sequence[Record], call: ApiCall) -> bool:
    """Whether ``call`` (the last response in ``records``) ends in a tool call with no result in ``records``."""
    ids = {b.id for i in call.indices for b in records[i].tool_uses() if b.id}
    if not ids:
        return False
    answered = {i for r in records[call.first :] if r.kind == "user" for i in r.tool_result_ids()}
    return not ids <= answered


def _has_message(records: Sequence[Record]) -> bool:
    return any(r.kind in ("user", "assistant") and is_sent(r) for r in records)


def _turn_cut(records: Sequence[Record], call: ApiCall | None) -> int:
    """Where an on-demand compaction made after the last completed turn ends: before the first real prompt
    written after the last response (the next turn, appended after the swap), else at the end."""
    if call is None:
        return len(records)
    cut = next((i for i in range(call.last + 1, len(records)) if is_prompt(records[i])), len(records))
    if any(r.tool_results() for r in records[cut:]):
        return len(records)  # a result after the prompt: its call is in the summarised part
    return cut


def _blank(block: Any) -> bool:
    return bool(block.get("type") == "text" and not str(block.get("text", "")).strip())


def opens_loop_without_thinking(tail: Sequence[Record]) -> bool:
    """Whether "block + ``tail``" leaves a response without leading thinking as the first message after the
    block: the opening response of a tool loop once a later request ends in tool results, which the
    validator rejects with thinking on (``final_assistant_missing_thinking``, `workbench.request.validate`).
    In the full history that response sat inside a loop another response opened."""
    first = next((r for r in tail if r.kind in ("user", "assistant") and is_sent(r)), None)
    if first is None or first.kind != "assistant":
        return False
    messages = normalize([summary_record(), *tail]).messages
    if len(messages) < 2 or messages[1].role != "assistant":
        return False
    lead = next((b for b in messages[1].content if not _blank(b)), None)
    return lead is None or lead.get("type") not in _THINKING


def _on_demand_request(records: Sequence[Record]) -> int | None:
    """How many of ``records`` an on-demand compaction request sent now would hold, or None when the API
    would reject it (nothing to summarise, or the last assistant turn ends in an unanswered tool call)."""
    call = _last_call(records)
    cut = _turn_cut(records, call)
    head = records[:cut]
    if not _has_message(head):
        return None  # 400 compaction_nothing_to_summarize
    if call is not None and call.last < cut and _unanswered(head, call):
        return None  # 400: send that turn's tool results, then compact
    return cut


class OnDemandCompactConfig(StrategyConfig):
    compact_at_tokens: int = Field(
        COMPACT_AT_TOKENS, gt=0, description="[A] the application's limit on the last response's usage total"
    )
    instructions: str | None = Field(None, max_length=INSTRUCTIONS_MAX_CHARS)

    @field_validator("instructions")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("instructions must not be blank (omit them for the default summarisation prompt)")
        return value


def _swap(
    strategy: Strategy, view: ContextView, sent: int, instructions: str | None, reported: dict[str, Any]
) -> Compaction:
    """The block in place of ``view.records[:sent]``, every later record after it unchanged."""
    from ..summarize.offline import OfflineSummarizer

    records = view.records
    head, tail = records[:sent], records[sent:]
    text = OfflineSummarizer().summarize(head, custom_instructions=instructions)
    boundary = compact_boundary("auto", view.tokens, head[-1] if head else None, kind=COMPACTION_BETA)
    summary = summary_message(text, boundary)
    return Compaction(
        kind=strategy.name,
        trigger="input_tokens",
        records=(boundary, summary, *tail),
        dropped=tuple(r.uuid for r in head),
        added=(boundary, summary),
        start=sent,
        summary=text,
        details={
            "summarized_records": len(head),
            "kept_records": len(tail),
            "compaction_usage": {**reported, "output_tokens": rough_tokens(text)},
        },
    )


def _iterations(input_tokens: int) -> dict[str, Any]:
    """Where the API reports an on-demand compaction's cost: its own request, top-level usage zero."""
    return {
        "reported_in": "usage.iterations",
        "request": "separate",
        "top_level": {"input_tokens": 0, "output_tokens": 0},
        "input_tokens": input_tokens,
    }


@register
class OnDemandCompact(Strategy):
    """``compact-2026-09-04`` in the docs' loop: once the last response's usage total passes the limit,
    summarise the conversation and continue from the block."""

    name = "on-demand-compact"
    description = (
        "Anthropic on-demand compaction (compact-2026-09-04): when the last response's usage passes the "
        "application's limit, one compaction request replaces the conversation by a summary block."
    )
    source = (
        "gpambrozio/ClaudeDocs docs-md/api/build-with-claude/compaction-on-demand.md @ 0b87af04 "
        "(platform.claude.com/docs/en/build-with-claude/compaction-on-demand, beta compact-2026-09-04)"
    )
    Config = OnDemandCompactConfig
    config: OnDemandCompactConfig

    def new_state(self) -> Any:
        return RefillGuard()

    def fires(self, view: ContextView) -> bool:
        return conversation_tokens(view) > self.config.compact_at_tokens

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        return guarded(state, view, self.fires(view), self._compact)

    def _compact(self, view: ContextView) -> Compaction | None:
        sent = _on_demand_request(view.records)
        if sent is None:
            return None
        tail = sum(view.rough[sent:])  # the prompt of the next turn, not in the compaction request
        return _swap(self, view, sent, self.config.instructions, _iterations(view.tokens - tail))


class BackgroundCompactConfig(OnDemandCompactConfig):
    arrives_after_calls: int = Field(
        1, ge=1, description="[A] the block is swapped in before the call this many calls after the request"
    )


@dataclass
class BackgroundState:
    """``sent``: the records the pending compaction request held (None: none pending), ``waited`` the calls
    made since it was sent, ``tokens`` what it read, ``thinking`` whether the conversation used thinking
    then; ``discarded`` how many blocks were not swapped in; ``guard`` the refill count of the swaps."""

    guard: RefillGuard = field(default_factory=RefillGuard)
    sent: tuple[Record, ...] | None = None
    waited: int = 0
    tokens: int = 0
    thinking: bool = False
    discarded: int = 0


@register
class BackgroundCompact(OnDemandCompact):
    """``compact-2026-09-04`` in the background: the request is sent when the limit is passed, the
    conversation goes on over its full history, and the block replaces exactly what the request held when
    it arrives."""

    name = "background-compact"
    description = (
        "Anthropic background compaction (compact-2026-09-04): the compaction request runs while the "
        "conversation continues on its full history; its block replaces what it held when it arrives."
    )
    source = (
        "gpambrozio/ClaudeDocs docs-md/api/build-with-claude/compaction-background.md @ 22b170d8 "
        "(platform.claude.com/docs/en/build-with-claude/compaction-background, beta compact-2026-09-04)"
    )
    Config = BackgroundCompactConfig
    config: BackgroundCompactConfig

    def new_state(self) -> BackgroundState:
        return BackgroundState()

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        state = state if state is not None else BackgroundState()
        records = view.records
        if state.sent is not None:
            if not extends(records, state.sent):
                state.sent = None  # the history was rewritten under the request: its block cannot be used
                return None
            state.waited += 1
            if state.waited < self.config.arrives_after_calls:
                return None
            sent, state.sent = len(state.sent), None
            if state.thinking and opens_loop_without_thinking(records[sent:]):
                state.discarded += 1
                return None
            state.guard.compacted()
            return _swap(self, view, sent, self.config.instructions, _iterations(state.tokens))
        if not self.fires(view):
            state.guard.below()
            return None
        if not state.guard.allows():
            return None
        sent_count = _on_demand_request(records)
        if sent_count is not None:
            state.sent, state.waited = tuple(records[:sent_count]), 0
            state.thinking = any(b.kind in _THINKING for r in records if r.kind == "assistant" for b in r.blocks)
            state.tokens = view.tokens - sum(view.rough[sent_count:])
        return None


class SdkCompactionControlConfig(StrategyConfig):
    enabled: bool = True
    context_token_threshold: int = Field(DEFAULT_TOKEN_THRESHOLD, gt=0)
    model: str | None = Field(None, description="the summary's model; None: the runner's model")
    summary_prompt: str | None = Field(None, min_length=1, description="None: DEFAULT_SUMMARY_PROMPT")


def sdk_summary(raw: str) -> str:
    """The offline summary (the 9 sections of docs §5.2) regrouped into the five parts of the SDK's
    ``DEFAULT_SUMMARY_PROMPT``, wrapped in ``<summary>`` tags as the prompt asks."""
    body = raw.split("<summary>", 1)[-1].rsplit("</summary>", 1)[0]
    marks = list(_SECTION.finditer(body))
    sections = {
        m.group(2).strip(): body[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(body)].strip("\n")
        for i, m in enumerate(marks)
    }
    parts = []
    for number, part in enumerate(SDK_SUMMARY_SECTIONS, 1):
        texts = [sections[name] for name in _SDK_PARTS[part] if sections.get(name, "").strip()]
        parts.append(f"{number}. {part}\n" + ("\n".join(texts) if texts else "   (none)"))
    return "<summary>\n" + "\n\n".join(parts) + "\n</summary>"


@register
class SdkCompactionControl(Strategy):
    """The TS SDK tool runner's ``compactionControl``: at 100k tokens of the last response's usage, the
    history before that response becomes one user message holding a five-part summary."""

    name = "sdk-compaction-control"
    description = (
        "Anthropic TS SDK tool runner compactionControl: at 100k tokens (last response's input + cache + "
        "output) the history is replaced by one user message with a five-part <summary>."
    )
    source = (
        "anthropics/anthropic-sdk-typescript src/lib/tools/CompactionControl.ts, src/lib/tools/BetaToolRunner.ts "
        "@ bfa9197f (@anthropic-ai/sdk 0.120.0)"
    )
    Config = SdkCompactionControlConfig
    config: SdkCompactionControlConfig

    def new_state(self) -> Any:
        return RefillGuard()

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        if not self.config.enabled:
            return None
        fires = conversation_tokens(view) >= self.config.context_token_threshold
        return guarded(state, view, fires, self._compact)

    def _compact(self, view: ContextView) -> Compaction | None:
        from ..summarize.offline import OfflineSummarizer

        records = view.records
        call = _last_call(records)
        if call is None:
            return None  # no response yet: the runner has nothing to measure
        head = records[: call.first]
        if not _has_message(head):
            return None
        text = sdk_summary(OfflineSummarizer().summarize(head, custom_instructions=self.config.summary_prompt))
        note = user_note(text, self.name, str(view.step), event=True)
        # the prompts written after the discarded response come after the summary
        kept = tuple(r for r in records[call.last + 1 :] if is_prompt(r))
        survivors = {id(r) for r in kept}
        return Compaction(
            kind=self.name,
            trigger="tokens",
            records=(note, *kept),
            dropped=tuple(r.uuid for r in records if id(r) not in survivors),
            added=(note,),
            start=None,
            summary=text,
            details={
                "discarded_response": call.message_id,
                "summary_model": self.config.model or view.model,
                "compaction_usage": {
                    "reported_in": "usage",
                    "request": "separate",
                    "model": self.config.model or view.model,
                    "input_tokens": sum(view.rough[: call.first]) + self._prompt_tokens(),
                    "output_tokens": rough_tokens(text),
                },
            },
        )

    def _prompt_tokens(self) -> int:
        prompt = self.config.summary_prompt
        return rough_tokens(prompt) if prompt is not None else round(DEFAULT_SUMMARY_PROMPT_CHARS / 4)
