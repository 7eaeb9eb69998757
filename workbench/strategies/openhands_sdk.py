"""``openhands-sdk``: the OpenHands V1 SDK's ``LLMSummarizingCondenser`` (docs/peers.md §1.2, "Late 2026").

Read in OpenHands/software-agent-sdk at 611629e6 (2026-08-22, ``v1.43.1``+2):
``openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py`` (last changed c11602d1,
2026-08-13), ``condenser/base.py``, ``context/view/view.py``, ``context/view/properties/*.py``,
``event/condenser.py`` and ``openhands-tools/openhands/tools/preset/default.py``.

**Defaults.** The class defaults are ``max_size=240, keep_first=2`` (since PR #1523, 2025-12-29; at 0d2b16d9
they were 120 and 4); the default agent (``get_default_agent`` → ``default_condenser``, shared with spawned
sub-agents) builds ``max_size=80, keep_first=4``, the defaults here. ``max_size=240, keep_first=2`` reproduces
the bare class (and the SDK's ``LLMSummarizingCondenserSettings``), ``max_size=120`` the older one.

**When.** Before each LLM call the condenser collects its reasons:

* **events**: the view has more than ``max_size`` events (a *soft* requirement: with no legal range the
  view is used uncondensed and the next step tries again);
* **tokens**: the view's tokens exceed the effective ``max_tokens``: the smaller of the configured one and
  the agent LLM's effective max input tokens (c11602d1: with an agent LLM that knows its window this is
  always on; ``cap_by_window`` here, the window being ``context_window`` or the one the recording proves).
  A *hard* requirement: with no legal range the condenser makes a "hard context reset", one summary of the
  whole view (the SDK's includes the system prompt event; here the system prompt is not a record and stays);
* **request**: an explicit condensation request (a user's ``condense()``, a context-window error). A replay
  has no context-window errors; a recorded ``/compact`` is taken as the user's request (`compact_manual`).

**What.** The kept tail is the strictest of the reasons' targets: events ``max_size // 2 − keep_first − 1``,
request ``len(view) // 2 − keep_first − 1``, tokens what is left after the shortest run of events from
``keep_first`` on whose tokens exceed ``tokens − max_tokens // 2``. The forgotten range runs from the first
manipulation index at or after ``keep_first`` to the first at or after ``len(view) − tail``: both ends move
*later* (V0's and the other OpenHands strategies of this package move the tail start earlier). The summary
(one user-role event, recursive: an earlier summary sits at ``keep_first`` and is forgotten with the range)
is inserted where the range began. A condensation that forgets nothing, or fewer than ``minimum_progress``
(10%) of the view's events, is not made.

**Manipulation indices** (``view/properties``): a cut may not split a tool call from its observation
(tool-call matching), a batch of tool calls of one response (batch atomicity), nor fall inside a tool loop
opened by a response with thinking blocks: its later actions and observations up to the next message event
(tool-loop atomicity). Here a cut is also never inside one record. **Unmatched pairs**: the view drops a
tool call without its observation and an observation without its call, and a second observation of one
call (observation uniqueness); the compacted context is filtered the same way.

**Events** are `workbench.strategies.openhands.events`, plus the system prompt: it is the SDK view's event
0 (``SystemPromptEvent``), so it counts in ``len(view)`` and in ``keep_first``. It is not a record here and is
never forgotten (``keep_first=0`` would forget it in the SDK; here the head is then empty).

**How it differs from the V0 condensers** (`workbench.strategies.openhands`, `openhands_masking`):
``openhands-llm`` is V0's summarising condenser (``max_size`` 100, ``keep_first`` 1 counted without the system
prompt, a tail of ``max_size // 2 − keep_first − 1``, each event clipped to 10,000 chars for the summariser,
condensing at any cut the workbench finds API-safe by moving it earlier); V1 counts the system prompt, keeps
the first 4 events, cuts only at its manipulation indices by moving both ends later, skips condensations
below 10% progress, adds the token trigger capped at the model's window with a hard reset, and filters
unmatched pairs. ``openhands-amortized``/``openhands-recent`` forget without a summary, and
``openhands-observation-masking`` masks old observations in place; the SDK has neither (its other condensers
are ``NoOpCondenser`` and ``PipelineCondenser``).

Not modelled: the LLM (the offline summariser writes the summary; the SDK's Jinja prompt asks for
USER_CONTEXT, TASK_TRACKING, COMPLETED, PENDING, CURRENT_STATE and code sections), the hard reset's
retries with shrinking event strings, and token counts by the agent LLM's tokenizer (the view's estimate is
used).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from ..request.normalize import is_sent
from ..transcript.model import Record
from ..transcript.steps import api_calls, is_real_assistant
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .openhands import events, offline_summary
from .recent_window import splice, user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = ["OpenHandsSDK", "SDKCondenserConfig", "manipulation_positions", "matched_only"]

#: ``default_condenser`` in ``llm_summarizing_condenser.py`` (the default agent's and sub-agents' sizing).
DEFAULT_MAX_SIZE = 80
DEFAULT_KEEP_FIRST = 4


class SDKCondenserConfig(StrategyConfig):
    """``LLMSummarizingCondenser`` fields (the default agent's sizing) plus the window its token cap reads."""

    max_size: int = Field(DEFAULT_MAX_SIZE, gt=0, description="condense when the view has more events")
    keep_first: int = Field(DEFAULT_KEEP_FIRST, ge=0, description="events kept at the start, system prompt included")
    max_tokens: int | None = Field(None, gt=0, description="condense when the view has more tokens")
    cap_by_window: bool = Field(True, description="cap max_tokens at the model's window (the agent LLM's max input)")
    context_window: int = Field(200_000, gt=0)
    minimum_progress: float = Field(0.1, gt=0, lt=1, description="skip condensations forgetting fewer events")
    summarizer: Literal["offline"] = "offline"

    @model_validator(mode="after")
    def _room_for_a_tail(self) -> SDKCondenserConfig:
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise ValueError(
                f"keep_first ({self.keep_first}) must be less than max_size // 2 ({self.max_size // 2}) minus one"
            )
        return self

    @property
    def effective_max_tokens(self) -> int | None:
        limits = [t for t in (self.max_tokens, self.context_window if self.cap_by_window else None) if t is not None]
        return min(limits) if limits else None


def manipulation_positions(records: Sequence[Record]) -> list[bool]:
    """For each position ``0..len(records)``: may a cut fall right before it (the SDK's manipulation indices)?

    A position is illegal when a tool call before it has its observation after it (matched pairs only: an
    unmatched call is filtered, not waited for), when it splits one response's records, or when it falls on an
    action or observation inside a tool loop that a response with thinking blocks opened (a message event
    ends the loop, a new thinking response starts a new one). Unsent records take the next sent record's.
    """
    n = len(records)
    uses = {i for r in records if r.kind == "assistant" for i in r.tool_use_ids()}
    results = {i for r in records if r.kind != "assistant" for i in r.tool_result_ids()}
    matched = uses & results
    first_of: dict[int, tuple[bool, bool]] = {}  # response start → (has tool calls, thinking-led loop)
    inside: set[int] = set()
    for call in api_calls(records):
        blocks = [b for k in call.indices for b in records[k].blocks]
        tools = any(b.kind == "tool_use" for b in blocks)
        first_of[call.first] = (tools, tools and any(b.kind in ("thinking", "redacted_thinking") for b in blocks))
        inside.update(call.indices[1:])
    legal: list[bool | None] = [None] * (n + 1)
    pending: set[str] = set()
    in_loop = False
    for p, record in enumerate(records):
        if not is_sent(record):
            continue
        if record.kind == "assistant":
            if p in inside:
                legal[p] = False
            elif p in first_of and is_real_assistant(record):
                tools, thinking = first_of[p]
                legal[p] = not pending and (thinking or not tools or not in_loop)
                in_loop = thinking or (tools and in_loop)
            else:  # a note a compaction wrote: a message event
                legal[p] = not pending
                in_loop = False
        else:
            observation = bool(record.tool_results())
            legal[p] = not pending and not (observation and in_loop)
            if any(b.kind != "tool_result" for b in record.blocks) and record.text.strip():
                in_loop = False  # a message event (after its observations) ends the loop
        pending |= set(record.tool_use_ids()) & matched
        pending -= set(record.tool_result_ids())
    legal[n] = True
    out = [False] * (n + 1)
    following = True
    for p in range(n, -1, -1):
        value = legal[p]
        following = following if value is None else value
        out[p] = following
    return out


def matched_only(records: Sequence[Record]) -> tuple[Record, ...]:
    """``records`` without tool calls that have no observation, observations without their call, and second
    observations of one call (the view's properties); a record left with no content is dropped."""
    uses = {i for r in records if r.kind == "assistant" for i in r.tool_use_ids()}
    results = {i for r in records if r.kind != "assistant" for i in r.tool_result_ids()}
    seen: set[str] = set()
    out: list[Record] = []
    for record in records:
        blocks = []
        for block in record.blocks:
            if block.kind == "tool_use" and block.id is not None and block.id not in results:
                continue
            if block.kind == "tool_result" and block.tool_use_id is not None:
                if block.tool_use_id not in uses or block.tool_use_id in seen:
                    continue
                seen.add(block.tool_use_id)
            blocks.append(block)
        if len(blocks) == len(record.blocks):
            out.append(record)
        elif blocks:
            out.append(record.with_blocks(blocks, string_content=record.string_content))
    return tuple(out)


@register
class OpenHandsSDK(Strategy):
    """OpenHands V1 SDK ``LLMSummarizingCondenser`` (module docstring): above ``max_size`` events (or the
    model's window in tokens) forget from ``keep_first`` to ``len(view) − (max_size // 2 − keep_first − 1)``,
    both ends moved later to manipulation indices, and insert one summary where the range began."""

    name = "openhands-sdk"
    description = (
        "OpenHands V1 SDK LLM summarizing condenser: above 80 events (or the window) keep the first 4 events "
        "(system prompt included) + summary + the newest, 40 events in all; cuts only at its manipulation indices."
    )
    source = (
        "OpenHands/software-agent-sdk openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py "
        "@ 611629e6 (v1.43.1+2; file at c11602d1), context/view/properties/*.py; defaults from "
        "default_condenser (openhands-tools/openhands/tools/preset/default.py)"
    )
    Config = SDKCondenserConfig
    config: SDKCondenserConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        reasons = self._reasons(view, config)
        return guarded(state, view, bool(reasons), lambda v: self._condense(v, config, reasons))

    def compact_manual(self, view: ContextView, state: Any) -> Compaction | None:
        """A recorded ``/compact`` as the SDK's explicit condensation request (a hard requirement)."""
        config = for_window(self.config, view)
        return self._condense(view, config, {"request", *self._reasons(view, config)})

    @staticmethod
    def _reasons(view: ContextView, config: SDKCondenserConfig) -> set[str]:
        reasons = set()
        cap = config.effective_max_tokens
        if cap is not None and view.tokens > cap:
            reasons.add("tokens")
        if 1 + len(events(view.records)) > config.max_size:
            reasons.add("events")
        return reasons

    def _condense(self, view: ContextView, config: SDKCondenserConfig, reasons: set[str]) -> Compaction | None:
        records = view.records
        evs = [i for i, _ in events(records)]
        size = 1 + len(evs)  # the system prompt is view event 0

        def at(index: int) -> int:
            """The record position of view event ``index`` (``size``: the end)."""
            return len(records) if index >= size else evs[index - 1] if index >= 1 else 0

        tails = []
        if "request" in reasons:
            tails.append(size // 2 - config.keep_first - 1)
        if "events" in reasons:
            tails.append(config.max_size // 2 - config.keep_first - 1)
        if "tokens" in reasons:
            tails.append(self._token_tail(view, config, evs, size))
        naive_end = size - max(0, min(tails))
        legal = manipulation_positions(records)

        def next_index(threshold: int) -> int:
            for index in range(max(1, threshold), size + 1):
                # a cut between two events of one record is not a cut between records
                if legal[at(index)] and (index == 1 or index >= size or evs[index - 1] != evs[index - 2]):
                    return index
            return size

        start, end = next_index(config.keep_first), next_index(naive_end)
        hard = "tokens" in reasons or "request" in reasons
        if end <= start or end - start < size * config.minimum_progress:
            if not hard:
                return None  # soft: use the view uncondensed, try again at the next step
            start, end = 1, size  # hard context reset: one summary of the whole view
            trigger = "hard-reset"
        else:
            trigger = "+".join(sorted(reasons))
        head_end, tail_start = (0 if trigger == "hard-reset" else at(start)), at(end)
        forgotten = [r for r in records[head_end:tail_start] if is_sent(r)]
        if not forgotten:
            return None
        text = offline_summary(forgotten)
        summary = user_note(text, self.name, str(view.step), event=True)
        result = splice(
            view,
            tail_start,
            kind=self.name,
            trigger=trigger,
            head_end=head_end,
            added=(summary,),
            naive_start=at(naive_end),
            summary=text,
            details={"forgotten_events": end - start, "view_events": size},
        )
        filtered = matched_only(result.records)
        if len(filtered) == len(result.records) and all(a is b for a, b in zip(filtered, result.records, strict=True)):
            return result
        kept = {id(r) for r in filtered}
        extra = tuple(r.uuid for r in result.records if id(r) not in kept)
        return Compaction(
            kind=result.kind,
            trigger=result.trigger,
            records=filtered,
            dropped=(*result.dropped, *extra),
            added=(summary,),
            start=result.start,
            naive_start=result.naive_start,
            summary=text,
            details={**result.details, "unmatched_filtered": len(extra)},
        )

    @staticmethod
    def _token_tail(view: ContextView, config: SDKCondenserConfig, evs: list[int], size: int) -> int:
        """Events after ``keep_first`` that can stay while the view loses ``tokens − max_tokens // 2``:
        the shortest prefix of them whose tokens exceed that is forgotten (each record's tokens count for
        the first event it starts)."""
        cap = config.effective_max_tokens
        assert cap is not None
        reduce = view.tokens - cap // 2
        body = list(range(max(1, config.keep_first), size))
        if reduce <= 0:
            return len(body)
        starts = sorted(set(evs))
        record_end = dict(zip(starts, [*starts[1:], len(view.records)], strict=True))
        removed = 0
        for taken, index in enumerate(body, start=1):
            first = evs[index - 1]
            if index >= 2 and evs[index - 2] == first:
                continue  # the record's tokens were counted for its first event
            removed += sum(view.rough[first : record_end[first]])
            if removed > reduce:
                return len(body) - taken
        return 0
