"""Judge probes over a whole replay result, with a cost estimate first and a hard budget.

`run_probes` probes every compaction event of the given replays (`workbench.probes.generate.probe_event`)
and, as the reference row, every compaction Claude Code really made (strategy ``claude-recorded``: the
recorded ``isCompactSummary`` and what followed the ``compact_boundary`` as the kept context, the segment
since the previous boundary as the dropped content). ``recorded-compact`` events of a ``recorded`` run are
the same compactions and are not probed twice.

The **estimate** (`estimate_probes`, `workbench.probes.cost`) is a dry run of the same pipeline
against the response cache, read-only, pricing every miss at its upper bound (input padded, output at
``max_tokens``); it is what the budget check compares.

**Budget.** `run_probes` refuses to start when the estimate exceeds ``budget_usd``
(`ProbeBudgetError`). While running it meters every real request's recorded ``usage`` (input, cache
write, cache read, output at their prices) and, before each request, refuses to send it when the spend
so far plus that request's upper bound would pass the budget: the run stops there and reports the events
not probed (``not_probed``). Cache hits cost nothing and are always served.

Where things live: the jobs (`ProbeJob`, `probe_jobs`, the recorded reference rows) in
`workbench.probes.job`; pricing (the estimate, a request's upper bound, a response's usage) in
`workbench.probes.cost`; here, the budgeted run and the report's probe pass (`probe_summary`,
`probe_report`). Every public name is still importable from here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..metrics.pricing import Price, load_pricing, price_for
from ..metrics.uncertainty import bootstrap_intervals
from ..online.cache import ResponseCache, resolve_cache
from ..online.client import DEFAULT_MODEL, RetryPolicy, _split_extra, get_client
from ..transcript.model import Session
from .cost import PADDING as PADDING  # re-exported: importable from here as before the split
from .cost import _Client, _upper_bound, _usage_usd, estimate_probes
from .job import ProbeJob, _options, _probe, probe_jobs
from .text import PROBE_KINDS

__all__ = [
    "ProbeBudgetError",
    "ProbeJob",
    "ProbeRun",
    "estimate_probes",
    "probe_jobs",
    "probe_report",
    "probe_summary",
    "run_probes",
]


class ProbeBudgetError(RuntimeError):
    """The estimated cost of a probe run is above its budget: nothing was sent."""

    def __init__(self, estimate_usd: float, budget_usd: float, jobs: int) -> None:
        super().__init__(
            f"estimated probe cost ${estimate_usd:,.4f} for {jobs} compaction(s) is above the budget "
            f"${budget_usd:,.4f} (--probe-budget-usd): nothing was sent"
        )
        self.estimate_usd = estimate_usd
        self.budget_usd = budget_usd


class _BudgetReached(Exception):
    """Raised inside a metered request that would pass the budget (caught by `run_probes`)."""


@dataclass
class ProbeRun:
    """What `run_probes` did: the probe rows, the estimate, the spend and what was left out."""

    frame: pd.DataFrame
    estimate: dict[str, Any]
    budget_usd: float
    spent_usd: float = 0.0
    requests: int = 0
    not_probed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate_usd": self.estimate["estimate_usd"],
            "estimated_requests": self.estimate["requests"],
            "cached_requests": self.estimate["cached"],
            "budget_usd": self.budget_usd,
            "spent_usd": self.spent_usd,
            "requests": self.requests,
            "events": self.estimate["jobs"],
            "events_probed": self.estimate["jobs"] - len(self.not_probed),
            "not_probed": self.not_probed,
        }


def run_probes(
    jobs: Sequence[ProbeJob],
    *,
    budget_usd: float,
    kinds: Sequence[str] = PROBE_KINDS,
    n_per_kind: int = 1,
    model: str = DEFAULT_MODEL,
    judge_model: str | None = None,
    against: str = "reference",
    client: Any = None,
    cache: ResponseCache | bool | None = True,
    retry: RetryPolicy | None = None,
    pricing: Mapping[str, Price] | None = None,
    on_estimate: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = False,
) -> ProbeRun:
    """Estimate, check the budget, then probe ``jobs`` until done or the budget is reached.

    ``on_estimate`` is called with the estimate before anything is sent (the CLI prints it).

    Raises:
        ProbeBudgetError: the estimate is above ``budget_usd`` (nothing sent).
        MissingAPIKeyError: something must be sent and there is no client and no ``ANTHROPIC_API_KEY``.
    """
    table = pricing or load_pricing()
    store = resolve_cache(cache)
    estimate = estimate_probes(
        jobs,
        kinds=kinds,
        n_per_kind=n_per_kind,
        model=model,
        judge_model=judge_model,
        against=against,
        cache=store if store is not None else False,
        pricing=table,
    )
    if on_estimate is not None:
        on_estimate(estimate)
    if estimate["estimate_usd"] > budget_usd:
        raise ProbeBudgetError(estimate["estimate_usd"], budget_usd, len(jobs))
    run = ProbeRun(pd.DataFrame(), estimate, budget_usd)
    real: list[Any] = [client]

    def send(params: dict[str, Any]) -> Any:
        price = price_for(params.get("model"), table)
        if run.spent_usd + _upper_bound(params, price) > budget_usd:
            raise _BudgetReached()
        if real[0] is None:
            real[0] = get_client()
        sdk = real[0].with_options(max_retries=0) if hasattr(real[0], "with_options") else real[0]
        response = sdk.messages.create(**_split_extra(sdk.messages.create, params))
        usage = getattr(response, "usage", None)
        run.spent_usd += _usage_usd(usage, price)
        run.requests += 1
        return response

    metered = _Client(send)
    options = _options(kinds, n_per_kind, model, judge_model, against, retry)
    frames = []
    items: Iterable[tuple[int, ProbeJob]] = enumerate(jobs)
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(list(items), desc="probes", unit="event")
    for index, job in items:
        try:
            frames.append(_probe(job, metered, store, options).assign(config_hash=job.event.get("config_hash")))
        except _BudgetReached:
            run.not_probed = [j.label for j in jobs[index:]]
            break
    frames = [f for f in frames if len(f)]
    run.frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return run


def probe_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per session × strategy × config_hash: probes, probes scored, the score sum and mean (for the
    report's bootstrap over sessions: ``probe_score`` = Σ scores / Σ scored probes)."""
    columns = ["session_id", "strategy", "config_hash", "probes", "probes_scored", "probe_score_sum", "probe_score"]
    if frame is None or frame.empty:
        return pd.DataFrame(columns=columns)
    data = frame.copy()
    data["config_hash"] = data["config_hash"].fillna("n/a")
    data["scored"] = data["score"].notna()
    out = (
        data.groupby(["session_id", "strategy", "config_hash"], sort=True)
        .agg(
            probes=("question", lambda q: int(q.notna().sum())),
            probes_scored=("scored", "sum"),
            probe_score_sum=("score", "sum"),
        )
        .reset_index()
    )
    out["probe_score"] = out["probe_score_sum"] / out["probes_scored"].where(out["probes_scored"] > 0)
    return out[columns]


def _json_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows = json.loads(frame.to_json(orient="records")) if len(frame) else []
    return rows


def probe_report(
    options: Mapping[str, Any], by_id: Mapping[str, Session], events: pd.DataFrame, notes: list[str]
) -> dict[str, Any]:
    """The judge-probe pass of a report: ``run`` (`ProbeRun.as_dict`), ``strategies`` (per strategy ×
    config_hash: probes and mean score with a 95% bootstrap interval over sessions; Claude's recorded
    compactions as the ``claude-recorded`` reference row) and ``rows`` (one per probe). ``options``:
    ``budget_usd`` and the keyword arguments of `run_probes`; notes about the run go to ``notes``.

    Raises:
        ProbeBudgetError: the estimate is above the budget (nothing sent)."""
    if not by_id:
        notes.append("probes need the sessions (pass sessions= or a manifest.json with inputs): none run")
        return {"run": None, "strategies": [], "rows": []}
    settings = dict(options)
    budget = float(settings.pop("budget_usd"))
    run = run_probes(probe_jobs(by_id, events), budget_usd=budget, **settings)
    per_session = probe_summary(run.frame)
    pooled = pd.DataFrame()
    if len(per_session):
        pooled = (
            per_session.groupby(["strategy", "config_hash"], sort=True)
            .agg(
                sessions=("session_id", "nunique"),
                probes=("probes", "sum"),
                probes_scored=("probes_scored", "sum"),
                probe_score_sum=("probe_score_sum", "sum"),
            )
            .reset_index()
        )
        pooled["probe_score"] = pooled["probe_score_sum"] / pooled["probes_scored"].where(pooled["probes_scored"] > 0)
        pooled = pooled.merge(bootstrap_intervals(per_session, ["probe_score"]), on=["strategy", "config_hash"])
    if run.not_probed:
        notes.append(
            f"probe budget ${budget:,.2f} reached after ${run.spent_usd:,.4f}: {len(run.not_probed)} of "
            f"{run.estimate['jobs']} compactions not probed (listed in probes.run.not_probed)"
        )
    return {"run": run.as_dict(), "strategies": _json_rows(pooled), "rows": _json_rows(run.frame)}
