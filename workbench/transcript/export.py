"""Export sessions back to JSONL, one file per session, never over a source or (without ``force``) an
existing file, each file written atomically.

An unmodified Claude Code session exports byte-identical to its source: records' exact lines (a
UTF-8 byte-order mark included) and the bytes of skipped lines, in their original order, with the
original trailing newline. Modified records are written as compact JSON (``JSON.stringify`` style,
lone surrogates escaped as ``JSON.stringify`` does). Codex rollouts are written as JSONL of their records'
JSON, an Anthropic Messages session as one request body; their loaders read those back record for record.
Every other format (SWE-agent trajectories, Gemini CLI responses and saved sessions, OpenHands event
arrays, Aider histories, chat JSONL, dataset files) is written as its source file, byte for byte,
under the source's own name, once for all the sessions it holds: a file of that format is the only thing
its loader reads back. A modified session of such a format is refused (`ExportError`; ``wb.to_dataset``
keeps any session losslessly).

Where each session goes (`plan_export`): below ``out_dir``, at the session's source path relative to
the common folder of the inputs (one folder given: relative to it, as before; files given: their
names; inputs from several folders: their paths from the folder they share, so two inputs with the same
file name do not collide). A ``.jsonl`` source holding one session keeps its name. A source holding
several sessions (an Aider history holds one per run, a JSONL of requests one per line) or that is not
JSONL (``.traj``, ``.json``, ``.md``) gives ``<session id>.jsonl`` per session (``:`` and ``/`` made
``_``) next to where the source would go. Two sessions still landing on one path get ``-2``, ``-3``, …
so every session has its own file.

Refused before anything is written (`ExportError`): an ``out_dir`` that is an input or inside one
(``export corpus/aider --out corpus/aider`` would mix JSONL into, or replace, the sources), a target
that is a source file, and targets that already exist unless ``force``. Each file is written to a
temporary file in the same folder, flushed to disk and then linked (``force``: renamed) into place, so a
full disk or a crash leaves the previous file or none, never a truncated one.
"""

from __future__ import annotations

import heapq
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .files import OversizedLine, open_regular
from .model import Session

__all__ = [
    "JSONL_FORMATS",
    "ExportError",
    "check_destination",
    "copies_source",
    "export_session",
    "plan_export",
    "round_trips",
    "session_bytes",
    "write_atomic",
]


class ExportError(ValueError):
    """An export refused before writing (destination inside an input, existing targets, …)."""


#: Formats exported as JSONL of their records (or, Anthropic Messages, the request body): their loaders
#: read that back. Sessions of any other format are exported as their source file (`copies_source`).
JSONL_FORMATS = frozenset({"claude-code", "anthropic-messages", "codex"})


def copies_source(session: Session) -> bool:
    """Whether the session is exported as its whole source file (module docstring)."""
    return session.format not in JSONL_FORMATS


def session_bytes(session: Session) -> bytes:
    """The session as JSONL bytes; `ExportError` when a line over the line cap was not kept."""
    lost = [s.line for s in session.skipped if isinstance(s.data, OversizedLine)]
    if lost:
        raise ExportError(
            f"line {lost[0]} was over the line cap and not kept in memory, so the export would lose it "
            f"(raise WORKBENCH_MAX_LINE_BYTES and load again)"
        )
    if session.format == "anthropic-messages":
        from .anthropic_messages import request_json

        return (request_json(session) + "\n").encode("utf-8", "surrogatepass")
    if copies_source(session):
        return _source_bytes(session)
    return b"".join(_pieces(session))


def _source_bytes(session: Session) -> bytes:
    """The session's source file, for a format written back as its source (`copies_source`)."""
    if not session.source:
        raise ExportError(f"session {session.id}: a {session.format} session without a source file cannot be exported")
    if any(r.modified for r in session.records):
        raise ExportError(
            f"session {session.id}: a modified {session.format} session cannot be written back in its format "
            "(only its unmodified source file can); wb.to_dataset keeps it losslessly"
        )
    if not Path(session.source).is_file():
        raise ExportError(
            f"session {session.id}: its source {session.source} is not a file this export can copy (a dataset row, "
            "a session built in memory); wb.to_dataset keeps it losslessly"
        )
    with open_regular(session.source) as handle:
        return handle.read()


def _pieces(session: Session) -> Iterator[bytes]:
    """The JSONL bytes of a (non Anthropic Messages) session, one line (and its separator) at a time:
    records' lines and skipped lines merged by line number, as `session_bytes` joins them."""
    records, skipped = session.records, [skip for skip in session.skipped if skip.line]
    keys = [r.line_no if r.line_no is not None else order for order, r in enumerate(records)]
    items: Iterable[tuple[int, int, int]]
    by_record = ((key, 0, order) for order, key in enumerate(keys))
    by_skip = ((skip.line, 1, order) for order, skip in enumerate(skipped))
    if _ascending(keys) and _ascending([skip.line for skip in skipped]):
        items = heapq.merge(by_record, by_skip)  # lazily: no list of every line's bytes
    else:
        items = sorted([*by_record, *by_skip])  # the order a stable sort by line number gives, as before
    total = len(records) + len(skipped)
    for index, (_, is_skip, order) in enumerate(items):
        item: Any = skipped[order] if is_skip else records[order]
        data = item.data if is_skip else item.to_line().encode("utf-8", "surrogatepass")
        yield data + b"\n" if index < total - 1 or session.trailing_newline else data


def _ascending(values: Sequence[int]) -> bool:
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def _absolute(path: Path | str) -> Path:
    return Path(os.path.abspath(path))


def _root(inputs: Sequence[Path]) -> Path | None:
    folders = [str(_absolute(p) if p.is_dir() else _absolute(p).parent) for p in inputs]
    return Path(os.path.commonpath(folders)) if folders else None


_UNSAFE = re.compile(r"[^\w.@+=-]+")


def _safe_name(session_id: str) -> str:
    """A file name from a session id: unsafe characters made ``_``, kept whole up to 240 bytes (file systems
    allow 255; a loader that names a session by its file then gives back the same id)."""
    name = _UNSAFE.sub("_", session_id).strip("._") or "session"
    return name.encode("utf-8")[:240].decode("utf-8", "ignore")


def _relative(session: Session, root: Path | None) -> Path:
    source = _absolute(session.source) if session.source else Path(f"{_safe_name(session.id)}.jsonl")
    if root is not None and session.source and source.is_relative_to(root):
        return source.relative_to(root)
    return Path(source.name)


def plan_export(sessions: Sequence[Session], inputs: Sequence[Path | str], out_dir: Path | str) -> list[Path]:
    """The target file of each session (same order), unique, below ``out_dir`` (module docstring)."""
    out = Path(out_dir)
    root = _root([Path(p) for p in inputs])
    per_source = Counter(s.source for s in sessions if not s.is_inline)  # inline: views of the main's lines
    targets: list[Path] = []
    for session in sessions:
        relative = _relative(session, root)
        own_file = per_source[session.source] == 1 and relative.suffix == ".jsonl"
        if not copies_source(session) and (session.format == "anthropic-messages" or not own_file):
            relative = relative.with_name(f"{_safe_name(session.id)}.jsonl")
        targets.append(out / relative)
    taken = set(targets)
    owner: dict[Path, tuple[str, object]] = {}  # target → who holds it: one source file's copy, or one session
    unique: list[Path] = []
    for session, target in zip(sessions, targets, strict=True):
        key = ("source", session.source) if copies_source(session) else ("session", id(session))
        candidate, number = target, 1
        while (candidate in owner and owner[candidate] != key) or (candidate != target and candidate in taken):
            number += 1
            candidate = target.with_name(f"{target.stem}-{number}{target.suffix}")
        owner[candidate] = key
        unique.append(candidate)
    return unique


def check_destination(
    out_dir: Path | str,
    inputs: Iterable[Path | str],
    targets: Sequence[Path] = (),
    sources: Iterable[str | None] = (),
    *,
    force: bool = False,
) -> None:
    """`ExportError` when writing ``targets`` below ``out_dir`` could lose data (module docstring)."""
    out = Path(out_dir).resolve()
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ExportError(f"--out {out_dir} exists and is not a folder")
    for item in inputs:
        source = Path(item).resolve()
        if out == source or (source.is_dir() and out.is_relative_to(source)):
            where = "is" if out == source else "is inside"
            raise ExportError(
                f"--out {out_dir} {where} the input {item}: the export would mix with or replace its sources; "
                "choose a folder outside the inputs"
            )
    originals = {Path(s).resolve() for s in sources if s}
    clash = [t for t in targets if t.resolve() in originals]
    if clash:
        raise ExportError(f"{clash[0]} is a source file of this export; choose another --out")
    existing = [t for t in targets if t.exists() or t.is_symlink()]
    if existing and not force:
        raise ExportError(
            f"{len(existing)} of {len(targets)} target file(s) already exist (first: {existing[0]}); "
            "pass --force to overwrite them"
        )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(target: Path, data: bytes, *, force: bool = False) -> Path:
    """Write ``data`` to ``target`` through a temporary file in the same folder (flushed, fsynced), then
    link it into place (no overwrite: `FileExistsError` if ``target`` appeared) or, with ``force``,
    rename it over ``target``. On any error the temporary file is removed and ``target`` is untouched."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600; give what open() would
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if force:
            os.replace(temporary, target)
        else:
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise
            except OSError:  # a filesystem without hard links: check, then rename (a narrow race)
                if target.exists():
                    raise FileExistsError(f"{target} exists") from None
                os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target


def export_session(session: Session, out_dir: Path, *, root: Path | None = None, force: bool = False) -> Path:
    """Write one ``session`` under ``out_dir`` (mirroring its path relative to ``root`` when given)."""
    target = plan_export([session], [root] if root is not None else [], out_dir)[0]
    if root is None:
        target = Path(out_dir) / target.name
    return write_atomic(target, session_bytes(session), force=force)


def round_trips(session: Session) -> bool | None:
    """Whether the session exports byte-identical to its source file; None where that is not promised
    (formats whose export is not their source format, or sessions that do not own a whole file)."""
    if session.format != "claude-code" or not session.source or session.is_inline:
        return None
    if any(isinstance(skip.data, OversizedLine) for skip in session.skipped):
        return False  # a line over the cap was not kept: the export cannot reproduce it (and is refused)
    try:
        with open_regular(session.source) as handle:
            size = os.fstat(handle.fileno()).st_size
            if session.format == "anthropic-messages":
                pieces: Iterable[bytes] = [session_bytes(session)]
            else:
                pieces = _pieces(session)
            seen = 0
            for piece in pieces:  # one line at a time: memory is bounded by the longest line, not the file
                seen += len(piece)
                if seen > size or handle.read(len(piece)) != piece:
                    return False
            return seen == size and not handle.read(1)
    except OSError:
        return None
