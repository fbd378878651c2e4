"""The run directory as the driver writes it (the contract in ARCHITECTURE.md).

Every JSON file is written atomically (tmp + fsync + rename), rows are appended, flushed and
fsynced one line at a time, so a reader never sees half a document and a crash loses at most
the line being written (which the reader detects as torn).
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from prereg.rows import BadLine, RowsRead, read_rows

MANIFEST = "manifest.json"
PID = "pid.json"
ROWS = "rows.jsonl"
ROWS_SUMMARY = "rows.json"
STATUS = "status.json"
HEARTBEAT = "heartbeat"
STOP = "STOP"
LOG = "driver.log"
VIDEOS = "videos"
SET_ASIDE = "rows.set-aside.jsonl"

STARTING, RUNNING, STOPPING, STOPPED, DONE, FAILED = "starting", "running", "stopping", "stopped", "done", "failed"
FINAL_STATES = (STOPPED, DONE, FAILED)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def write_json_atomic(path: Path, obj: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, default=_json_default)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _json_default(obj: object):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


class RowWriter:
    """The single writer of rows.jsonl: one line per finished episode, flushed and fsynced."""

    def __init__(self, path: Path):
        self.path = path
        self._f = open(path, "a", encoding="utf-8")

    def append(self, row: dict) -> None:
        self._f.write(json.dumps(row, default=_json_default, allow_nan=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


def write_pid(run_dir: Path) -> dict:
    me = psutil.Process()
    info = {"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time(), "launched_at": utc_now()}
    write_json_atomic(run_dir / PID, info)
    return info


def touch_heartbeat(run_dir: Path) -> None:
    p = run_dir / HEARTBEAT
    p.touch()
    os.utime(p)


def read_stop(run_dir: Path) -> dict | None:
    """The STOP request, if any. A STOP that is not JSON (a person's `touch`) still stops."""
    p = run_dir / STOP
    if not p.exists():
        return None
    try:
        text = p.read_text().strip()
    except OSError:
        return {"by": "unknown", "reason": "STOP file present"}
    if not text:
        return {"by": "unknown", "reason": "STOP file present"}
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else {"by": "unknown", "reason": text[:200]}
    except json.JSONDecodeError:
        return {"by": "unknown", "reason": text[:200]}


def request_stop(run_dir: Path, by: str, reason: str) -> None:
    if not (run_dir / STOP).exists():
        write_json_atomic(run_dir / STOP, {"by": by, "reason": reason, "at": utc_now()})


def set_aside_bad_rows(run_dir: Path) -> tuple[RowsRead, list[BadLine]]:
    """Before a resume: keep the good rows, move torn/corrupt lines (and error rows, which the
    resume re-runs) to rows.set-aside.jsonl, and rewrite rows.jsonl atomically without them."""
    path = run_dir / ROWS
    read = read_rows(path)
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
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in keep:
            f.write(json.dumps(r) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return RowsRead(rows=keep, bad=read.bad), read.bad


def heartbeat_age_s(run_dir: Path, now: float | None = None) -> float | None:
    try:
        return (now or time.time()) - (run_dir / HEARTBEAT).stat().st_mtime
    except OSError:
        return None
