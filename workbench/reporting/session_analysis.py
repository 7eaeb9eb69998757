"""What the report needs of a session that depends on the session alone, computed once and kept on disk.

`workbench.reporting.sessions` needs two kinds of things of each session. Some depend on the replay it
reports on: the references kept, the expected recovery and the instructions lost at each compaction event
(they read the session's records next to the events). The others depend on the session alone and are
the same for every replay of it: `SessionAnalysis` (the bill, the replay's notes, the recorded re-reads,
the cost simulation's per-call facts, the calibration's facts, the sizes of a ``none`` replay). This
module computes those (`analyse`) and keeps them on disk (`AnalysisCache`), so a report over sessions it
has seen before reads a small entry per session instead of loading the session and analysing it again:
a session without compaction events in the replay is then not loaded at all. The replay's token counts
are kept the same way (`workbench.tokens.cache`).

**Key.** One entry per (session key, source path, settings), where the settings are the code version
(`workbench.util.code_version`: every result-deciding source file of the package and the tokenizer and
price database versions), the pricing table's content and the estimators' row keys (their code). The
entry holds the session's content fingerprint (`Session.fingerprint`) and is used only when it matches:
a session Claude Code appended to since is analysed again and its entry replaced, so the cache holds one
entry per session, not one per version of it. Entries of other code versions live in folders of their own
and are removed after a week unused (`workbench.transcript.cache_prune`), as the parsed sessions are.

**Pieces on request.** The calibration's facts and the ``none`` sizes are needed only by some reports
(a ``none`` or ``recorded`` run; a ``recorded`` run without a ``none`` one). An entry records which were
computed (None: not computed); a report that needs one an entry lacks analyses the session again and
writes the entry with everything it needs.

**Faults.** An entry is written to a temporary file and renamed into place (concurrent reports see a whole
entry or none). An entry that cannot be read is a miss and is rewritten; a cache folder that cannot be
written turns the cache off for the process. Either warns once (`AnalysisCacheWarning`); the report is the
same, only slower. ``WORKBENCH_ANALYSIS_CACHE=0`` turns the cache off. Entries are pickled: the cache
folder must be as private as the transcripts (the user's own ``~/.cache/workbench``).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

try:  # hashlib's own BLAKE2b, as the session cache imports it
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (an interpreter built without it: hashlib's fallback)
    from hashlib import blake2b

from ..metrics.bill import bill_row
from ..metrics.cache_sim import SessionCallInfo, session_call_info
from ..metrics.calibration import CalibrationFacts, calibration_facts
from ..metrics.expected_recovery import has_tool_calls
from ..metrics.pricing import Price
from ..metrics.recovery import recovery_rows
from ..replay import replay_session
from ..replay.engine import session_facts
from ..strategies import create
from ..tokens.cache import cached_estimator
from ..transcript.cache_prune import mark_used, prune
from ..transcript.model import Session
from ..util.cache import cache_root
from ..util.code_version import code_version

__all__ = ["CACHE_ENV", "AnalysisCache", "AnalysisCacheWarning", "SessionAnalysis", "analyse"]

CACHE_ENV = "WORKBENCH_ANALYSIS_CACHE"


class AnalysisCacheWarning(RuntimeWarning):
    """The report's per-session analysis cache cannot be used; the report goes on without it."""


@dataclass(frozen=True)
class SessionAnalysis:
    """What the report needs of one session that depends on the session alone."""

    fingerprint: str
    """`Session.fingerprint` of the session analysed."""
    notes: tuple[str, ...]
    """What a replay of it cannot fully model (`workbench.replay.engine.session_facts`)."""
    bill: Mapping[str, Any]
    """`workbench.metrics.bill.bill_row`."""
    tool_calls: bool
    """`workbench.metrics.expected_recovery.has_tool_calls`."""
    measured: list[dict[str, Any]]
    """`workbench.metrics.recovery.recovery_rows`: what the agent re-acquired after recorded compactions."""
    header: Session
    """The session without its records (its models and metadata price the summariser)."""
    call_infos: Mapping[bool, SessionCallInfo]
    """`session_call_info` by ``strip`` (with and without the recorded compactions)."""
    calibration: CalibrationFacts | None = None
    """`calibration_facts`, or None when not computed."""
    uncompacted: list[dict[str, Any]] | None = None
    """(session_id, step, tokens_without_compaction) of a ``none`` replay, or None when not computed."""

    def has(self, *, calibration: bool, uncompacted: bool) -> bool:
        """Whether it holds the pieces asked for."""
        return (not calibration or self.calibration is not None) and (not uncompacted or self.uncompacted is not None)


def analyse(
    session: Session,
    *,
    pricing: Mapping[str, Price],
    estimator: str,
    calibration: bool = False,
    uncompacted: bool = False,
) -> SessionAnalysis:
    """`SessionAnalysis` of ``session`` (its id is the report's key for it), with the pieces asked for."""
    return SessionAnalysis(
        fingerprint=session.fingerprint,
        notes=tuple(session_facts(session).notes()),
        bill=bill_row(session, pricing),
        tool_calls=has_tool_calls(session),
        measured=recovery_rows(session, estimator=estimator),
        header=replace(session, records=(), skipped=()),
        call_infos={strip: session_call_info(session, strip=strip) for strip in (True, False)},
        calibration=calibration_facts(session, pricing) if calibration else None,
        uncompacted=_uncompacted(session) if uncompacted else None,
    )


def _uncompacted(session: Session) -> list[dict[str, Any]]:
    columns = ("session_id", "step", "tokens_without_compaction")
    return [{c: row[c] for c in columns} for row in replay_session(session, create("none")).steps]


def cache_enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


class AnalysisCache:
    """`SessionAnalysis` entries on disk under ``<cache>/analyses/<code version>`` (module docstring)."""

    def __init__(self, *, pricing: Mapping[str, Price], estimator: str) -> None:
        self.pricing, self.estimator = pricing, estimator
        self.enabled = cache_enabled()

    @cached_property
    def _settings(self) -> bytes:
        rows = sorted((model, repr(price)) for model, price in self.pricing.items())
        keys = sorted({cached_estimator(name).row_key for name in (self.estimator, "claude-rough")})
        return repr((rows, keys)).encode()

    @cached_property
    def _folder(self) -> Path | None:
        try:
            analyses = cache_root() / "analyses"
            folder = analyses / code_version()
            mark_used(folder)
            prune(analyses, code_version())
        except OSError as exc:
            self._off(exc)
            return None
        return folder

    def _path(self, key: str, source: str | None) -> Path | None:
        folder = self._folder if self.enabled else None
        if folder is None:
            return None
        digest = blake2b(self._settings, digest_size=16)
        digest.update(f"\0{key}\0{source}".encode("utf-8", "surrogatepass"))
        name = digest.hexdigest()
        return folder / name[:2] / f"{name}.analysis"

    def get(
        self, key: str, source: str | None, fingerprint: str, *, calibration: bool, uncompacted: bool
    ) -> SessionAnalysis | None:
        """The entry of (key, source) when it is of this content and holds the pieces asked for."""
        path = self._path(key, source)
        found = None
        if path is not None:
            try:
                with open(path, "rb") as handle:
                    found = pickle.load(handle)
            except FileNotFoundError:
                pass
            except Exception as exc:  # corrupt, truncated, incompatible: a miss, rewritten by `put`
                why = f"{type(exc).__name__}: {exc}"
                _warn_once("read", f"analysis cache entry {path} cannot be read ({why}); analysing the session again")
        hit = (
            isinstance(found, SessionAnalysis)
            and found.fingerprint == fingerprint
            and found.has(calibration=calibration, uncompacted=uncompacted)
        )
        return found if hit else None

    def put(self, key: str, source: str | None, analysis: SessionAnalysis) -> None:
        path = self._path(key, source)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False)  # noqa: SIM115
            try:
                with handle:
                    pickle.dump(analysis, handle, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(handle.name, path)
            except BaseException:
                Path(handle.name).unlink(missing_ok=True)
                raise
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:  # full disk, read-only folder
            self._off(exc)

    def _off(self, exc: BaseException) -> None:
        self.enabled = False
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        _warn_once("off", f"analysis cache: {reason}: reporting without it from here on (the same report, only slower)")


#: What was warned about in this process (each kind once: a folder that cannot be written, an entry that
#: cannot be read).
_WARNED: set[str] = set()


def _warn_once(kind: str, message: str) -> None:
    if kind not in _WARNED:
        _WARNED.add(kind)
        warnings.warn(message, AnalysisCacheWarning, stacklevel=4)
