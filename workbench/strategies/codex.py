"""``codex``: OpenAI Codex CLI local auto-compaction (docs/peers.md §1.3, ``codex-rs/core/src/compact.rs``).

Defaults [V]: the trigger is ``model_auto_compact_token_limit`` or, unset, **90% of the context
window** (``ModelInfo.auto_compact_token_limit``); a third-party quote says the configured value is
clamped to that 90% [S], reproduced by ``clamp_to_default``. The new history is:

1. the **real user messages**, selected newest first up to **COMPACT_USER_MESSAGE_MAX_TOKENS = 20,000**
   approx tokens, the one where the budget runs out truncated, older ones dropped, then put back in
   chronological order;
2. the summary as a *user-role* message: the summary prefix (``summary_prefix.md``, a framing of
   "another language model started … here is its summary"; paraphrased here) + the handoff summary
   (offline summariser instead of the model answering ``templates/compact/prompt.md``).

Mapping: a Codex user message is one real user record (`is_prompt`: sent, not meta, text, no
tool_result); earlier Codex summaries are not user messages. Tokens are the view's rough counts
(chars/4, Codex's approximation too). Truncation keeps the head of the message and marks the cut (the
exact Codex truncation marker is not in peers.md). Not reproduced: GhostSnapshot items, the mid-turn
re-injection of the initial context, and the overflow retry that drops the oldest item (the offline
summariser cannot overflow).
"""

from __future__ import annotations

from pydantic import Field

from ..tokens.js import rough_tokens
from ..transcript.model import Block
from .base import Compaction, ContextView, Strategy, StrategyConfig, for_window
from .recent_window import is_prompt, user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = ["SUMMARY_PREFIX", "Codex", "CodexConfig"]

COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its work. Use it to"
    " continue from where it stopped; here is the summary:\n"
)


class CodexConfig(StrategyConfig):
    context_window: int = Field(200_000, gt=0)
    auto_compact_token_limit: int | None = Field(None, gt=0, description="model_auto_compact_token_limit")
    default_limit_percent: float = Field(90, gt=0, le=100)
    clamp_to_default: bool = Field(True, description="[S] the configured limit can only lower the 90% default")
    user_message_max_tokens: int = Field(COMPACT_USER_MESSAGE_MAX_TOKENS, ge=0)
    summary_prefix: str = SUMMARY_PREFIX

    @property
    def limit(self) -> int:
        default = int(self.context_window * self.default_limit_percent / 100)
        if self.auto_compact_token_limit is None:
            return default
        return min(self.auto_compact_token_limit, default) if self.clamp_to_default else self.auto_compact_token_limit


@register
class Codex(Strategy):
    """Codex local compaction at 90% of the window: newest real user messages ≤ 20k tokens + summary."""

    name = "codex"
    description = (
        "Codex CLI auto-compact at 90% of the window: real user messages (≤20k tokens, newest first) + handoff summary."
    )
    Config = CodexConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        return guarded(state, view, view.tokens >= for_window(self.config, view).limit, self._compact)

    def _compact(self, view: ContextView) -> Compaction:
        config = self.config
        from ..summarize.offline import OfflineSummarizer

        records = list(view.records)
        budget = config.user_message_max_tokens
        kept = []
        for index in range(len(records) - 1, -1, -1):
            record = records[index]
            if not is_prompt(record) or budget <= 0:
                continue
            cost = view.rough[index]
            if cost <= budget:
                kept.append(record)
                budget -= cost
                continue
            text = record.text[: budget * 4]
            marker = f"\n…[{rough_tokens(record.text) - rough_tokens(text)} tokens truncated]"
            kept.append(record.with_blocks([Block.text_block(text + marker)], string_content=True))
            budget = 0
        kept.reverse()
        text = config.summary_prefix + OfflineSummarizer().summarize(records)
        summary = user_note(text, self.name, str(view.step), event=True)
        new = (*kept, summary)
        survivors = {id(r) for r in new}
        return Compaction(
            kind=self.name,
            trigger="tokens",
            records=new,
            dropped=tuple(r.uuid for r in records if id(r) not in survivors),
            added=tuple(r for r in new if not any(r is o for o in records)),
            start=None,
            summary=text,
            details={"user_messages": len(kept), "user_message_tokens": config.user_message_max_tokens - budget},
        )
