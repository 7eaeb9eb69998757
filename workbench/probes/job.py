"""What a probe run probes: one `ProbeJob` per compaction (the session and its event row), built by
`probe_jobs` from a replay's events and, as the reference row, from every compaction Claude Code really
made (strategy ``claude-recorded``: the recorded ``isCompactSummary`` and what followed the
``compact_boundary`` as the kept context, the segment since the previous boundary as the dropped
content); and how one job is probed (`workbench.probes.generate.probe_event` with the run's options).

Separate from pricing (`workbench.probes.cost`) and from the budgeted run
(`workbench.probes.run`) because both pass the same jobs through the same call: the estimate is a
dry run of exactly what the real run will send.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..online.cache import ResponseCache
from ..online.client import RetryPolicy
from ..replay.engine import strip_recorded_compactions
from ..transcript.model import Session
from ..transcript.steps import api_calls
from .generate import probe_event

__all__ = ["ProbeJob", "probe_jobs"]


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
            "not_kept_uuids": None,
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


def _probe(job: ProbeJob, client: Any, cache: ResponseCache | None, options: Mapping[str, Any]) -> pd.DataFrame:
    return probe_event(job.session, job.event, client=client, cache=cache if cache is not None else False, **options)


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
