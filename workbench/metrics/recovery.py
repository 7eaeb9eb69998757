"""Measured recovery: what the agent re-acquired after each *recorded* compaction (the ground truth).

After a real compaction the agent re-reads files it had read, re-runs commands, asks again. This module
counts that in the recorded future, one row per ``compact_boundary`` on a session's main chain
(`Session.conversation`; sub-agent transcripts, including the ``agent-acompact-*`` compaction agents,
have none). Calls are classified by `workbench.metrics.acquisitions` (Claude Code ``Read``/``Bash``/
``Grep``/``Glob``/``WebFetch``/``WebSearch``/``Task``/``AskUserQuestion``, and their equivalents in other
formats), which also defines how each call's key is normalised.

Segments: the segment *before* boundary *j* runs from the previous boundary (or the session start) to
boundary *j*; the segment *after* runs from boundary *j* to the next boundary (or the session end).

Columns (exact definitions, so results are comparable):

* ``file``, ``line`` (1-based source line of the ``compact_boundary``), ``session_id``, ``trigger``
  (``compactMetadata.trigger``: ``auto``/``manual``), ``pre_tokens`` (``compactMetadata.preTokens``),
  ``version`` (the session's Claude Code version), ``calls_after`` (API calls in the segment after).
* ``rereads``: ``Read`` calls in the segment after whose ``input.file_path`` equals the ``file_path`` of
  a ``Read`` in the segment before. ``reread_files``: how many distinct files that is.
* ``reread_tokens``: the tokens of those re-reads' tool results (the run's estimator, default
  ``claude-rough``); ``reread_calls`` = ``rereads`` (each re-read is one tool call).
* ``rerun_commands``: ``Bash`` calls in the segment after whose ``input.command`` equals exactly that of
  a ``Bash`` call in the segment before; ``rerun_tokens``: their results' tokens.
* ``repeated_searches``: ``Grep``/``Glob`` calls in the segment after with the same key (tool, pattern
  and scope) as one in the segment before; ``repeated_search_tokens``: their results' tokens.
* ``repeated_fetches``: ``WebFetch`` (same normalised URL) and ``WebSearch`` (same query) calls in the
  segment after repeating one in the segment before; ``repeated_fetch_tokens``: their results' tokens.
* ``repeated_tasks``: sub-agent (``Task``/``Agent``) calls in the segment after with the same sub-agent
  type and prompt as one in the segment before; ``repeated_task_tokens``: their results' tokens (the
  sub-agent's report that re-enters the context, not the sub-agent's own work).
* ``recovery_tokens`` = ``reread_tokens + rerun_tokens + repeated_search_tokens +
  repeated_fetch_tokens + repeated_task_tokens``; ``recovery_calls`` = ``rereads + rerun_commands +
  repeated_searches + repeated_fetches + repeated_tasks``.

Refined measures beside them:

* ``rereads_unedited`` / ``rereads_unedited_tokens``: re-reads of a file that no edit call (``Edit``,
  ``Write``, ``MultiEdit``, ``NotebookEdit``) touched between its last ``Read`` in the segment before and
  the re-read: the agent re-acquired content it had already seen unchanged (an edited file may be
  re-read to check the edit, which is not recovery).
* ``first_rereads_tokens``: the tokens of the *first* re-read of each file only (later re-reads of the
  same file re-acquire what the first one already brought back). ``first_reacquisitions_tokens``: the
  same over every re-acquired key (files, commands, searches, fetches, sub-agent prompts): what the
  counterfactual estimate of `workbench.metrics.expected_recovery` counts.
* ``repeated_questions``: ``AskUserQuestion`` calls in the segment after whose questions (text,
  whitespace-collapsed) equal those of an ``AskUserQuestion`` in the segment before that the user
  answered (a non-error tool result).
* ``user_prompts_after``, ``instructions_repeated``: the prompts the user typed in the segment after, and
  how many of the instructions they gave before the boundary those prompts restate
  (`workbench.metrics.instructions`).
* ``reread_paths``: the re-read files, in order of first re-read (JSON list).

Worked example (`tests/metrics/test_recovery.py`): Read a.py, Read b.py, Bash ``pytest``, boundary,
Read a.py (100 chars → 25 tokens), Edit b.py, Read b.py, Read a.py, Bash ``pytest``: ``rereads`` 3
(a.py twice, b.py once), ``reread_files`` 2, ``rereads_unedited`` 2 (b.py was edited first),
``rerun_commands`` 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ..tokens.cache import cached_estimator
from ..transcript.files import printable_path
from ..transcript.model import Record, Session
from ..transcript.steps import api_calls
from .acquisitions import REACQUIRED_KINDS, Acquisition, acquisitions, result_record
from .instructions import REPEATED_COLUMNS, repeated_instructions

__all__ = ["RECOVERY_COLUMNS", "recovery", "recovery_rows", "segment_recovery"]

#: The columns of `recovery`, in order.
RECOVERY_COLUMNS = (
    "file",
    "line",
    "session_id",
    "trigger",
    "pre_tokens",
    "version",
    "calls_after",
    "rereads",
    "reread_files",
    "reread_calls",
    "reread_tokens",
    "rerun_commands",
    "rerun_tokens",
    "recovery_calls",
    "recovery_tokens",
    "rereads_unedited",
    "rereads_unedited_tokens",
    "first_rereads_tokens",
    "first_reacquisitions_tokens",
    "repeated_searches",
    "repeated_search_tokens",
    "repeated_fetches",
    "repeated_fetch_tokens",
    "repeated_tasks",
    "repeated_task_tokens",
    "repeated_questions",
    *REPEATED_COLUMNS,
    "reread_paths",
)


def _tokens(items: Iterable[Acquisition], estimator: Any) -> int:
    records = [r for r in (result_record(a) for a in items) if r is not None]
    return int(sum(estimator.count_many(records))) if records else 0


def segment_recovery(before: Sequence[Acquisition], after: Sequence[Acquisition], estimator: Any) -> dict[str, Any]:
    """The recovery counts of one boundary from the acquisitions of the segments before and after it."""
    keys_before = {kind: {a.key for a in before if a.kind == kind} for kind in REACQUIRED_KINDS}
    answered_before = {a.key for a in before if a.kind == "question" and a.answered}
    last_read_before = {a.key: a.index for a in before if a.kind == "read"}
    edits = [a for a in (*before, *after) if a.kind == "edit"]
    again = {kind: [a for a in after if a.kind == kind and a.key in keys] for kind, keys in keys_before.items()}
    rereads = again["read"]

    def unedited(a: Acquisition) -> bool:
        start = last_read_before[a.key]
        return not any(e.key == a.key and start < e.index < a.index for e in edits)

    clean = [a for a in rereads if unedited(a)]
    firsts: dict[tuple[str, str], Acquisition] = {}
    for items in again.values():
        for a in items:
            firsts.setdefault((a.kind, a.key), a)
    tokens = {kind: _tokens(items, estimator) for kind, items in again.items()}
    read_firsts = {key: a for (kind, key), a in firsts.items() if kind == "read"}
    return {
        "rereads": len(rereads),
        "reread_files": len(read_firsts),
        "reread_calls": len(rereads),
        "reread_tokens": tokens["read"],
        "rerun_commands": len(again["command"]),
        "rerun_tokens": tokens["command"],
        "recovery_calls": sum(len(items) for items in again.values()),
        "recovery_tokens": sum(tokens.values()),
        "rereads_unedited": len(clean),
        "rereads_unedited_tokens": _tokens(clean, estimator),
        "first_rereads_tokens": _tokens(read_firsts.values(), estimator),
        "first_reacquisitions_tokens": _tokens(firsts.values(), estimator),
        "repeated_searches": len(again["search"]),
        "repeated_search_tokens": tokens["search"],
        "repeated_fetches": len(again["fetch"]),
        "repeated_fetch_tokens": tokens["fetch"],
        "repeated_tasks": len(again["task"]),
        "repeated_task_tokens": tokens["task"],
        "repeated_questions": sum(a.kind == "question" and a.key in answered_before for a in after),
        "reread_paths": list(read_firsts),
    }


def recovery_rows(session: Session, *, estimator: str = "claude-rough") -> list[dict[str, Any]]:
    """One row per ``compact_boundary`` on ``session``'s main chain (none for sub-agent transcripts)."""
    if session.is_subagent:
        return []
    records: list[Record] = session.conversation()
    boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
    if not boundaries:
        return []
    counter = cached_estimator(estimator)
    calls = api_calls(records)
    found = acquisitions(records)
    rows = []
    edges = [-1, *boundaries, len(records)]
    for number, cut in enumerate(boundaries):
        start, end = edges[number], edges[number + 2]
        before = [a for a in found if start < a.index < cut]
        after = [a for a in found if cut < a.index < end]
        meta = records[cut].compact_metadata
        rows.append(
            {
                "file": printable_path(session.source),
                "line": records[cut].line_no,
                "session_id": session.id,
                "trigger": meta.get("trigger"),
                "pre_tokens": meta.get("preTokens"),
                "version": session.client_version,
                "calls_after": sum(cut < c.first < end for c in calls),
                **segment_recovery(before, after, counter),
                **repeated_instructions(records, cut, end),
            }
        )
    return rows


def recovery(sessions: Iterable[Session], *, estimator: str = "claude-rough") -> pd.DataFrame:
    """Every recorded compaction of ``sessions`` with its measured recovery (columns `RECOVERY_COLUMNS`)."""
    return recovery_frame(row for session in sessions for row in recovery_rows(session, estimator=estimator))


def recovery_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """`recovery_rows` of several sessions as one frame, in (file, line) order."""
    frame = pd.DataFrame(list(rows), columns=list(RECOVERY_COLUMNS))
    return frame.sort_values(["file", "line"], kind="stable").reset_index(drop=True) if len(frame) else frame
