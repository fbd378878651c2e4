"""`K`: end a run by signal, and never leave it `died` for a kill the console made.

SIGTERM goes to the run's process group, after a STOP that says who sent it (the driver gives
that as its stop reason, as it does for `s`): the driver treats it as a stop, finishes the
episodes in flight at their boundary within its SIGTERM grace (`--term-grace-s`, default 20 s; past
it they are abandoned, owed to a resume), writes their rows and exits `stopped`. The console waits for that
for as long as an episode of this run can take (`grace_s`: the manifest's episode_seconds or the
longest episode wall so far, whichever is longer, times 1.5, plus a margin), not a fixed 10 s
that a 30 s episode always outlasts. Only then SIGKILL, and a killed driver cannot write its
end, so the console writes it (`record_kill`): status.json `stopped`, stop `by: kill`, the
seeds without a row listed (in flight, or never started), which `R` (a resume) runs.
"""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import psutil

from prereg import rundir as rd
from prereg.rundir.discovery import run_process
from prereg.rundir.files import utc_now, write_json_atomic
from prereg.rundir.fold import Plan, RowsFold, fold_rows
from prereg.rundir.rows import read_rows
from prereg.rundir.stop import one_line

MIN_GRACE_S = 10.0
GRACE_MARGIN_S = 15.0  # beyond the longest episode: writing its row and video, the final files
GRACE_FACTOR = 1.5
DEFAULT_EPISODE_S = 30.0  # a manifest without a readable episode length


def grace_s(run_dir: str | Path) -> float:
    """How long SIGTERM may take to end this run: its longest episode (the manifest's length or
    the slowest row's wall time so far), times GRACE_FACTOR, plus GRACE_MARGIN_S, in whole seconds up
    (a dialog says 'after 78 s', not 'after 77.985 s')."""
    run_dir = Path(run_dir)
    manifest, _ = rd.read_manifest(run_dir)
    ep = manifest.episode_seconds if manifest is not None else None
    episode = ep if ep is not None and 0 < ep <= 3600 else DEFAULT_EPISODE_S
    longest = max(episode, fold_file(run_dir, manifest).longest_wall_s or 0.0)
    return float(math.ceil(max(MIN_GRACE_S, GRACE_FACTOR * longest + GRACE_MARGIN_S)))


def kill_run(run_dir: str | Path, pid_info: dict | None, who: str | None = None, grace: float | None = None,
             poll_s: float = 0.2) -> str:
    """SIGTERM to the run's process group, SIGKILL after `grace` (default: grace_s(run_dir)),
    then the final state recorded if the driver did not write one. Blocking: call off the UI thread.
    Signals only a process whose create time matches pid.json. Returns what was done, in words."""
    run_dir = Path(run_dir)
    proc = run_process(pid_info)
    if proc is None:
        return "the run's process is already gone; nothing was signalled"
    grace = grace_s(run_dir) if grace is None else grace
    pgid = pid_info.get("pgid") if isinstance(pid_info.get("pgid"), int) else os.getpgid(proc.pid)
    try:  # who sent the signal and why, for the driver to give as its stop reason (a STOP already there wins)
        rd.write_stop(run_dir, rd.StopReason(rd.BY_SIGNAL, f"SIGTERM to process group {pgid} (K in the console)",
                                             who=who))
    except OSError:
        pass  # the signal still stops it: the reason is then the driver's own "SIGTERM received"
    own_group = pgid == os.getpgid(0)  # started in the console's own group: signal the tree, not the group
    procs = [proc] + proc.children(recursive=True) if own_group else []
    try:
        if own_group:
            for p in procs:
                _signal(p, signal.SIGTERM)
        else:
            os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return _ended(run_dir, who, f"SIGTERM sent to process group {pgid}; it exited", killed_after=None)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if run_process(pid_info) is None:
            return _ended(run_dir, who, f"SIGTERM sent to process group {pgid}; it exited", killed_after=None)
        time.sleep(poll_s)
    try:
        if own_group:
            for p in procs:
                _signal(p, signal.SIGKILL)
        else:
            os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    end = time.monotonic() + 10.0
    while run_process(pid_info) is not None and time.monotonic() < end:
        time.sleep(poll_s)
    return _ended(run_dir, who, f"SIGTERM sent to process group {pgid}; still alive after {grace:g} s, so SIGKILL",
                  killed_after=grace)


def _signal(p: psutil.Process, sig: int) -> None:
    try:
        p.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


def _ended(run_dir: Path, who: str | None, said: str, killed_after: float | None) -> str:
    recorded = record_kill(run_dir, who, killed_after)
    return f"{said}; {recorded}" if recorded else said


def record_kill(run_dir: str | Path, who: str | None = None, killed_after: float | None = None) -> str | None:
    """The end of a run the console killed, written for the driver that no longer can: unless
    status.json already holds a final state, it becomes `stopped`, stop `by: kill`, with the
    seeds that have no row (`lost_seeds`: in flight when it died, or never started), so the run
    never shows `died` and `R` resumes those seeds. What was recorded, in words (None: nothing)."""
    run_dir = Path(run_dir)
    snap = rd.read_snapshot(run_dir)
    status = snap.status or rd.Status()
    if status.final:
        return None  # the driver wrote its own end
    seeds = list(snap.manifest.seeds or ()) if snap.manifest is not None else []
    arms = list(snap.manifest.arms) if snap.manifest is not None and snap.manifest.is_comparison else []
    fold = fold_file(run_dir, snap.manifest)  # the episodes with a row, by the read model's denominator
    if arms:  # a comparison run: an episode is (arm, seed), and a seed may have a row of one arm only
        lost = [[a, s] for s in seeds for a in arms if s not in fold.tally(a).seeds]
    else:
        lost = [s for s in seeds if s not in fold.tally().seeds]
    flying = [x for x in status.in_flight_seeds or () if x in lost]  # the driver's last word on what was running
    how = (f"SIGKILL after {killed_after:g} s without reaching an episode boundary" if killed_after is not None
           else "ended by SIGTERM without writing its final state")
    what = "episode(s)" if arms else "seed(s)"
    detail = (f"killed from the console ({how}); {len(lost)} {what} without a row, which a resume runs"
              + (f": in flight when killed [{_listed(flying)}]; never started {len(lost) - len(flying)}"
                 if flying else f": [{_listed(lost)}]"))
    stop = rd.StopReason(rd.BY_KILL, one_line(detail), who=who, at=utc_now())
    ended = replace(status, schema=status.schema or rd.STATUS_SCHEMA, state=rd.STOPPED, stop=stop, reason=stop.text(),
                    lost_seeds=lost, in_flight_seeds=flying, done=fold.episodes,
                    total=len(seeds) * max(1, len(arms)) or status.total, updated_at=utc_now())
    try:
        write_json_atomic(run_dir / rd.STATUS, ended.to_dict())
    except OSError as exc:
        return f"its final state could not be written ({exc.strerror or exc})"
    return f"recorded as stopped by kill ({len(lost)} {what} without a row; R resumes them)"


def fold_file(run_dir: Path, manifest: rd.Manifest | None) -> RowsFold:
    """rows.jsonl read once and folded by the run's plan (prereg/rundir/fold.py)."""
    return fold_rows(read_rows(run_dir / rd.ROWS).rows, Plan.of(manifest))


def _listed(items: list, limit: int = 20) -> str:
    """Seeds as numbers, a comparison run's episodes as arm:seed."""
    shown = [f"{x[0]}:{x[1]}" if isinstance(x, list) else str(x) for x in items[:limit]]
    return ", ".join(shown) + (", ..." if len(items) > limit else "")
