"""``wb.tune``: a strategy's parameters searched over a corpus (the engine of ``workbench tune``);
``wb.advise``: Claude Code's settings weighed on a user's own history (``workbench advise``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..experiments.advise import Advice, advise_sessions
from ..experiments.tune import DEFAULT_CONSTRAINTS, TuneResult, TuneSpec, load_tune_spec, run_tune
from ..strategies.base import Strategy
from .corpus import Sessions, as_sessions
from .sweeps import runs_from_store

__all__ = ["advise", "tune"]


def tune(
    corpus: Sessions | Sequence[Any] | str | Path,
    strategy: str | type[Strategy] | None = None,
    *,
    space: Mapping[str, Sequence[Any]] | None = None,
    objective: str = "saved_share",
    constraints: Mapping[str, str | float] | None = None,
    fidelity: str = "expected_recovery_tokens",
    fidelity_goal: str | None = None,
    savings: str = "saved_share",
    cost: str = "cost_usd",
    config: Mapping[str, Any] | None = None,
    name: str | None = None,
    store: str | Path | None = None,
    executor: str = "local",
    workers: int | None = None,
    bootstrap: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    progress: bool = True,
) -> TuneResult:
    """Search ``strategy``'s parameters over ``corpus`` and recommend a config.

    Every point of ``space`` (a grid: dotted key → values) is swept with the base ``config`` (cached in
    ``store``; default: the workbench cache, so re-running a notebook computes nothing twice). Configs
    that break a constraint are infeasible (default: no rejected request and no call at the blocking
    limit beyond the baseline's); the front is the feasible configs no other beats on ``savings``↑,
    ``fidelity`` (default ``expected_recovery_tokens``, what the agent is expected to re-acquire: ↓;
    ``fidelity_goal`` overrides the direction) and ``cost``↓; the recommendation is the front config
    with the best ``objective`` (``"-cost_usd"`` minimises), with 95% bootstrap intervals over sessions
    and a paired interval against the base config. `workbench.experiments.tune` has the details.

    ``corpus`` may also be a tune spec file (YAML, as ``workbench tune SPEC``), then the other arguments
    are ignored except ``store``/``executor``/``workers``/``progress``.

    Example::

        result = wb.tune(corpus, "sm-compact",
                         space={"min_tokens": [5_000, 10_000, 20_000], "trigger.pct_of_window": [None, 60, 80]},
                         constraints={"added_violating_steps": "== 0", "expected_recovery_tokens": "<= 20000"})
        result.front, result.recommended["label"], result.intervals
    """
    from ..experiments.cells import corpus_fingerprint
    from ..strategies.registry import register, strategies
    from ..util.cache import cache_root

    if isinstance(corpus, (str, Path)) and Path(corpus).suffix in (".yaml", ".yml") and strategy is None:
        path = Path(corpus).expanduser()
        spec = load_tune_spec(path)
        result = run_tune(spec, path, store=store, executor=executor, workers=workers, progress=progress)
        return _with_runs(result, None)
    if strategy is None or not space:
        raise ValueError("wb.tune needs a strategy and a space (or a tune spec file)")
    if isinstance(strategy, type):
        if strategies().get(strategy.name) is not strategy:
            register(strategy)
        strategy = strategy.name
    sessions = as_sessions(corpus)
    where = [str(p) for p in sessions.paths] or sorted({str(s.source) for s in sessions if s.source})
    spec = TuneSpec(
        name=name or f"tune-{strategy}",
        corpus=where or ["."],
        strategy=strategy,
        config=dict(config or {}),
        space={k: list(v) for k, v in space.items()},
        objective=objective,
        axes={"savings": savings, "fidelity": fidelity, "cost": cost},
        fidelity_goal=fidelity_goal,
        constraints=dict(DEFAULT_CONSTRAINTS if constraints is None else constraints),
        bootstrap=bootstrap,
        confidence=confidence,
        seed=seed,
    )
    # the default store is per spec name *and* corpus: another corpus (or another copy of a folder) with the
    # same spec name never shares it; cells are keyed by session content and code anyway (`Cell.id`)
    corpus_key = corpus_fingerprint([s.fingerprint for s in sessions])[:12]
    target = Path(store) if store is not None else cache_root() / "tune" / f"{spec.name}-{corpus_key}" / "store"
    result = run_tune(
        spec,
        Path.cwd() / f"{spec.name}.yaml",
        sessions=list(sessions),
        store=target,
        executor=executor,
        workers=workers,
        progress=progress,
    )
    return _with_runs(result, sessions)


def _with_runs(result: TuneResult, sessions: Sessions | None) -> TuneResult:
    chosen = Sessions(result.plan.sessions, paths=sessions.paths if sessions is not None else result.plan.spec.corpus)
    result.runs_factory = lambda: runs_from_store(result.sweep, result.plan, chosen)
    return result


def advise(
    corpus: Sessions | Sequence[Any] | str | Path,
    *,
    settings: Mapping[str, Sequence[Any]] | None = None,
    store: str | Path | None = None,
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
) -> Advice:
    """What a Claude Code user's own history says about the compaction settings they can change
    (`workbench.experiments.advise`): what happened, each setting paired against it with 95% intervals, and
    a verdict. ``settings``: config key → values (default `DEFAULT_SETTINGS`); cells are cached in ``store``
    (default: the workbench cache, per corpus).

    Example::

        advice = wb.advise("~/.claude/projects")
        print(advice.render()); advice.settings   # a DataFrame, one row per setting
    """
    from ..experiments.cells import corpus_fingerprint
    from ..util.cache import cache_root

    sessions = as_sessions(corpus)
    mine = [s for s in sessions if s.format == "claude-code"]
    if not mine:
        raise ValueError("wb.advise needs Claude Code sessions (the settings it weighs are Claude Code's)")
    where = [str(p) for p in sessions.paths] or sorted({str(s.source) for s in mine if s.source})
    corpus_key = corpus_fingerprint([s.fingerprint for s in mine])[:12]
    target = Path(store) if store is not None else cache_root() / "advise" / corpus_key / "store"
    return advise_sessions(
        mine, where=where, settings=settings, store=target, executor=executor, workers=workers, progress=progress
    )
