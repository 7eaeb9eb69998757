"""Online (model-backed) counterparts of the offline pieces: memory extraction, full-compact summary and
token counting through the Anthropic Messages API (the judge probes that score a compaction event build on
it in `workbench.probes`).

Nothing here needs ``ANTHROPIC_API_KEY`` at import time: the client is created at the first request
(`get_client`), from the key or from an explicitly passed ``anthropic.Anthropic``. Importing this package
registers the per-record estimator ``anthropic:count_tokens`` (`workbench.tokens.estimators`).

* `OnlineMemoryExtractor` (`workbench.memory.extractor.MemoryExtractor`): Claude Code's update prompt,
  Edit tool calls applied to the notes, structure validated (docs §1.1, §1.3);
* `OnlineSummarizer` (`workbench.summarize.offline.Summarizer`): the 9-section compact prompt (§5.1-5.2);
* `CountTokensEstimator` (`workbench.tokens.estimators.Estimator`): ``/v1/messages/count_tokens``;
* every response cached on disk (`ResponseCache`), retries with bounded backoff (`RetryPolicy`), the API
  key redacted from every error (`OnlineAPIError`).
"""

from __future__ import annotations

from .cache import ResponseCache, request_key
from .client import (
    API_KEY_ENV,
    DEFAULT_MODEL,
    MissingAPIKeyError,
    OnlineAPIError,
    RetryPolicy,
    get_client,
    model_max_output_tokens,
    redact,
)
from .count_tokens import ESTIMATOR_NAME, CountTokensEstimator, register
from .extractor import ExtractionReport, OnlineMemoryExtractor, build_update_prompt
from .summarizer import OnlineSummarizer, OnlineSummaryError

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_MODEL",
    "ESTIMATOR_NAME",
    "CountTokensEstimator",
    "ExtractionReport",
    "MissingAPIKeyError",
    "OnlineAPIError",
    "OnlineMemoryExtractor",
    "OnlineSummarizer",
    "OnlineSummaryError",
    "ResponseCache",
    "RetryPolicy",
    "build_update_prompt",
    "get_client",
    "model_max_output_tokens",
    "redact",
    "request_key",
]

register()
