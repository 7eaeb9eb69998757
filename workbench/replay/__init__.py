"""Replay recorded sessions call by call through a compaction strategy."""

from .engine import ReplayResult, replay_group, replay_process, replay_session, strip_recorded_compactions
from .run import replay_frames, replay_sessions

__all__ = [
    "ReplayResult",
    "replay_frames",
    "replay_group",
    "replay_process",
    "replay_session",
    "replay_sessions",
    "strip_recorded_compactions",
]
