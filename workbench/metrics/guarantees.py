"""The replay's guarantees, measured on one session's rows: what a strategy adds over ``none``, and loops.

Two properties every strategy not declared unsafe must have on every session (`tests/replay/
test_every_session.py` checks them over the whole corpus and generated shapes):

* **No added rejection.** `added_violations`: the calls where the strategy's request breaks an API rule
  while the ``none`` replay's request at the same call does not. A recording can break a rule by itself
  (a model-side-only format, a tool batch the recording lost a result of); that is the recording's, not
  the strategy's, and ``none`` carries it too.
* **No compaction loop.** `longest_ineffective_run`: the longest run of summarising compactions (events with
  a summary) at consecutive calls, each leaving the context at or above ``ratio`` of its size. A summarising
  compaction that works brings the context under its trigger, so it does not fire again at the next call;
  a run means the strategy pays for a summary at every call and nothing shrinks (`workbench.strategies.
  refill` stops it after 3).

Rows are the replay's step and event dicts (`workbench.replay.ReplayResult`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["INEFFECTIVE_RATIO", "added_violations", "longest_ineffective_run"]

#: A summarising compaction that leaves at least this share of the context's size did not help.
INEFFECTIVE_RATIO = 0.9


def added_violations(steps: Iterable[Mapping[str, Any]], baseline: Iterable[Mapping[str, Any]]) -> list[int]:
    """The steps (call numbers) where ``steps`` has a violation and ``baseline`` (the ``none`` replay of the
    same session) has a request at that call without one."""
    clean = {row["step"] for row in baseline if not row["violations"]}
    return [row["step"] for row in steps if row["violations"] and row["step"] in clean]


def longest_ineffective_run(events: Iterable[Mapping[str, Any]], ratio: float = INEFFECTIVE_RATIO) -> int:
    """The longest run of ineffective summarising compactions at consecutive calls (module docstring)."""
    best = run = 0
    previous: int | None = None
    for event in events:
        if event.get("summary") is None or event["kind"] == "recorded-compact":
            continue
        before, after = event["tokens_before"], event["tokens_after"]
        ineffective = before > 0 and after >= ratio * before
        consecutive = previous is not None and event["step"] == previous + 1
        run = (run + 1 if consecutive else 1) if ineffective else 0
        previous = event["step"]
        best = max(best, run)
    return best
