"""``codex``: OpenAI Codex CLI local compaction (docs/peers.md §1.3 and "Late 2026").

Read in openai/codex ``codex-rs/core/src/compact.rs`` @ e06dd0e5 (the newest version of that file the
index holds; 0100b103 read too) and ``codex-rs/core/src/compact_remote_v2.rs`` @ 009bd870 (which shares
the truncation helpers). Facts marked [V] are in those files, [S] are quoted from third-party reads of
later versions, *assumed* are not established.

**Trigger.** Codex compacts when the tokens of the context reach ``auto_compact_token_limit``
(``token_limit_reached = total_usage_tokens >= limit``: *at* the limit, not one below). The limit is
``model_auto_compact_token_limit`` clamped to **90% of the context window**, or 90% when unset: the
openai/codex ``protocol/src/openai_models.rs`` versions in the index (0d4367d0, 8db07003) return the
configured value unclamped; later versions take ``min(config, 90% of the window)`` [S: quoted from
``openai_models.rs`` at rust-v0.154.0 by several third-party reads, and pinned by the upstream test
``auto_compact_clamps_config_limit_to_context_window`` in ``core/tests/suite/compact.rs``: window 100,
configured 200, 91 tokens compact]. ``clamp_to_default=False`` gives the older unclamped rule.

**The compaction request** is the whole history plus the compaction prompt (``templates/compact/
prompt.md``, a "context checkpoint" handoff summary; paraphrased in `COMPACT_PROMPT` for its size) [V].
When it exceeds the context window (``ContextWindowExceeded``) Codex removes the **oldest history item**
and retries, as long as more than one item is left; with one item left the compaction fails and the turn
ends with the error [V]. Here the summariser sees the records left after that trimming (``details
["trimmed_items"]``); a compaction that cannot fit fails (no compaction at this call). The size of each
record is the view's rough count, scaled so that the records add up to the view's total (the system
prompt and other parts of the request outside the records cannot be trimmed).

**The new history** [V, ``build_compacted_history`` and ``collect_user_messages``]:

1. the initial context: here the recorded context messages Codex injects itself (``# AGENTS.md
   instructions for …``, ``<environment_context>``, ``<user_instructions>``: the newest of each) and the
   user-role records before the first real prompt (meta messages of other formats);
2. the **real user messages**, selected newest first while their tokens fit
   **COMPACT_USER_MESSAGE_MAX_TOKENS = 20,000**; the one where the budget runs out is truncated to what
   is left (head and tail kept, ``…N tokens truncated…`` in the middle), older ones are dropped; then put
   back in chronological order. Text only: Codex collects each message as its text. Context messages
   and earlier summaries (``is_summary_message``) are not user messages;
3. the summary as a *user-role* message: `SUMMARY_PREFIX` + ``"\\n"`` + the model's answer (here the
   offline summariser's).

Every tool call and tool output, assistant message and reasoning item is dropped. Tokens are Codex's
``approx_token_count``: UTF-8 bytes / 4 rounded up [V: the truncation tests of compact_remote_v2.rs
count ``"middle1234"`` as 3 tokens].

Not reproduced: the placement of the re-injected initial context (e06dd0e5 puts it just before the last
real user message for a mid-turn compaction and lets the next turn re-inject it after a pre-turn one;
the tokens are the same), GhostSnapshot items (kept for ``/undo``, never sent to the model), the trailing
``<model_switch>`` developer message taken out of the request and put back (developer messages are not
part of the workbench's request view), the transient-error retries of the compaction stream. The
summary prefix (``templates/compact/summary_prefix.md``) is paraphrased. A turn that is still above the
limit right after an automatic compaction ends with an error in Codex; the replay cannot end a recorded
turn and uses `workbench.strategies.refill.RefillGuard` instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import Field

from ..tokens.js import rough_tokens
from ..transcript.model import Block, Record
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .recent_window import is_added, is_prompt, user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = [
    "COMPACT_PROMPT",
    "COMPACT_USER_MESSAGE_MAX_TOKENS",
    "CONTEXT_PREFIXES",
    "SUMMARY_PREFIX",
    "Codex",
    "CodexConfig",
    "CodexTriggerConfig",
    "approx_token_count",
    "compacted_history",
    "compaction_of",
    "initial_context",
    "is_context_message",
    "is_user_message",
    "select_user_messages",
    "trim_to_window",
    "truncate_text",
]

COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
#: Codex's ``APPROX_BYTES_PER_TOKEN``.
APPROX_BYTES_PER_TOKEN = 4
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its work. Use it to"
    " continue from where it stopped; here is the summary:"
)
#: A paraphrase of ``templates/compact/prompt.md``, for the size of the compaction request.
COMPACT_PROMPT = (
    "You are performing a context checkpoint compaction. Write a handoff summary for another language model"
    " that will resume the task: current progress and key decisions, important context, constraints and user"
    " preferences, what remains to be done as clear next steps, and any critical data, examples or"
    " references needed to continue. Be concise and structured."
)
#: How the user-role messages Codex injects itself begin (``event_mapping::is_contextual_user_message``):
#: the first two are in the compact.rs test ``collect_user_messages_filters_session_prefix_entries``
#: (matched case-insensitively, as that test writes ``<ENVIRONMENT_CONTEXT>``); ``<user_instructions>`` is
#: the older wrapper of the same instructions (assumed).
CONTEXT_PREFIXES = ("# agents.md instructions for ", "<environment_context>", "<user_instructions>")


def approx_token_count(text: str) -> int:
    """Codex's ``approx_token_count``: UTF-8 bytes divided by 4, rounded up."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / APPROX_BYTES_PER_TOKEN)


def _head(data: bytes, size: int) -> str:
    return data[:size].decode("utf-8", "ignore")


def _tail(data: bytes, size: int) -> str:
    return data[len(data) - size :].decode("utf-8", "ignore") if size > 0 else ""


def truncate_text(text: str, max_tokens: int) -> str:
    """Codex's ``truncate_text`` with a token budget: unchanged when it fits, else the first and last
    ``max_tokens * 2`` bytes around ``…N tokens truncated…`` (N the tokens removed), as the
    compact_remote_v2.rs tests pin: ``"middle1234"`` to 2 tokens is ``"midd…1 tokens truncated…1234"``."""
    data = text.encode("utf-8", "surrogatepass")
    budget = max_tokens * APPROX_BYTES_PER_TOKEN
    if len(data) <= budget:
        return text
    half = budget // 2
    removed = math.ceil((len(data) - 2 * half) / APPROX_BYTES_PER_TOKEN)
    return f"{_head(data, half)}…{removed} tokens truncated…{_tail(data, half)}"


def is_context_message(record: Record) -> bool:
    """A user-role message Codex injects itself (AGENTS.md instructions, environment context)."""
    return record.kind == "user" and record.text.lstrip().lower().startswith(CONTEXT_PREFIXES)


def is_user_message(record: Record, summary_prefix: str = SUMMARY_PREFIX) -> bool:
    """A real user message in Codex's sense: a sent, non-meta user text that is not a tool output, a
    context message or an earlier compaction summary (recorded or made by a compaction)."""
    return is_prompt(record) and not is_context_message(record) and not record.text.startswith(f"{summary_prefix}\n")


def initial_context(records: Sequence[Record], summary_prefix: str = SUMMARY_PREFIX) -> list[Record]:
    """The context a compacted Codex history starts with (module docstring, point 1), in recorded order:
    the newest context message of each kind (Codex builds the initial context afresh), and the other
    user-role records (no tool output, no summary or marker of a compaction) before the first real user
    message."""
    first = next((i for i, r in enumerate(records) if is_user_message(r, summary_prefix)), len(records))
    newest: dict[str, int] = {}
    for index, record in enumerate(records):
        if is_context_message(record):
            text = record.text.lstrip().lower()
            newest[next(p for p in CONTEXT_PREFIXES if text.startswith(p))] = index
    leading = {
        i
        for i, r in enumerate(records[:first])
        if r.kind == "user"
        and not r.tool_results()
        and not r.is_compact_summary
        and not is_added(r)
        and not is_context_message(r)
    }
    return [records[i] for i in sorted(leading | set(newest.values()))]


def select_user_messages(
    records: Sequence[Record], budget: int, *, text_only: bool, minimum: int = 0, summary_prefix: str = SUMMARY_PREFIX
) -> tuple[list[Record], int, bool]:
    """The real user messages kept under ``budget`` tokens, newest first, returned in chronological order,
    with the tokens they use and whether one was truncated.

    Each message costs ``max(minimum, approx_token_count(text))``; the first that does not fit is truncated
    to what is left (`truncate_text`) and no older one is kept. ``text_only`` rebuilds a message that holds
    more than text as its text (the local compaction collects text; remote v2 keeps images).
    """
    kept: list[Record] = []
    remaining = budget
    truncated = False
    for record in reversed(records):
        if remaining <= 0:
            break
        if not is_user_message(record, summary_prefix):
            continue
        text = record.text
        cost = max(minimum, approx_token_count(text))
        if cost <= remaining:
            plain = all(b.kind == "text" for b in record.blocks)
            kept.append(record if plain or not text_only else record.with_blocks([Block.text_block(text)]))
            remaining -= cost
            continue
        others = [b for b in record.blocks if b.kind != "text"] if not text_only else []
        kept.append(record.with_blocks([Block.text_block(truncate_text(text, remaining)), *others]))
        remaining = 0
        truncated = True
    kept.reverse()
    return kept, budget - remaining, truncated


def trim_to_window(view: ContextView, window: int, prompt_tokens: int) -> int | None:
    """How many of the oldest records Codex's retry loop removes before the compaction request (the
    records plus the prompt) fits ``window``; None when it does not fit with one record left."""
    rough = [int(n) for n in view.rough]
    total = sum(rough)
    scale = view.tokens / total if total and view.tokens > total else 1.0
    size: float = max(view.tokens, total) + prompt_tokens
    removed = 0
    while size > window:
        if len(rough) - removed <= 1:
            return None
        size -= rough[removed] * scale
        removed += 1
    return removed


def compacted_history(
    records: Sequence[Record], kept: Sequence[Record], summary: Record, context: Sequence[Record]
) -> tuple[Record, ...]:
    """Initial context, kept user messages, summary: the context minus anything kept twice."""
    seen = {id(r) for r in kept}
    return (*(r for r in context if id(r) not in seen), *kept, summary)


def compaction_of(
    name: str, records: Sequence[Record], new: tuple[Record, ...], text: str, details: dict[str, object]
) -> Compaction:
    survivors = {id(r) for r in new}
    originals = {id(r) for r in records}
    return Compaction(
        kind=name,
        trigger="tokens",
        records=new,
        dropped=tuple(r.uuid for r in records if id(r) not in survivors),
        added=tuple(r for r in new if id(r) not in originals),
        start=None,
        summary=text,
        details=details,
    )


class CodexTriggerConfig(StrategyConfig):
    """Codex's auto-compaction limit (module docstring, "Trigger"), shared by local and remote compaction."""

    context_window: int = Field(200_000, gt=0)
    auto_compact_token_limit: int | None = Field(None, gt=0, description="model_auto_compact_token_limit")
    default_limit_percent: float = Field(90, gt=0, le=100)
    clamp_to_default: bool = Field(True, description="[S] the configured limit can only lower the 90% default")

    @property
    def limit(self) -> int:
        default = int(self.context_window * self.default_limit_percent / 100)
        if self.auto_compact_token_limit is None:
            return default
        return min(self.auto_compact_token_limit, default) if self.clamp_to_default else self.auto_compact_token_limit


class CodexConfig(CodexTriggerConfig):
    user_message_max_tokens: int = Field(COMPACT_USER_MESSAGE_MAX_TOKENS, ge=0)
    summary_prefix: str = Field(SUMMARY_PREFIX, min_length=1)
    compact_prompt: str = Field(COMPACT_PROMPT, min_length=1)


@register
class Codex(Strategy):
    """Codex local compaction at 90% of the window: initial context, newest real user messages ≤ 20k
    tokens, handoff summary; tool calls dropped; oldest items trimmed when the request overflows."""

    name = "codex"
    description = (
        "Codex CLI local auto-compact at 90% of the window: initial context + real user messages (≤20k tokens, "
        "newest first) + handoff summary; tool calls dropped."
    )
    source = "openai/codex codex-rs/core/src/compact.rs @ e06dd0e5"
    Config = CodexConfig
    config: CodexConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        return guarded(state, view, view.tokens >= config.limit, lambda v: self._compact(v, config))

    def _compact(self, view: ContextView, config: CodexConfig) -> Compaction | None:
        from ..summarize.offline import OfflineSummarizer

        records = list(view.records)
        trimmed = trim_to_window(view, config.context_window, rough_tokens(config.compact_prompt))
        if trimmed is None:
            return None  # ContextWindowExceeded with one item left: the compaction fails
        kept, used, truncated = select_user_messages(
            records, config.user_message_max_tokens, text_only=True, summary_prefix=config.summary_prefix
        )
        text = f"{config.summary_prefix}\n{OfflineSummarizer().summarize(records[trimmed:])}"
        summary = user_note(text, self.name, str(view.step), event=True)
        context = initial_context(records, config.summary_prefix)
        new = compacted_history(records, kept, summary, context)
        details: dict[str, object] = {
            "user_messages": len(kept),
            "user_message_tokens": used,
            "truncated_user_message": truncated,
            "initial_context": len(new) - len(kept) - 1,
            "trimmed_items": trimmed,
        }
        return compaction_of(self.name, records, new, text, details)
