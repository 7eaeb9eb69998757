"""``codex-remote``: OpenAI Codex CLI remote compaction v2 (docs/peers.md §1.3 and "Late 2026").

Read in openai/codex ``codex-rs/core/src/compact_remote_v2.rs`` @ 009bd870 (576ee90f read too) and
``codex-rs/core/src/compact.rs`` @ e06dd0e5 (``should_keep_compacted_history_item``); [V] marks what is
in those files, *assumed* what is not established.

**When.** At the same auto-compaction limit as the local compaction (`workbench.strategies.codex`,
"Trigger"): Codex chooses remote compaction by provider (``should_use_remote_compact_task``: an OpenAI
provider) once the limit is reached [V]; that the limit is the same for both is *assumed* (the choice is
made after the limit check in the versions read).

**The request** is a *normal* Responses request of the turn, with the turn's tools, and a
``CompactionTrigger`` item appended to the history (in-band, not the ``/responses/compact`` endpoint of
remote v1); the stream must return exactly one ``compaction`` output item, otherwise the compaction fails
fatally [V]. Before it, function-call outputs are rewritten so the request fits the window
(``trim_function_call_history_to_fit_context_window``): that shapes the request, not the result, and is
not modelled. A stream that fails with a retryable error is retried at most
**MAX_REMOTE_COMPACTION_V2_STREAM_RETRIES = 2** times (the provider's ``stream_max_retries`` when lower);
then the compaction fails and the turn ends with the error [V]. The replay has no network errors:
``stream_failures`` says how many attempts fail (0 by default), so a what-if can show a compaction lost
to the retry cap (no compaction at that call).

**The new history** [V, ``build_v2_compacted_history``]: of the history sent, the messages with role
user, developer or system that ``should_keep_compacted_history_item`` keeps, which drops developer
messages and user-role context messages (the test ``build_v2_compacted_history_filters_to_installed_
retention_shape`` keeps only the user message of developer, system, user, assistant, tool call and
earlier compaction item; docs/peers.md's "user and developer messages" is the filter before that step).
So the real user messages are retained, newest first, up to **RETAINED_MESSAGE_TOKEN_BUDGET = 64,000**
tokens ("mirrors the current /responses/compact retained-message default"), each charged at least 1
token, the one where the budget runs out truncated (``…N tokens truncated…``), images kept; then the
single ``compaction`` item, then the initial context re-injected (``process_compacted_history``; placed
first here, as for the local compaction). Tool calls and outputs, assistant messages, reasoning and
earlier compaction items are dropped.

Stand-ins: the ``compaction`` item is opaque (``encrypted_content``); its size is not known (*assumed*:
the offline summariser's summary, without the local summary prefix, stands for it). PreCompact /
PostCompact hooks run around it [V] and are not modelled (no hooks in a replay). Earlier *local*
summaries would be retained as user messages [V]; a replay of this strategy never holds one.
"""

from __future__ import annotations

from pydantic import Field

from .base import Compaction, ContextView, Strategy, for_window
from .codex import (
    CodexTriggerConfig,
    compacted_history,
    compaction_of,
    initial_context,
    select_user_messages,
)
from .recent_window import user_note
from .refill import RefillGuard, guarded
from .registry import register

__all__ = [
    "MAX_REMOTE_COMPACTION_V2_STREAM_RETRIES",
    "RETAINED_MESSAGE_TOKEN_BUDGET",
    "CodexRemote",
    "CodexRemoteConfig",
]

RETAINED_MESSAGE_TOKEN_BUDGET = 64_000
MAX_REMOTE_COMPACTION_V2_STREAM_RETRIES = 2


class CodexRemoteConfig(CodexTriggerConfig):
    retained_message_max_tokens: int = Field(RETAINED_MESSAGE_TOKEN_BUDGET, ge=0)
    max_stream_retries: int = Field(MAX_REMOTE_COMPACTION_V2_STREAM_RETRIES, ge=0)
    stream_failures: int = Field(0, ge=0, description="attempts of each compaction stream that fail (what-if)")


@register
class CodexRemote(Strategy):
    """Codex remote compaction v2: an in-band compaction request at 90% of the window; real user messages
    ≤ 64k tokens and one opaque compaction item; at most 2 stream retries."""

    name = "codex-remote"
    description = (
        "Codex CLI remote compaction v2 at 90% of the window: in-band compaction request, real user messages "
        "(≤64k tokens, newest first) + one opaque compaction item; tool calls dropped; ≤2 stream retries."
    )
    source = "openai/codex codex-rs/core/src/compact_remote_v2.rs @ 009bd870"
    Config = CodexRemoteConfig
    config: CodexRemoteConfig

    def new_state(self) -> RefillGuard:
        return RefillGuard()

    def compact(self, view: ContextView, state: RefillGuard | None) -> Compaction | None:
        config = for_window(self.config, view)
        return guarded(state, view, view.tokens >= config.limit, lambda v: self._compact(v, config))

    def _compact(self, view: ContextView, config: CodexRemoteConfig) -> Compaction | None:
        from ..summarize.offline import OfflineSummarizer

        if config.stream_failures > config.max_stream_retries:
            return None  # every retry failed: the compaction (and, in Codex, the turn) fails
        records = list(view.records)
        kept, used, truncated = select_user_messages(
            records, config.retained_message_max_tokens, text_only=False, minimum=1
        )
        text = OfflineSummarizer().summarize(records)
        item = user_note(text, self.name, str(view.step), event=True)
        new = compacted_history(records, kept, item, initial_context(records))
        details: dict[str, object] = {
            "user_messages": len(kept),
            "user_message_tokens": used,
            "truncated_user_message": truncated,
            "initial_context": len(new) - len(kept) - 1,
            "stream_retries": config.stream_failures,
            "in_band": True,
        }
        return compaction_of(self.name, records, new, text, details)
