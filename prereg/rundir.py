"""The run directory: the one contract the engine, the console and the reports share.

Pure (no Textual, MuJoCo or torch): `engine/`, `console/` and `prereg/` import every file
name, state, schema version and reader/writer of a run directory from here, so the three can
never disagree about what a file is called, what a state means or how a stop was asked for.
docs/run-directory.md describes the same contract in words.

Writes are crash-safe: a JSON document is written to a temporary file, fsynced and renamed
over the old one (a reader sees the old or the new document, never half of one); a JSON-lines
file gets one line at a time, flushed and fsynced (a crash loses at most the line being
written, which readers detect as torn).
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from prereg.errors import EXIT_DONE as EXIT_DONE  # noqa: F401 - re-exported: rd.EXIT_*
from prereg.errors import EXIT_FAILED as EXIT_FAILED  # noqa: F401
from prereg.errors import EXIT_STOPPED as EXIT_STOPPED  # noqa: F401
from prereg.errors import EXIT_USAGE as EXIT_USAGE  # noqa: F401
from prereg.errors import UsageError
from prereg.rows import BadLine, RowsRead, number, read_rows
from prereg.safe_read import JSON_MAX_BYTES, STOP_MAX_BYTES, Unreadable, kind_of, os_error_why, read_regular

# -- file names ------------------------------------------------------------------------

MANIFEST = "manifest.json"  # the driver, at start: what was asked for and what it resolved to
PID = "pid.json"  # the driver: pid, pgid, process create time (reattach checks the create time)
ROWS = "rows.jsonl"  # the driver, the single writer: one row per finished episode
ROWS_SUMMARY = "rows.json"  # the driver, at exit: summary + rows
STATUS = "status.json"  # the driver: state, counts, gates, the structured stop reason
HEARTBEAT = "heartbeat"  # the driver: touched every few seconds while alive
STOP = "STOP"  # anyone: ask the driver to stop at the next episode boundary
LOCK = "run.lock"  # the driver: an flock held for its whole life (one writer per run directory)
LOG = "driver.log"  # the driver's stdout and stderr
VIDEOS = "videos"  # the driver: one mp4 per filmed episode
SET_ASIDE = "rows.set-aside.jsonl"  # a resume: torn lines and error rows moved out of rows.jsonl
PREDICTS = "predicts.jsonl"  # the driver, when asked: one line per observation served
POSTS = "posts.jsonl"  # the Discord notifier's ledger: one line per post Discord confirmed
RESULTS = "results.md"  # the report: the frozen reads of this run
RESULTS_JSON = "results.json"  # the report: this run's primary read and every verdict, for machines (the Discord post)
CHART = "chart.png"  # the report: the per-seed chart
NOTIFY_INFLIGHT = "posts.inflight.json"  # the notifier: the post being sent now (re-sent if it never got recorded)
NOTIFIER_STATUS = "status.json"  # RUNS/.notifier/status.json: the notifier's own state (not a run's status.json)
RESERVE = ".space-reserve"  # the driver: a little disk space it frees to record a failure on a full disk

# the files a started run has; a run directory without them is still starting (or not a run)
CONTRACT_FILES = (MANIFEST, STATUS, PID, HEARTBEAT, ROWS)

MANIFEST_SCHEMA = 1
STATUS_SCHEMA = 1

# -- registered tripwires (gates.tripwires: the shim's checks before the first episode) -----------
# manifest.json's `tripwires` (and status.json's, once they ran): {registered, checked_at, passed,
# failed: ["coverage: wrist_roll 54% uncovered (...)"], arms: [{arm, policy, applies, passed,
# reports: {name: per-joint report}, rig_table, table}], table: the per-joint tables as text}.
# A failure ends the run `failed` before any episode with a reason starting TRIPWIRE_REASON.
TRIPWIRES_FIELD = "tripwires"
TRIPWIRE_REASON = "tripwire"

# -- states ----------------------------------------------------------------------------

STARTING, RUNNING, STOPPING, STOPPED, DONE, FAILED = "starting", "running", "stopping", "stopped", "done", "failed"
STATES = (STARTING, RUNNING, STOPPING, STOPPED, DONE, FAILED)
LIVE_STATES = (STARTING, RUNNING, STOPPING)  # a driver owns the directory
FINAL_STATES = (STOPPED, DONE, FAILED)  # written by a driver as it exits
# what a reader concludes where status.json and the process table disagree or a file cannot be read
DIED, UNREADABLE, UNKNOWN = "died", "unreadable", "unknown"

# -- exit codes of fontaine-eval -------------------------------------------------------

# defined with the errors that carry them (prereg/errors.py), re-exported above: EXIT_DONE 0 (every
# seed ran), EXIT_FAILED 1 (a crash, a full disk, every worker dead), EXIT_USAGE 2 (bad input:
# nothing was run), EXIT_STOPPED 3 (stopped at an episode boundary: STOP, a signal, a gate)

# -- time ------------------------------------------------------------------------------


def utc_now(timespec: str = "seconds") -> str:
    """Now as UTC ISO-8601 with a Z (`timespec`: 'seconds' or 'milliseconds')."""
    return utc_iso(time.time(), timespec)


def utc_iso(ts: float, timespec: str = "seconds") -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


# -- writing and reading files ---------------------------------------------------------


def _json_default(obj: object):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps_line(obj: object) -> str:
    """One JSON-lines line (numpy values converted; NaN refused: it is not JSON)."""
    return json.dumps(obj, default=_json_default, allow_nan=False) + "\n"


def write_text_atomic(path: str | Path, text: str, *, keep_mode: bool = False) -> None:
    """Replace `path` with `text` atomically: tmp in the same folder, fsync, rename.

    `keep_mode` keeps the permissions of the file being replaced (a user's document)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_mode and path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json_atomic(path: str | Path, obj: object) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def append_line(path: str | Path, obj: object) -> None:
    """Append one JSON line to `path`, flushed and fsynced (for ledgers written now and then).

    A regular file only, and never a wait: the file is opened non-blocking, so a FIFO put where
    the ledger was raises OSError (ENXIO with no reader, else 'not a regular file') instead of
    blocking until something reads it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(dumps_line(obj))
        f.flush()
        os.fsync(f.fileno())


def load_json_object(path: str | Path, max_bytes: int = JSON_MAX_BYTES) -> tuple[dict | None, str | None]:
    """(the JSON object, None), or (None, why not): 'missing', or a problem in words.

    Never blocks and never reads without bound: a FIFO, a device, a directory, a symlink loop
    or a file over `max_bytes` is a problem ('status.json: is a FIFO (named pipe), not a
    regular file'), not a hang."""
    path = Path(path)
    try:
        data = read_regular(path, max_bytes)
    except FileNotFoundError:
        return None, "missing"
    except Unreadable as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{path.name}: {exc.strerror or exc}"
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return None, f"{path.name}: not JSON ({str(exc)[:80]})"
    if not isinstance(obj, dict):
        return None, f"{path.name}: not a JSON object"
    return obj, None


def read_json(path: str | Path) -> dict | None:
    """A JSON file's object, or None when it is missing, unreadable or not an object."""
    return load_json_object(path)[0]


def mtime_age_s(path: str | Path, now: float | None = None) -> float | None:
    try:
        return max(0.0, (time.time() if now is None else now) - os.stat(path).st_mtime)
    except OSError:
        return None


class RowWriter:
    """The single writer of rows.jsonl: one line per finished episode, written whole and fsynced.

    A line that cannot be written whole (a full disk) is cut back off the file before the
    error is raised, so the rows already written stay intact and no torn line is left."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:  # O_NONBLOCK: a FIFO put where the rows go is refused below, never waited on
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY, 0o644)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ELOOP):  # a FIFO with no reader, a directory, a loop
                raise Unreadable(self.path, _not_regular_why(self.path, exc)) from None
            raise
        st = os.fstat(fd)
        kind = kind_of(st.st_mode)
        if kind is not None:
            os.close(fd)
            raise Unreadable(self.path, f"is {kind}, not a regular file")
        self._fd = fd
        self.identity = (st.st_dev, st.st_ino)  # the file this writer appends to; `replaced()` compares

    def replaced(self) -> str | None:
        """Why the path no longer names the file this writer appends to (deleted, replaced by
        another file or a directory), or None while it does. Rows appended to a file nobody can
        see would be lost, so the driver checks this at each row and heartbeat."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return "deleted"
        except OSError as exc:
            return os_error_why(exc)
        if (st.st_dev, st.st_ino) == self.identity:
            return None
        kind = kind_of(st.st_mode)
        return f"replaced by {kind}" if kind else "replaced by another file"

    def append(self, row: dict) -> None:
        data = dumps_line(row).encode("utf-8")
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            os.fsync(self._fd)
        except OSError:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _not_regular_why(path: Path, exc: OSError) -> str:
    try:
        kind = kind_of(os.stat(path).st_mode)
    except OSError as again:
        return os_error_why(again)
    return f"is {kind}, not a regular file" if kind else os_error_why(exc)


# -- liveness: pid, heartbeat, the one-writer lock --------------------------------------


def write_pid(run_dir: Path) -> dict:
    import psutil

    me = psutil.Process()
    info = {"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time(), "launched_at": utc_now()}
    write_json_atomic(run_dir / PID, info)
    return info


def touch_heartbeat(run_dir: Path) -> None:
    p = run_dir / HEARTBEAT
    p.touch()
    os.utime(p)


def heartbeat_age_s(run_dir: Path, now: float | None = None) -> float | None:
    return mtime_age_s(run_dir / HEARTBEAT, now)


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


# -- stopping: the STOP request and the structured stop reason --------------------------

BY_USER, BY_GATE, BY_SIGNAL, BY_DECIDED, BY_ERROR = "user", "gate", "signal", "decided", "error"
BY_KILL = "kill"  # the console killed a driver that could not write its end; the console wrote it (console/kill.py)
STOP_BY = (BY_USER, BY_GATE, BY_SIGNAL, BY_DECIDED, BY_ERROR, BY_KILL)


@dataclass(frozen=True)
class StopReason:
    """Why a run stopped (or was asked to): who, which gate if a gate, and the detail in words."""

    by: str  # one of STOP_BY
    detail: str = ""
    gate: str | None = None  # the gate's name when by == "gate" (gpu_hours, pace, ...)
    who: str | None = None  # the person or program that asked, when known
    at: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: object) -> "StopReason | None":
        if not isinstance(d, dict):
            return None
        by = d.get("by")
        by = by if isinstance(by, str) and by in STOP_BY else BY_USER  # an older or hand-written STOP: a person asked
        gate = one_line(d["gate"], 40) if isinstance(d.get("gate"), str) else None
        detail = d.get("detail", d.get("reason", ""))
        detail = one_line(detail if isinstance(detail, str) else json.dumps(detail) if detail is not None else "")
        who = one_line(d["who"], 80) if isinstance(d.get("who"), str) else None
        at = one_line(d["at"], 40) if isinstance(d.get("at"), str) else None
        return cls(by=by, detail=detail, gate=gate or None, who=who or None, at=at or None)

    def text(self) -> str:
        """One line for people: 'gate pace: projected wall 1.3 h > 1.0 h', 'user (ana): stop key'."""
        head = f"gate {self.gate}" if self.by == BY_GATE and self.gate else self.by
        if self.who and self.by != BY_GATE:
            head += f" ({self.who})"
        return f"{head}: {self.detail}" if self.detail else head


STOP_DETAIL_MAX = 200  # characters of a stop reason's detail: it becomes status.json's one-line reason


def one_line(text: str, limit: int = STOP_DETAIL_MAX) -> str:
    """`text` as one printable line of at most `limit` characters: control, format and separator
    characters (newlines, escapes, bidi overrides, NULs) become spaces or '?', runs of spaces one."""
    out = []
    for ch in text[: limit * 4]:
        if ch.isprintable():
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        else:
            out.append("?")
    line = " ".join("".join(out).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def write_stop(run_dir: str | Path, reason: StopReason, *, only_if_absent: bool = True) -> Path:
    """Ask the run's driver to stop at the next episode boundary (atomically; a first request wins)."""
    path = Path(run_dir) / STOP
    if only_if_absent and path.exists():
        return path
    if reason.at is None:
        reason = StopReason(reason.by, reason.detail, reason.gate, reason.who, utc_now())
    write_json_atomic(path, reason.as_dict())
    return path


EMPTY_STOP_DETAIL = "STOP file present"  # a `touch STOP`, or a STOP read while its writer had written nothing yet


def read_stop(run_dir: str | Path) -> StopReason | None:
    """The STOP request, if any. A STOP that is not our JSON (a person's `touch`) still stops,
    and so does one that cannot be read (a FIFO, a directory, a symlink loop): it is never
    opened for a blocking read, and the reason says what it is."""
    p = Path(run_dir) / STOP
    try:
        data = read_regular(p, STOP_MAX_BYTES)
    except FileNotFoundError:
        return None
    except Unreadable as exc:
        return StopReason(BY_USER, f"STOP present (unreadable: {exc.why})")
    except OSError as exc:
        return StopReason(BY_USER, f"STOP present (unreadable: {exc.strerror or exc})")
    text = data.decode("utf-8", errors="replace").strip()
    if not one_line(text):
        return StopReason(BY_USER, EMPTY_STOP_DETAIL)
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return StopReason(BY_USER, one_line(text))  # a person's words (or any bytes): one printable line
    return StopReason.from_dict(obj) or StopReason(BY_USER, one_line(text))


def status_stop(status: "Status | Mapping | None") -> StopReason | None:
    """The structured stop reason a status.json carries (None while nothing asked for a stop)."""
    status = Status.of(status)
    return status.stop if status is not None else None


def status_reason_text(status: "Status | Mapping | None") -> str:
    """status.json's reason in words: the failure, or the stop reason, or ''."""
    status = Status.of(status)
    return status.reason_text if status is not None else ""


# -- resume ----------------------------------------------------------------------------


def set_aside_bad_rows(run_dir: Path) -> tuple[RowsRead, list[BadLine]]:
    """Before a resume: keep the good rows, move torn/corrupt lines (and error rows, which the
    resume re-runs) to rows.set-aside.jsonl, and rewrite rows.jsonl atomically without them."""
    path = run_dir / ROWS
    read = read_rows(path)
    if read.problem is not None:  # a FIFO, a directory, a loop: nothing to keep, and nothing to replace blindly
        raise Unreadable(path, read.problem)
    keep = [r for r in read.rows if r.get("status") == "ok"]
    dropped_rows = [r for r in read.rows if r.get("status") != "ok"]
    if not read.bad and not dropped_rows:
        return read, []
    stamp = utc_now()
    with open(run_dir / SET_ASIDE, "a", encoding="utf-8") as f:
        for b in read.bad:
            f.write(json.dumps({"set_aside_at": stamp, "line": b.line_no, "reason": b.reason, "text": b.text}) + "\n")
        for r in dropped_rows:
            f.write(json.dumps({"set_aside_at": stamp, "reason": "error row re-run on resume", "row": r}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    write_text_atomic(path, "".join(dumps_line(r) for r in keep))
    return RowsRead(rows=keep, bad=read.bad), read.bad


# -- names made of parts ----------------------------------------------------------------

RUN_STAMP_FORMAT = "%Y%m%d-%H%M%S"  # a run id ends with its start in UTC: <prereg-id>-<arm>-20260101-120000


RUN_STAMP_RE = re.compile(r"(\d{8}-\d{6})$")  # what RUN_STAMP_FORMAT writes, at the end of a run id


def stamp_of(run_id: str) -> str | None:
    """The UTC start a run id ends with ('20260101-120000'), or None for an id without one."""
    m = RUN_STAMP_RE.search(run_id)
    return m.group(1) if m else None


def run_stamp(now: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if now is None else now, tz=timezone.utc).strftime(RUN_STAMP_FORMAT)


def new_run_id(prereg_id: str, arm: str, now: float | None = None) -> str:
    """The run id the console and fontaine-eval give a run of ARM of a pre-registration."""
    return f"{prereg_id}-{arm}-{run_stamp(now)}"


def done_stop_name(ts: float) -> str:
    """What a STOP the driver has acted on is renamed to (kept, so a resume starts clean): STOP.<unix time>.done."""
    return f"{STOP}.{int(ts)}.done"


# -- the small files as types --------------------------------------------------------------
# status.json and manifest.json are other processes' files: every field is type-checked on the
# way in. A field of the wrong type reads as None and is named in `.problems`, never a crash.
# Writers build the same types and write `to_dict()`: one definition of each field's type.


def typed_field(d: Mapping, key: str, kinds: tuple, problems: list[str], where: str):
    """`d[key]` when it is one of `kinds` (a number finite); else None, with the problem added to
    `problems` (a missing key or null is None and no problem). Used by every typed file here and by
    the notifier's status (console/notify/ledger.py)."""
    v = d.get(key)
    if v is None:
        return None
    ok = isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds)
    if ok and isinstance(v, float) and not math.isfinite(v):
        ok = False
    if not ok:
        problems.append(f"{where}: {key} is {type(v).__name__} {str(v)[:40]!r}, not {' or '.join(k.__name__ for k in kinds)}")
        return None
    return float(v) if float in kinds and int in kinds and not isinstance(v, bool) else v


_NUM = (int, float)


@dataclass(frozen=True)
class GateSpec:
    """The run's gates (manifest.json's `gates`; a plan's `gates:`), evaluated by prereg/gates.py."""

    gpu_hours: float | None = None  # budget of allocated GPU-hours; None = no gate
    pace_limit_hours: float | None = None  # max projected wall time of the whole run
    pace_after_episodes: int = 10  # the pace tripwire is judged once this many episodes are done
    stall_factor: float = 4.0  # heartbeat age beyond this many median episode walls is a stall
    stall_min_s: float = 60.0  # ... and never below this many seconds
    warn_fraction: float = 0.8  # warn at this fraction of a limit
    decided: str | None = None  # "stop": stop once every decision rule on the arm is settled (prereg/curtail.py)
    sequential: dict | None = None  # {p0, p1, alpha, beta}: a registered SPRT of the success rate (prereg/sequential.py)
    tripwires: dict | None = None  # the shim's registered tripwires, run before the first episode (prereg.model.Tripwires.as_dict())

    @classmethod
    def from_dict(cls, d: object) -> "GateSpec":
        """A GateSpec from a file someone else wrote (a manifest's `gates`): a field of the wrong
        type (a string, a bool, NaN, a list) is left at its default, never passed on to crash a reader.
        The driver's flag names are accepted too."""
        if not isinstance(d, Mapping):
            return cls()
        kw: dict = {}
        for key, v in d.items():
            name = _GATE_ALIASES.get(key, key)
            if name in ("decided",):
                if isinstance(v, str):
                    kw[name] = v
            elif name in ("sequential", "tripwires"):
                if isinstance(v, dict):
                    kw[name] = v
            elif name == "pace_after_episodes":
                if type(v) is int and v >= 0:
                    kw[name] = v
            elif name in cls.__dataclass_fields__:
                x = number(v)
                if x is not None and x >= 0:
                    kw[name] = x
        return cls(**kw)

    def to_dict(self) -> dict:
        """manifest.json's `gates` (what the driver records; `from_dict` reads it back equal)."""
        return asdict(self)


_GATE_ALIASES = {"gpu_hours_gate": "gpu_hours", "pace_limit_h": "pace_limit_hours"}


@dataclass(frozen=True)
class Status:
    """status.json, typed: the driver writes `to_dict()` of one (the console's kill record too); a
    reader gets one from `read_snapshot` (`raw` keeps every field as read). The fields are in the
    order the driver writes them."""

    schema: int | None = None
    state: str | None = None
    run_id: str | None = None
    arm: str | None = None
    done: int | None = None
    total: int | None = None
    ok: int | None = None
    errors: int | None = None
    successes: int | None = None
    elapsed_s: float | None = None
    projected_wall_s: float | None = None
    eta_s: float | None = None
    pace: dict | None = None  # prereg.gates.PaceInputs.as_dict() + projected_wall_s, naive_projected_wall_s
    settled: dict | None = None  # curtailment (prereg/curtail.py)
    sequential: dict | None = None  # the registered sequential test's decision (prereg/sequential.py)
    arms: list | None = None  # a comparison run's two arms (written only in one) ...
    comparison: dict | None = None  # ... and its latest decision (prereg.comparison.Decision.as_dict())
    gpu_hours: float | None = None
    gpu_hours_source: str | None = None
    gpu_busy_hours: float | None = None
    gpu_busy_source: str | None = None
    gpus: int | None = None
    mean_batch: float | None = None
    predict_rounds: int | None = None
    worker_crashes: int | None = None
    lost_seeds: list | None = None  # seeds (or [arm, seed]) that never got a row: aborted in flight, or a kill
    in_flight_seeds: list | None = None  # the seeds whose episodes were running when this was written
    executor: dict | None = None
    reason: str | None = None
    stop: StopReason | None = None
    gates: list | None = None  # the gate readings (prereg.gates.GateReading.as_dict() each)
    tripwires: dict | None = None  # the registered tripwires' record (TRIPWIRES_FIELD), once they ran
    pid: int | None = None
    updated_at: str | None = None
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    problems: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def reason_text(self) -> str:
        """The reason in words: the failure, or the stop reason, or ''."""
        return self.reason or (self.stop.text() if self.stop else "")

    @classmethod
    def of(cls, status: "Status | Mapping | None") -> "Status | None":
        """A Status from a Status, a status.json object or None (no status.json): None stays None."""
        return status if status is None or isinstance(status, Status) else cls.from_dict(status)

    @classmethod
    def from_dict(cls, d: object) -> "Status":
        if not isinstance(d, Mapping):
            return cls(problems=(f"{STATUS}: not a JSON object",))
        probs: list[str] = []
        kw = {name: typed_field(d, name, kinds, probs, STATUS) for name, kinds in _STATUS_FIELDS.items()}
        if kw["state"] is not None and kw["state"] not in STATES:
            probs.append(f"{STATUS}: state {kw['state'][:40]!r} is not one of {', '.join(STATES)}")
        stop = StopReason.from_dict(d.get("stop")) if d.get("stop") is not None else None
        return cls(**kw, stop=stop, raw=dict(d), problems=tuple(probs))

    def to_dict(self) -> dict:
        """status.json: every field in order (None as null; `arms`/`comparison` only in a comparison
        run, `tripwires` only once they ran), over whatever else `raw` held."""
        out = dict(self.raw)
        for name in _STATUS_ORDER:
            v = getattr(self, name)
            if v is None and name in _STATUS_ONLY_WITH and getattr(self, _STATUS_ONLY_WITH[name]) is None and name not in out:
                continue
            out[name] = v.as_dict() if isinstance(v, StopReason) else v
        return out


_STATUS_FIELDS = {
    "schema": (int,), "state": (str,), "run_id": (str,), "arm": (str,), "done": (int,), "total": (int,), "ok": (int,),
    "errors": (int,), "successes": (int,), "elapsed_s": _NUM, "projected_wall_s": _NUM, "eta_s": _NUM,
    "pace": (dict,), "settled": (dict,), "sequential": (dict,), "arms": (list,), "comparison": (dict,),
    "gpu_hours": _NUM, "gpu_hours_source": (str,), "gpu_busy_hours": _NUM, "gpu_busy_source": (str,), "gpus": (int,),
    "mean_batch": _NUM, "predict_rounds": (int,), "worker_crashes": (int,), "lost_seeds": (list,),
    "in_flight_seeds": (list,), "executor": (dict,),
    "reason": (str,), "gates": (list,), TRIPWIRES_FIELD: (dict,), "pid": (int,), "updated_at": (str,),
}
_STATUS_ORDER = tuple(f for f in Status.__dataclass_fields__ if f not in ("raw", "problems"))
_STATUS_ONLY_WITH = {"arms": "arms", "comparison": "arms", TRIPWIRES_FIELD: TRIPWIRES_FIELD}  # written when that field is set


@dataclass(frozen=True)
class PreregRef:
    """Which frozen section a run was launched from (manifest.json's `prereg`)."""

    id: str | None
    sha256: str | None
    path: str | None


@dataclass(frozen=True)
class Manifest:
    """manifest.json, typed (the driver writes it at start; `raw` keeps every field as read)."""

    run_id: str | None = None
    arm: str | None = None  # (an early manifest's {name: ...} reads as its name)
    prereg: PreregRef | None = None
    policy: dict | None = None  # the PolicySpec (an early manifest's bare kind reads as {kind, its flat settings})
    policy_resolved: dict | None = None  # what the policy loaded (a comparison run: one per arm, by arm)
    env: dict | None = None  # {name, sha256, file?}: the scene the run ran (absent before envs: boat-on-disk)
    seeds: tuple[int, ...] | None = None
    episode_seconds: float | None = None
    workers: int | None = None
    gates: GateSpec = field(default_factory=GateSpec)
    config: dict | None = None  # engine.driver.RunConfig.as_dict(): what a resume starts from
    started_at: str | None = None
    tripwires: dict | None = None  # the registered tripwires' record (TRIPWIRES_FIELD), once they ran
    resumes: tuple[dict, ...] = ()
    arms: tuple[str, ...] = ()  # a comparison run (`fontaine-eval --arms A,B`): its two arms, A then B
    comparison: dict | None = None  # ... and its registered comparison (prereg.comparison.ComparisonSpec, as recorded)
    legacy_prereg_id: str | None = None  # an early manifest: `prereg` as a bare id, or `prereg_id`
    legacy_prereg_sha256: str | None = None  # ... and `prereg_sha256`
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    problems: tuple[str, ...] = ()

    @property
    def is_comparison(self) -> bool:
        """A comparison run: one directory, both arms' rows, each row naming its `arm`."""
        return len(self.arms) == 2

    @property
    def policy_kind(self) -> str | None:
        k = (self.policy or {}).get("kind")
        return k if isinstance(k, str) else None

    @property
    def prereg_id(self) -> str | None:
        return (self.prereg.id if self.prereg else None) or self.legacy_prereg_id

    @property
    def prereg_sha256(self) -> str | None:
        return (self.prereg.sha256 if self.prereg else None) or self.legacy_prereg_sha256

    def recorded(self, key: str) -> bool:
        """Whether manifest.json has `key` at all, of whatever type (a field from before it existed is absent)."""
        return key in self.raw

    @classmethod
    def of(cls, manifest: "Manifest | Mapping | None") -> "Manifest | None":
        """A Manifest from a Manifest, a manifest.json object or None (no manifest): None stays None."""
        return manifest if manifest is None or isinstance(manifest, Manifest) else cls.from_dict(manifest)

    @classmethod
    def from_dict(cls, d: object) -> "Manifest":
        if not isinstance(d, Mapping):
            return cls(problems=(f"{MANIFEST}: not a JSON object",))
        d = dict(d)
        arm = d.get("arm")
        if isinstance(arm, dict) and isinstance(arm.get("name"), str):
            d["arm"] = arm["name"]
        probs: list[str] = []
        kw = {name: typed_field(d, name, kinds, probs, MANIFEST) for name, kinds in _MANIFEST_FIELDS.items()}
        policy = d.get("policy")
        if isinstance(policy, str):  # an early manifest: the kind alone, its settings flat (or under `settings`)
            flat = {**d, **next((d[k] for k in ("arm_settings", "settings") if isinstance(d.get(k), dict)), {})}
            policy = {"kind": policy, **{k: flat[k] for k in _EARLY_POLICY_KEYS if flat.get(k) is not None}}
        kw["policy"] = policy if isinstance(policy, dict) else None
        pr = d.get("prereg")
        ref = None
        if isinstance(pr, dict):
            ref = PreregRef(*(pr.get(k) if isinstance(pr.get(k), str) else None for k in ("id", "sha256", "path")))
        elif isinstance(pr, str):
            kw["legacy_prereg_id"] = pr
        elif pr is not None:
            probs.append(f"{MANIFEST}: prereg is {type(pr).__name__}, not an object")
        for key in ("prereg_id", "prereg_sha256"):
            if kw.get(f"legacy_{key}") is None and isinstance(d.get(key), str):
                kw[f"legacy_{key}"] = d[key]
        seeds = d.get("seeds")
        if isinstance(seeds, list) and all(type(x) is int for x in seeds):
            kw["seeds"] = tuple(seeds)
        elif seeds is not None:
            probs.append(f"{MANIFEST}: seeds is not a list of whole numbers")
        resumes = d.get("resumes")
        kw["resumes"] = tuple(x for x in resumes if isinstance(x, dict)) if isinstance(resumes, list) else ()
        arms = d.get("arms")
        if isinstance(arms, list) and arms:
            names = [a.get("arm") if isinstance(a, dict) else None for a in arms]
            if len(names) == 2 and all(isinstance(n, str) and n for n in names) and names[0] != names[1]:
                kw["arms"] = tuple(names)
            else:
                probs.append(f"{MANIFEST}: arms is not two different arms ({{arm, policy}} each)")
        return cls(**kw, prereg=ref, gates=GateSpec.from_dict(d.get("gates")), raw=dict(d), problems=tuple(probs))

    def arm_view(self, arm: str) -> "Manifest | None":
        """One arm of a comparison run, as a run of that arm alone would record it: `arm`, its `policy`
        and `policy_resolved`, the hash of the section that registers it; None when this is not a
        comparison run of `arm`. (`fontaine-eval --arms A,B` records `arm` "A-vs-B", A's policy at the
        top, both under `arms`, each arm's section under `prereg.arms`.)"""
        arms = self.raw.get("arms")
        entry = next((a for a in arms if isinstance(a, dict) and a.get("arm") == arm), None) if isinstance(arms, list) else None
        if entry is None:
            return None
        view = dict(self.raw, arm=arm, policy=entry.get("policy"))
        resolved = self.raw.get("policy_resolved")
        if isinstance(resolved, dict) and isinstance(resolved.get(arm), dict):
            view["policy_resolved"] = resolved[arm]
        pre = self.raw.get("prereg")
        if isinstance(pre, dict):
            per_arm = (pre.get("arms") or {}).get(arm) if isinstance(pre.get("arms"), dict) else None
            view["prereg"] = dict(pre, sha256=per_arm.get("sha256") if isinstance(per_arm, dict) else pre.get("sha256"))
        return Manifest.from_dict(view)

    def to_dict(self) -> dict:
        out = dict(self.raw)
        for k in _MANIFEST_FIELDS:
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.policy is not None:
            out["policy"] = self.policy
        if self.seeds is not None:
            out["seeds"] = list(self.seeds)
        if self.prereg is not None:
            out["prereg"] = asdict(self.prereg)
        if "gates" in out or self.gates != GateSpec():
            out["gates"] = self.gates.to_dict()
        return out


_EARLY_POLICY_KEYS = ("checkpoint", "decode", "dtype", "convmap", "revision")
_MANIFEST_FIELDS = {
    "run_id": (str,), "arm": (str,), "policy_resolved": (dict,), "env": (dict,), "episode_seconds": _NUM,
    "workers": (int,), "config": (dict,), "started_at": (str,), "comparison": (dict,), TRIPWIRES_FIELD: (dict,),
}


def tripwire_table(status: "Status | Mapping | None", manifest: "Manifest | Mapping | None" = None) -> tuple[bool | None, str]:
    """(passed, the per-joint tables as text) of a run's registered tripwires, from status.json's
    record, else the manifest's (typed, or the files' objects); (None, '') when none ran.
    Never raises on a record someone else wrote."""
    for holder in (Status.of(status), Manifest.of(manifest)):
        record = holder.tripwires if holder is not None else None
        if isinstance(record, dict):
            passed = record.get("passed")
            table = record.get("table")
            return (passed if isinstance(passed, bool) else None), (table if isinstance(table, str) else "")
    return None, ""


def read_manifest(run_dir: str | Path) -> tuple[Manifest | None, str | None]:
    """(the run's manifest, None), or (None, why not): 'missing', or a problem in words (never blocks)."""
    d, why = load_json_object(Path(run_dir) / MANIFEST)
    return (None, why) if d is None else (Manifest.from_dict(d), None)


@dataclass(frozen=True)
class Snapshot:
    """One read of a run directory's small files: what the console, the notifier, the report and a
    resume read. Never raises and never blocks: a file that cannot be read is in `unreadable`."""

    run_dir: Path
    manifest: Manifest | None
    status: Status | None
    pid: dict | None
    stop: StopReason | None
    heartbeat_mtime: float | None
    rows_size: int | None
    missing: tuple[str, ...] = ()
    unreadable: dict = field(default_factory=dict)  # file name -> why

    @property
    def unreadable_lines(self) -> list[str]:
        """One line per file that could not be read, naming the file ('status.json: is a FIFO ...')."""
        return [why if why.startswith(name) else f"{name}: {why}" for name, why in self.unreadable.items()]

    @property
    def problems(self) -> tuple[str, ...]:
        """The fields of status.json and manifest.json that cannot be read, one line each naming the
        file and the field ('status.json: elapsed_s is str 'x', not int or float'); a status.json
        without a state is one too."""
        out = [p for doc in (self.status, self.manifest) if doc is not None for p in doc.problems]
        if self.status is not None and self.status.state is None and not any(p.startswith(f"{STATUS}: state ") for p in out):
            out.append(f"{STATUS}: no state")
        return tuple(out)


def read_snapshot(run_dir: str | Path) -> Snapshot:
    """Read manifest.json, status.json, pid.json, STOP, the heartbeat's and rows.jsonl's stat."""
    run_dir = Path(run_dir)
    missing: list[str] = []
    unreadable: dict[str, str] = {}

    def obj(name: str) -> dict | None:
        d, why = load_json_object(run_dir / name)
        if why == "missing":
            missing.append(name)
        elif why:
            unreadable[name] = why
        return d

    man, st, pid = obj(MANIFEST), obj(STATUS), obj(PID)
    hb = None
    try:
        hb = os.stat(run_dir / HEARTBEAT).st_mtime
    except FileNotFoundError:
        missing.append(HEARTBEAT)
    except OSError as exc:
        unreadable[HEARTBEAT] = os_error_why(exc)
    size = None
    try:
        s = os.stat(run_dir / ROWS)
        kind = kind_of(s.st_mode)
        if kind is not None:
            unreadable[ROWS] = f"is {kind}, not a regular file"
        else:
            size = s.st_size
    except FileNotFoundError:
        missing.append(ROWS)
    except OSError as exc:
        unreadable[ROWS] = os_error_why(exc)
    return Snapshot(run_dir, None if man is None else Manifest.from_dict(man), None if st is None else Status.from_dict(st),
                    pid, read_stop(run_dir), hb, size, tuple(missing), unreadable)
