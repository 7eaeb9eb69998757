"""What ``wb.replay`` computes per session (`Plan.rows`: its steps, events and cells), in this process or in
worker processes (`replay_in_workers`). The rows are the replay engine's own, plus ``config_hash`` and
``label``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..strategies.base import Strategy
from ..transcript.model import Session

__all__ = ["Plan", "Rows", "replay_in_workers"]

Rows = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]


class Plan:
    """What `wb.replay` runs on each session: the strategies grouped by shared prefix, their labels and config
    JSON by config hash, the estimator; `rows` is one session's steps, events and cells."""

    def __init__(
        self,
        groups: list[list[tuple[str, Strategy]]],
        label_of: dict[str, str],
        json_of: dict[str, str],
        estimator: str,
    ) -> None:
        self.groups, self.label_of, self.json_of, self.estimator = groups, label_of, json_of, estimator

    def rows(self, session: Session) -> Rows:
        from ..experiments.cells import cell_summary
        from ..replay import replay_group

        steps: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        cells: list[dict[str, Any]] = []
        for members in self.groups:
            results = replay_group(session, [s for _, s in members], estimator=self.estimator)
            for (chash, item), result in zip(members, results, strict=True):
                extra = {"config_hash": chash, "label": self.label_of[chash]}
                steps.extend({**row, **extra} for row in result.steps)
                events.extend({**row, **extra} for row in result.events)
                cells.append(
                    {
                        "strategy": item.name,
                        "config_hash": chash,
                        "session_id": session.id,
                        "source": session.source,
                        "estimator": self.estimator,
                        "config_json": self.json_of[chash],
                        **cell_summary(result.steps, result.events),
                    }
                )
        return steps, events, cells


#: A worker's plan, and the loaded sessions when it was forked (`_init_worker`).
_WORKER: dict[str, Any] = {}


def _init_worker(plan: bytes, sessions: Sequence[Session]) -> None:
    import pickle

    _WORKER.update(plan=pickle.loads(plan), sessions=sessions)


def _session_rows(item: int | Session) -> Rows:
    """The rows of one session: by its index in the forked worker's sessions, or sent with the task."""
    session = _WORKER["sessions"][item] if isinstance(item, int) else item
    rows: Rows = _WORKER["plan"].rows(session)
    return rows


def replay_in_workers(plan: Plan, sessions: Sequence[Session], workers: int) -> Iterable[Rows]:
    """Each session's rows, in order, by ``workers`` processes. A forked worker has the loaded sessions and
    gets their indices; a spawned one gets each session with its task, so every session is sent once and a
    worker holds only the ones it is replaying. The plan travels by value (cloudpickle: a strategy class
    defined in the notebook has no module a spawned worker could import it from)."""
    import cloudpickle

    from ..util.pool import ordered_map, start_method

    forked = start_method() == "fork"
    items: Iterable[int | Session] = range(len(sessions)) if forked else sessions
    return ordered_map(
        _session_rows,
        items,
        min(workers, len(sessions)),
        initializer=_init_worker,
        initargs=(cloudpickle.dumps(plan), sessions if forked else ()),
    )
