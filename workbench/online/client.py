"""The Anthropic client, the retry loop and the one place requests go out (online pieces only).

Nothing here talks to the network at import time and nothing needs ``ANTHROPIC_API_KEY`` until a
request is actually sent:

* `get_client` returns the client you pass, or builds an ``anthropic.Anthropic`` from
  ``ANTHROPIC_API_KEY``; with neither it raises `MissingAPIKeyError` (naming the variable).
  Clients built here have the SDK's own retries switched off (``max_retries=0``): `call_api` retries.
* `RetryPolicy` / `call_api`: bounded attempts with exponential backoff (plus jitter, honouring a
  ``retry-after`` header up to ``max_delay``) on 429, 408/409, 5xx incl. 529 ``overloaded_error``,
  and connection errors/timeouts. Other statuses (400, 401, 403, 404, 413, …) fail at once. Every
  attempt has a connect timeout (10 s), a read timeout between bytes (60 s) and a total deadline
  (180 s: a server that drips one byte every few seconds never trips a read timeout); while it waits,
  a warning every 30 s says for how long. A server that never answers costs at most
  ``max_attempts × total_timeout`` plus the backoff, and says so, instead of the SDK's 600 s per attempt.
* `OnlineAPIError` is what a failed request raises. It carries status, error type, request id and a
  message **redacted** of the API key (the key of the client, ``ANTHROPIC_API_KEY``/
  ``ANTHROPIC_AUTH_TOKEN`` and anything shaped like ``sk-ant-…``), and it is raised outside the SDK's
  exception context, so neither ``__cause__`` nor ``__context__`` drags the SDK request (whose
  headers hold the key) along. A successful response is redacted the same way before anything keeps
  it (a proxy that echoes the key in a reply would otherwise write it into the cache and the results).
* `OnlineCaller` is the base of the three online pieces: lazy client, on-disk cache
  (`workbench.online.cache.ResponseCache`), retries, and call/cache-hit counters. Its ``repr`` shows
  the model and parameters, never the client.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .cache import ResponseCache, resolve_cache

__all__ = [
    "API_KEY_ENV",
    "COUNT_TOKENS",
    "DEFAULT_MODEL",
    "MESSAGES",
    "CallStats",
    "MissingAPIKeyError",
    "OnlineAPIError",
    "OnlineCaller",
    "RetryPolicy",
    "call_api",
    "get_client",
    "model_max_output_tokens",
    "redact",
]

log = logging.getLogger(__name__)

#: The environment variable `get_client` reads.
API_KEY_ENV = "ANTHROPIC_API_KEY"
#: Default model of the online pieces (override per instance).
DEFAULT_MODEL = "claude-sonnet-4-6"

#: Endpoints `call_api` knows (the cache key includes the endpoint name).
MESSAGES = "messages"
COUNT_TOKENS = "messages/count_tokens"


class MissingAPIKeyError(RuntimeError):
    """Neither a client was passed nor ``ANTHROPIC_API_KEY`` is set."""


def get_client(client: Any = None) -> Any:
    """``client`` when given, else an ``anthropic.Anthropic`` built from ``ANTHROPIC_API_KEY``.

    The SDK's retries are disabled on the client built here (`call_api` does the retrying);
    ``ANTHROPIC_BASE_URL`` is honoured by the SDK as usual.

    Raises:
        MissingAPIKeyError: no client and the variable is unset or empty.
    """
    if client is not None:
        return client
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise MissingAPIKeyError(
            f"{API_KEY_ENV} is not set: set {API_KEY_ENV} or pass client=anthropic.Anthropic(...) "
            "to use the online (model-backed) extractor, summarizer or token counter"
        )
    import anthropic

    return anthropic.Anthropic(api_key=key, max_retries=0)


_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{4,}")
REDACTED = "[REDACTED]"


def _secrets(client: Any = None) -> list[str]:
    found = [os.environ.get(API_KEY_ENV, ""), os.environ.get("ANTHROPIC_AUTH_TOKEN", "")]
    for attr in ("api_key", "auth_token"):
        value = getattr(client, attr, None) if client is not None else None
        if isinstance(value, str):
            found.append(value)
    return sorted({s for s in found if len(s) >= 8}, key=len, reverse=True)


def redact(text: str, client: Any = None) -> str:
    """``text`` with the API key(s) and anything shaped like ``sk-ant-…`` replaced by ``[REDACTED]``."""
    for secret in _secrets(client):
        text = text.replace(secret, REDACTED)
    return _KEY_SHAPE.sub(REDACTED, text)


class OnlineAPIError(RuntimeError):
    """A request failed (after retries when retryable). Never holds the key or the SDK request.

    Attributes: ``endpoint``, ``status_code`` (None for connection errors), ``error_type`` (the API's
    ``error.type``, e.g. ``overloaded_error``), ``request_id``, ``attempts``, ``message`` (redacted).
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        status_code: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.endpoint = endpoint
        self.status_code = status_code
        self.error_type = error_type
        self.request_id = request_id
        self.attempts = attempts

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the keyword-only attributes (the default passes only ``args``, and unpickling
        then fails: a sweep's worker process could not report the error)."""
        return (_rebuild_online_api_error, (self.message, self.__dict__.copy()))

    def __repr__(self) -> str:
        return (
            f"OnlineAPIError(endpoint={self.endpoint!r}, status_code={self.status_code!r}, "
            f"error_type={self.error_type!r}, attempts={self.attempts}, message={self.message!r})"
        )

    @property
    def prompt_too_long(self) -> bool:
        return self.status_code == 400 and "prompt is too long" in self.message.lower()


def _rebuild_online_api_error(message: str, state: dict[str, Any]) -> OnlineAPIError:
    error = OnlineAPIError.__new__(OnlineAPIError)
    RuntimeError.__init__(error, message)
    error.__dict__.update(state)
    return error


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff: delay ``initial_delay * multiplier**n`` (capped at
    ``max_delay``, minus up to ``jitter`` of it), or the server's ``retry-after`` when given (capped)."""

    max_attempts: int = 5
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.25
    retry_statuses: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
    #: Seconds to connect, between two bytes of the response, and for a whole attempt.
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    total_timeout: float = 180.0
    #: Seconds between two "still waiting" warnings of one attempt.
    progress_every: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if min(self.connect_timeout, self.read_timeout, self.total_timeout, self.progress_every) <= 0:
            raise ValueError("timeouts must be positive")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        base = min(self.initial_delay * self.multiplier**retry, self.max_delay)
        return base * (1 - self.jitter * random.random())

    def retryable(self, status: int | None) -> bool:
        return status is None or status in self.retry_statuses or status >= 500


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) / scale
            except ValueError:
                continue
    return None


@dataclass
class _Failure:
    message: str
    status: int | None
    error_type: str | None
    request_id: str | None
    retry_after: float | None


def _describe(exc: Exception, client: Any) -> _Failure:
    """Everything we keep of an SDK exception: plain strings and numbers, redacted."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, Mapping) else {}
        error_value = body.get("error")
        error: Mapping[str, Any] = error_value if isinstance(error_value, Mapping) else {}
        api_message = error.get("message") if isinstance(error.get("message"), str) else None
        headers = {k.lower(): v for k, v in exc.response.headers.items()}
        status = exc.status_code
        etype = error.get("type") if isinstance(error.get("type"), str) else None
        text = f"{status} {etype or 'error'}: {api_message or exc.message}"
        return _Failure(redact(text, client), status, etype, headers.get("request-id"), _retry_after(headers))
    if isinstance(exc, anthropic.APIConnectionError):
        return _Failure(redact(f"connection error: {type(exc).__name__}", client), None, "connection_error", None, None)
    return _Failure(redact(f"{type(exc).__name__}: {exc}", client), None, type(exc).__name__, None, None)


def _split_extra(send: Callable[..., Any], params: Mapping[str, Any]) -> Mapping[str, Any]:
    """Parameters the installed SDK's method does not name (e.g. ``temperature`` in SDK 2.x) go to the
    API through ``extra_body`` instead of failing with a TypeError; the request body is the same."""
    import inspect

    try:
        known = inspect.signature(send).parameters
    except (TypeError, ValueError):
        return params
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in known.values()):
        return params
    extra = {k: v for k, v in params.items() if k not in known}
    if not extra:
        return params
    kept = {k: v for k, v in params.items() if k in known}
    kept["extra_body"] = {**(params.get("extra_body") or {}), **extra}
    return kept


def call_api(
    client: Any,
    endpoint: str,
    params: Mapping[str, Any],
    policy: RetryPolicy | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Send one request (``messages`` or ``messages/count_tokens``) with retries; the response as JSON.

    Raises:
        OnlineAPIError: a non-retryable error, or the last retryable one after ``max_attempts``.
    """
    import anthropic

    policy = policy or RetryPolicy()
    timeout = anthropic.Timeout(policy.read_timeout, connect=policy.connect_timeout)  # the SDK's own httpx
    sdk = client.with_options(max_retries=0, timeout=timeout) if hasattr(client, "with_options") else client
    if endpoint == MESSAGES:
        send = sdk.messages.create
    elif endpoint == COUNT_TOKENS:
        send = sdk.messages.count_tokens
    else:
        raise ValueError(f"unknown endpoint {endpoint!r}")
    params = _split_extra(send, params)
    failure: _Failure | None = None
    for attempt in range(1, policy.max_attempts + 1):
        try:
            response = _within(send, params, policy, endpoint)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            failure = _describe(exc, client)
        except _Deadline:
            failure = _Failure(f"no complete response within {policy.total_timeout:g} s", None, "timeout", None, None)
        else:
            body: dict[str, Any] = response.model_dump(mode="json", exclude_none=True)
            return {k: _redacted(v, client) for k, v in body.items()}
        retry = policy.retryable(failure.status) and attempt < policy.max_attempts
        if not retry:
            break
        delay = policy.delay(attempt - 1, failure.retry_after)
        log.warning(
            "anthropic %s %s (attempt %d/%d), retrying in %.2fs",
            endpoint,
            failure.status if failure.status is not None else failure.error_type,
            attempt,
            policy.max_attempts,
            delay,
        )
        sleep(delay)
    assert failure is not None
    # Raised here, outside the ``except`` block: no __context__ pointing at the SDK exception.
    raise OnlineAPIError(
        failure.message,
        endpoint=endpoint,
        status_code=failure.status,
        error_type=failure.error_type,
        request_id=failure.request_id,
        attempts=attempt,
    )


class _Deadline(Exception):
    """An attempt ran past `RetryPolicy.total_timeout`."""


def _within(send: Callable[..., Any], params: Mapping[str, Any], policy: RetryPolicy, endpoint: str) -> Any:
    """``send(**params)`` with the attempt's total deadline; a warning every ``progress_every`` seconds
    while it waits. The request runs in a daemon thread: one past its deadline is abandoned (its socket
    closes with the read timeout or the process), and `_Deadline` is raised here."""
    import threading

    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = send(**params)
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=f"anthropic {endpoint}", daemon=True)
    started = time.monotonic()
    worker.start()
    while True:
        left = policy.total_timeout - (time.monotonic() - started)
        if left <= 0:
            raise _Deadline
        worker.join(min(left, policy.progress_every))
        if not worker.is_alive():
            break
        waited = time.monotonic() - started
        if waited < policy.total_timeout:
            log.warning(
                "anthropic %s: still waiting for the response (%.0f s of %g s)", endpoint, waited, policy.total_timeout
            )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _redacted(value: Any, client: Any) -> Any:
    """``value`` (JSON) with every string `redact` ed: nothing the API echoed back keeps the key."""
    if isinstance(value, str):
        return redact(value, client)
    if isinstance(value, dict):
        return {k: _redacted(v, client) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, client) for v in value]
    return value


_MAX_OUTPUT: tuple[tuple[str, int], ...] = (
    ("claude-3-haiku", 4096),
    ("claude-3-opus", 4096),
    ("claude-3-sonnet", 4096),
    ("claude-3-5-", 8192),
    ("claude-3-7-sonnet", 64000),
    ("claude-opus-4-0", 32000),
    ("claude-opus-4-1", 32000),
    ("claude-opus-4-2025", 32000),
    ("claude-opus-4@", 32000),
    ("claude-sonnet-4", 64000),
    ("claude-haiku-4", 64000),
    ("claude-opus-4-5", 64000),
)


def model_max_output_tokens(model: str, default: int = 32000) -> int:
    """Max output tokens of ``model`` (public model table by prefix; ``default`` when unknown)."""
    name = model.lower()
    for prefix, limit in _MAX_OUTPUT:
        if prefix in name:
            return limit
    return default


@dataclass
class CallStats:
    requests: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class OnlineCaller:
    """Shared plumbing: lazy client, cache, retries, counters. ``model`` and parameters are public."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        client: Any = None,
        cache: ResponseCache | bool | None = True,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()
        self.cache = resolve_cache(cache)
        self.stats = CallStats()
        self._client = client
        self._sleep: Callable[[float], None] = time.sleep

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = get_client()
        return self._client

    def _request(self, endpoint: str, params: dict[str, Any]) -> dict[str, Any]:
        """The response for ``params`` (``model`` included), from the cache or the API."""
        key = self.cache.key(endpoint, params) if self.cache is not None else None
        if self.cache is not None and key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                log.debug("anthropic %s cache hit %s", endpoint, key[:12])
                return hit
        response = call_api(self.client, endpoint, params, self.retry, sleep=self._sleep)
        self.stats.requests += 1
        usage = response.get("usage") or {}
        self.stats.input_tokens += int(usage.get("input_tokens") or 0)
        self.stats.output_tokens += int(usage.get("output_tokens") or 0)
        if self.cache is not None and key is not None:
            self.cache.put(key, response, endpoint=endpoint, model=str(params.get("model")))
        return response

    def _repr_fields(self) -> dict[str, Any]:
        return {"model": self.model}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._repr_fields().items())
        cache = "off" if self.cache is None else "on"
        return f"{type(self).__name__}({fields}, cache={cache})"
