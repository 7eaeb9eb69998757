"""A config written out and read back (a sweep's ``config_json``, a cell's identity, ``wb.strategy(row.strategy,
json.loads(row.config_json))``) replays as the original: fields resolved at each call when unset (the window
the recording proves, a trigger's version constants) stay unset through the round trip."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from workbench.replay import replay_session
from workbench.strategies import create
from workbench.strategies.base import StrategyConfig
from workbench.strategies.registry import strategies


def _explicit(model: BaseModel, path: str = "") -> dict[str, frozenset[str]]:
    """``{path: fields set}`` of ``model`` and of every config nested in it."""
    out = {path: frozenset(model.model_fields_set)}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, StrategyConfig):
            out.update(_explicit(value, f"{path}.{name}"))
    return out


def _round_trip(name: str, config: dict) -> tuple[object, object]:
    original = create(name, config)
    written = json.loads(json.dumps(original.config.model_dump(mode="json")))
    return original, create(name, written)


@pytest.mark.parametrize("name", sorted(strategies()))
def test_every_strategy_keeps_what_is_resolved_at_each_call_unset(name) -> None:
    original, again = _round_trip(name, {})
    for path, fields in _explicit(again.config).items():
        auto = type(_nested(again.config, path)).resolved_when_unset | {"context_window"}
        assert not (fields & auto) - _explicit(original.config)[path], (name, path)
    assert again.config == original.config


def _nested(model: BaseModel, path: str) -> BaseModel:
    for part in filter(None, path.split(".")):
        model = getattr(model, part)
    return model


def test_a_window_set_on_purpose_stays_set() -> None:
    _, again = _round_trip("full-compact", {"trigger": {"context_window": 200_000}})
    assert "context_window" in again.config.trigger.model_fields_set
    assert again.config.model_dump(mode="json")["trigger"]["context_window"] == 200_000


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("claude-code", {"session_memory": False, "sm": {"full_compact": {"summarizer": "recorded"}}}),
        ("full-compact", {"summarizer": "recorded"}),
        ("sm-compact", {}),
        ("codex", {}),
    ],
)
def test_a_1m_window_session_replays_alike_after_the_round_trip(corpus, name, config) -> None:
    """The 1M-window session that starts at 286k tokens: written-out configs pinned it to 200k, so the
    version-aware strategies compacted at every call in sweeps and tunes (170 times) and not at all here."""
    from workbench.transcript import load_paths

    path = corpus / "claude-code-more" / "obra-episodic-memory" / "large-conversation.jsonl"
    session = next(s for s in load_paths([path]) if not s.is_subagent)
    original, again = _round_trip(name, config)
    first, second = replay_session(session, original), replay_session(session, again)
    assert first.steps == second.steps and first.events == second.events
    assert len(first.events) < len(first.steps) / 2  # it does not compact at every call
