"""What probe requests cost: the dry-run estimate of a probe run (`estimate_probes`), the upper bound
of one request before it is sent and the price of a response's recorded ``usage``, and the stand-in
client that prices every request on its way out (the budgeted run meters through it too).

**Estimate** (`estimate_probes`): a dry run of the same pipeline against the response cache, read-only:
a request already cached costs nothing; a miss is priced as its input (claude-rough of the request text
× 4/3, the padding that brings chars/4 near Claude's tokenizer on this corpus) plus ``max_tokens`` of
output, at the model's input/output prices (`workbench.metrics.pricing`). The placeholder replies of the
dry run never enter the cache. Because outputs are priced at their maximum, the estimate is an upper
bound; it is what the budget check of `workbench.probes.run.run_probes` compares.

Separate from the run because pricing has to work with nothing sent: the estimate runs offline, with no
key and no client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..metrics.pricing import Price, load_pricing, price_for
from ..online.cache import ResponseCache, resolve_cache
from ..online.client import DEFAULT_MODEL, RetryPolicy
from .job import ProbeJob, _options, _probe
from .text import GENERATE_SYSTEM, JUDGE_SYSTEM, PROBE_KINDS

__all__ = ["PADDING", "estimate_probes"]

PADDING = 4 / 3


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
