"""Online (model-backed) counterparts of the offline pieces: memory extraction, full-compact summary and
token counting through the Anthropic Messages API, and judge probes that score a compaction event.

Nothing here needs ``ANTHROPIC_API_KEY`` at import time: the client is created at the first request
(`get_client`), from the key or from an explicitly passed ``anthropic.Anthropic``. Importing this package
registers the per-record estimator ``anthropic:count_tokens`` (`workbench.tokens.estimators`).

* `OnlineMemoryExtractor` (`workbench.memory.extractor.MemoryExtractor`): Claude Code's update prompt,
  Edit tool calls applied to the notes, structure validated (docs §1.1, §1.3);
* `OnlineSummarizer` (`workbench.summarize.offline.Summarizer`): the 9-section compact prompt (§5.1-5.2);
* `probe_event` / `generate_probes` / `answer_probes` / `grade` (`workbench.online.probes`): recall,
  artifact, continuation and decision probes from a compaction's dropped records, answered from its
  compacted context and scored 0–1 by a judge (docs/peers.md §2.4, Factory's probe evaluation);
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
from .probes import (
    PROBE_KINDS,
    Answer,
    Grade,
    Probe,
    ProbeSet,
    answer_probes,
    generate_probes,
    grade,
    parse_json_reply,
    probe_event,
)
from .summarizer import OnlineSummarizer, OnlineSummaryError

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_MODEL",
    "ESTIMATOR_NAME",
    "PROBE_KINDS",
    "Answer",
    "CountTokensEstimator",
    "ExtractionReport",
    "Grade",
    "MissingAPIKeyError",
    "OnlineAPIError",
    "OnlineMemoryExtractor",
    "OnlineSummarizer",
    "OnlineSummaryError",
    "Probe",
    "ProbeSet",
    "ResponseCache",
    "RetryPolicy",
    "answer_probes",
    "build_update_prompt",
    "generate_probes",
    "get_client",
    "grade",
    "model_max_output_tokens",
    "parse_json_reply",
    "probe_event",
    "redact",
    "request_key",
]

register()
