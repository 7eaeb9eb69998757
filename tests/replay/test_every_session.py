"""The replay's guarantees on every session: every registered strategy not declared unsafe adds no request
the API rejects over ``none`` at the same call, and makes no run of more than 3 ineffective summarising
compactions (`workbench.metrics.guarantees`), on every session of every format of the corpus and on
generated sessions of the shapes the corpus lacks (`workbench.synthetic.shapes`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.metrics.guarantees import added_violations, longest_ineffective_run
from workbench.replay import replay_session
from workbench.strategies import create
from workbench.strategies.refill import REFILL_LIMIT, RefillGuard
from workbench.strategies.registry import strategies
from workbench.synthetic.shapes import Shape, shaped_session
from workbench.transcript import load_paths
from workbench.transcript.steps import api_calls

SAFE = sorted(name for name, cls in strategies().items() if not cls.unsafe)


def _problems(session, name: str, baseline) -> list[str]:  # type: ignore[no-untyped-def]
    result = replay_session(session, create(name))
    out = []
    added = added_violations(result.steps, baseline.steps)
    if added:
        rules = sorted({row["violation_rules"] for row in result.steps if row["step"] in set(added)})
        out.append(f"{session.source}: {len(added)} added violating calls from step {added[0]} ({rules})")
    run = longest_ineffective_run(result.events)
    if run > REFILL_LIMIT:
        out.append(f"{session.source}: {run} ineffective compactions in a row")
    return out


@pytest.fixture(scope="module")
def baselines(every_session):  # type: ignore[no-untyped-def]
    return [(s, replay_session(s, create("none"))) for s in every_session]


@pytest.mark.corpus
@pytest.mark.parametrize("name", SAFE)
def test_no_added_violation_and_no_loop_on_every_real_session(baselines, name: str) -> None:
    problems = [p for session, baseline in baselines for p in _problems(session, name, baseline)]
    assert not problems, "\n".join(problems[:10])


def test_the_safe_set_is_most_of_the_registry() -> None:
    assert {"none", "sm-compact", "full-compact", "codex", "observation-masking", "clear-thinking"} <= set(SAFE)
    assert {"sm-compact-naive", "sm-compact-reference", "truncate-oldest", "claude-code"}.isdisjoint(SAFE)


shapes = st.builds(
    Shape,
    calls=st.integers(8, 40),
    batch=st.integers(1, 4),
    interleaved=st.booleans(),
    thinking=st.sampled_from([0.0, 0.3, 1.0]),
    result_chars=st.sampled_from([2_000, 20_000, 60_000]),
    huge_result_at=st.none() | st.integers(2, 7),
    hidden_tokens=st.sampled_from([15_000, 160_000, 300_000]),
    model=st.sampled_from(["claude-opus-4-6", "claude-sonnet-4-5[1m]", "gpt-5-codex"]),
    broken_at=st.none() | st.integers(1, 6),
    replaced_at=st.none() | st.integers(2, 7),
    version=st.sampled_from(["2.0.57", "2.1.39", "2.1.88", "2.1.230"]),
    seed=st.integers(0, 3),
)


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(shape=shapes)
def test_no_added_violation_and_no_loop_on_generated_shapes(shape: Shape) -> None:
    session = shaped_session(shape)
    baseline = replay_session(session, create("none"))
    problems = [p for name in SAFE for p in _problems(session, f"{name}", baseline)]
    assert not problems, (shape, problems[:5])


@pytest.mark.parametrize("name", ["server-compact", "codex", "sm-compact", "letta"])
def test_a_session_resumed_above_every_trigger_compacts_at_most_three_times(name: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """184k hidden tokens (a resumed session, a fragment) on a 200k window: every request is above these
    triggers and no compaction can shrink what the file does not hold. With the refill stop a strategy
    compacts 3 times; without it, before every call."""
    session = shaped_session(Shape(calls=30, hidden_tokens=184_000, result_chars=200))
    result = replay_session(session, create(name))
    assert len([e for e in result.events if e["summary"] is not None]) == REFILL_LIMIT
    assert longest_ineffective_run(result.events) == REFILL_LIMIT
    monkeypatch.setattr(RefillGuard, "allows", lambda self: True)
    assert len(replay_session(session, create(name)).events) == 30


@pytest.mark.parametrize("name", ["codex", "sm-compact", "letta", "opencode"])
def test_a_1m_session_is_measured_against_its_own_window(name: str) -> None:
    """Recorded requests above 200k prove the 1M window (`ContextView.window`): a strategy whose trigger is a
    share of its window does not fire at 200k-window thresholds; set explicitly, the configured window wins."""
    session = shaped_session(Shape(calls=20, hidden_tokens=300_000, model="claude-sonnet-4-5[1m]"))
    assert replay_session(session, create(name)).events == []
    pinned = create(
        name, {"trigger": {"context_window": 200_000}} if name == "sm-compact" else {"context_window": 200_000}
    )
    assert replay_session(session, pinned).events


def test_the_refill_guard_stops_after_three_refills_and_rearms_below_the_trigger() -> None:
    guard = RefillGuard()
    made = []
    for _ in range(6):
        if guard.allows():
            guard.compacted()
            made.append(True)
        else:
            made.append(False)
    assert made == [True, True, True, False, False, False]
    guard.below()
    assert guard.allows()


def test_a_recording_that_breaks_a_pair_is_charged_to_the_recording() -> None:
    """The engine checks every request, also where nothing was compacted: the broken pair shows in ``none``
    from the call after it on, so a strategy that compacts later is not charged with it."""
    session = shaped_session(Shape(calls=12, broken_at=3, result_chars=60_000, hidden_tokens=150_000))
    baseline = replay_session(session, create("none"))
    broken = [row["step"] for row in baseline.steps if row["violations"]]
    assert broken and broken[0] == 4
    assert {row["violation_rules"] for row in baseline.steps if row["violations"]} == {"tool_use_without_tool_result"}
    result = replay_session(session, create("observation-masking", {"keep_last_turns": 1}))
    assert added_violations(result.steps, baseline.steps) == []


def test_a_codex_parallel_batch_is_one_api_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Codex writes one response as a reasoning item and one function_call per tool; the loader gives them
    one message id, so the batch is one call whose results follow it (not three calls, each a tool_use
    without its result)."""
    lines = [
        {"type": "session_meta", "payload": {"id": "s1", "cli_version": "0.80.0"}},
        {"type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "fix it"}},
        {"type": "response_item", "payload": {"type": "reasoning", "summary": [{"text": "plan"}]}},
        *(
            {
                "type": "response_item",
                "payload": {"type": "function_call", "name": "sh", "arguments": "{}", "call_id": c},
            }
            for c in ("c1", "c2", "c3")
        ),
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 900}}}},
        *(
            {"type": "response_item", "payload": {"type": "function_call_output", "call_id": c, "output": "ok"}}
            for c in ("c1", "c2", "c3")
        ),
        {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": "done"}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 990}}}},
    ]
    path = tmp_path / "rollout-2026-01-01T00-00-00-s1.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": "2026-01-01T00:00:00Z", **line}) for line in lines) + "\n")
    [session] = load_paths([path])
    calls = api_calls(session.conversation())
    assert [len(c.indices) for c in calls] == [4, 1]
    assert calls[0].message_id != calls[1].message_id
    baseline = replay_session(session, create("none"))
    assert [row["violations"] for row in baseline.steps] == [0, 0]


def test_replay_results_say_what_the_recording_decides() -> None:
    """Each result carries the session's facts; the warning lines name a resumed 1M session, and nothing for a
    plain one."""
    from workbench.replay.facts import warning_lines, warning_summary

    wide = replay_session(
        shaped_session(Shape(calls=6, hidden_tokens=300_000, model="claude-sonnet-4-5[1m]")), create("none")
    )
    plain = replay_session(shaped_session(Shape(calls=6)), create("none"))
    assert wide.facts is not None and wide.facts.window == 1_000_000 and wide.facts.resumed
    [line] = warning_lines([wide, plain])
    assert "1,000k window" in line and "tokens the file does not hold" in line
    assert warning_summary([line], 2)[0].startswith("1 of 2 sessions rest on what a replay cannot fully model")
    assert warning_summary([], 2) == []


@pytest.mark.corpus
def test_replay_prints_the_warnings(corpus, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.cli import main

    with pytest.raises(SystemExit) as done:
        main(["replay", "-s", "none", str(corpus / "claude-code-more" / "obra-episodic-memory"), "--json"])
    assert done.value.code == 0
    [line] = json.loads(capsys.readouterr().out)["warnings"]
    assert line.startswith(str(corpus / "claude-code-more" / "obra-episodic-memory" / "large-conversation.jsonl"))
