"""``workbench recovery``, one session group at a time: each group is scored and dropped, the rows kept.

`score_group` computes a group's recovery rows (`workbench.metrics.recovery`) and, with ``--validate``, its
rows of the validation tables (`workbench.metrics.validation`); `RecoveryTally` collects them and builds the
frames at the end, the same frames the command built from every session at once: the compaction table in
(file, line) order as `compaction_table` gives it, the correlations and predictors computed from them.
Failures stay per session (`workbench.transcript.isolation`), in three lists kept apart so the command reports them in
the order it always did (recovery, compaction table, file table).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..transcript.isolation import SessionFailure, each_session, over_sessions
from ..transcript.model import Session

__all__ = ["GroupRecovery", "RecoveryTally", "score_group"]


@dataclass
class GroupRecovery:
    """What `workbench recovery` keeps of one session group once it is scored (no session in it)."""

    rows: list[dict[str, Any]]
    measured: int
    failed: list[SessionFailure]
    validated: int = 0
    table: Any = None
    files: Any = None
    table_failed: list[SessionFailure] = field(default_factory=list)
    files_failed: list[SessionFailure] = field(default_factory=list)


def score_group(group: list[Session], estimator: str, validate: bool) -> GroupRecovery:
    """One session group's recovery rows and, with ``validate``, its compaction-table and file-table rows.

    Per group, not per session: `compaction_table` scores each recorded compaction's summary with the
    output of the matching ``agent-acompact-*`` transcript, a sub-agent of the same group
    (`reference_fidelity`). Failures stay per session, as over the whole input: a session that fails is
    left out of the tables that follow, the group's other sessions are scored.
    """
    from ..metrics.recovery import recovery_rows

    failed: list[SessionFailure] = []
    done = each_session(lambda s: recovery_rows(s, estimator=estimator), group, failed)
    part = GroupRecovery([row for _, rows in done for row in rows], len(done), failed)
    if validate:
        from ..metrics.validation import compaction_table, file_table

        kept = [session for session, _ in done]
        kept, part.table = over_sessions(
            lambda items: compaction_table(items, estimator=estimator), kept, part.table_failed
        )
        kept, part.files = over_sessions(file_table, kept, part.files_failed)
        part.validated = len(kept)
    return part


@dataclass
class RecoveryTally:
    """The scored groups' rows and failures; the frames are built from them at the end."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    measured: int = 0
    validated: int = 0
    failed: list[SessionFailure] = field(default_factory=list)
    table_failed: list[SessionFailure] = field(default_factory=list)
    files_failed: list[SessionFailure] = field(default_factory=list)
    tables: list[Any] = field(default_factory=list)
    file_tables: list[Any] = field(default_factory=list)

    def add(self, part: GroupRecovery) -> None:
        self.rows.extend(part.rows)
        self.measured += part.measured
        self.validated += part.validated
        self.failed.extend(part.failed)
        self.table_failed.extend(part.table_failed)
        self.files_failed.extend(part.files_failed)
        if part.table is not None and len(part.table):
            self.tables.append(part.table)
        if part.files is not None and len(part.files):
            self.file_tables.append(part.files)

    def frame(self) -> Any:
        from ..metrics.recovery import recovery_frame

        return recovery_frame(self.rows)

    def table(self, estimator: str) -> Any:
        """The groups' compaction tables as one, in (file, line) order as `compaction_table` gives it."""
        import pandas as pd

        from ..metrics.validation import compaction_table

        if not self.tables:
            return compaction_table([], estimator=estimator)
        table = pd.concat(self.tables, ignore_index=True)
        return table.sort_values(["file", "line"], kind="stable").reset_index(drop=True)

    def files(self) -> Any:
        import pandas as pd

        return pd.concat(self.file_tables, ignore_index=True) if self.file_tables else pd.DataFrame()
