"""Reading a file someone else may have put there: bounded, regular files only, never blocking.

A run directory is written by the driver, but anything can be put in it: a FIFO named `STOP`
(an `open` for reading would wait for a writer forever), a device, a directory, a symlink
loop, a file of many gigabytes. Every read of a run-directory file goes through
`read_regular`: it stats the path first (a FIFO or a device is never opened), opens it with
O_NONBLOCK, checks the open file is still a regular file (it may have been swapped since the
stat) and reads at most `max_bytes`. What cannot be read raises `Unreadable` with why in words;
a missing file raises FileNotFoundError, which callers treat as "not there yet".

Pure (no third-party imports), so every layer can use it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from prereg.core.errors import UsageError

JSON_MAX_BYTES = 16 * 1024 * 1024  # manifest.json, status.json, pid.json, ...: far above any the driver writes
ROWS_MAX_BYTES = 1024 * 1024 * 1024  # rows.jsonl: 100,000 rows of 10 KB each fit ten times over
STOP_MAX_BYTES = 64 * 1024  # STOP: a small JSON object (a bigger one still stops the run)
CHART_MAX_BYTES = 8 * 1024 * 1024  # chart.png: the report's per-seed chart (drawn in the console, attached to a post)
LINE_MAX_BYTES = 1024 * 1024  # one line of a JSON-lines file: a row is a few KB (an hour's distances: ~30 KB)
_CHUNK = 4 * 1024 * 1024


class Unreadable(UsageError):
    """A file is there but cannot be read as one: `why` says what it is instead."""

    def __init__(self, path: str | Path, why: str):
        self.path, self.why = Path(path), why
        super().__init__(f"{self.path.name}: {why}")


def kind_of(mode: int) -> str | None:
    """What a file is when it is not a regular file ('a FIFO (named pipe)', ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def os_error_why(exc: OSError) -> str:
    """An OSError in words, for a line that names the file itself."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop (too many levels of symbolic links)"
    if exc.errno == errno.EACCES:
        return "permission denied"
    return exc.strerror or str(exc)


def resolved(path: str | Path) -> Path:
    """`path.resolve()`, or its absolute path when it cannot be resolved (a symbolic link loop
    raises there, RuntimeError before Python 3.13): to compare two paths, never to open one."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


class NotWritable(UsageError):
    """A path named for output is there and is not a regular file: nothing was written (exit 2)."""

    def __init__(self, path: str | Path, why: str):
        self.path, self.why = Path(path), why
        super().__init__(f"{self.path}: {why}; nothing was written there (only a new path or a regular file is written)")


def check_output(path: str | Path, *, owned: bool = False) -> None:
    """Refuse to write `path` unless it is new or a regular file (a symlink is followed and its target
    checked): a device, a FIFO, a socket, a directory or a loop there raises NotWritable. Every write
    to a path (the atomic writer, a copy, a new document) asks this first: renamed over, `/dev/full`
    was a 707-byte regular file after a run, as root (issue 43). A dangling link counts as new (the
    atomic writer replaces the link itself, never its missing target).

    `owned`: a file the writer owns in its own folder (a run's status.json, a report's chart.png),
    rewritten whole by rename: a FIFO or a socket put there is junk and is renamed over (never opened,
    never waited on), so a resume heals its status.json; a device or a directory is still refused. A
    path the user named (a flag's value, a document) is never `owned`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise NotWritable(path, "a part of it is a file, not a folder") from None
    except OSError as exc:
        raise NotWritable(path, os_error_why(exc)) from None
    kind = kind_of(st.st_mode)
    if kind is not None and not (owned and (stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode))):
        raise NotWritable(path, f"is {kind}, not a regular file")


def check_regular(path: str | Path, max_bytes: int | None = None) -> os.stat_result:
    """stat `path` (following links): its stat when it is a regular file of at most `max_bytes`,
    else Unreadable; FileNotFoundError when it is missing (a dangling link included)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable(path, os_error_why(exc)) from None
    _check_stat(path, st, max_bytes)
    return st


def why_not_a_file(path: str | Path) -> str | None:
    """Why `path` cannot be read as a file, in words after its name ('is missing', 'is a FIFO (named pipe),
    not a regular file', 'a symbolic link loop ...'); None when it is a regular file. Never opens it. A
    FIFO is never 'missing' (Path.is_file says False for it and for a missing file alike)."""
    try:
        check_regular(path)
    except FileNotFoundError:
        return "is missing"
    except Unreadable as exc:
        return exc.why
    return None


def why_not_a_folder(path: str | Path) -> str | None:
    """Why `path` is not a directory, in words after its name ('does not exist', 'is a FIFO (named pipe),
    not a directory', 'is a file, not a directory', a loop); None when it is one. A FIFO given as a run
    directory read 'no such run directory' (Path.is_dir says False for it and for nothing alike)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a part of it is a file, not a folder)"
    except OSError as exc:
        return os_error_why(exc)
    if stat.S_ISDIR(st.st_mode):
        return None
    return f"is {kind_of(st.st_mode) or 'a file'}, not a directory"


def _check_stat(path, st: os.stat_result, max_bytes: int | None) -> None:
    kind = kind_of(st.st_mode)
    if kind is not None:
        raise Unreadable(path, f"is {kind}, not a regular file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise Unreadable(path, f"is {st.st_size:,} bytes, more than the {max_bytes:,} a reader takes")


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file `path` (at most `max_bytes`), without ever blocking.

    FileNotFoundError when it is missing; Unreadable (with why) when it is anything but a
    regular file, a symlink loop, unreadable, or larger than `max_bytes`."""
    return b"".join(_chunks(path, max_bytes))


def read_lines(path: str | Path, max_bytes: int, line_max: int = LINE_MAX_BYTES) -> Iterator[tuple[int, bytes | None, int, bool]]:
    """Each line of the regular file `path`, streamed: (line number from 1, its bytes without the
    newline or None when longer than `line_max`, its length, whether a newline ended it). Checked as
    `read_regular` checks (FileNotFoundError, Unreadable; never blocking, at most `max_bytes`), read in
    chunks: memory holds a chunk and a line, never the file (a 300 MB rows.jsonl was read whole, then
    split: three times its size)."""
    line_no = length = 0  # length: of the line being gathered (its parts are dropped once it passes line_max)
    parts: list[bytes] = []
    for data in _chunks(path, max_bytes):
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            length += len(piece)
            if length <= line_max:
                parts.append(piece)
            elif parts:
                parts = []
            if end < 0:
                break
            line_no += 1
            yield line_no, (b"".join(parts) if length <= line_max else None), length, True
            parts, length, start = [], 0, end + 1
    if length:
        yield line_no + 1, (b"".join(parts) if length <= line_max else None), length, False


def _chunks(path: str | Path, max_bytes: int) -> Iterator[bytes]:
    """The regular file `path` in chunks: stat'ed before it is opened (a FIFO or a device never is),
    opened non-blocking, checked again once open (it may have been swapped since), at most `max_bytes`."""
    check_regular(path, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable(path, os_error_why(exc)) from None
    try:
        _check_stat(path, os.fstat(fd), max_bytes)  # swapped between the stat and the open
        total = 0
        while True:
            try:
                data = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            except OSError as exc:
                raise Unreadable(path, os_error_why(exc)) from None
            if not data:
                return
            total += len(data)
            if total > max_bytes:
                raise Unreadable(path, f"grew past the {max_bytes:,} bytes a reader takes while being read")
            yield data
    finally:
        os.close(fd)
