"""Tool-output clearing that keeps the conversation shape: Claude Code's time-based microcompact
(docs §3.3), the automatic microcompact of 1.0.68–2.1.20 (`legacy_microcompact`), the source article's
truncation variant, and the tool-result size budget (docs §3.7).

All of them rewrite ``tool_result`` contents in place (same ids, same pairing), so they never break an
API invariant; they only change how much of an old output the model still sees.

The truncation variant checks before every call once the context is past its threshold, so a replay keeps an
index (`TruncState`): a context that extends the one it last returned or saw is read from where it grew, and
only the results that became old since, or arrived since, are looked at (`rewrite_at`). Its decisions are
`truncate_old_outputs`' over the whole context (``tests/strategies/test_masking_incremental.py``); a
replay that walked the whole context at every call past the threshold would grow with the square of the
session's length (0.03 s at 250 calls, 2.9 s at 1,000).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import Field

from ..tokens.js import js_len, rough_tokens
from ..tokens.walk import IMAGE_TOKENS
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, NameSet, Strategy, StrategyConfig, for_window
from .registry import register
from .rewrite import NewContent, extends, in_place, index_results, rewrite_at, rewrite_tool_results

__all__ = [
    "COMPACTABLE_TOOLS",
    "LEGACY_COMPACTABLE_TOOLS",
    "TOOL_RESULT_CLEARED_MESSAGE",
    "LegacyMicrocompactConfig",
    "Microcompact",
    "MicrocompactTruncate",
    "TimeBasedConfig",
    "ToolResultBudgetConfig",
    "TruncState",
    "TruncateConfig",
    "apply_tool_result_budget",
    "legacy_microcompact",
    "time_based_microcompact",
    "tool_result_tokens",
    "truncate_old_outputs",
]

COMPACTABLE_TOOLS = frozenset({"Read", "Bash", "PowerShell", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"})
TOOL_RESULT_CLEARED_MESSAGE = "[Old tool result content cleared]"
#: The legacy microcompact's tools: v2.1.88's set less PowerShell (the bundles list Read, the shell tools,
#: Grep, Glob, WebSearch, WebFetch, Edit, Write; PowerShell came later).
LEGACY_COMPACTABLE_TOOLS = COMPACTABLE_TOOLS - {"PowerShell"}


class TimeBasedConfig(StrategyConfig):
    """``tengu_slate_heron`` defaults (docs §3.3); the reference ships it disabled."""

    enabled: bool = False
    gap_threshold_minutes: float = Field(60, gt=0)
    keep_recent: int = Field(5, ge=0)
    compactable_tools: NameSet = COMPACTABLE_TOOLS


class LegacyMicrocompactConfig(StrategyConfig):
    """Claude Code's automatic microcompact of 1.0.68–2.1.20 (`legacy_microcompact`).

    ``enabled``: on unless ``DISABLE_MICROCOMPACT`` is set; the ``claude-code`` strategy takes it from the
    version's row (`workbench.strategies.versions`) unless set explicitly. ``keep_recent``: the newest
    compactable results never cleared (3); ``keep_tokens``: clearing stops once the compactable results
    left hold at most this many tokens (40,000); ``min_savings``: nothing is cleared unless the clearing
    saves at least this many (20,000).
    """

    resolved_when_unset = frozenset({"enabled"})  # from the version's row (the claude-code strategy)

    enabled: bool = True
    keep_recent: int = Field(3, ge=1)
    keep_tokens: int = Field(40_000, ge=0)
    min_savings: int = Field(20_000, ge=0)
    compactable_tools: NameSet = LEGACY_COMPACTABLE_TOOLS


class TruncateConfig(StrategyConfig):
    """The source article's variant: at ~60% of the window cut old outputs to their first 2,000 chars."""

    context_window: int = Field(200_000, gt=0)
    pct_of_window: float = Field(60, gt=0, le=100)
    keep_chars: int = Field(2_000, gt=0)
    keep_recent: int = Field(5, ge=0)
    compactable_tools: NameSet = COMPACTABLE_TOOLS

    @property
    def threshold(self) -> float:
        """The context size from which old outputs are cut: ``pct_of_window`` of ``context_window``."""
        return self.context_window * self.pct_of_window / 100


class ToolResultBudgetConfig(StrategyConfig):
    """``DEFAULT_MAX_RESULT_SIZE_CHARS`` / ``MAX_TOOL_RESULTS_PER_MESSAGE_CHARS`` (docs §3.7)."""

    resolved_when_unset = frozenset({"enabled", "max_result_chars"})  # from the version's row

    enabled: bool = True
    max_result_chars: int = Field(50_000, gt=0)
    max_message_chars: int = Field(200_000, gt=0)
    preview_bytes: int = Field(2_000, gt=0)


def _minutes_between(earlier: str | None, later: str | None) -> float | None:
    if not earlier or not later:
        return None
    try:
        a = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
        b = datetime.fromisoformat(later.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (b - a).total_seconds() / 60


def _compactable_ids(records: Sequence[Record], tools: frozenset[str]) -> list[str]:
    return [b.id for r in records if r.kind == "assistant" for b in r.tool_uses() if b.name in tools and b.id]


def time_based_microcompact(view: ContextView, config: TimeBasedConfig) -> Compaction | None:
    if not config.enabled or view.is_subagent:
        return None
    records = list(view.records)
    last_assistant = next((r for r in reversed(records) if r.kind == "assistant"), None)
    if last_assistant is None:
        return None
    gap = _minutes_between(last_assistant.timestamp, view.timestamp)
    if gap is None or gap < config.gap_threshold_minutes:
        return None
    ids = _compactable_ids(records, config.compactable_tools)
    clear = set(ids[: max(0, len(ids) - max(1, config.keep_recent))])
    saved = 0

    def cleared(block: Block) -> str | None:
        nonlocal saved
        if block.content == TOOL_RESULT_CLEARED_MESSAGE:
            return None
        saved += tool_result_tokens(block)
        return TOOL_RESULT_CLEARED_MESSAGE

    new, changed = rewrite_tool_results(records, cleared, clear)
    if not changed or saved == 0:  # nothing cleared, or nothing saved: null (docs §3.3)
        return None
    details = {"cleared": changed, "gap_minutes": gap, "tokens_saved": saved}
    return in_place("microcompact", "time", records, new, details)


def _result_tokens(records: Sequence[Record], ids: set[str]) -> dict[str, int]:
    """Tokens of each id's tool_result (`tool_result_tokens`; results already cleared left out)."""
    out: dict[str, int] = {}
    for record in records:
        if record.kind != "user":
            continue
        for block in record.tool_results():
            if block.tool_use_id in ids and block.content != TOOL_RESULT_CLEARED_MESSAGE:
                out[block.tool_use_id] = out.get(block.tool_use_id, 0) + tool_result_tokens(block)
    return out


def legacy_microcompact(
    view: ContextView, config: LegacyMicrocompactConfig, *, warning_threshold: int, size: int | None = None
) -> Compaction | None:
    """Claude Code's automatic microcompact, before every API call (1.0.68–2.1.20: the range and its
    evidence are in `workbench.strategies.versions`).

    1. The compactable tool_use ids with a result still in context, in order; the last ``keep_recent``
       are kept.
    2. From the oldest, each other result is cleared while the compactable results left (the kept ones
       included) hold more than ``keep_tokens``; what it held counts as saved.
    3. Nothing happens unless the context (``size``, default ``view.tokens``: what the version's
       auto-compact check measures) is at or above ``warning_threshold`` (the auto-compact threshold −
       20,000, docs §4.2) and the saving is at least ``min_savings``.
    4. Each cleared result's content becomes ``[Old tool result content cleared]``; the block's other
       fields stay. ``details``: ``tokens_saved``, ``compacted_tool_ids`` and ``pre_tokens``, as Claude
       Code records them in its ``microcompact_boundary`` (``microcompactMetadata``).

    Sources (second-hand readings of the minified bundles; the v2.1.88 source has it removed, docs §3.2):
    v2.0.76 ``cli.js`` function ``Vd`` (``DISABLE_MICROCOMPACT``, 20,000 / 40,000 / 3, the warning
    threshold check); v2.1.63 ``cli.js`` (``var G3Y=20000,Z3Y=40000,f3Y=3``, the selection loop, executed
    by BreadBoard's oracle capture). Not modelled: v2.1.63 wrote a cleared result to disk and left a
    ``<persisted-output>`` pointer (the cleared text only when that failed), and the boundary's
    ``clearedAttachmentUUIDs`` (attachments are not tool results).
    """
    measured = view.tokens if size is None else size
    if not config.enabled or measured < warning_threshold:
        return None
    records = list(view.records)
    wanted = _compactable_ids(records, config.compactable_tools)
    sizes = _result_tokens(records, set(wanted))
    ids = [i for i in dict.fromkeys(wanted) if i in sizes]
    keep = set(ids[-config.keep_recent :])
    remaining = sum(sizes.values())
    saved = 0
    clear: list[str] = []
    for tool_id in ids:
        if tool_id in keep:
            continue
        if remaining - saved > config.keep_tokens:
            clear.append(tool_id)
            saved += sizes[tool_id]
    if not clear or saved < config.min_savings:
        return None
    new, changed = rewrite_tool_results(records, lambda _: TOOL_RESULT_CLEARED_MESSAGE, set(clear))
    if not changed:
        return None
    details = {"cleared": changed, "tokens_saved": saved, "compacted_tool_ids": clear, "pre_tokens": measured}
    return in_place("microcompact", "warning", records, new, details)


def tool_result_tokens(block: Block) -> int:
    """``calculateToolResultTokens`` (docs §3.3): string content chars/4; array content the chars/4 of its
    text parts plus 2000 per image or document."""
    content = block.content
    if isinstance(content, str):
        return rough_tokens(content)
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            total += rough_tokens(part["text"])
        elif isinstance(part, dict) and part.get("type") in ("image", "document"):
            total += IMAGE_TOKENS
    return total


def _truncator(config: TruncateConfig) -> NewContent:
    """The new content of an old output longer than ``keep_chars`` (None: short, or truncated already)."""

    def truncated(block: Block) -> str | None:
        text = block.result_text()
        if js_len(text) <= config.keep_chars or "...truncated, showing first" in text:
            return None
        return f"{text[: config.keep_chars]}\n...truncated, showing first {config.keep_chars} of {len(text)} chars"

    return truncated


def truncate_old_outputs(view: ContextView, config: TruncateConfig) -> Compaction | None:
    """The truncation over the whole context: every compactable output but the last ``keep_recent``."""
    if view.tokens < config.threshold:
        return None
    records = list(view.records)
    ids = _compactable_ids(records, config.compactable_tools)
    old = set(ids[: max(0, len(ids) - config.keep_recent)])
    new, changed = rewrite_tool_results(records, _truncator(config), old)
    if not changed:
        return None
    return in_place("microcompact-truncate", "pct", records, new, {"truncated": changed})


@dataclass
class TruncState:
    """`MicrocompactTruncate`'s index of ``context``, the context it last returned or saw (records are
    shared, never copied): ``ids``, the compactable tool_use ids in order (`_compactable_ids`); ``results``,
    the positions of the user records holding each id's tool_result; ``old``, the first ``done`` ids, whose
    results were all looked at when the context was last past the threshold; ``checked``: the records before
    it were looked at then (a result that arrives later for an old id is in a record past it)."""

    context: Sequence[Record] = ()
    ids: list[str] = field(default_factory=list)
    results: dict[str, list[int]] = field(default_factory=dict)
    old: set[str] = field(default_factory=set)
    done: int = 0
    checked: int = 0

    def reset(self) -> None:
        self.context, self.ids, self.results, self.old = (), [], {}, set()
        self.done = self.checked = 0

    def read(self, records: Sequence[Record], tools: frozenset[str]) -> None:
        """Index ``records`` past ``context`` (``records`` extend it), or all of them after a reset."""
        for index in range(len(self.context), len(records)):
            record = records[index]
            if record.kind == "assistant":
                self.ids.extend(b.id for b in record.tool_uses() if b.name in tools and b.id)
            else:
                index_results(self.results, index, record)
        self.context = records

    def truncate(self, view: ContextView, config: TruncateConfig) -> Compaction | None:
        """`truncate_old_outputs(view, config)`, looking only at what changed since the last call."""
        records = view.records
        if not extends(records, self.context):
            self.reset()
        self.read(records, config.compactable_tools)
        if view.tokens < config.threshold:
            return None
        cut = max(0, len(self.ids) - config.keep_recent)
        newly = self.ids[self.done : cut]
        self.old.update(newly)
        positions = {p for i in newly for p in self.results.get(i, ())}
        positions.update(i for i in range(self.checked, len(records)) if records[i].kind == "user")
        self.done, self.checked = cut, len(records)
        new, changed, at = rewrite_at(records, sorted(positions), _truncator(config), self.old)
        if not changed:
            return None
        self.context = new
        return in_place("microcompact-truncate", "pct", records, new, {"truncated": changed}, changed_at=at)


def _results_by_size(record: Record) -> list[tuple[int, str, Block]]:
    """``(js_len, text, block)`` of each tool_result in ``record``, largest first (ties keep their order)."""
    results = []
    for block in record.tool_results():
        text = block.result_text()
        results.append((js_len(text), text, block))
    return sorted(results, key=lambda result: -result[0])


def apply_tool_result_budget(view: ContextView, config: ToolResultBudgetConfig, *, start: int = 0) -> Compaction | None:
    """Large results become a ``<persisted-output>`` preview (docs §3.7).

    ``start``: records before it were already checked (a replay only needs to look at what is new).
    """
    if not config.enabled:
        return None
    too_big: set[str] = set()
    for record in view.records[start:]:
        if record.kind != "user":
            continue
        results = _results_by_size(record)
        total = sum(size for size, _, _ in results)
        for size, text, block in results:
            if (
                block.tool_use_id
                and (size > config.max_result_chars or total > config.max_message_chars)
                and "<persisted-output>" not in text
            ):
                too_big.add(block.tool_use_id)
                total -= size

    if not too_big:
        return None
    records = list(view.records)

    def preview(block: Block) -> str | None:
        text = block.result_text()
        head = text.encode("utf-8")[: config.preview_bytes].decode("utf-8", "ignore")
        more = "\n..." if len(head) < len(text) else ""
        return (
            f"<persisted-output>\nOutput too large ({len(text)} chars). Full output saved to: "
            f"tool-results/{block.tool_use_id}.txt\n\nPreview (first 2KB):\n{head}{more}\n</persisted-output>"
        )

    new, changed = rewrite_tool_results(records, preview, too_big)
    if not changed:
        return None
    return in_place("tool-result-budget", "size", records, new, {"persisted": changed})


@register
class Microcompact(Strategy):
    name = "microcompact"
    description = "Claude Code time-based microcompact: after a 60-min gap clear all but the last 5 tool results."
    source = "Claude Code v2.1.88 source src/services/compact/microCompact.ts, timeBasedMCConfig.ts (docs §3.3)"
    Config = TimeBasedConfig
    config: TimeBasedConfig

    def compact(self, view: ContextView, state: Any) -> Compaction | None:
        return time_based_microcompact(view, self.config)


@register
class MicrocompactTruncate(Strategy):
    name = "microcompact-truncate"
    description = "The article's microcompact: at 60% of the window cut old tool outputs to 2,000 chars."
    source = (
        "workbench (own design): the source article's truncation variant of microcompact (docs/peers.md, "
        "Implications), no upstream code"
    )
    Config = TruncateConfig
    config: TruncateConfig

    def new_state(self) -> TruncState:
        return TruncState()

    def compact(self, view: ContextView, state: TruncState) -> Compaction | None:
        return state.truncate(view, for_window(self.config, view))
