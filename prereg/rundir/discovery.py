"""Which runs a folder holds, and whether each one's driver is alive: read from the run
directory contract (prereg/rundir/) and the process table, nothing else.

The console (console/runs.py, console/watcher.py) and the detached Discord notifier
(console/notify/service.py) both find runs and judge liveness here, so the two never disagree
about which runs exist, in what order, or whether a run's process is there (what that makes the
run, live or died, is prereg/rundir/runstate.py's). Liveness compares the process
create time with the one recorded beside the pid, so a reused pid is never mistaken for the
run (and never signalled).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import psutil

from prereg import rundir as rd
from prereg.rundir.files import stamp_of

CREATE_TIME_TOLERANCE_S = 1.0

# liveness of a recorded process (not a run state: those are prereg.rundir's)
ALIVE, GONE, UNKNOWN = "alive", "gone", "unknown"

def run_sort_key(run_id: str, started_at: str | None = None) -> tuple[str, str]:
    """Run ids end in their UTC launch time (new_run_id): sort on it, then the id, so the order is
    launch order whatever the pre-registration's name, the same after every restart. A directory
    named by hand (`--run-dir runs/oracle50`) has no time in its name: it sorts by `started_at`
    (the manifest's UTC start, ISO), and only without one as the oldest (a live hand-named run
    sat at the bottom of the list, off screen at 80x24)."""
    return (stamp_of(run_id) or _stamp_of_iso(started_at) or "", run_id)


def _stamp_of_iso(when: str | None) -> str | None:
    """'2026-01-01T12:00:00Z' as a run id's stamp ('20260101-120000'), or None if it is not a time."""
    if not isinstance(when, str):
        return None
    try:
        at = datetime.fromisoformat(when.strip())
    except ValueError:
        return None
    if at.tzinfo is not None:
        at = at.astimezone(timezone.utc)
    return at.strftime(rd.RUN_STAMP_FORMAT)


def discover_runs(runs_dir: str | Path) -> list[Path]:
    """Run directories under runs_dir, newest name last (run ids end in a UTC timestamp); dot
    folders (.archive, .notifier) are never runs. An entry that cannot be looked at (a symbolic
    link loop, a folder it may not enter) is listed too: one bad entry is one run whose files
    cannot be read (its readers say why), never a folder whose every run disappears."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    out = []
    try:
        with os.scandir(root) as it:
            for entry in it:
                if entry.name.startswith("."):
                    continue
                try:
                    is_run = entry.is_dir()
                except OSError:  # ELOOP, EACCES: there, and not readable; a dangling link is not a run
                    is_run = True
                if is_run:
                    out.append(Path(entry.path))
    except OSError:  # the folder itself went or cannot be listed: no runs in it now
        return []
    return sorted(out, key=lambda p: p.name)


def run_process(pid_info: dict | None) -> psutil.Process | None:
    """The recorded process ({pid, create_time}, as pid.json holds it), or None if it is gone, a
    zombie, or a different process on a reused pid."""
    if not pid_info or not isinstance(pid_info.get("pid"), int):
        return None
    try:
        proc = psutil.Process(pid_info["pid"])
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        recorded = pid_info.get("create_time")
        if isinstance(recorded, (int, float)) and abs(proc.create_time() - recorded) > CREATE_TIME_TOLERANCE_S:
            return None
        return proc
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def liveness(pid_info: dict | None) -> str:
    """ALIVE when pid.json's process exists with the recorded create time; GONE when not."""
    proc = run_process(pid_info)
    if proc is not None:
        return ALIVE
    if not pid_info or not isinstance(pid_info.get("pid"), int):
        return UNKNOWN
    return GONE


def newest_registered_run(runs_dir: str | Path, arm: str, sha256: str, *, exclude: Path | None = None) -> Path | None:
    """The run of `arm` launched from the frozen section `sha256` in `runs_dir`: finished runs first,
    then the newest start. What the report pairs a run with, and what curtailment reads of the
    other arms a rule names (one rule for both, by manifest, never by folder name)."""
    root = Path(runs_dir)
    if not root.is_dir():
        return None
    skip = Path(exclude).resolve() if exclude is not None else None
    best = None
    for d in root.iterdir():
        if d.name.startswith(".") or not d.is_dir() or (skip is not None and d.resolve() == skip):
            continue
        snap = rd.read_snapshot(d)
        m = snap.manifest
        if m is None or m.arm != arm or m.prereg is None or m.prereg.sha256 != sha256:
            continue
        key = (snap.status is not None and snap.status.state == rd.DONE, m.started_at or "", d.name)
        if best is None or key > best[0]:
            best = (key, d)
    return best[1] if best else None
