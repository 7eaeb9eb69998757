"""Judge probes over a whole replay result, with a cost estimate first and a hard budget.

`run_probes` probes every compaction event of the given replays (`workbench.online.probes.probe_event`)
and, as the reference row, every compaction Claude Code really made (strategy ``claude-recorded``: the
recorded ``isCompactSummary`` and what followed the ``compact_boundary`` as the kept context, the segment
since the previous boundary as the dropped content). ``recorded-compact`` events of a ``recorded`` run are
the same compactions and are not probed twice.

**Estimate** (`estimate_probes`): a dry run of the same pipeline against the response cache, read-only:
a request already cached costs nothing; a miss is priced as its input (claude-rough of the request text
× 4/3, the padding that brings chars/4 near Claude's tokenizer on this corpus) plus ``max_tokens`` of
output, at the model's input/output prices (`workbench.metrics.pricing`). The placeholder replies of the
dry run never enter the cache. Because outputs are priced at their maximum, the estimate is an upper
bound; it is what the budget check compares.

**Budget.** `run_probes` refuses to start when the estimate exceeds ``budget_usd``
(`ProbeBudgetError`). While running it meters every real request's recorded ``usage`` (input, cache
write, cache read, output at their prices) and, before each request, refuses to send it when the spend
so far plus that request's upper bound would pass the budget: the run stops there and reports the events
not probed (``not_probed``). Cache hits cost nothing and are always served.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..metrics.pricing import Price, load_pricing, price_for
from ..metrics.uncertainty import bootstrap_intervals
from ..replay.engine import strip_recorded_compactions
from ..transcript.model import Session
from ..transcript.steps import api_calls
from .cache import ResponseCache, resolve_cache
from .client import DEFAULT_MODEL, RetryPolicy, _split_extra, get_client
from .probe_text import GENERATE_SYSTEM, JUDGE_SYSTEM, PROBE_KINDS
from .probes import probe_event

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

PADDING = 4 / 3


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


@dataclass(frozen=True)
class ProbeJob:
    """One compaction to probe: the session and the event row (as `probe_event` takes it)."""

    session: Session
    event: Mapping[str, Any]

    @property
    def label(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "strategy": self.event.get("strategy"),
            "config_hash": self.event.get("config_hash"),
            "step": int(self.event.get("step", -1)),
            "event_kind": self.event.get("kind"),
        }


def _recorded_jobs(session: Session) -> list[ProbeJob]:
    """Claude Code's own compactions of ``session`` as events over its stripped records."""
    if session.is_subagent:
        return []
    records = session.conversation()
    boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
    calls = api_calls(strip_recorded_compactions(records)[0])
    original_calls = api_calls(records)
    jobs = []
    previous = 0
    for cut in boundaries:
        after = next((c for c in original_calls if c.first > cut), None)
        point = after.first if after else len(records)
        between = records[cut + 1 : point]
        summary = next((r.text for r in between if r.is_compact_summary), None)
        event = {
            "session_id": session.id,
            "strategy": "claude-recorded",
            "config_hash": "compact-summary",
            "kind": "recorded-compact",
            "step": after.step if after else len(calls),
            "dropped_uuids": [r.uuid for r in records[previous:cut] if r.uuid and not r.is_compact_summary],
            "kept_uuids": [r.uuid for r in between if r.uuid and not r.is_compact_summary],
            "summary": summary,
        }
        jobs.append(ProbeJob(session, event))
        previous = cut
    return jobs


def probe_jobs(sessions: Mapping[str, Session], events: pd.DataFrame | None) -> list[ProbeJob]:
    """Every event of ``events`` whose session is known (``recorded-compact`` rows excepted), then the
    recorded compactions of those sessions (the ``claude-recorded`` reference rows)."""
    jobs: list[ProbeJob] = []
    if events is not None and len(events):
        ordered = events.sort_values(["session_id", "strategy", "config_hash", "step"], kind="stable")
        for event in ordered.to_dict("records"):
            if event.get("kind") == "recorded-compact" or event["session_id"] not in sessions:
                continue
            jobs.append(ProbeJob(sessions[event["session_id"]], event))
    wanted = sorted({j.session.id for j in jobs} | set(events["session_id"]) if events is not None else set())
    for sid in wanted:
        if sid in sessions:
            jobs.extend(_recorded_jobs(sessions[sid]))
    return jobs


class _ReadOnlyCache(ResponseCache):
    """Serves hits from ``inner``; writes nothing (the dry run's placeholder replies must not be cached)."""

    def __init__(self, inner: ResponseCache | None) -> None:
        super().__init__(inner.root if inner is not None else "/nonexistent-workbench-cache")
        self._inner = inner
        self.hits = 0

    def get(self, key: str) -> dict[str, Any] | None:
        found = self._inner.get(key) if self._inner is not None else None
        self.hits += found is not None
        return found

    def put(self, key: str, response: Mapping[str, Any], *, endpoint: str, model: str) -> Any:
        return None


def _request_text(params: Mapping[str, Any]) -> str:
    return json.dumps({"system": params.get("system"), "messages": params.get("messages")}, ensure_ascii=False)


def _upper_bound(params: Mapping[str, Any], price: Price) -> float:
    inputs = len(_request_text(params)) / 4 * PADDING
    return (inputs * price.input + int(params.get("max_tokens") or 0) * price.output) / 1e6


class _Messages:
    def __init__(self, owner: _Client) -> None:
        self._owner = owner

    def create(self, **params: Any) -> Any:
        return self._owner.send(params)


class _Client:
    """Stands in for ``anthropic.Anthropic`` inside `call_api`: prices each request before it goes out."""

    def __init__(self, send: Callable[[dict[str, Any]], Any]) -> None:
        self.send = send
        self.messages = _Messages(self)

    def with_options(self, **_: Any) -> _Client:
        return self


class _Placeholder:
    """A response object shaped like the SDK's (``model_dump``) for the dry run."""

    def __init__(self, params: Mapping[str, Any], kinds: Sequence[str], n_per_kind: int) -> None:
        system = params.get("system")
        if system == GENERATE_SYSTEM:
            probes = [
                {"kind": k, "question": f"placeholder {k} {i}?", "reference": "placeholder"}
                for k in kinds
                for i in range(n_per_kind)
            ]
            text = json.dumps({"probes": probes})
        elif system == JUDGE_SYSTEM:
            text = '{"score": 0, "reason": "placeholder"}'
        else:
            text = "placeholder"
        self._body = {
            "id": "msg_estimate",
            "type": "message",
            "role": "assistant",
            "model": params.get("model"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self._body


def _probe(job: ProbeJob, client: Any, cache: ResponseCache | None, options: Mapping[str, Any]) -> pd.DataFrame:
    return probe_event(job.session, job.event, client=client, cache=cache if cache is not None else False, **options)


def estimate_probes(
    jobs: Sequence[ProbeJob],
    *,
    kinds: Sequence[str] = PROBE_KINDS,
    n_per_kind: int = 1,
    model: str = DEFAULT_MODEL,
    judge_model: str | None = None,
    against: str = "reference",
    cache: ResponseCache | bool | None = True,
    pricing: Mapping[str, Price] | None = None,
) -> dict[str, Any]:
    """Upper-bound cost of probing ``jobs`` (see the module docstring): ``estimate_usd``, ``requests``
    (misses that would be sent), ``cached`` (requests the cache already answers), ``jobs``."""
    table = pricing or load_pricing()
    store = resolve_cache(cache)
    tally = {"usd": 0.0, "requests": 0}

    def send(params: dict[str, Any]) -> Any:
        tally["usd"] += _upper_bound(params, price_for(params.get("model"), table))
        tally["requests"] += 1
        return _Placeholder(params, kinds, n_per_kind)

    client = _Client(send)
    reader = _ReadOnlyCache(store)
    options = _options(kinds, n_per_kind, model, judge_model, against, RetryPolicy(max_attempts=1))
    for job in jobs:
        _probe(job, client, reader, options)
    return {"estimate_usd": tally["usd"], "requests": tally["requests"], "cached": reader.hits, "jobs": len(jobs)}


def _options(
    kinds: Sequence[str], n_per_kind: int, model: str, judge_model: str | None, against: str, retry: RetryPolicy | None
) -> dict[str, Any]:
    return {
        "kinds": tuple(kinds),
        "n_per_kind": n_per_kind,
        "model": model,
        "judge_model": judge_model,
        "against": against,
        "retry": retry,
    }


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


def _usage_usd(usage: Any, price: Price) -> float:
    def get(name: str) -> int:
        value = getattr(usage, name, None) if usage is not None else None
        if value is None and isinstance(usage, Mapping):
            value = usage.get(name)
        return int(value or 0)

    return (
        get("input_tokens") * price.input
        + get("cache_creation_input_tokens") * price.cache_write_5m
        + get("cache_read_input_tokens") * price.cache_read
        + get("output_tokens") * price.output
    ) / 1e6


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
