"""Measured recovery: what the agent re-acquired after each *recorded* compaction (the ground truth).

After a real compaction the agent re-reads files it had read, re-runs commands, asks again. This module
counts that in the recorded future, one row per ``compact_boundary`` on a session's main chain
(`Session.conversation`; sub-agent transcripts, including the ``agent-acompact-*`` compaction agents,
have none). Calls are classified by `workbench.metrics.acquisitions` (Claude Code ``Read``/``Bash``/
``Grep``/``Glob``/``AskUserQuestion``, and their equivalents in other formats).

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
* ``recovery_tokens`` = ``reread_tokens + rerun_tokens``; ``recovery_calls`` = ``rereads +
  rerun_commands``.

Refined measures beside them:

* ``rereads_unedited`` / ``rereads_unedited_tokens``: re-reads of a file that no edit call (``Edit``,
  ``Write``, ``MultiEdit``, ``NotebookEdit``) touched between its last ``Read`` in the segment before and
  the re-read: the agent re-acquired content it had already seen unchanged (an edited file may be
  re-read to check the edit, which is not recovery).
* ``first_rereads_tokens``: the tokens of the *first* re-read of each file only (later re-reads of the
  same file re-acquire what the first one already brought back; this is what the counterfactual
  estimate of `workbench.metrics.expected_recovery` counts).
* ``repeated_searches``: ``Grep``/``Glob`` calls in the segment after with exactly the same input
  (tool and canonical JSON of every argument) as one in the segment before.
* ``repeated_questions``: ``AskUserQuestion`` calls in the segment after whose questions (text,
  whitespace-collapsed) equal those of an ``AskUserQuestion`` in the segment before that the user
  answered (a non-error tool result).
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
from .acquisitions import Acquisition, acquisitions, result_record

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
    "repeated_searches",
    "repeated_questions",
    "reread_paths",
)


def _tokens(items: Iterable[Acquisition], estimator: Any) -> int:
    records = [r for r in (result_record(a) for a in items) if r is not None]
    return int(sum(estimator.count_many(records))) if records else 0


def segment_recovery(before: Sequence[Acquisition], after: Sequence[Acquisition], estimator: Any) -> dict[str, Any]:
    """The recovery counts of one boundary from the acquisitions of the segments before and after it."""
    read_before = {a.key for a in before if a.kind == "read"}
    commands_before = {a.key for a in before if a.kind == "command"}
    searches_before = {a.key for a in before if a.kind == "search"}
    answered_before = {a.key for a in before if a.kind == "question" and a.answered}
    last_read_before = {a.key: a.index for a in before if a.kind == "read"}
    edits = [a for a in (*before, *after) if a.kind == "edit"]
    rereads = [a for a in after if a.kind == "read" and a.key in read_before]
    reruns = [a for a in after if a.kind == "command" and a.key in commands_before]

    def unedited(a: Acquisition) -> bool:
        start = last_read_before[a.key]
        return not any(e.key == a.key and start < e.index < a.index for e in edits)

    clean = [a for a in rereads if unedited(a)]
    firsts: dict[str, Acquisition] = {}
    for a in rereads:
        firsts.setdefault(a.key, a)
    reread_tokens = _tokens(rereads, estimator)
    rerun_tokens = _tokens(reruns, estimator)
    return {
        "rereads": len(rereads),
        "reread_files": len(firsts),
        "reread_calls": len(rereads),
        "reread_tokens": reread_tokens,
        "rerun_commands": len(reruns),
        "rerun_tokens": rerun_tokens,
        "recovery_calls": len(rereads) + len(reruns),
        "recovery_tokens": reread_tokens + rerun_tokens,
        "rereads_unedited": len(clean),
        "rereads_unedited_tokens": _tokens(clean, estimator),
        "first_rereads_tokens": _tokens(firsts.values(), estimator),
        "repeated_searches": sum(a.kind == "search" and a.key in searches_before for a in after),
        "repeated_questions": sum(a.kind == "question" and a.key in answered_before for a in after),
        "reread_paths": list(firsts),
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
