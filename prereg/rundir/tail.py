"""Incremental reader of a live `rows.jsonl`: poll it, hand back only what is new.

The driver appends one line per finished episode and fsyncs. A reader (the console's watcher, the
Discord notifier) polls the file (`select` on a regular file is always "readable" and would spin a
core), reads from the last offset, holds a partial last line until its newline arrives, and
notices when the file is truncated or replaced (size below our offset, or another inode) so it
can start over. It never re-reads what it has read, and keeps no rows: the caller folds them
(prereg/rundir/fold.py). Each line is checked as `read_rows` checks it (prereg/rundir/rows.py).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from prereg.rundir.rows import BadLine, all_valid, parse_line

CHUNK_BYTES = 4 * 1024 * 1024  # one read; a poll reads at most max_bytes in such chunks


@dataclass
class TailBatch:
    """What one poll found."""

    rows: list[dict] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    restarted: bool = False  # the file was truncated or replaced: drop what was aggregated
    restart_reason: str = ""
    more: bool = False  # stopped at max_bytes with more to read: poll again soon

    def __bool__(self) -> bool:
        return bool(self.rows or self.bad or self.restarted)


class RowsTailer:
    """Offset-based tail of one rows.jsonl.

    `poll()` returns the complete lines appended since the last poll. A missing file is
    not an error (the driver creates it with the first row); it reads as "no rows yet".
    """

    def __init__(self, path: str | Path, max_bytes: int | None = None):
        self.path = Path(path)
        self._path = str(self.path)  # a stat per poll: the string, not pathlib's conversion each time
        self.max_bytes = max_bytes  # None = read everything available on each poll
        self.offset = 0  # bytes consumed, partial line included
        self.line_no = 0  # lines completed so far (1-based numbering of the next is +1)
        self.partial = b""  # the last line's bytes until its newline arrives
        self.exists = False
        self._fd: int | None = None
        self._ino: tuple[int, int] | None = None
        self._mark = b""  # the last bytes read (up to 64), to notice a rewrite in place
        self._mtime_ns = -1

    # -- public -----------------------------------------------------------------

    def poll(self) -> TailBatch:
        """Read what was appended since the last poll (one stat when nothing changed)."""
        batch = TailBatch()
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            if self._fd is not None or self.offset:
                self._restart(batch, "rows.jsonl disappeared")
            self.exists = False
            return batch
        except OSError:  # a symlink loop, a permission: nothing to read (the run's info says why)
            if self._fd is not None or self.offset:
                self._restart(batch, "rows.jsonl can no longer be read")
            self.exists = False
            return batch
        if not stat.S_ISREG(st.st_mode):  # a directory or a device where the rows should be: nothing to read
            if self._fd is not None or self.offset:
                self._restart(batch, "rows.jsonl is no longer a regular file")
            self.exists = False
            return batch
        self.exists = True
        ino = (st.st_dev, st.st_ino)
        if self._fd is None and self._ino is not None:  # released since the last poll: the same file, reopened?
            if ino == self._ino and st.st_size == self.offset and st.st_mtime_ns == self._mtime_ns:
                return batch  # nothing new, and nothing opened
            if ino != self._ino:
                self._restart(batch, "rows.jsonl was replaced (new inode)")
            elif not self._reopen():
                return batch
        if self._fd is not None and ino == self._ino and st.st_size == self.offset and st.st_mtime_ns == self._mtime_ns:
            return batch  # nothing new: the idle path is one stat
        if self._fd is not None and ino != self._ino:
            self._restart(batch, "rows.jsonl was replaced (new inode)")
        elif st.st_size < self.offset:
            self._restart(batch, f"rows.jsonl shrank from {self.offset} to {st.st_size} bytes")
        elif self._fd is not None and self.offset and not self._same_mark():
            self._restart(batch, "rows.jsonl was rewritten in place")
        if self._fd is None:
            try:  # O_NONBLOCK: swapped for a FIFO since the stat, it is refused below, never waited on
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
            except OSError:  # gone, or a symlink loop, since the stat: nothing to read yet
                self.exists = False
                return batch
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode):
                os.close(fd)
                self.exists = False
                return batch
            self._fd = fd
            self._ino = (fst.st_dev, fst.st_ino)
        self._mtime_ns = st.st_mtime_ns
        if st.st_size > self.offset:
            self._read_new(batch, st.st_size)
        return batch

    def torn_tail(self) -> BadLine | None:
        """The held partial line as a torn line, for a run that has ended (no more writes)."""
        if not self.partial.strip():
            return None
        text = self.partial.decode("utf-8", errors="replace")
        return BadLine(self.line_no + 1, text[:200], "torn last line (no newline: a write was cut short)", torn=True)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def release(self) -> None:
        """Close the file between polls (a reader of many runs holds no descriptor per run); the next
        poll reopens it, and starts over if it is no longer the same file."""
        self.close()

    def _reopen(self) -> bool:
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError:
            self.exists = False
            return False
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != self._ino:
            os.close(fd)
            self.exists = False
            return False
        self._fd = fd
        return True

    # -- helpers ----------------------------------------------------------------

    def _read_new(self, batch: TailBatch, size: int) -> None:
        budget = size - self.offset
        if self.max_bytes is not None and budget > self.max_bytes:
            budget = self.max_bytes
            batch.more = True
        while budget > 0:
            data = os.pread(self._fd, min(CHUNK_BYTES, budget), self.offset)
            if not data:
                break
            self._mark = (self._mark + data)[-64:]
            self.offset += len(data)
            budget -= len(data)
            self._split(batch, data)

    def _split(self, batch: TailBatch, data: bytes) -> None:
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]  # b"" when the data ended with a newline
        if not cut:
            return
        lines = data[:cut - 1].decode("utf-8", errors="replace").split("\n")
        first = self.line_no + 1
        self.line_no += len(lines)
        numbered = [(first + i, text) for i, text in enumerate(lines) if text.strip()]
        rows = _parse_all(numbered)
        if rows is not None:
            batch.rows.extend(rows)
            return
        for line_no, text in numbered:  # some line is bad: find which, one by one
            row, bad = parse_line(text, line_no)
            if bad is not None:
                batch.bad.append(bad)
            else:
                batch.rows.append(row)

    def _same_mark(self) -> bool:
        if not self._mark:
            return True
        try:
            return os.pread(self._fd, len(self._mark), self.offset - len(self._mark)) == self._mark
        except OSError:
            return False

    def _restart(self, batch: TailBatch, reason: str) -> None:
        self.close()
        self.offset = 0
        self.line_no = 0
        self.partial = b""
        self._ino = None
        self._mark = b""
        self._mtime_ns = -1
        batch.restarted = True
        batch.restart_reason = reason
        batch.rows.clear()
        batch.bad.clear()


def _parse_all(numbered: list[tuple[int, str]]) -> list[dict] | None:
    """All lines as rows in one json.loads call (several times faster than one call per line),
    each checked against the row schema's types (`prereg.rundir.rows.all_valid`, field by field over the batch),
    or None when any line is not a row, so the caller can name the bad ones and why."""
    if not numbered:
        return []
    try:
        rows = json.loads("[" + ",".join(text for _, text in numbered) + "]")
    except ValueError:
        return None
    if len(rows) != len(numbered):
        return None
    return rows if all_valid(rows) else None
