"""What one Claude Code process shares between its main thread and its sub-agents (docs §1.2, seed article).

Sub-agents (the Agent/Task tool) run in the same process as the main thread, so module-level state is
shared. v2.1.88's ``runPostCompactCleanup(querySource)`` (``postCompactCleanup.ts``) therefore resets
the main-thread-only state only when the *main thread* compacted:

* always: ``resetMicrocompactState()`` (the cached-microcompact state; cached MC is ant-only, so outside
  Anthropic builds there is nothing in it);
* main thread only: the context-collapse store and the memory-file caches (``getUserContext.cache`` /
  ``getMemoryFiles``: CLAUDE.md is re-read on the next turn).

The session-memory module state (``sessionMemoryUtils.ts``: the notes, ``tokensAtLastExtraction``,
``lastMemoryMessageUuid``, ``lastSummarizedMessageId``) is per process too. Only the main thread extracts
(the hook runs for ``repl_main_thread`` only, docs §1.3), but every agent reads the same notes: a
sub-agent's SM-compaction summarises *its* conversation with the *session's* memory. After any successful
auto-compaction ``autoCompactIfNeeded`` sets ``lastSummarizedMessageId = undefined`` without looking at
who compacted, so in v2.1.88 a sub-agent's compaction also clears the main thread's boundary
(``subagent_resets_last_summarized=True``, as shipped). The seed article's point, that a sub-agent's
compaction must not disturb the main thread, is the option ``False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProcessState", "post_compact_cleanup"]


@dataclass
class ProcessState:
    """Module-level state of one Claude Code process. ``sm`` is the session-memory state (an `SMState`)."""

    sm: Any
    #: resetMicrocompactState() calls (every compaction, main or sub-agent)
    microcompact_resets: int = 0
    #: getUserContext.cache.clear() / resetGetMemoryFilesCache('compact') (main-thread compactions only)
    memory_file_cache_clears: int = 0
    #: resetContextCollapse() (main-thread compactions only; the feature is ant-only)
    context_collapse_resets: int = 0
    #: one entry per cleanup: which agent compacted and what was reset
    cleanups: list[dict[str, Any]] = field(default_factory=list)


def post_compact_cleanup(process: ProcessState, *, main_thread: bool, agent: str | None = None) -> None:
    """``runPostCompactCleanup(querySource)``: reset what the compacting agent may reset."""
    process.microcompact_resets += 1
    if main_thread:
        process.context_collapse_resets += 1
        process.memory_file_cache_clears += 1
    process.cleanups.append({"agent": agent, "main_thread": main_thread})
