"""One writer per run directory: an flock held for the driver's whole life (`RunLock`), and who holds
it (`lock_holder`), so a second `fontaine-eval` on the same directory exits 2 naming the holder."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path

from prereg.core.errors import UsageError
from prereg.rundir.files import LOCK, utc_now


class Locked(UsageError):
    """Another live process holds the lock (bad input for whoever wanted it: exit 2)."""

    def __init__(self, path: Path, holder: dict | None):
        self.path, self.holder = Path(path), holder or {}
        super().__init__(f"{path} is held by process {self.holder.get('pid', '?')}")


class FileLock:
    """An exclusive `flock` on one file, held for the holder's whole life.

    The kernel releases it when the process dies (however it dies), so a stale one never
    blocks the next holder; the file's content (pid, time) only names the holder in messages."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self) -> "FileLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise Locked(self.path, lock_holder_at(self.path)) from None
            raise
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "at": utc_now()}).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None


def lock_holder_at(path: str | Path) -> dict | None:
    """Who holds the lock on `path` now ({pid, at}), or None when nobody does."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            for _ in range(50):  # the holder writes its pid just after taking the lock
                try:
                    holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
                except ValueError:
                    holder = {}
                if isinstance(holder, dict) and holder.get("pid"):
                    return holder
                time.sleep(0.01)
            return {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class RunLocked(Locked):
    """Another live process writes the run directory."""

    def __init__(self, run_dir: Path, holder: dict | None):
        super().__init__(Path(run_dir) / LOCK, holder)
        self.run_dir = Path(run_dir)
        pid = self.holder.get("pid")
        who = f"process {pid}" if pid else "another process"
        self.args = (f"{run_dir} is being written by {who} (it holds {run_dir / LOCK}); "
                     "wait for it to end, or stop it (touch STOP), then try again",)


class RunLock(FileLock):
    """One writer per run directory: the driver holds run.lock for its whole life."""

    def __init__(self, run_dir: Path):
        super().__init__(Path(run_dir) / LOCK)
        self.run_dir = Path(run_dir)

    def acquire(self) -> "RunLock":
        try:
            super().acquire()
        except Locked as exc:
            raise RunLocked(self.run_dir, exc.holder) from None
        return self


def lock_holder(run_dir: Path) -> dict | None:
    """Who holds the run directory's lock now (pid, at), or None when nobody does."""
    return lock_holder_at(Path(run_dir) / LOCK)
