"""The replay engine on hand-made sessions: steps, token accounting, in-place rewrites."""

from __future__ import annotations

from synthetic import make_session

from workbench.replay import replay_frames, replay_session
from workbench.strategies import create
from workbench.tokens.context import prompt_tokens, token_count_with_estimation
from workbench.transcript.steps import api_calls


def test_none_reports_one_step_per_api_call_and_recorded_sizes() -> None:
    session = make_session(turns=3, tools=2)
    result = replay_session(session, create("none"))
    assert len(result.steps) == 3 * (2 + 1)
    assert result.events == []
    assert all(row["token_source"] == "recorded" and row["violations"] == 0 for row in result.steps)
    assert all(row["context_tokens"] == row["tokens_without_compaction"] for row in result.steps)
    # before divergence the engine's O(1) size is exactly Claude Code's tokenCountWithEstimation
    records = list(session.records)
    calls = api_calls(records)
    first_prompt = prompt_tokens(records[calls[0].first].usage)
    assert result.steps[0]["context_tokens"] == first_prompt  # the overhead makes step 0 exact
    for row, call in zip(result.steps[1:], calls[1:], strict=True):
        assert row["context_tokens"] == token_count_with_estimation(records[: call.first])


def test_truncation_rewrites_in_place_and_estimates_the_saving() -> None:
    session = make_session(turns=4, tools=3, result_chars=8_000)
    strategy = create("microcompact-truncate", {"context_window": 40_000, "pct_of_window": 50, "keep_recent": 2})
    result = replay_session(session, strategy)
    steps, events = replay_frames([result])
    assert len(events) >= 1 and set(events["kind"]) == {"microcompact-truncate"}
    first = events.iloc[0]
    assert first["tokens_after"] < first["tokens_before"]
    assert (steps["violations"] == 0).all()
    after = steps[steps["step"] >= first["step"]]
    assert (after["token_source"] == "estimated").all()
    assert (after["context_tokens"] < after["tokens_without_compaction"]).all()


def test_padded_counts_are_looked_up_only_when_a_strategy_reads_them() -> None:
    """The engine fills claude-padded counts as a strategy reads ``view.padded`` (SM-compaction does when it
    compacts): a replay that never reads them looks none up; one that does gets each record's count."""
    from workbench.strategies.base import Strategy
    from workbench.tokens.cache import cached_estimator
    from workbench.tokens.estimators import get_estimator

    padded = cached_estimator("claude-padded")
    session = make_session(turns=3, tools=2)
    looked_up = padded.stats.hits + padded.stats.misses
    replay_session(session, create("none"))
    assert padded.stats.hits + padded.stats.misses == looked_up

    seen: list[tuple[list[int], list[int]]] = []

    class Reads(Strategy):
        name = "reads-padded"

        def compact(self, view, state):  # type: ignore[no-untyped-def]
            seen.append((list(view.padded), get_estimator("claude-padded").count_many(view.records)))
            return None

    replay_session(session, Reads())
    assert len(seen) == 9 and all(got == expected and got for got, expected in seen)
    assert padded.stats.hits + padded.stats.misses > looked_up


def test_the_hook_view_is_built_only_for_a_strategy_that_observes() -> None:
    """`Strategy.observe` does nothing, so the engine builds no post-sampling view for a strategy that
    keeps it (a view per call was ~25% of a `none` replay); one that overrides it, a subclass of a
    strategy that does included, sees every response after the first call, with the same rows."""
    from workbench.replay import engine
    from workbench.strategies.base import Strategy

    session = make_session(turns=3, tools=2)
    views: list[int] = []
    original = engine._Prepared.view

    def counting(self, items, *args, **kwargs):  # type: ignore[no-untyped-def]
        views.append(len(items))
        return original(self, items, *args, **kwargs)

    engine._Prepared.view = counting  # type: ignore[method-assign]
    try:
        plain = replay_session(session, create("none"))
        calls = len(plain.steps)
        assert len(views) == calls  # one view per call, for compact; none for the no-op hook
        seen: list[int] = []

        class Observes(Strategy):
            name = "observes"

            def compact(self, view, state):  # type: ignore[no-untyped-def]
                return None

            def observe(self, view, state):  # type: ignore[no-untyped-def]
                seen.append(view.step)
                return None

        class Inherits(Observes):
            name = "inherits"

        for strategy in (Observes(), Inherits()):
            views.clear()
            seen.clear()
            observed = replay_session(session, strategy)
            assert len(views) == 2 * calls - 1 and len(seen) == calls - 1
            assert [{**r, "strategy": "none"} for r in observed.steps] == plain.steps
    finally:
        engine._Prepared.view = original  # type: ignore[method-assign]


def whole_check(context, *, thinking, original_thinking, memo, incremental, fresh_responses, grown=None):  # type: ignore[no-untyped-def]
    """The engine's request check done from scratch: no message memo, no incremental check."""
    from workbench.replay import validation

    return validation.check_request(
        context, thinking=thinking, original_thinking=original_thinking, fresh_responses=fresh_responses
    )


def test_the_request_checks_message_memo_is_reused_and_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The engine's request check builds each record's API message once per session (`normalize`'s memo):
    a masking strategy's replay reuses it and the rows equal a replay without it; a strategy that makes a
    new record of every tool result at every call would grow it per check, so it is emptied past its bound
    (`MESSAGE_MEMO_PER_RECORD` per record plus `MESSAGE_MEMO_SLACK`), with the same rows."""
    from workbench.replay import engine
    from workbench.strategies.base import Strategy
    from workbench.strategies.rewrite import in_place, rewrite_tool_results

    session = make_session(turns=6, tools=4, result_chars=2_000)
    prepared: list = []
    original = engine._Prepared.__init__

    def keeping(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        original(self, *args, **kwargs)
        prepared.append(self)

    monkeypatch.setattr(engine._Prepared, "__init__", keeping)

    class Rewrites(Strategy):
        name = "rewrites-everything"

        def compact(self, view, state):  # type: ignore[no-untyped-def]
            records = list(view.records)
            new, changed = rewrite_tool_results(records, lambda block: f"seen at {view.step}")
            return in_place(self.name, "always", records, new, {}) if changed else None

    def steps(strategy: Strategy, *, memo: bool) -> list[dict]:
        prepared.clear()
        with monkeypatch.context() as patch:
            if not memo:  # the request built from scratch at every check
                patch.setattr(engine, "check_request", whole_check)
            return replay_session(session, strategy).steps

    masking = create("observation-masking", {"keep_last_turns": 2})
    assert steps(masking, memo=False) == steps(masking, memo=True)
    records = len(prepared[0].records)
    assert records < len(prepared[0].messages) <= 2 * records  # reused: a few rewritten records per call
    monkeypatch.setattr(engine, "MESSAGE_MEMO_SLACK", 0)
    monkeypatch.setattr(engine, "MESSAGE_MEMO_PER_RECORD", 1)
    everything = steps(Rewrites(), memo=True)
    assert sum(row["compacted"] for row in everything) > 10
    assert 0 < len(prepared[0].messages) <= 2 * records  # emptied past the bound (5x without it here)
    assert everything == steps(Rewrites(), memo=False)
