"""One table-driven contract over every registered strategy (docs/style.md lesson 2).

For each: the config round-trips and rejects unknown keys, nothing happens below the trigger, and on a
session that crosses it the strategy compacts a *counted* number of times; safe strategies never
produce a request the API validator rejects.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from synthetic import make_session

from workbench.replay import replay_session
from workbench.strategies import create, strategies

# A small window so the synthetic session (≈55k tokens) crosses every trigger; per strategy, the
# overrides that make it act, and how many compactions it must make on make_session(turns=8).
SMALL = {"context_window": 60_000, "max_output_tokens": 20_000}
CONTRACT: dict[str, tuple[dict, int | None]] = {
    "none": ({}, 0),
    "recorded": ({}, 0),
    "full-compact": ({"trigger": SMALL}, None),
    "sm-compact": ({"trigger": SMALL, "full_compact": {"trigger": SMALL}}, None),
    "sm-compact-naive": ({"trigger": SMALL, "full_compact": {"trigger": SMALL}}, None),
    "claude-code": ({"sm": {"trigger": SMALL, "full_compact": {"trigger": SMALL}}}, None),
    "microcompact": ({"enabled": True, "gap_threshold_minutes": 0.5}, None),
    "microcompact-truncate": ({"context_window": 60_000}, None),
}


def _config(name: str) -> dict:
    return CONTRACT.get(name, ({}, None))[0]


@pytest.mark.parametrize("name", sorted(strategies()))
def test_config_round_trips_and_rejects_unknown_keys(name: str) -> None:
    strategy = create(name, _config(name))
    again = create(name, strategy.config.model_dump())
    assert again.config == strategy.config
    with pytest.raises(ValidationError):
        create(name, {"definitely_not_a_key": 1})
    with pytest.raises(ValidationError):
        strategy.config.__class__.model_validate({**strategy.config.model_dump(), "nope": 0})


@pytest.mark.parametrize("name", sorted(strategies()))
def test_nothing_happens_below_the_trigger(name: str) -> None:
    tiny = make_session(turns=1, tools=1, result_chars=100)
    result = replay_session(tiny, create(name))
    assert result.events == []


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_compacts_a_counted_number_of_times_and_stays_valid(name: str) -> None:
    session = make_session(turns=8, tools=3, result_chars=6_000)
    strategy = create(name, _config(name))
    result = replay_session(session, strategy)
    expected = CONTRACT[name][1]
    if expected is None:
        assert len(result.events) >= 1, f"{name} never compacted"
    else:
        assert len(result.events) == expected
    if not strategy.unsafe:
        assert sum(e["violations"] for e in result.events) == 0
        assert sum(s["violations"] for s in result.steps) == 0
