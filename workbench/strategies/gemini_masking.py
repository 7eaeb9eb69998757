"""``gemini-masking``: Gemini CLI tool output masking (``toolOutputMaskingService.ts``).

Source: google-gemini/gemini-cli ``packages/core/src/context/toolOutputMaskingService.ts`` at commit
5411f113 (``@google/gemini-cli-core`` 0.56.0-nightly.20260806), called from ``GeminiClient``'s
``sendMessageStream`` (``packages/core/src/core/client.ts``) before every request, right after chat
compression, with no setting that turns it off (the thresholds come from
``contextManagement.tools.outputMasking`` or the experiment flags ``MASKING_*``).

Algorithm [V], a "hybrid backward scanned FIFO":

* scan the history newest to oldest, the parts of each content newest to oldest; with
  ``protectLatestTurn`` (default true) the history's last content is skipped;
* only functionResponse parts count; outputs of the exempt tools (``activate_skill``, ``ask_user``,
  ``enter_plan_mode``, ``exit_plan_mode``) and outputs already masked (they contain
  ``<tool_output_masked``) are skipped;
* the newest outputs up to **50,000** tokens (``DEFAULT_TOOL_PROTECTION_THRESHOLD``) are protected; the
  output that crosses the boundary and every older one are prunable;
* nothing happens unless the prunable outputs total at least **30,000** tokens
  (``DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD``);
* each prunable output is written to a file and replaced by ``<tool_output_masked>`` + a preview + the
  file's path, only where that saves tokens. Preview: for the shell tool, its output's first and last 10
  lines when it has more than 20; for other tools, the first and last 250 characters of the response
  JSON when it is longer than 500.

Mapping: the history is the context without the request being sent (the trailing user message: Gemini
masks ``getHistory()`` before the request is added, ``client.ts``), so the "latest turn" the source
protects is the last API message before it, the model turn whose tool calls the request answers: it holds
no function response, and ``protect_latest_turn`` changes nothing in a replay. The request's own tool
results are neither masked nor counted in the call that sends them. A functionResponse is a tool_result
block, its size chars/4 of its text (Gemini's ``estimateTokenCountSync`` is also a character estimate).
The exempt tools are matched by their Gemini names and their Claude Code counterparts (``Skill``,
``AskUserQuestion``, ``EnterPlanMode``, ``ExitPlanMode``), the shell tool as ``run_shell_command`` or
``Bash`` [assumed mapping]; a Claude Code Bash output is not in the ``Output:``/``Exit Code:`` layout of
Gemini's shell tool, so its preview is the line-based fallback. The file path in the snippet is a
stand-in (``.gemini/tmp/tool-outputs/<tool>_<call id>.txt``): the real one holds the session id and a
random suffix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, NameSet, Strategy, StrategyConfig
from .recent_window import api_messages
from .registry import register
from .rewrite import in_place

__all__ = ["MASKED_TAG", "GeminiMasking", "MaskingConfig", "MaskingMemo", "mask_tool_outputs"]

MASKED_TAG = "tool_output_masked"
SOURCE = "google-gemini/gemini-cli packages/core/src/context/toolOutputMaskingService.ts @ 5411f113"

EXEMPT_TOOLS = frozenset(
    {
        "activate_skill",
        "ask_user",
        "enter_plan_mode",
        "exit_plan_mode",
        "Skill",
        "AskUserQuestion",
        "EnterPlanMode",
        "ExitPlanMode",
    }
)


class MaskingConfig(StrategyConfig):
    protection_threshold_tokens: int = Field(50_000, ge=0, description="DEFAULT_TOOL_PROTECTION_THRESHOLD")
    min_prunable_tokens: int = Field(30_000, ge=0, description="DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD")
    protect_latest_turn: bool = Field(True, description="DEFAULT_PROTECT_LATEST_TURN")
    exempt_tools: NameSet = EXEMPT_TOOLS
    shell_tools: NameSet = frozenset({"run_shell_command", "Bash"})


@dataclass
class MaskingMemo:
    """Per record (by identity, the record held so the id is not reused): its tool_result blocks as
    ``(position, tool_use_id, tokens, masked)``. The scan runs before every call over the whole history;
    emptied past 4 entries per record asked about plus 1,000, as `workbench.strategies.gemini.JsonSizes`."""

    entries: dict[int, tuple[Record, tuple[tuple[int, str | None, int, bool], ...]]] = field(default_factory=dict)

    def results(self, record: Record) -> tuple[tuple[int, str | None, int, bool], ...]:
        hit = self.entries.get(id(record))
        if hit is None:
            rows = tuple(
                (i, b.tool_use_id, rough_tokens(text), f"<{MASKED_TAG}" in text)
                for i, b in enumerate(record.blocks)
                if b.kind == "tool_result"
                for text in (b.result_text(),)
            )
            hit = self.entries[id(record)] = (record, rows)
        return hit[1]

    def bound(self, size: int) -> None:
        if len(self.entries) > 4 * size + 1_000:
            self.entries.clear()


def _simple_preview(text: str) -> str:
    lines = text.split("\n")
    if len(lines) <= 20:
        return text
    return "\n".join(lines[:10]) + f"\n\n... [{len(lines) - 20} lines omitted] ...\n\n" + "\n".join(lines[-10:])


def masked_snippet(text: str, tool: str, call_id: str, shell: bool) -> str:
    """The ``<tool_output_masked>`` replacement of one output (``formatMaskedSnippet``)."""
    if shell:
        preview = _simple_preview(text)
    elif len(text) > 500:
        preview = f"{text[:250]}\n... [TRUNCATED] ...\n{text[-250:]}"
    else:
        preview = text
    path = f".gemini/tmp/tool-outputs/{tool.lower() or 'unknown_tool'}_{call_id.lower()}.txt"
    return f"<{MASKED_TAG}>\n{preview}\n\nOutput too large. Full output available at: {path}\n</{MASKED_TAG}>"


def history_end(records: Sequence[Record], protect_latest_turn: bool) -> int:
    """Where the scan starts (exclusive): the end of the history without the request being sent, less its
    last content when the latest turn is protected."""
    messages = api_messages(records)
    if messages and messages[-1].role == "user":
        messages = messages[:-1]
    if protect_latest_turn and messages:
        messages = messages[:-1]
    return messages[-1].end if messages else 0


def mask_tool_outputs(
    records: Sequence[Record], config: MaskingConfig, memo: MaskingMemo | None = None
) -> tuple[list[Record], dict[str, int]] | None:
    """The masked records and ``{"masked", "tokens_saved", "prunable_tokens"}``, or None when masking
    does not trigger or saves nothing."""
    memo = memo if memo is not None else MaskingMemo()
    memo.bound(len(records))
    end = history_end(records, config.protect_latest_turn)
    names = {b.id: b.name or "" for r in records[:end] if r.kind == "assistant" for b in r.tool_uses()}
    cumulative = prunable_tokens = 0
    crossed = False
    prunable: dict[int, list[tuple[int, str, int]]] = {}
    for index in range(end - 1, -1, -1):
        record = records[index]
        if record.kind != "user":
            continue
        for position, tool_use_id, tokens, masked in reversed(memo.results(record)):
            name = names.get(tool_use_id, "")
            if name in config.exempt_tools or masked:
                continue
            if not crossed:
                cumulative += tokens
                if cumulative <= config.protection_threshold_tokens:
                    continue
                crossed = True
            prunable_tokens += tokens
            prunable.setdefault(index, []).append((position, name, tokens))
    if not prunable or prunable_tokens < config.min_prunable_tokens:
        return None
    out = list(records)
    masked_count = saved = 0
    for index, parts in prunable.items():
        record = out[index]
        blocks = list(record.blocks)
        changed = False
        for position, name, tokens in parts:
            block = blocks[position]
            snippet = masked_snippet(block.result_text(), name, block.tool_use_id or "", name in config.shell_tools)
            savings = tokens - rough_tokens(snippet)
            if savings > 0:
                blocks[position] = Block(block.kind, {**block.raw, "content": snippet})
                masked_count += 1
                saved += savings
                changed = True
        if changed:
            out[index] = record.with_blocks(blocks)
    if not masked_count:
        return None
    return out, {"masked": masked_count, "tokens_saved": saved, "prunable_tokens": prunable_tokens}


@register
class GeminiMasking(Strategy):
    """Gemini CLI tool output masking alone: older outputs beyond the newest 50k tool tokens, once they
    total 30k, become a preview and a file path."""

    name = "gemini-masking"
    description = (
        "Gemini CLI tool output masking: protect the newest 50k tool-output tokens; mask older ones once they "
        "total ≥30k."
    )
    source = SOURCE
    Config = MaskingConfig

    def new_state(self) -> MaskingMemo:
        return MaskingMemo()

    def compact(self, view: ContextView, state: MaskingMemo | None) -> Compaction | None:
        assert isinstance(self.config, MaskingConfig)
        masked = mask_tool_outputs(view.records, self.config, state)
        if masked is None:
            return None
        records, details = masked
        return in_place(self.name, "tool_output_masking", view.records, records, dict(details))
