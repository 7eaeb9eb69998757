"""OpenHands condensers (docs/peers.md §1.1 V0 legacy condensers, §1.2 V1 SDK), one class each.

Mapping to our records (OpenHands counts **events**, not tokens, §1.1):

* an **event** is one action or observation. A response (all assistant records sharing a
  ``message.id``) is one ActionEvent per tool_use it holds (at least one: a text-only reply is a
  MessageAction; its thinking/text records ride along as the action's thought); each tool_result block is
  one Observation; each other sent user record with text is one MessageAction. A summary this module
  inserts is one event (OpenHands' AgentCondensationObservation); markers and unsent records
  (progress, snapshots) are not events (`events`).
* OpenHands' event 0 is the system prompt. Ours is not a record (it is sent outside ``messages`` and never
  compacted), so ``keep_first`` counts from the first conversation event: ``keep_first=1`` keeps the
  initial user task. [deviation by one event, on purpose]
* With ``unit="turn"`` (for the Complexity Trap's N/M settings, §2.1) the unit is a step turn: one API
  call plus its tool_results, the records before the first call being turn 0.

Forgetting condensers keep ``records[:head] + [summary or marker] + records[tail:]``. OpenHands V1 cuts
only at "manipulation indices" (§1.2: batch atomicity, tool-loop atomicity with thinking, tool-call
matching); we get the same guarantees from `safe_head_end` (the head keeps its tool pairs) and
`safe_cut` (the tail start moves earlier: tool pairs, same ``message.id``, thinking-led loop). V0 simply
forgets the events; a one-line marker user message stands in for them here so the request keeps
alternating and starts the kept tool loop like a summary would (deviation needed for API validity).
If no legal range remains, nothing is condensed (V1 PR #1577 "graceful skip", [S]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..request.normalize import is_sent
from ..tokens.estimators import get_estimator
from ..transcript.model import Block, Record
from ..transcript.steps import api_calls
from .base import Compaction, ContextView, Strategy, StrategyConfig
from .recent_window import is_added, safe_cut, safe_head_end, splice, step_starts, user_note
from .registry import register

__all__ = [
    "AmortizedConfig",
    "LLMSummarizingConfig",
    "OpenHandsAmortized",
    "OpenHandsLLM",
    "OpenHandsPipeline",
    "OpenHandsRecent",
    "PipelineConfig",
    "PipelineStage",
    "RecentConfig",
    "events",
]

MASKED = "<MASKED>"


def events(records: Sequence[Record]) -> list[tuple[int, str]]:
    """(record index where the event starts, kind) for every OpenHands-style event, in record order."""
    out: list[tuple[int, str]] = []
    for call in api_calls(records):
        uses = [k for k in call.indices for _ in records[k].tool_uses()]
        out.append((call.first, "action"))
        out.extend((k, "action") for k in uses[1:])
    for i, record in enumerate(records):
        if record.kind == "assistant" or not is_sent(record):
            continue
        if is_added(record) and not record.raw.get("event"):
            continue
        out.extend((i, "observation") for _ in record.tool_results())
        if any(b.kind != "tool_result" for b in record.blocks) and record.text.strip():
            out.append((i, "message"))
    out.sort(key=lambda e: e[0])
    return out


def units(records: Sequence[Record], unit: str) -> list[int]:
    """Start index of every unit (event or step turn)."""
    if unit == "turn":
        return step_starts(records)
    return [i for i, _ in events(records)]


class _Condenser(Strategy):
    """A forgetting condenser: ``head`` units + added + the last ``tail`` units, cut API-safe."""

    def window(self, view: ContextView) -> tuple[int, int] | None:
        """(keep, tail) in units, or None when the condenser does not run."""
        raise NotImplementedError

    def middle(self, view: ContextView, keep: int, tail: int) -> tuple[int, int, int] | None:
        """(head_end, tail_start, naive_tail_start) record indices, or None without a legal range."""
        records = view.records
        starts = units(records, getattr(self.config, "unit", "event"))
        if len(starts) <= keep + tail:
            return None
        head_end = safe_head_end(records, starts[keep] if keep < len(starts) else len(records))
        naive = starts[len(starts) - tail] if tail > 0 else len(records)
        tail_start = safe_cut(records, naive)
        if not any(is_sent(r) and not is_added(r) for r in records[head_end:tail_start]):
            return None  # nothing but an earlier summary or marker would be forgotten
        return head_end, tail_start, naive


class RecentConfig(StrategyConfig):
    keep_first: int = Field(1, ge=0)
    max_events: int = Field(100, ge=1)

    @model_validator(mode="after")
    def _head_fits(self) -> RecentConfig:
        if self.keep_first >= self.max_events:
            raise ValueError(f"keep_first ({self.keep_first}) must be below max_events ({self.max_events})")
        return self


@register
class OpenHandsRecent(_Condenser):
    """V0 ``RecentEventsCondenser`` (§1.1): every step keep the first ``keep_first`` events and the last
    ``max_events − keep_first``; config defaults keep_first 1, max_events **100** (ctor 10)."""

    name = "openhands-recent"
    source = (
        "OpenHands/OpenHands openhands/memory/condenser/impl/recent_events_condenser.py @ 76483ad8; "
        "config defaults openhands/core/config/condenser_config.py @ d074f47c"
    )
    description = "OpenHands V0: every step keep the first event and the last 99 (of max 100 events)."
    Config = RecentConfig
    config: RecentConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        cut = self.middle(view, self.config.keep_first, self.config.max_events - self.config.keep_first)
        if cut is None:
            return None
        head_end, start, naive = cut
        marker = user_note("[Earlier events forgotten.]", self.name, str(view.step))
        return splice(
            view, start, kind=self.name, trigger="events", head_end=head_end, added=(marker,), naive_start=naive
        )


class AmortizedConfig(StrategyConfig):
    max_size: int = Field(100, ge=2)
    keep_first: int = Field(1, ge=0)

    @model_validator(mode="after")
    def _head_fits(self) -> AmortizedConfig:
        if self.keep_first >= self.max_size // 2:
            raise ValueError(f"keep_first ({self.keep_first}) must be below max_size // 2 ({self.max_size // 2})")
        return self


@register
class OpenHandsAmortized(_Condenser):
    """V0 ``AmortizedForgettingCondenser`` (§1.1): when the view has more than ``max_size`` events keep
    head + tail down to ``max_size // 2`` in total; config defaults max_size 100, keep_first **1** (ctor 0)."""

    name = "openhands-amortized"
    source = (
        "OpenHands/OpenHands openhands/memory/condenser/impl/amortized_forgetting_condenser.py @ 76483ad8; "
        "config defaults openhands/core/config/condenser_config.py @ d074f47c"
    )
    description = "OpenHands V0: above 100 events forget the middle, keeping the first event + tail to 50."
    Config = AmortizedConfig
    config: AmortizedConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        if len(events(view.records)) <= self.config.max_size:
            return None
        cut = self.middle(view, self.config.keep_first, self.config.max_size // 2 - self.config.keep_first)
        if cut is None:
            return None
        head_end, start, naive = cut
        marker = user_note("[Earlier events forgotten.]", self.name, str(view.step))
        return splice(
            view, start, kind=self.name, trigger="events", head_end=head_end, added=(marker,), naive_start=naive
        )


class LLMSummarizingConfig(StrategyConfig):
    """V0 ``llm`` config defaults (§1.1); ``max_tokens`` is the V1 SDK token trigger (§1.2, default None);
    ``unit``/``keep_last`` express the Complexity Trap's N/M in step turns (§2.1)."""

    max_size: int = Field(100, ge=2)
    keep_first: int = Field(1, ge=0)
    max_event_length: int = Field(10_000, ge=1, description="chars of each event given to the summariser")
    max_tokens: int | None = Field(None, gt=0, description="V1 SDK: also condense when the view has more tokens")
    unit: Literal["event", "turn"] = "event"
    keep_last: int | None = Field(None, ge=0, description="tail size; default max_size // 2 − keep_first − 1")
    summarizer: Literal["offline"] = "offline"

    @model_validator(mode="after")
    def _sizes(self) -> LLMSummarizingConfig:
        if self.tail < 0:
            raise ValueError(f"keep_first ({self.keep_first}) leaves no room in max_size // 2 ({self.max_size // 2})")
        if self.keep_first + self.tail + 1 > self.max_size:
            raise ValueError("keep_first + keep_last + 1 must not exceed max_size")
        return self

    @property
    def tail(self) -> int:
        return self.keep_last if self.keep_last is not None else self.max_size // 2 - self.keep_first - 1


def _clipped(record: Record, limit: int) -> Record:
    """The record with each text/tool_result clipped to ``limit`` chars (the condenser's per-event cap)."""
    blocks = []
    changed = False
    for block in record.blocks:
        if block.kind == "tool_result" and len(block.result_text()) > limit:
            blocks.append(Block(block.kind, {**block.raw, "content": block.result_text()[:limit]}))
            changed = True
        elif block.kind == "text" and len(block.text) > limit:
            blocks.append(block.with_raw(text=block.text[:limit]))
            changed = True
        else:
            blocks.append(block)
    return record.with_blocks(blocks, string_content=record.string_content) if changed else record


def offline_summary(records: Sequence[Record], instructions: str | None = None) -> str:
    from ..summarize.offline import OfflineSummarizer

    return OfflineSummarizer().summarize(list(records), custom_instructions=instructions)


@register
class OpenHandsLLM(_Condenser):
    """V0 ``LLMSummarizingCondenser`` (§1.1): above ``max_size`` events keep head (``keep_first``) + one
    summary event at offset ``keep_first`` + a tail of ``max_size // 2 − keep_first − 1`` events. The
    summary is recursive: a previous summary lies in the forgotten range and is summarised again. Each
    event is clipped to ``max_event_length`` chars for the summariser (offline here, not an LLM)."""

    name = "openhands-llm"
    source = (
        "OpenHands/OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py @ 76483ad8; "
        "config defaults openhands/core/config/condenser_config.py @ d074f47c"
    )
    description = "OpenHands V0 LLM summarizing condenser: >100 events → first event + summary + last 48."
    Config = LLMSummarizingConfig
    config: LLMSummarizingConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        config = self.config
        count = len(units(view.records, config.unit))
        by_tokens = config.max_tokens is not None and view.tokens > config.max_tokens
        if count <= config.max_size and not by_tokens:
            return None
        cut = self.middle(view, config.keep_first, config.tail)
        if cut is None:
            return None
        head_end, start, naive = cut
        forgotten = [_clipped(r, config.max_event_length) for r in view.records[head_end:start] if is_sent(r)]
        text = offline_summary(forgotten)
        summary = user_note(text, self.name, str(view.step), event=True)
        return splice(
            view,
            start,
            kind=self.name,
            trigger="tokens" if by_tokens and count <= config.max_size else config.unit + "s",
            head_end=head_end,
            added=(summary,),
            naive_start=naive,
            summary=text,
        )


class PipelineStage(BaseModel):
    """One stage: a registered strategy name and its config (validated when the pipeline is)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    config: dict[str, Any] = Field(default_factory=dict)


class PipelineConfig(StrategyConfig):
    stages: tuple[PipelineStage, ...] = Field(default_factory=tuple)

    @field_validator("stages")
    @classmethod
    def _known_and_valid(cls, stages: tuple[PipelineStage, ...]) -> tuple[PipelineStage, ...]:
        from .registry import create

        for stage in stages:
            if stage.name == "openhands-pipeline":
                raise ValueError("a pipeline stage cannot be a pipeline")
            create(stage.name, stage.config)  # unknown names and bad configs raise
        return stages


def resized(view: ContextView, compaction: Compaction) -> ContextView:
    """The view after an in-place stage: same positions, recounted records and total."""
    rough = get_estimator("claude-rough")
    padded = get_estimator("claude-padded")
    new_rough = tuple(rough.count_many(compaction.records))
    new_padded = tuple(padded.count_many(compaction.records))
    return replace(
        view,
        records=compaction.records,
        tokens=view.tokens - sum(view.rough) + sum(new_rough),
        rough=new_rough,
        padded=new_padded,
    )


@register
class OpenHandsPipeline(Strategy):
    """V0 ``CondenserPipeline`` (§1.1): run the stages in order; a stage that rewrites in place (masking)
    hands its result to the next, the first stage that forgets records ends the pipeline. The steps of
    one call are reported as one event whose ``kind`` joins the stage kinds with ``+``.

    Hybrids are configurations. The Complexity Trap hybrid (§2.1: masking during accumulation, then
    summarise; N=43, M=W=10), in step turns::

        {"stages": [
            {"name": "observation-masking", "config": {"keep_last_turns": 10}},
            {"name": "openhands-llm",
             "config": {"unit": "turn", "max_size": 53, "keep_first": 1, "keep_last": 10}},
        ]}

    The default (no stages) is OpenHands' default condenser, NoOp.
    """

    name = "openhands-pipeline"
    source = "OpenHands/OpenHands openhands/memory/condenser/impl/pipeline.py @ 76483ad8"
    description = "OpenHands condenser pipeline: stages in order, stop at the first that forgets (default: none)."
    Config = PipelineConfig
    config: PipelineConfig

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        from .registry import create

        self.stages = [create(stage.name, stage.config) for stage in self.config.stages]

    def new_state(self) -> list[Any]:
        return [stage.new_state() for stage in self.stages]

    def observe(self, view: ContextView, state: list[Any]) -> Any:
        """Every stage's hook; a stage's session-memory extraction (an sm-compact stage) is the pipeline's
        (a step row holds one: with two such stages, the first one's)."""
        calls = [stage.observe(view, sub) for stage, sub in zip(self.stages, state, strict=True)]
        return next((call for call in calls if call is not None), None)

    def compact(self, view: ContextView, state: list[Any]) -> Compaction | None:
        done: list[Compaction] = []
        for stage, sub in zip(self.stages, state, strict=True):
            result = stage.compact(view, sub)
            if result is None:
                continue
            done.append(result)
            if result.start is not None:
                break
            view = resized(view, result)
        if not done:
            return None
        last = done[-1]
        if len(done) == 1:
            return last
        final = {id(r) for r in last.records}
        added = tuple(r for c in done for r in c.added if id(r) in final)
        dropped = tuple(dict.fromkeys(u for c in done for u in c.dropped))
        return replace(
            last,
            kind="+".join(c.kind for c in done),
            trigger="+".join(c.trigger for c in done),
            dropped=dropped,
            added=added if last.start is None else last.added,
            details={c.kind: c.details for c in done},
        )
