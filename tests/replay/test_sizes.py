"""`UncompactedSize.before` against a direct per-query scan of its definition, on the real corpus
(recorded boundaries kept, and stripped as the engine does by default)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from workbench.replay.sizes import UncompactedSize, strip_recorded_compactions
from workbench.tokens.cache import cached_estimator
from workbench.tokens.context import get_token_usage, usage_tokens
from workbench.transcript.model import Record


def scan_before(size: UncompactedSize, records: Sequence[Record], rough: Sequence[int], index: int) -> int:
    """The size before ``records[index]``: the last real usage in the current segment (since the last
    boundary) plus the rough size of what follows its response's first record; rough + overhead
    while the segment has no usage yet."""
    if index == 0:
        return 0
    segment = max((i for i in range(index) if records[i].is_compact_boundary), default=0)
    measured = [i for i in range(index) if get_token_usage(records[i]) is not None]
    if not measured or measured[-1] < segment:
        return size.overhead + sum(rough[segment:index])
    k = len(measured) - 1
    while k > 0 and records[measured[k]].message_id is not None:
        if records[measured[k - 1]].message_id != records[measured[k]].message_id:
            break
        k -= 1
    last, anchor = measured[-1], measured[k]
    offset = sum(removed for first, removed in size.offsets if last >= first)
    return usage_tokens(get_token_usage(records[last]) or {}) + offset + sum(rough[anchor + 1 : index])


@pytest.mark.corpus
@pytest.mark.parametrize("strip", [False, True])
def test_before_matches_a_direct_scan(claude_sessions, strip: bool) -> None:
    rough_estimator = cached_estimator("claude-rough")
    checked = boundaries_seen = 0
    for session in claude_sessions:
        original = session.conversation()
        records, boundaries = strip_recorded_compactions(original) if strip else (list(original), [])
        rough = rough_estimator.count_many(records)
        size = UncompactedSize(records, rough, boundaries)
        boundaries_seen += len(size.offsets) if strip else sum(r.is_compact_boundary for r in records)
        # every index is checked in short sessions; a stride keeps the quadratic scan cheap otherwise
        for index in range(0, len(records) + 1, 1 + len(records) // 150):
            assert size.before(index) == scan_before(size, records, rough, index), (session.id, index)
            assert size.usage_before(index) == scan_usage_before(size, records, index), (session.id, index)
            checked += 1
    assert checked > 1000 and boundaries_seen > 0


def scan_usage_before(size: UncompactedSize, records: Sequence[Record], index: int) -> int | None:
    """``tokenCountFromLastAPIResponse`` before ``records[index]``: the last real usage of the current segment
    (plus what stripped boundaries removed), 0 before the segment's first, None for a session without usage."""
    measured = [i for i in range(len(records)) if get_token_usage(records[i]) is not None]
    if not measured:
        return None
    segment = max((i for i in range(index) if records[i].is_compact_boundary), default=0)
    before = [i for i in measured if i < index]
    if not before or before[-1] < segment:
        return 0
    last = before[-1]
    return usage_tokens(get_token_usage(records[last]) or {}) + sum(r for first, r in size.offsets if last >= first)


def test_session_scale_takes_the_calls_the_engine_already_has(claude_sessions) -> None:
    from workbench.replay.sizes import session_scale
    from workbench.tokens.estimators import get_estimator
    from workbench.transcript.steps import api_calls

    for session in claude_sessions:
        records = session.conversation()
        counts = get_estimator("claude-rough").count_many(records)
        assert session_scale(records, counts, calls=api_calls(records)) == session_scale(records, counts)
