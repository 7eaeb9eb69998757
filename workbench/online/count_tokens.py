"""Per-record token counts from the API's ``/v1/messages/count_tokens`` (estimator ``anthropic:count_tokens``).

``count_tokens`` measures whole requests, not messages, and a request must be valid on its own: it has
to start with a user turn, a ``tool_result`` needs its ``tool_use`` in the previous assistant turn and a
``tool_use`` needs its result in the next user turn. A record's **own** tokens are therefore measured
as a difference against a fixed skeleton (all requests share one fixed ``Read``-like tool definition so
that tool-use framing, if any, cancels out):

* baseline ``B = [user ".", assistant ".", user "."]``, counted once per model (and cached);
* a **user** record ``R``: ``[user ".", assistant A, user R]`` where ``A`` is ``"."`` or, when ``R``
  carries tool_results, one stub ``tool_use`` (name ``t``, input ``{}``) per result id;
* an **assistant** record ``R``: ``[user ".", assistant R, user U]`` where ``U`` is ``"."`` or, when ``R``
  has tool_use blocks, one stub ``tool_result`` (no content) per id;
* ``count(R) = max(0, count_tokens(request) − count_tokens(B))``.

So the count is what ``R`` adds over a one-character turn in the same position, including the small
pairing stubs its tool blocks require (they exist whenever ``R`` is in a real conversation too).
Records that are never sent (`workbench.request.normalize.is_sent` false: progress, metadata, synthetic
errors, most system lines) count 0 without a request; so does a record with no sendable content.
Thinking blocks are sent as recorded; the API decides how much a non-final turn's thinking costs.
Content is converted like `workbench.request.normalize` converts it (tool_use reduced to
``type/id/name/input``, ``tool_reference`` blocks dropped, string content as one text block).

Every request is cached on disk, so a sweep over a corpus is paid once. The estimator is registered as
``anthropic:count_tokens`` by `register` (called when ``workbench.online`` is imported); creating it needs no key,
the client is resolved at the first count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..request.normalize import is_sent
from ..transcript.model import Record
from .cache import ResponseCache
from .client import COUNT_TOKENS, DEFAULT_MODEL, OnlineCaller, RetryPolicy

__all__ = ["ESTIMATOR_NAME", "CountTokensEstimator", "record_request", "register"]

ESTIMATOR_NAME = "anthropic:count_tokens"

_DOT = [{"type": "text", "text": "."}]
_STUB_TOOL: dict[str, Any] = {
    "name": "t",
    "description": "stub",
    "input_schema": {"type": "object", "properties": {}},
}


def _blocks(record: Record) -> list[dict[str, Any]]:
    if record.kind == "system":
        text = record.blocks[0].text if record.blocks else ""
        return [{"type": "text", "text": text}] if text.strip() else []
    out: list[dict[str, Any]] = []
    for block in record.blocks:
        raw = dict(block.raw)
        kind = raw.get("type")
        if kind == "tool_reference":
            continue
        if kind == "tool_use":
            raw = {"type": "tool_use", "id": raw.get("id"), "name": raw.get("name"), "input": raw.get("input") or {}}
        elif kind == "tool_result" and isinstance(raw.get("content"), list):
            raw["content"] = [
                p for p in raw["content"] if not (isinstance(p, Mapping) and p.get("type") == "tool_reference")
            ]
        elif kind == "text" and not str(raw.get("text") or "").strip():
            continue
        out.append(raw)
    return out


def baseline_messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": _DOT},
        {"role": "assistant", "content": _DOT},
        {"role": "user", "content": _DOT},
    ]


def record_request(record: Record) -> list[dict[str, Any]] | None:
    """The messages measuring ``record`` (see the module docstring), or None when nothing is sent."""
    if not is_sent(record):
        return None
    content = _blocks(record)
    if not content:
        return None
    if record.kind == "assistant":
        ids = [b["id"] for b in content if b.get("type") == "tool_use"]
        after = [{"type": "tool_result", "tool_use_id": i} for i in ids] or _DOT
        return [
            {"role": "user", "content": _DOT},
            {"role": "assistant", "content": content},
            {"role": "user", "content": after},
        ]
    ids = [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
    before = [{"type": "tool_use", "id": i, "name": "t", "input": {}} for i in ids] or _DOT
    content = [b for b in content if b.get("type") == "tool_result"] + [
        b for b in content if b.get("type") != "tool_result"
    ]
    return [
        {"role": "user", "content": _DOT},
        {"role": "assistant", "content": before},
        {"role": "user", "content": content},
    ]


class CountTokensEstimator(OnlineCaller):
    """`workbench.tokens.estimators.Estimator` backed by ``messages.count_tokens`` (see the module docstring)."""

    name = ESTIMATOR_NAME

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        client: Any = None,
        cache: ResponseCache | bool | None = True,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(model, client=client, cache=cache, retry=retry)
        self._baseline: int | None = None

    def count_request(self, messages: list[dict[str, Any]]) -> int:
        """``input_tokens`` of a request made of ``messages`` (with the stub tool)."""
        response = self._request(COUNT_TOKENS, {"model": self.model, "messages": messages, "tools": [_STUB_TOOL]})
        return int(response["input_tokens"])

    @property
    def baseline(self) -> int:
        if self._baseline is None:
            self._baseline = self.count_request(baseline_messages())
        return self._baseline

    def count(self, record: Record) -> int:
        messages = record_request(record)
        if messages is None:
            return 0
        return max(0, self.count_request(messages) - self.baseline)

    def count_many(self, records: Iterable[Record]) -> list[int]:
        return [self.count(record) for record in records]


def register() -> None:
    """Register ``anthropic:count_tokens`` (default model) in the estimator registry, once; no key needed."""
    from ..tokens.estimators import estimator_names, register_estimator

    if ESTIMATOR_NAME not in estimator_names():
        register_estimator(ESTIMATOR_NAME, CountTokensEstimator)
