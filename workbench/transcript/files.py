"""Reading transcript files without hanging or exhausting memory, and walking folders loudly.

Every loader reads through this module, so the same rules hold for every format:

* **Regular files only.** A path is opened with ``O_NONBLOCK`` and checked with ``fstat`` before a
  byte is read, so a named pipe (FIFO) never blocks, and ``/dev/zero`` or a socket is refused with
  the reason (`NotRegularFile`) instead of being read forever.
* **A cap on one line** (`max_line_bytes`, ``WORKBENCH_MAX_LINE_BYTES``, default 64 MiB). JSONL is read
  in chunks; a line longer than the cap is not kept: it comes back as an `OversizedLine` (empty bytes
  that know their length), which `jsonio.decode_json_line` turns into a reported skip. Formats parsed
  as one JSON document (SWE-agent ``.traj``, OpenHands and Anthropic ``.json``) are one unit for the
  parser, so the cap applies to the whole file (`read_document`). The largest real line in the open
  corpus is 343,491 bytes (``claude-code-more/obra-episodic-memory/long-conversation.jsonl``) and the
  largest document 3.6 MB, so the default is ~195x the largest real line; base64 images the API accepts
  (5 MB each) fit as well.
* **Folder walks report what they pass over** (`walk`): unreadable sub-folders, dangling symlinks,
  symlink loops and non-regular files each get an entry with the real reason; a folder reached twice
  through symlinks is read once.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "BOM",
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_LINE_ENV",
    "NotRegularFile",
    "OversizedLine",
    "max_line_bytes",
    "open_regular",
    "oversized_reason",
    "printable_path",
    "read_document",
    "read_head",
    "read_lines",
    "walk",
]

MAX_LINE_ENV = "WORKBENCH_MAX_LINE_BYTES"
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


class NotRegularFile(OSError):
    """A path that is not a regular file (named pipe, device, socket, folder); ``kind`` says which."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path}: {kind}, not a regular file (only regular files are read)")
        self.kind = kind
        self.reason = f"{kind}, not a regular file (only regular files are read)"


class OversizedLine(bytes):
    """Stands in for a line longer than the cap: empty bytes carrying the line's length in ``size``."""

    size: int

    def __new__(cls, size: int) -> OversizedLine:
        line = super().__new__(cls, b"")
        line.size = size
        return line


def max_line_bytes() -> int:
    """The line cap: ``WORKBENCH_MAX_LINE_BYTES`` when set (a positive integer), else 64 MiB."""
    value = os.environ.get(MAX_LINE_ENV)
    if not value:
        return DEFAULT_MAX_LINE_BYTES
    try:
        cap = int(value.replace("_", ""))
    except ValueError:
        cap = 0
    if cap <= 0:
        raise ValueError(f"{MAX_LINE_ENV}={value!r}: expected a positive number of bytes")
    return cap


def oversized_reason(size: int, what: str = "line") -> str:
    return (
        f"{what} of {size:,} bytes exceeds the {max_line_bytes():,}-byte cap; not read "
        f"(raise {MAX_LINE_ENV} to read it)"
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened for binary reading; `NotRegularFile` unless it is a regular file (never blocks)."""
    path = Path(path)
    mode = os.stat(path).st_mode  # follows symlinks; FileNotFoundError / PermissionError propagate
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, _kind(mode))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode  # the file opened, in case the path changed since the stat
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, _kind(mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_head(path: Path | str, size: int) -> bytes:
    """The first ``size`` bytes of a regular file (what detection sniffs)."""
    with open_regular(path) as handle:
        return handle.read(size)


def read_lines(path: Path | str, cap: int | None = None) -> tuple[list[bytes], bool]:
    """Physical lines of a regular file (without ``\\n``) and whether it ended with a newline.

    A line longer than ``cap`` (default `max_line_bytes`) is an `OversizedLine`; its bytes are read
    and dropped chunk by chunk, so memory stays bounded by the cap whatever the file holds. A file no
    larger than the cap (every real one) is read whole and split, the fast way.
    """
    cap = max_line_bytes() if cap is None else cap
    lines: list[bytes] = []
    parts: list[bytes] = []
    size = 0
    over = False
    with open_regular(path) as handle:
        data = _whole(handle, cap)
        if data is not None:
            return _split(data)
        handle.seek(0)
        while chunk := handle.read(_CHUNK):
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                end = len(chunk) if newline < 0 else newline
                if not over:
                    if size + end - start > cap:
                        over, parts = True, []
                    elif end > start:
                        parts.append(chunk[start:end])
                size += end - start
                if newline < 0:
                    break
                lines.append(OversizedLine(size) if over else b"".join(parts))
                parts, size, over = [], 0, False
                start = newline + 1
    if size or over:
        lines.append(OversizedLine(size) if over else b"".join(parts))
        return lines, False
    return lines, True


def _whole(handle: BinaryIO, cap: int) -> bytes | None:
    """The whole file when it holds at most ``cap`` bytes (read with one exact allocation), else None."""
    size = os.fstat(handle.fileno()).st_size
    if size > cap:
        return None
    data = handle.read(size)
    return None if handle.read(1) else data  # None too when it grew while being read


def _split(data: bytes) -> tuple[list[bytes], bool]:
    if not data:
        return [], True
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return lines, True
    return lines, False


def read_document(path: Path | str, cap: int | None = None) -> bytes | OversizedLine:
    """A whole regular file, or an `OversizedLine` when it is larger than ``cap`` (one JSON document is
    one unit for the parser, so the line cap applies to all of it)."""
    cap = max_line_bytes() if cap is None else cap
    with open_regular(path) as handle:
        data = _whole(handle, cap)
        if data is not None:
            return data
        handle.seek(0)
        chunks: list[bytes] = []
        size = 0
        while chunk := handle.read(_CHUNK):  # it grew while being read: count it, keep it only under the cap
            size += len(chunk)
            if size <= cap:
                chunks.append(chunk)
            else:
                chunks.clear()
    return b"".join(chunks) if size <= cap else OversizedLine(size)


def walk(folder: Path, on_error: Callable[[Path, str], None], on_skip: Callable[[Path, str], None]) -> Iterator[Path]:
    """Regular files below ``folder``, sorted by path; symlinks to files and folders are followed.

    ``on_error(path, reason)`` gets what a user would expect read but cannot be (an unreadable
    sub-folder, a dangling symlink, a symlink loop, a FIFO or device); ``on_skip(path, reason)`` what is
    left out on purpose (a folder already read through another symlink).
    """
    found: list[Path] = []
    seen: dict[tuple[int, int], Path] = {}

    def visit(directory: Path, ancestors: frozenset[tuple[int, int]]) -> None:
        try:
            info = os.stat(directory)
            key = (info.st_dev, info.st_ino)
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            on_error(directory, f"cannot read folder: {exc.strerror or exc}")
            return
        seen.setdefault(key, directory)
        inside = ancestors | {key}
        for entry in entries:
            path = Path(entry.path)
            try:
                target = os.stat(path)
            except OSError as exc:
                if entry.is_symlink():
                    link = _readlink(path)
                    reason = "symlink loop" if _is_loop(exc) else "dangling symlink"
                    on_error(path, f"{reason} (-> {link})")
                else:
                    on_error(path, f"cannot read: {exc.strerror or exc}")
                continue
            if stat.S_ISDIR(target.st_mode):
                sub = (target.st_dev, target.st_ino)
                if sub in inside:
                    on_error(path, f"symlink loop (-> {_readlink(path)}, a folder above it)")
                elif sub in seen:
                    on_skip(path, f"same folder as {seen[sub]}, read once")
                else:
                    seen[sub] = path
                    visit(path, inside)
            elif stat.S_ISREG(target.st_mode):
                found.append(path)
            else:
                on_error(path, f"{_kind(target.st_mode)}, not a regular file (only regular files are read)")

    visit(folder, frozenset())
    yield from sorted(found)


def _readlink(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _is_loop(exc: OSError) -> bool:
    import errno

    return exc.errno == errno.ELOOP


def printable_path(path: str | None) -> str | None:
    """``path`` as text every writer accepts (parquet, JSON, a terminal). A file name that is not valid UTF-8
    comes back from the file system as lone surrogates (``surrogateescape``), which UTF-8 cannot encode;
    each such byte is written ``\\xNN``. Valid names are returned as they are."""
    if path is None:
        return None
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return path
