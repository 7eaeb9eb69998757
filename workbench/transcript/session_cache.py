"""The parsed-session cache: a file's loaded sessions, and what ``ingest`` and sweep planning need of them,
kept on disk under ``WORKBENCH_CACHE_DIR/sessions/<loader version>`` and keyed by the file's content
(other versions' folders are removed after a week unused: `cache_prune`).

**Key.** A BLAKE2b hash of the file's bytes (read in 1 MiB chunks), the path as given (sessions carry
it: ``Session.source``, skips, warnings, and sub-agent ids derived from folder and file names), the
loader's name, `loader_version` (the package version and a hash of every ``workbench/transcript``
source file, so any change to loading invalidates every entry) and the line cap
(`files.max_line_bytes`). The content decides; the hash is only *remembered*, in a small pointer file
per path, together with the file's device, inode, size, mtime and ctime, and reused while all five
are unchanged (any write moves mtime and ctime; setting an old mtime back with ``utime`` still moves the
ctime, which no user call can set), so a warm run over an unchanged corpus reads no transcript. Three
entries per key:

* ``<key>.sessions``: the sessions as `load_paths` yields them (after `sanitize.check_session`), pickled
  (about 1.4 times the file's size: a Claude Code record's ``raw`` is stored as its line, `line_raw`), for
  files up to `MAX_CACHED_FILE_BYTES` (64 MiB). Read back 2.3-2.8 times as fast as parsing again
  with orjson (the 8x corpus, two runs: 1.2-1.5 s against 3.5 s; the Record objects are the cost of both);
  `wb.load`, the commands that read sessions and sweep workers use it. Each record is stored with its
  `Record.content_key` computed (`_with_content_keys`): the token-count cache looks every record up by
  it, and hashing each line again was about a tenth of a warm replay; each session with its
  `Session.fingerprint`, which a sweep worker checks before it replays the session.
* ``<key>.summary``: `FileSummary`, what ``workbench ingest`` reports of the file (lines, records, kinds,
  skips, warnings, the round trip) and one `SessionInfo` per session (id, source, fingerprint, record
  count), as JSON (pickled only when JSON would not read back equal: `summary.summary_json`).
  ``ingest`` and sweep planning read only these (and write only these).
* ``<key>.infos``: the `SessionInfo` list alone, as JSON, written with ``<key>.sessions`` (a file loaded,
  not ingested, has no summary): the report looks a session's analyses up by it without loading the
  session (`cached_infos_if_unchanged`, `workbench.reporting.session_analysis`).

**A file that changed** (a session Claude Code is still appending to) has another hash, so it is read
again in full (no re-reading from the offset where it changed: a complete re-read is always right,
including for inline sub-agent chains and the session-level fields derived from all lines, and reading
on saved nothing when tried: restoring the cached sessions costs about half a parse, and the new entry
is written anyway; docs/performance.md). The new
entries replace the old ones of that path (a small pointer file per path), so the cache does not grow
with every append. A file that changes *while* it is read is not cached.

**Faults.** Entries are written to a temporary file and renamed into place, so concurrent processes
(sweep workers, notebook kernels) see a whole entry or none. An entry that cannot be read back (corrupt,
truncated, written by an incompatible Python) is treated as missing and rewritten; a cache folder that
cannot be written (disk full, read-only) turns the cache off for the process. Either warns once
(`SessionCacheWarning`) and the results are the same, only slower. ``WORKBENCH_SESSION_CACHE=0``
turns the cache off (the benchmarks use it to measure cold loads).

Pickle runs code named in the data it reads: the cache folder must be as private as the transcripts
(it is the user's own ``~/.cache/workbench``).
"""

from __future__ import annotations

import gc
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import astuple, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

try:  # hashlib's own BLAKE2b, without hashlib's import of OpenSSL (~3.5 ms of every warm ingest here)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (an interpreter built without it: hashlib's fallback)
    from hashlib import blake2b

from .files import max_line_bytes, open_regular
from .summary import FileSummary, SessionInfo, file_summary, summary_from_json, summary_json

if TYPE_CHECKING:  # a warm `ingest` answers from summaries: neither the record model nor tempfile is imported
    from .model import Session

__all__ = [
    "CACHE_ENV",
    "MAX_CACHED_FILE_BYTES",
    "FileSummary",
    "SessionCacheWarning",
    "SessionInfo",
    "cache_enabled",
    "cached_infos_if_unchanged",
    "cached_sessions",
    "cached_summary",
    "cached_summary_if_unchanged",
    "content_hash",
    "file_stamp",
    "file_summary",
    "loader_version",
    "remember_loader",
    "remembered_loader",
]

CACHE_ENV = "WORKBENCH_SESSION_CACHE"
#: Files larger than this keep only their summary: pickling (and unpickling) a session holds a reference
#: to every object of it for the whole dump (load), about +60% of the session's memory, more than the
#: ~2x faster reload is worth for a file this size (the largest real file of the open corpus is 3.6 MB).
MAX_CACHED_FILE_BYTES = 64 << 20
_CHUNK = 1 << 20


class SessionCacheWarning(RuntimeWarning):
    """The parsed-session cache cannot be used (or one entry could not be read); loading goes on without it."""


# ---------------------------------------------------------------------------------------------- keys


@lru_cache(maxsize=1)
def loader_version() -> str:
    """The package version and a hash of every ``workbench/transcript`` source file."""
    from ..util.version import __version__

    digest = blake2b(digest_size=8)
    folder = os.path.dirname(os.path.realpath(__file__))  # os.path, not pathlib's glob: every command pays this
    for name in sorted(name for name in os.listdir(folder) if name.endswith(".py")):
        digest.update(name.encode())
        with open(os.path.join(folder, name), "rb") as handle:
            digest.update(handle.read())
    return f"{__version__}+{digest.hexdigest()}"


def content_hash(path: Path | str) -> tuple[str, tuple[int, ...]]:
    """``(BLAKE2b of the file's bytes, its stamp when it was opened)`` (`_stamp`)."""
    digest = blake2b(digest_size=16)
    with open_regular(path) as handle:
        stamp = _stamp_of(os.fstat(handle.fileno()))
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest(), stamp


def _stamp(path: Path | str) -> tuple[int, ...]:
    return _stamp_of(os.stat(path))


def _stamp_of(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _hash(*parts: object) -> str:
    return blake2b("\x00".join(map(str, parts)).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# ---------------------------------------------------------------------------------------------- store

_STATE: dict[str, Any] = {"off": None, "warned_corrupt": False}


def cache_enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "off", "false", "no") and not _STATE["off"]


_ROOTS: dict[tuple[str | None, ...], Path] = {}


def _root() -> Path:
    """``<cache root>/sessions/<loader version>``, resolved once per environment; the first time, the folder
    is marked used and other versions' folders unused for a week are removed (`cache_prune`)."""
    env = tuple(os.environ.get(v) for v in ("WORKBENCH_CACHE_DIR", "XDG_CACHE_HOME", "HOME"))  # cache_root's inputs
    if env not in _ROOTS:
        from ..util.cache import cache_root
        from .cache_prune import mark_used, prune

        try:
            sessions = cache_root() / "sessions"
        except OSError as exc:  # the cache folder itself cannot be made: load without the cache, say so once
            _off(f"session cache: {exc.strerror or exc}: loading without the cache (same sessions, only slower)", exc)
            return Path(os.devnull)
        _ROOTS[env] = sessions / loader_version()
        if cache_enabled():
            try:
                mark_used(_ROOTS[env])
                prune(sessions, loader_version())
            except OSError:
                pass  # a folder that cannot be written: the first write says so (`_degrade`)
    return _ROOTS[env]


def _off(message: str, exc: BaseException) -> None:
    """Load without the cache from here on, and say so once."""
    if _STATE["off"] is None:
        _STATE["off"] = str(exc)
        warnings.warn(message, SessionCacheWarning, stacklevel=4)


def _degrade(exc: BaseException) -> None:
    if _STATE["off"] is None:
        _off(
            f"session cache {_root()}: {exc}: loading without the cache from here on (same sessions, only slower)", exc
        )


def _read(key: str, kind: str) -> Any:
    """The entry, or None when it is missing or cannot be read (then warned about once)."""
    path = os.path.join(_root(), key[:2], f"{key}.{kind}")  # not pathlib: a warm ingest reads one per file
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, with the unpickling)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _degrade(exc)
        return None
    try:
        with handle, _no_gc():
            first = handle.peek(1)[:1]
            if first == b"{":  # a summary as JSON (`summary.summary_json`)
                return summary_from_json(json.loads(handle.read()))
            if first == b"[":  # the sessions' infos (`_infos_json`)
                return [SessionInfo(*fields) for fields in json.loads(handle.read())]
            import pickle  # only for sessions (and a summary JSON could not keep): ~4 ms of a warm ingest

            return pickle.load(handle)  # from the file: the entry's bytes are never all in memory at once
    except Exception as exc:  # corrupt, truncated, incompatible: a miss, rewritten below
        if not _STATE["warned_corrupt"]:
            _STATE["warned_corrupt"] = True
            warnings.warn(
                f"session cache entry {path} cannot be read ({type(exc).__name__}: {exc}); reading the file instead",
                SessionCacheWarning,
                stacklevel=3,
            )
        return None


class _no_gc:
    """The cyclic garbage collector paused: unpickling a session creates hundreds of thousands of objects
    (records, their dicts and strings), none of them garbage, and the collections they trigger scanned them
    again and again (about a fifth of a load). Re-enabled afterwards unless it was off already. A class,
    not `contextlib.contextmanager`, so a warm ``ingest`` does not import contextlib (~1 ms)."""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()


def _write(key: str, kind: str, value: Any, entry: _Entry) -> None:
    """Write an entry atomically and point the path's pointer at it (with the file's stamp and hash),
    removing the entries the pointer named before (the file's older contents)."""
    import pickle

    folder = _root() / key[:2]
    text = summary_json(value) if isinstance(value, FileSummary) else _infos_json(value) if kind == "infos" else None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _atomic(
            folder / f"{key}.{kind}",
            text if text is not None else lambda handle: pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL),
        )
        marks = _root() / "paths"
        marks.mkdir(exist_ok=True)
        previous = (_pointed(entry.pointer) or {}).get("key")
        mark = {"key": key, "stamp": list(entry.stamp), "digest": entry.digest}
        if previous != key or _pointed(entry.pointer) != mark:
            _atomic(marks / entry.pointer, json.dumps(mark).encode())
        if isinstance(previous, str) and previous != key and len(previous) == len(key) and previous.isalnum():
            for old in ("sessions", "summary", "infos"):
                (_root() / previous[:2] / f"{previous}.{old}").unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:  # full disk; an unpicklable value
        _degrade(exc)


def _atomic(target: Path, data: bytes | Callable[[BinaryIO], object]) -> None:
    """Write ``data`` (bytes, or a function writing to the handle: streamed, never all in memory) to a
    temporary file beside ``target``, then rename it into place."""
    import tempfile  # only when writing (tempfile imports shutil, random, ...)

    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                data(handle)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------- API


@dataclass(frozen=True, slots=True)
class _Entry:
    """A file's cache key, its pointer's name, the file's stamp and its content hash (`_entry`)."""

    key: str
    pointer: str
    stamp: tuple[int, ...]
    digest: str


def _entry(path: Path, loader_name: str) -> _Entry:
    """The file's cache key. Its content hash is computed, unless the path's pointer recorded it for a
    file with the same device, inode, size, mtime *and ctime* (any write, and any ``utime`` that sets an
    old mtime back, moves the ctime, which no user call can set), so an unchanged corpus is not read."""
    known = _known_entry(path, loader_name)
    if known is not None:
        return known
    settings = (loader_name, loader_version(), max_line_bytes())
    digest, stamp = content_hash(path)
    entry = _Entry(_hash(*settings, str(path), digest), _hash(*settings, str(path)), stamp, digest)
    _restamp(entry)
    return entry


def _restamp(entry: _Entry) -> None:
    """A file whose content is the one its pointer recorded under another stamp (copied back, restored,
    touched, its corpus unpacked again): the pointer takes the new stamp, so the file is not hashed again at
    every load. Nothing else changes: the entries are keyed by the content."""
    known = _pointed(entry.pointer)
    if known is None or known.get("digest") != entry.digest or tuple(known.get("stamp", ())) == entry.stamp:
        return
    try:
        _atomic(_root() / "paths" / entry.pointer, json.dumps({**known, "stamp": list(entry.stamp)}).encode())
    except OSError as exc:
        _degrade(exc)


def _known_entry(path: Path, loader_name: str) -> _Entry | None:
    """`_entry` from the path's pointer alone, while the file's stamp is the one it recorded; else None."""
    settings = (loader_name, loader_version(), max_line_bytes())
    pointer = _hash(*settings, str(path))
    stamp = _stamp(path)
    known = _pointed(pointer)
    if known is not None and tuple(known.get("stamp", ())) == stamp and isinstance(known.get("digest"), str):
        return _Entry(_hash(*settings, str(path), known["digest"]), pointer, stamp, known["digest"])
    return None


def _unchanged_entry(path: Path, loader_name: str) -> _Entry | None:
    """The file's entry when the cache is on and the file is unchanged since its pointer was written
    (`_known_entry`: no hash, no parse), else None."""
    if not cache_enabled():
        return None
    try:
        return _known_entry(path, loader_name)
    except OSError:
        return None


def cached_summary_if_unchanged(path: Path, loader_name: str) -> FileSummary | None:
    """The cached summary of ``path`` when the file is unchanged since it was summarised, reading nothing
    but the cache (no hash, no parse); None otherwise (`file_summaries` with workers answers these itself)."""
    entry = _unchanged_entry(path, loader_name)
    found = _read(entry.key, "summary") if entry is not None else None
    return found if isinstance(found, FileSummary) else None


def cached_infos_if_unchanged(path: Path, loader_name: str) -> list[SessionInfo] | None:
    """The `SessionInfo` of each session of ``path`` (in file order) when the file is unchanged since its
    sessions or summary were cached, reading nothing but the cache; None otherwise (the report asks, to
    answer a session from its analysis cache without loading it)."""
    entry = _unchanged_entry(path, loader_name)
    if entry is None:
        return None
    found = _read(entry.key, "summary")
    if isinstance(found, FileSummary):
        return found.sessions
    found = _read(entry.key, "infos")
    return found if isinstance(found, list) else None


def file_stamp(path: Path | str) -> tuple[int, ...]:
    """The file's device, inode, size, mtime and ctime: what says it is unchanged (`_entry`)."""
    return _stamp(path)


def _detected_pointer(path: Path) -> str:
    return _hash("detected", loader_version(), str(path))


def remembered_loader(path: Path) -> str | None:
    """The name of the loader detection chose for ``path`` when it was last read, while the file is
    unchanged since (the same stamp, as `_entry`'s content hash is reused); None otherwise, or without
    the cache. Detection depends only on the file (its name and first bytes) and the built-in loaders,
    whose code is in the loader version: the registry does not use this once another loader is registered."""
    if not cache_enabled():
        return None
    try:
        stamp = _stamp(path)
    except OSError:
        return None
    known = _pointed(_detected_pointer(path))
    if known is not None and tuple(known.get("stamp", ())) == stamp and isinstance(known.get("loader"), str):
        return str(known["loader"])
    return None


def remember_loader(path: Path, loader_name: str, stamp: tuple[int, ...]) -> None:
    """Remember that detection chose ``loader_name`` for ``path`` as it was at ``stamp`` (taken before
    its first bytes were read: a file that changed since is detected again)."""
    if not cache_enabled():
        return
    mark = {"loader": loader_name, "stamp": list(stamp)}
    pointer = _detected_pointer(path)
    if _pointed(pointer) == mark:
        return
    try:
        marks = _root() / "paths"
        marks.mkdir(parents=True, exist_ok=True)
        _atomic(marks / pointer, json.dumps(mark).encode())
    except OSError as exc:
        _degrade(exc)


def _pointed(pointer: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(_root(), "paths", pointer), "rb") as handle:
            value = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def cached_sessions(path: Path, loader_name: str, load: Callable[[], list[Session]]) -> list[Session]:
    """The sessions of ``path`` from the cache, or ``load()`` (then cached)."""
    if not cache_enabled():
        return load()
    entry = _entry(path, loader_name)
    found = _read(entry.key, "sessions")
    if isinstance(found, list):
        return found
    sessions = load()
    if _unchanged(path, entry) and _keepable(entry):
        _write(entry.key, "sessions", _with_content_keys(sessions), entry)
        _write(entry.key, "infos", [SessionInfo.of(session) for session in sessions], entry)
    return sessions


def _infos_json(infos: list[SessionInfo]) -> bytes:
    return json.dumps([list(astuple(info)) for info in infos], separators=(",", ":")).encode("ascii")


def _with_content_keys(sessions: list[Session]) -> list[Session]:
    """``sessions``, each record's memoised `Record.content_key` and each session's `Session.fingerprint`
    computed (so the entry stores them: a sweep worker checks every session it replays by its fingerprint,
    hashing all its lines again, about 3% of a sweep)."""
    for session in sessions:
        for record in session.records:
            record.content_key  # noqa: B018 (memoised on the record)
        session.fingerprint  # noqa: B018 (memoised on the session)
    return sessions


def _keepable(entry: _Entry) -> bool:
    """Whether the file's sessions are small enough to cache (`MAX_CACHED_FILE_BYTES`)."""
    return entry.stamp[2] <= MAX_CACHED_FILE_BYTES


def cached_summary(
    path: Path, loader_name: str, load: Callable[[], list[Session]], *, keep_sessions: bool = False
) -> FileSummary:
    """The `FileSummary` of ``path`` from the cache, or of its sessions (then cached; the sessions too
    when ``keep_sessions``)."""
    if not cache_enabled():
        return file_summary(load())
    entry = _entry(path, loader_name)
    found = _read(entry.key, "summary")
    if isinstance(found, FileSummary):
        return found
    sessions = _read(entry.key, "sessions")
    fresh = not isinstance(sessions, list)
    if fresh:
        sessions = load()  # ingest does not keep them: it needs only the summary (sessions cost ~2x the file)
    summary = file_summary(sessions)
    if _unchanged(path, entry):
        if fresh and keep_sessions and _keepable(entry):
            _write(entry.key, "sessions", _with_content_keys(sessions), entry)
        _write(entry.key, "summary", summary, entry)
    return summary


def _unchanged(path: Path, entry: _Entry) -> bool:
    """The file is as it was when hashed (else what was loaded may not match the key: not cached)."""
    try:
        return _stamp(path) == entry.stamp
    except OSError:
        return False
