"""The driver's output, detached from the terminal: a closed terminal can never fail a write.

A run started in a tmux pane, then `tmux kill-server`: the kernel hangs the terminal up, every
write to it fails with EIO from then on (`isatty` says False too), and SIGHUP arrives. The driver
printed to the terminal, so the first line after the hangup (the SIGHUP handler's own "stopping")
raised OSError and the run ended `failed | driver crashed ... (a bug)` (issue 43).

`detach(log_path)` puts a pipe where the terminal was (fds 1 and 2, whichever are a terminal) before
the run starts: the driver, its libraries and its workers write to the pipe, never to the terminal,
and one thread copies the pipe to the terminal. When the terminal is gone (a write fails, or a
SIGHUP says so: `hangup`) the thread appends to driver.log instead; nothing else notices. `reattach`
at the end of the run puts the terminal back on fds 1 and 2 (driver.log when it is gone), so the
summary lines after the run never meet a closed terminal either.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

_COPY_JOIN_S = 2.0  # at the end: how long the copier may take to pass on what is still in the pipe


class _Detached:
    def __init__(self, log_path: Path, fds: list[int]):
        self.log_path = Path(log_path)
        self.fds = fds  # the fds (1, 2) that were the terminal and now are the pipe
        self.terminal = os.dup(fds[0])  # the terminal itself, for the copier alone
        read, write = os.pipe()
        for fd in fds:
            os.dup2(write, fd)  # inheritable: a worker started from here writes to the pipe too
        os.close(write)
        self.pipe = read
        self.gone = False
        self._log_fd: int | None = None
        self.thread = threading.Thread(target=self._copy, name="fontaine-terminal", daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        while True:
            try:
                data = os.read(self.pipe, 65536)
            except OSError:
                return
            if not data:
                return  # every writer closed its end
            if not self.gone:
                try:
                    _write_all(self.terminal, data)
                    continue
                except OSError:  # EIO: the terminal was closed (EPIPE, EBADF: gone as well)
                    self.gone = True
            self._to_log(data)

    def _to_log(self, data: bytes) -> None:
        try:
            if self._log_fd is None:
                self._log_fd = _open_log(self.log_path)
            _write_all(self._log_fd, data)
        except OSError:
            pass  # a full disk or a deleted run directory: the line is lost, the run goes on

    def reattach(self) -> None:
        """fds 1 and 2 back on the terminal (on driver.log when it is gone); the pipe drained."""
        _flush_std()
        target = None
        if self.gone:
            try:
                target = _open_log(self.log_path)
            except OSError:
                target = None
        for fd in self.fds:
            try:
                os.dup2(target if target is not None else self.terminal, fd)
            except OSError:
                pass
        if target is not None:
            os.close(target)
        self.thread.join(_COPY_JOIN_S)  # EOF once no worker holds the pipe any more
        if not self.thread.is_alive():
            for fd in (self.pipe, self.terminal, self._log_fd):
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass


_active: _Detached | None = None


def detach(log_path: str | Path) -> None:
    """From now on nothing this process or its children write reaches the terminal directly (module doc).
    Nothing to do when neither stdout nor stderr is a terminal (a pipe, a file: the console's runs)."""
    global _active
    if _active is not None:
        return
    fds = [fd for fd in (1, 2) if _isatty(fd)]
    if not fds:
        return
    _flush_std()
    try:
        _active = _Detached(Path(log_path), fds)
    except OSError:
        _active = None


def hangup(log_path: str | Path) -> None:
    """SIGHUP: the terminal is gone (or about to be): what is still written goes to driver.log. Safe in a
    signal handler: a flag when detached; else (a driver `detach` was not asked of) fds 1 and 2 are
    pointed at driver.log, whether or not they still say they are a terminal (after a hangup they do not)."""
    if _active is not None:
        _active.gone = True
        return
    try:
        fd = _open_log(Path(log_path))
    except OSError:
        return
    for target in (1, 2):
        try:
            if _isatty(target) or _hung_up(target):
                os.dup2(fd, target)
        except OSError:
            pass
    os.close(fd)


def reattach() -> None:
    """At the end of the run: the terminal back (driver.log if it is gone)."""
    global _active
    if _active is not None:
        active, _active = _active, None
        active.reattach()


def terminal_gone() -> bool:
    return _active is not None and _active.gone


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _hung_up(fd: int) -> bool:
    """A terminal after its hangup: no longer a tty to isatty, but still a character device."""
    import stat

    try:
        return stat.S_ISCHR(os.fstat(fd).st_mode) and not os.path.samestat(os.fstat(fd), os.stat(os.devnull))
    except OSError:
        return False


def _open_log(path: Path) -> int:
    # O_NONBLOCK: a FIFO put where driver.log goes is refused (ENXIO), never waited on
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK, 0o644)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
