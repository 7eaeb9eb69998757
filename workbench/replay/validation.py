"""The request check the engine runs on a strategy's context: normalize, validate, count repairs.

Violations are counted on the request as the strategy built it (normalized, before any repair), since
that is what a strategy is responsible for; what Claude Code's pairing repair would have changed is
counted separately as ``repaired`` (each repair is information silently lost).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..request.incremental import IncrementalCheck
from ..request.normalize import MessageMemo, normalize
from ..request.repair import repair
from ..request.validate import Violation, validate
from ..transcript.model import Record

__all__ = ["IncrementalCheck", "RequestCheck", "check_request"]


@dataclass(frozen=True)
class RequestCheck:
    violations: tuple[Violation, ...]
    repaired: int


def check_request(
    context: Sequence[Record],
    *,
    thinking: bool = False,
    original_thinking: Mapping[str, Any] | None = None,
    memo: MessageMemo | None = None,
    incremental: IncrementalCheck | None = None,
    fresh_responses: Container[str] = (),
    grown: int | None = None,
) -> RequestCheck:
    """Normalize ``context`` (from its last compact boundary) and validate it; count what repair changes.

    ``thinking``: whether the call being made has thinking on (its recorded response has thinking).
    ``memo``: `normalize`'s, for a caller that checks the same records again and again.
    ``fresh_responses``: message ids of the model's first responses after a compaction (the thinking rule
    exempts a tool loop one of them opens, `workbench.request.validate`).
    ``incremental``: the check of the caller's previous context, to redo only what changed since (the same
    result, `workbench.request.incremental`). ``grown``: the caller's word that ``context`` is the previous
    context with records appended, the previous being ``grown`` long (the identity scans are skipped).
    """
    if incremental is not None:
        before = incremental.start
        start = incremental.request_start(context, grown=grown)
        found, repaired = incremental.check(
            context[start:],
            thinking=thinking,
            original_thinking=original_thinking,
            memo=memo,
            fresh_responses=fresh_responses,
            grown=grown - start if grown is not None and start == before and start <= grown else None,
        )
        return RequestCheck(found, repaired)
    start = next((i + 1 for i in range(len(context) - 1, -1, -1) if context[i].is_compact_boundary), 0)
    request = normalize(context[start:], memo=memo)
    violations = tuple(
        validate(request, thinking=thinking, original_thinking=original_thinking, fresh_responses=fresh_responses)
    )
    _, repairs = repair(request)
    return RequestCheck(violations, len(repairs))
