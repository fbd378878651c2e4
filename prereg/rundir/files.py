"""The run directory's files: their names, the states, atomic writes and bounded reads, the pid and
heartbeat, run ids. Part of the one contract the engine, the console and the reports share.

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
import json
import math
import os
import re
import stat
import tempfile
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from prereg.core.safe_read import JSON_MAX_BYTES, Unreadable, check_output, kind_of, os_error_why, read_regular
from prereg.rundir.rows import BadLine, RowsRead, read_rows

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
VIDEOS = "videos"  # the driver: one mp4 per filmed episode (video_relpath names it)
SET_ASIDE = "rows.set-aside.jsonl"  # a resume: torn lines and error rows moved out of rows.jsonl
PREDICTS = "predicts.jsonl"  # the driver, when asked: one line per observation served
POSTS = "posts.jsonl"  # the Discord notifier's ledger: one line per post Discord confirmed
RESULTS = "results.md"  # the report: the frozen reads of this run
RESULTS_JSON = "results.json"  # the report: this run's primary read and every verdict, for machines (the Discord post)
CHART = "chart.png"  # the report: the per-seed chart
RESULTS_HTML = "results.html"  # the report: this run's results as a page (prereg/outputs/page.py), videos linked relatively
NOTIFY_INFLIGHT = "posts.inflight.json"  # the notifier: the post being sent now (re-sent if it never got recorded)
NOTIFIER_STATUS = "status.json"  # RUNS/.notifier/status.json: the notifier's own state (not a run's status.json)
RESERVE = ".space-reserve"  # the driver: a little disk space it frees to record a failure on a full disk
REAL = "real.jsonl"  # the operator (console or `fontaine-prereg import-real`): one line per real trial (prereg/rundir/real.py)
SIM_PREDICTIONS = "sim_predictions.jsonl"  # the engine: one line per seed, its K jittered rollouts (prereg/rundir/real.py)
REAL_SETUP = "real"  # the engine (--sim-predictions): a folder, per selected seed its poses and front view (prereg/rundir/real_setup.py)

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

# defined with the errors that carry them (prereg/core/errors.py), re-exported above: EXIT_DONE 0 (every
# seed ran), EXIT_FAILED 1 (a crash, a full disk, every worker dead), EXIT_USAGE 2 (bad input:
# nothing was run), EXIT_STOPPED 3 (stopped at an episode boundary: STOP, a signal, a gate)

# -- time ------------------------------------------------------------------------------


def utc_now(timespec: str = "seconds") -> str:
    """Now as UTC ISO-8601 with a Z (`timespec`: 'seconds' or 'milliseconds')."""
    return utc_iso(time.time(), timespec)


def utc_iso(ts: float, timespec: str = "seconds") -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


def parse_utc(text: object) -> datetime | None:
    """A time this contract wrote (`utc_now`: ISO-8601, 'Z' or an offset) as an aware datetime; None for
    anything else (a missing field, another type, a malformed string). A naive time reads as UTC."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


ROW_TIMES = ("started_at", "finished_at")  # what a row says of when its episode ran
CLOCK_SLACK_S = 2.0  # stamps are written to the second by one clock: closer than this is no disagreement


def first_row_at(rows, started_at: object = None, *also: object) -> str | None:
    """When a run's data first existed: the earliest of everything that says when (its rows' `started_at`
    and `finished_at` as written, the run's start, the manifest's `started_at`, and `also`: a resume's
    time), so that no one record, edited later, can move the data's start past a registration; None
    when nothing says (not known)."""
    times = [(t, v) for v in (*(r.get(k) for r in rows if isinstance(r, dict) for k in ROW_TIMES), started_at, *also)
             for t in (parse_utc(v),) if t is not None]
    return min(times)[1] if times else None


def time_problems(rows, started_at: object = None, ended_at: object = None) -> list[str]:
    """Where a run's records disagree on when its data was made (each a provenance problem): a row stamped
    before the run started (the manifest's `started_at`), or after the ended run last wrote status.json
    (`ended_at`, its `updated_at`); rows whose times were edited show so."""
    start, end = parse_utc(started_at), parse_utc(ended_at)
    early, late = [], []
    for r in rows:
        if not isinstance(r, dict):
            continue
        for k in ROW_TIMES:
            t = parse_utc(r.get(k))
            if t is None:
                continue
            if start is not None and (start - t).total_seconds() > CLOCK_SLACK_S:
                early.append(r.get("seed"))
            elif end is not None and (t - end).total_seconds() > CLOCK_SLACK_S:
                late.append(r.get("seed"))
    out = []
    if early:
        out.append(f"rows of seeds {_seeds(early)} are stamped before the run started ({started_at}): the rows' "
                   "times or the manifest were changed")
    if late:
        out.append(f"rows of seeds {_seeds(late)} are stamped after the run ended ({STATUS} last written "
                   f"{ended_at}): the rows' times or {STATUS} were changed")
    return out


def _seeds(seeds: list) -> str:
    got = sorted({s for s in seeds if type(s) is int})
    return ", ".join(map(str, got[:10])) + (", ..." if len(got) > 10 else "") if got else "?"


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


def write_text_atomic(path: str | Path, text: str, *, keep_mode: bool = False, named: bool = False) -> None:
    """Replace `path` with `text` atomically: tmp in the same folder, fsync, rename.

    `keep_mode` keeps the permissions of the file being replaced (a user's document); `named`: see
    `write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"), keep_mode=keep_mode, named=named)


def write_bytes_atomic(path: str | Path, data: bytes, *, keep_mode: bool = False, named: bool = False) -> None:
    """Replace `path` with `data` atomically, never over a device or a directory (NotWritable: one line,
    exit 2; `check_output`). `named`: the user named this path (a flag's value, a document): only a new
    path or a regular file is written. Else it is the writer's own file in its own folder, and a FIFO
    or a socket put there is renamed over, never opened and waited on."""
    path = Path(path)
    check_output(path, owned=not named)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_mode and path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:
            raise Unreadable(path, "is a directory, not a regular file: remove it (a file is written there)") from None
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


def video_relpath(seed: int, arm: str | None = None, variant: str | None = None) -> str:
    """A filmed episode's mp4, relative to the run directory (a row's `video`):
    videos/rollout_[<arm>_][<variant>_]seed006.mp4 (a comparison's arm; a crossed design's variant, none on base)."""
    return f"{VIDEOS}/rollout_{arm + '_' if arm else ''}{variant + '_' if variant else ''}seed{seed:03d}.mp4"
