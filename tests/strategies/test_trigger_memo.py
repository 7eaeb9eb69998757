"""The memo of `for_version`: each distinct (trigger, its explicit fields, version
row, model, window) is resolved once, rows kept apart, and the memo stays bounded."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.strategies import triggers
from workbench.strategies.triggers import AutoCompactTrigger, for_version
from workbench.strategies.versions import version_constants


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """An empty memo, and every call of the resolver recorded."""
    calls: list[tuple[Any, ...]] = []
    resolve = triggers._resolved
    monkeypatch.setattr(triggers, "_RESOLVED", {})
    monkeypatch.setattr(triggers, "_resolved", lambda *args: calls.append(args) or resolve(*args))
    return calls


def test_each_trigger_row_model_and_window_is_resolved_once(resolutions: list[tuple[Any, ...]]) -> None:
    old, new = version_constants("2.0.57"), version_constants("2.1.88")
    trigger = AutoCompactTrigger()
    first = for_version(trigger, old, "claude-opus-4-6")
    assert for_version(trigger, old, "claude-opus-4-6") is first
    assert len(resolutions) == 1
    # another row is resolved on its own, and does not evict the first one
    assert for_version(trigger, new, "claude-opus-4-6").threshold != first.threshold
    assert for_version(trigger, old, "claude-opus-4-6") is first
    assert len(resolutions) == 2
    # the model, the window and the explicitly set fields are part of the key
    for_version(trigger, old, "claude-sonnet-4-5")
    for_version(trigger, old, "claude-opus-4-6", window=1_000_000)
    for_version(AutoCompactTrigger(measure="usage"), old, "claude-opus-4-6")
    assert len(resolutions) == 5
    for_version(trigger, old, "claude-sonnet-4-5")
    assert len(resolutions) == 5


def test_the_memo_is_emptied_when_a_new_key_arrives_above_4096_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    memo: dict[tuple[object, ...], Any] = {}
    monkeypatch.setattr(triggers, "_RESOLVED", memo)
    row = version_constants("2.1.88")
    for window in range(4_097):
        for_version(AutoCompactTrigger(), row, "claude-opus-4-6", window=200_000 + window)
    assert len(memo) == 4_097
    for_version(AutoCompactTrigger(), row, "claude-opus-4-6", window=100_000)
    assert len(memo) == 1
