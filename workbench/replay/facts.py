"""What a replay rests on that the recording decides, not the strategy: `SessionFacts`, and its words.

The replay engine records them for every session (`workbench.replay.ReplayResult.facts`); ``workbench
replay``, ``tune`` and ``report`` print `warning_lines` beside their results, and ``workbench check``
(`workbench.experiments.check`) adds what needs pricing and replays of every strategy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..strategies.versions import TABLE_THROUGH, is_claude_model, newer_than_table, parse_version
from ..transcript.model import Session

if TYPE_CHECKING:
    from .engine import ReplayResult

__all__ = [
    "RESUMED_TOKENS",
    "SessionFacts",
    "fact_notes",
    "notes_of",
    "version_key",
    "warning_lines",
    "warning_summary",
]

#: Hidden tokens above which a session's first request holds history the file does not: 2.7 times the
#: largest system prompt and tools of the dev corpus (36,622 tokens; 105 sessions).
RESUMED_TOKENS = 100_000


def version_key(version: str) -> tuple[int, ...]:
    """A version's order key; () for one that does not parse (ordered first, never "newer")."""
    try:
        return parse_version(version)
    except ValueError:
        return ()


@dataclass(frozen=True)
class SessionFacts:
    """The window the recording proves (1M when a recorded request exceeded 200k, else None);
    ``hidden_tokens``: the first request's recorded size less the rough size of what the file holds before
    it (the system prompt and tools, plus any history a resumed session or fragment does not hold); the
    Claude Code versions and models that wrote it; record types the loader does not know; whether it is a
    compaction or memory call's own transcript (never compacted: the recursion guard)."""

    format: str
    window: int | None
    hidden_tokens: int
    versions: tuple[str, ...]
    models: tuple[str, ...]
    unknown_types: tuple[str, ...]
    compaction_agent: bool

    @classmethod
    def of(cls, session: Session, *, window: int | None, hidden_tokens: int) -> SessionFacts:
        found = {r.raw.get("version") for r in session.records if r.kind in ("user", "assistant")}
        found.add(session.client_version)
        versions = sorted((v for v in found if isinstance(v, str) and v), key=version_key)
        return cls(
            format=session.format,
            window=window,
            hidden_tokens=hidden_tokens,
            versions=tuple(versions) if session.format == "claude-code" else (),
            models=tuple(dict.fromkeys(m for m in session.models if m and m != "<synthetic>")),
            unknown_types=tuple(session.metadata.get("unknown_types", ())),
            compaction_agent=session.metadata.get("query_source") in ("compact", "session_memory"),
        )

    @property
    def resumed(self) -> bool:
        """The first request holds history the file does not (a resumed session, a fragment)."""
        return self.hidden_tokens > RESUMED_TOKENS and not self.compaction_agent

    @property
    def unknown_versions(self) -> list[str]:
        """Claude Code versions newer than the version table (replayed with its newest row)."""
        return [v for v in self.versions if newer_than_table(v)]

    @property
    def unrecognised_models(self) -> list[str]:
        """Models of a Claude Code session that Claude Code does not recognise (a proxy to GLM, Kimi, ...):
        before 2.1.223 it never auto-compacts them (`ClaudeCodeVersion.auto_compacts`)."""
        return [m for m in self.models if not is_claude_model(m)] if self.format == "claude-code" else []

    def notes(self) -> list[str]:
        return notes_of(self)


#: Formats whose requests are Anthropic Messages requests as recorded; any other is replayed as if its
#: calls had been sent to Claude (its tool calls as tool_use blocks, its reasoning as thinking).
ANTHROPIC_FORMATS = frozenset({"claude-code", "anthropic-messages"})


def fact_notes(
    fmt: str,
    unknown_versions: Sequence[str],
    window: int | None,
    resumed: bool,
    hidden_tokens: int,
    unknown_types: Sequence[str],
    unrecognised_models: Sequence[str] = (),
) -> list[str]:
    """The words for what a replay of the session cannot fully model (empty: nothing)."""
    out = []
    if fmt and fmt not in ANTHROPIC_FORMATS:
        out.append(f"a {fmt} session replayed as Anthropic Messages requests")
    if unknown_versions:
        out.append(
            f"Claude Code {', '.join(unknown_versions)} newer than the version table (checked through "
            f"{TABLE_THROUGH}; replayed with its newest row)"
        )
    if window:
        out.append(f"{window // 1000:,}k window")
    if resumed:
        out.append(f"starts with {hidden_tokens:,} tokens the file does not hold")
    if unknown_types:
        out.append(f"unknown record types: {', '.join(unknown_types)}")
    if unrecognised_models:
        out.append(f"model {', '.join(unrecognised_models)} unknown to Claude Code (no auto-compaction before 2.1.223)")
    return out


class _Facts(Protocol):
    @property
    def format(self) -> str: ...
    @property
    def window(self) -> int | None: ...
    @property
    def hidden_tokens(self) -> int: ...
    @property
    def unknown_versions(self) -> Sequence[str]: ...
    @property
    def resumed(self) -> bool: ...
    @property
    def unknown_types(self) -> Sequence[str]: ...
    @property
    def unrecognised_models(self) -> Sequence[str]: ...


def notes_of(facts: _Facts) -> list[str]:
    """`fact_notes` of anything that carries the facts (`SessionFacts`, a `workbench check` row)."""
    return fact_notes(
        facts.format,
        facts.unknown_versions,
        facts.window,
        facts.resumed,
        facts.hidden_tokens,
        facts.unknown_types,
        facts.unrecognised_models,
    )


def warning_summary(lines: Sequence[str], sessions: int, shown: int = 3) -> list[str]:
    """`warning_lines` as notes: a count, then the first ``shown`` lines."""
    if not lines:
        return []
    head = f"{len(lines)} of {sessions} sessions rest on what a replay cannot fully model (`workbench check`)"
    more = [f"... and {len(lines) - shown} more"] if len(lines) > shown else []
    return [head, *lines[:shown], *more]


def warning_lines(results: Iterable[ReplayResult]) -> list[str]:
    """One line per replayed session with `SessionFacts.notes` (what ``replay``, ``tune`` and ``report``
    print beside their results; ``workbench check`` says more)."""
    out = []
    for result in results:
        notes = result.facts.notes() if result.facts is not None else []
        if notes:
            out.append(f"{result.source or result.session_id}: {'; '.join(notes)}")
    return out
