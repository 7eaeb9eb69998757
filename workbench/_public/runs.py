"""``wb.strategy``, ``wb.replay`` and their result, `Runs`: tidy frames, a summary, plots.

`Runs` is the one result type of the replaying verbs: ``wb.replay`` (in process, over loaded sessions)
and ``wb.sweep`` (the sweep engine and its store) both return one, so the same ``summary()`` and
``plot`` work on either. Its frames are the engines' own rows plus two columns: ``config_hash`` (the
join key, `workbench.metrics.config_hash`) and ``label`` (readable: `workbench.strategies.labels`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..experiments.spec import METRIC_FAMILIES, REFERENCE_COLUMNS, nest
from ..strategies.base import Strategy
from ..transcript.model import Session, canonical_json
from .corpus import Sessions, as_sessions

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..experiments.run import SweepPlan, SweepResult

__all__ = ["SUMMARY_COLUMNS", "PlotAccessor", "Runs", "StrategyLike", "describe_column", "replay", "strategy"]

#: What the verbs accept as a strategy: a registered name, a configured instance, or a class (its defaults).
StrategyLike = str | Strategy | type[Strategy]


def strategy(spec: StrategyLike, config: Mapping[str, Any] | None = None, /, **params: Any) -> Strategy:
    """A configured strategy: a registered name or a `Strategy` subclass, with its config validated.

    Parameters are given as keywords, nested as dicts or dotted (``**{"trigger.pct_of_window": 60}``);
    unknown keys and bad values raise (the configs are frozen pydantic models, ``extra="forbid"``).

    Example::

        wb.strategy("sm-compact", min_tokens=20_000, trigger={"pct_of_window": 60})
        wb.strategy(MyStrategy, keep=3)          # a class defined in this notebook
    """
    merged = nest({**dict(config or {}), **params})
    if isinstance(spec, Strategy):
        if merged:
            return type(spec)({**spec.config.model_dump(), **merged})
        return spec
    if isinstance(spec, type) and issubclass(spec, Strategy):
        return spec(merged)
    if isinstance(spec, str):
        from ..strategies.registry import create

        return create(spec, merged)
    raise TypeError(f"expected a strategy name, class or instance, got {type(spec).__name__}")


def _config_rows(strategies: Sequence[Strategy]) -> pd.DataFrame:
    from ..metrics._common import config_hash
    from ..strategies.labels import config_label, unique_labels

    rows, seen = [], set()
    for item in strategies:
        config = item.config.model_dump(mode="json")
        chash = config_hash(item.name, config)
        if chash in seen:
            continue
        seen.add(chash)
        defaults = type(item).Config().model_dump(mode="json")
        rows.append(
            {
                "strategy": item.name,
                "config_hash": chash,
                "config_json": canonical_json(config),
                "label": config_label(item.name, config, defaults=defaults),
            }
        )
    frame = pd.DataFrame(rows, columns=["label", "strategy", "config_hash", "config_json"])
    names = unique_labels(zip(frame["config_hash"], frame["label"], strict=True))
    frame["label"] = frame["config_hash"].map(names)
    return frame


def _as_strategies(strategies: StrategyLike | Iterable[StrategyLike]) -> list[Strategy]:
    if isinstance(strategies, (str, Strategy, type)):
        return [strategy(strategies)]
    items = [strategy(s) for s in strategies]
    if not items:
        raise ValueError("no strategies given")
    return items


def replay(
    corpus: Sessions | Session | Iterable[Session] | str | Path,
    strategies: StrategyLike | Iterable[StrategyLike],
    *,
    estimator: str = "claude-rough",
    progress: bool = True,
    workers: int = 1,
) -> Runs:
    """Replay every session through every strategy (the engine of ``workbench replay``).

    Strategies of one class whose configs differ only in what a compaction keeps share the replay up to
    their first compaction (`workbench.replay.replay_group`), as in a sweep.

    Args:
        corpus: sessions from `wb.load` (or a session, sessions, or a path).
        strategies: names, `wb.strategy(...)` instances or `Strategy` classes (their own defaults); a
            class defined in the notebook works as is.
        estimator: per-record estimator for post-compaction accounting.
        progress: a progress bar over sessions.
        workers: replay the sessions in this many processes (`workbench.util.pool.ordered_map`); the frames are
            the same as with one, in the same order. Forked workers (Linux) share the loaded sessions; spawned
            ones (macOS, Windows) are sent them, and the strategies by value (a class of the notebook too).

    Example::

        runs = wb.replay(corpus, ["none", "sm-compact", wb.strategy("sm-compact", min_tokens=20_000)])
        runs.summary()
    """
    from tqdm.auto import tqdm

    from ..strategies.base import prefix_key
    from ..util.pool import check_workers
    from .replay_rows import Plan, replay_in_workers

    check_workers(workers)
    sessions = as_sessions(corpus)
    items = _as_strategies(strategies)
    configs = _config_rows(items)
    unique = list({row: s for row, s in zip(_hashes(items), items, strict=True)}.values())
    groups: dict[str, list[tuple[str, Strategy]]] = {}
    for chash, item in zip(_hashes(unique), unique, strict=True):
        groups.setdefault(prefix_key(item), []).append((chash, item))
    plan = Plan(
        list(groups.values()),
        dict(zip(configs["config_hash"], configs["label"], strict=True)),
        dict(zip(configs["config_hash"], configs["config_json"], strict=True)),
        estimator,
    )
    if workers > 1 and len(sessions) > 1:
        per_session = replay_in_workers(plan, sessions, workers)
    else:
        per_session = (plan.rows(session) for session in sessions)
    steps: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    for session_steps, session_events, session_cells in tqdm(
        per_session, total=len(sessions), desc="replay", unit="session", disable=not progress
    ):
        steps += session_steps
        events += session_events
        cells += session_cells
    return Runs(sessions, configs, pd.DataFrame(cells), pd.DataFrame(steps), pd.DataFrame(events), estimator=estimator)


def _hashes(items: Sequence[Strategy]) -> list[str]:
    from ..metrics._common import config_hash

    return [config_hash(s.name, s.config.model_dump(mode="json")) for s in items]


#: The columns ``Runs.summary()`` shows by default (those present), in this order, with what each means.
SUMMARY_COLUMNS: dict[str, str] = {
    "label": "the config: strategy name and the parameters that differ from its defaults",
    "strategy": "the registered strategy name",
    "session_id": "the replayed session (by='session')",
    "sessions": "sessions replayed",
    "steps": "API calls replayed",
    "compactions": "compactions the strategy made",
    "saved_share": "share of input tokens saved against no compaction (sum saved / sum uncompacted)",
    "saved_share_ci_low": "saved_share, low end of its 95% bootstrap interval over sessions",
    "saved_share_ci_high": "saved_share, high end of its 95% bootstrap interval over sessions",
    "violating_steps": "API calls whose request breaks an API invariant (the API would reject it)",
    "steps_blocked": "API calls at the blocking limit (refused for size)",
    "expected_recovery_tokens": "tokens the agent is expected to re-acquire after compactions; the fidelity "
    "to compare strategies on (lower is better)",
    "instructions_kept": "share of the user's explicit instructions the compacted context kept",
    "cost_usd": "simulated cost of the calls, summaries and memory extraction (priced sessions), USD",
    "total_cost_usd": "cost_usd plus the cost of the expected re-acquisition, USD",
    "unpriced_sessions": "sessions the cost sums leave out (no price for their model)",
}

#: What the other columns of ``summary(columns="all")`` mean (``cfg.*`` and ``*_ci_*`` are described by rule).
_OTHER_COLUMNS: dict[str, str] = {
    "config_hash": "join key of the config (strategy + resolved config)",
    "config_json": "the resolved config as JSON",
    "file": "the file the session was read from",
    "source": "the path the session was loaded from",
    "estimator": "the token estimator of the post-compaction accounting",
    "input_tokens": "input tokens sent with compaction",
    "input_tokens_without": "input tokens sent without compaction",
    "tokens_saved": "input_tokens_without minus input_tokens",
    "peak_context_tokens": "largest context of any call",
    "peak_without_compaction": "largest context of any call without compaction",
    "violations": "API-invariant violations (a call can have several)",
    "violation_rate": "violating_steps / steps",
    "compaction_violations": "compactions whose first request after breaks an API invariant",
    "compaction_violation_rate": "compaction_violations / compactions",
    "adjusted_compactions": "compactions whose kept window was moved to preserve API invariants",
    "fallback_reasons": "why compactions fell back (reason:count)",
    "repaired_steps": "calls whose request needed at least one repair",
    "repairs": "repairs the request normalisation made, over all calls",
    "fallbacks": "compactions that fell back to another kind",
    "steps_blocked_without": "calls at the blocking limit without compaction",
    "steps_over_window": "calls over the context window",
    "steps_over_window_without": "calls over the context window without compaction",
    "cost_per_1k_steps": "cost_usd per 1,000 API calls",
    "summarizer_cost_usd": "cost of the summary calls, USD",
    "memory_cost_usd": "cost of memory extraction, USD",
    "memory_extractions": "memory extraction calls",
    "needed_facts": "references (files, commands, errors, instructions) the rest of the session uses",
    "needed_facts_kept": "needed references the compacted context still names",
    "dropped_facts": "references in the dropped span",
    "dropped_facts_kept": "dropped references the compacted context still names",
    "needed_recall": "references kept: share of the needed references the compacted context still names "
    "(not content; read expected_recovery_tokens for fidelity)",
    "dropped_recall": "share of the dropped span's references the compacted context still names",
    "expected_recovery_calls": "calls the agent is expected to make to re-acquire what compactions dropped",
    "expected_recovery_files": "files the agent is expected to re-read",
    "expected_recovery_mentioned_calls": "expected re-acquisition calls whose target the summary names",
    "recovery_cost_usd": "cost of the expected re-acquisition, USD",
}


def describe_column(name: str) -> str:
    """What a column of `Runs.summary` means (empty for a column it does not know)."""
    if name in SUMMARY_COLUMNS:
        return SUMMARY_COLUMNS[name]
    if name in _OTHER_COLUMNS:
        return _OTHER_COLUMNS[name]
    if name.startswith("cfg."):
        return f"config parameter {name.removeprefix('cfg.')}"
    for end, side in (("_ci_low", "low"), ("_ci_high", "high")):
        if name.endswith(end):
            return f"{name.removesuffix(end)}, {side} end of its 95% bootstrap interval over sessions"
    return ""


def _wants_references(columns: str | Sequence[str]) -> bool:
    """Whether ``columns`` show a references column: the family reads every record's text for facts, so
    the default columns (which show none) leave it out."""
    if isinstance(columns, str):
        return columns == "all"
    return any(c.split("_ci_")[0] in REFERENCE_COLUMNS for c in columns)


def _summary_columns(table: pd.DataFrame, columns: str | Sequence[str]) -> list[str]:
    if columns == "default":
        return [c for c in SUMMARY_COLUMNS if c in table.columns]
    if columns == "all":
        return list(table.columns)
    if isinstance(columns, str):
        raise ValueError(f"columns must be 'default', 'all' or a list of column names, got {columns!r}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise KeyError(f"no summary column {', '.join(map(repr, missing))}; see summary(columns='all')")
    return list(columns)


class Runs:
    """Replays of sessions × strategy configs, as tidy frames.

    Attributes:
        sessions: the replayed `Sessions`.
        configs: one row per config in the order given: ``label``, ``strategy``, ``config_hash``,
            ``config_json``.
        steps: one row per session × config × API call (``context_tokens``, ``tokens_without_compaction``,
            ``violations``, …; see `workbench.replay`), with ``label`` and ``config_hash``.
        events: one row per compaction (``kind``, ``tokens_before``/``after``, ``keep_start``, …).
        cells: one summary row per session × config (what a sweep stores per cell).
        sweep: for ``wb.sweep`` results, the `SweepResult` (cells computed / cached, store).
    """

    def __init__(
        self,
        sessions: Sessions,
        configs: pd.DataFrame,
        cells: pd.DataFrame,
        steps: pd.DataFrame,
        events: pd.DataFrame,
        *,
        estimator: str = "claude-rough",
        sweep: SweepResult | None = None,
        plan: SweepPlan | None = None,
    ) -> None:
        self.sessions = sessions
        self.configs = configs.reset_index(drop=True)
        self.cells = cells
        self.steps = steps
        self.events = events
        self.estimator = estimator
        self.sweep = sweep
        self.plan = plan
        self._summaries: dict[tuple[str, tuple[str, ...]], pd.DataFrame] = {}

    def __repr__(self) -> str:
        return (
            f"Runs({len(self.configs)} configs × {self.steps['session_id'].nunique() if len(self.steps) else 0} "
            f"sessions: {', '.join(self.labels)})"
        )

    @property
    def labels(self) -> list[str]:
        """The configs' readable names, in the order given."""
        return list(self.configs["label"])

    def summary(
        self,
        by: str = "config",
        metrics: Sequence[str] = METRIC_FAMILIES,
        *,
        columns: str | Sequence[str] = "default",
    ) -> pd.DataFrame:
        """Savings, validity, cost and fidelity per config (``by="config"``, pooled over sessions) or per
        session × config (``by="session"``): the sweep's tables (`workbench.experiments.tables`).

        By default the frame has the columns a comparison acts on (`SUMMARY_COLUMNS`, those the metric
        families computed): ``label``, ``strategy`` (``session_id`` per session), ``sessions``, ``steps``,
        ``compactions``, ``saved_share`` and its 95% interval over sessions (``saved_share_ci_low`` /
        ``_ci_high``), ``violating_steps``, ``steps_blocked``, ``expected_recovery_tokens`` (the fidelity to
        compare strategies on; lower is better), ``instructions_kept`` when computed, ``cost_usd``,
        ``total_cost_usd`` and ``unpriced_sessions``. ``columns="all"`` gives every column (the
        ``config_hash`` join key, ``needed_recall`` = references kept, the other intervals, one ``cfg.*``
        column per parameter, …); a list of names gives those, in that order. ``frame.attrs["columns"]``
        describes each column of the frame.

        Pooled shares are ratios of sums (``saved_share`` = Σ saved / Σ uncompacted input tokens,
        ``needed_recall`` = Σ needed references kept / Σ needed references); ``steps_blocked`` counts calls
        at the blocking limit. Rows keep the order of `configs`.

        Args:
            by: ``"config"`` or ``"session"``.
            metrics: the metric families to compute (``savings``, ``validity``, ``cost``, ``fidelity``).
            columns: ``"default"``, ``"all"`` or column names.
        """
        from ..experiments.tables import cell_table, config_table

        if by not in ("config", "session"):
            raise ValueError(f"by must be 'config' or 'session', got {by!r}")
        families = tuple(m for m in metrics if m != "references" or _wants_references(columns))
        key = (by, families)
        if key not in self._summaries:
            table = cell_table(self.cells, self.steps, self.events, list(self.sessions), families)
            order = {h: i for i, h in enumerate(self.configs["config_hash"])}
            if by == "config":
                table = config_table(table)
            names = dict(zip(self.configs["config_hash"], self.configs["label"], strict=True))
            table = table.assign(_order=table["config_hash"].map(order), label=table["config_hash"].map(names))
            sort = ["_order", "session_id"] if by == "session" else ["_order"]
            table = table.sort_values(sort, kind="stable").drop(columns="_order").reset_index(drop=True)
            front = [c for c in ("label", "strategy", "config_hash") if c in table.columns]
            self._summaries[key] = table[[*front, *(c for c in table.columns if c not in front)]]
        full = self._summaries[key]
        out = full[_summary_columns(full, columns)].copy()
        out.attrs["columns"] = {c: describe_column(c) for c in out.columns}
        return out

    @cached_property
    def plot(self) -> PlotAccessor:
        """Plots of these runs (each returns a matplotlib `Figure`): ``timeline``, ``pareto``,
        ``cost_vs_savings``, ``violations``, ``heatmap``."""
        return PlotAccessor(self)

    def session_id(self, session: Session | str | None = None) -> str:
        """A replayed session's id: given, by id prefix, or (None) the one with the most API calls."""
        if isinstance(session, Session):
            return session.id
        ids = list(dict.fromkeys(self.steps["session_id"])) if len(self.steps) else []
        if session is None:
            if not ids:
                raise ValueError("no replayed steps")
            sizes = self.steps.groupby("session_id", sort=False)["step"].max()
            return str(sizes.idxmax())
        found = [i for i in ids if i == session] or [i for i in ids if i.startswith(session)]
        if len(found) != 1:
            raise KeyError(f"{len(found)} replayed sessions match {session!r}")
        return str(found[0])

    def save(self, folder: str | Path) -> Path:
        """Write one ``workbench replay --out`` folder per config under ``folder`` (``steps.parquet``,
        ``events.parquet``, ``manifest.json``): what ``wb.report`` / ``workbench report`` read."""
        import shutil
        import tempfile

        from ..replay.run_folder import commit_run, manifest_data

        root = Path(folder)
        inputs = sorted({str(s.source) for s in self.sessions if s.source})
        for row in self.configs.itertuples(index=False):
            out = root / re.sub(r"[^A-Za-z0-9_.=%-]+", "_", row.label).strip("_")
            out.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=out, prefix=".parts-"))
            try:
                staged = {}
                for name, frame in (("steps", self.steps), ("events", self.events)):
                    mine = frame[frame["config_hash"] == row.config_hash] if len(frame) else frame
                    staged[f"{name}.parquet"] = staging / f"{name}.parquet"
                    mine.drop(columns=["label"], errors="ignore").to_parquet(staged[f"{name}.parquet"], index=False)
                config = json.loads(row.config_json)
                commit_run(out, staged, manifest_data(row.strategy, config, inputs, estimator=self.estimator))
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        return root


class PlotAccessor:
    """``runs.plot.<kind>(…)``: `workbench.reporting.plots` over the runs' frames, labelled by config label.

    Figures are detached from pyplot's state, so a notebook shows each one once, where it is the value
    of a cell (or with ``display(fig)``), and scripts can ``fig.savefig(path)``.
    """

    def __init__(self, runs: Runs) -> None:
        self._runs = runs

    @staticmethod
    def _detach(fig: Figure) -> Figure:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return fig

    def timeline(
        self, session: Session | str | None = None, labels: Sequence[str] | None = None, *, title: str | None = None
    ) -> Figure:
        """Context size per API call of one session (default: the longest), one line per config, the
        uncompacted size, compaction markers, the window and the auto-compact threshold."""
        from ..reporting import plots

        runs = self._runs
        sid = runs.session_id(session)
        steps = runs.steps[runs.steps["session_id"] == sid]
        events = runs.events[runs.events["session_id"] == sid] if len(runs.events) else None
        if labels is not None:
            steps = steps[steps["label"].isin(labels)]
            events = events[events["label"].isin(labels)] if events is not None else None
        return self._detach(plots.context_timeline(steps, events, title=title))

    def pareto(self, x: str = "saved_share", y: str = "expected_recovery_tokens") -> Figure:
        """Savings vs fidelity per config, each strategy's Pareto front drawn: by default the share of input
        tokens saved against the expected re-acquired tokens (lower is better); ``y="needed_recall"`` plots
        the references kept instead."""
        from ..reporting import plots

        return self._detach(plots.pareto_front(self._runs.summary(columns="all"), x=x, y=y))

    def cost_vs_savings(self, x: str = "saved_share", y: str = "cost_usd") -> Figure:
        """Simulated cost against the share of input tokens saved, per config."""
        from ..reporting import plots

        return self._detach(
            plots.cost_vs_savings(self._runs.summary(metrics=("savings", "cost"), columns="all"), x=x, y=y)
        )

    def violations(self) -> Figure:
        """API-invariant violations per step, by strategy and rule."""
        from ..metrics import validity_rules
        from ..reporting import plots

        runs = self._runs
        rules = validity_rules(runs.steps, runs.events if len(runs.events) else None)
        rules = rules[rules["scope"] == "step"] if len(rules) else rules
        per = runs.steps.groupby("strategy").size()
        return self._detach(plots.violation_rates(rules, per))

    def heatmap(self, x: str, y: str, value: str = "saved_share", *, strategy: str | None = None) -> Figure:
        """``value`` over two parameters (dotted config keys, e.g. ``min_tokens``, ``trigger.pct_of_window``)
        of one strategy (default: the only one with several configs); other parameters averaged."""
        from ..reporting import plots

        table = self._runs.summary(columns="all")
        if strategy is None:
            counts = table["strategy"].value_counts()
            several = list(counts[counts > 1].index)
            if len(several) != 1:
                raise ValueError(f"name the strategy: {len(several)} strategies have several configs")
            strategy = str(several[0])
        grid = table[table["strategy"] == strategy]
        title = f"{strategy}: {value} over {x} × {y}"
        return self._detach(plots.grid_heatmap(grid, f"cfg.{x}", f"cfg.{y}", value, title=title))
