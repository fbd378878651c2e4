"""The rules for what a run is now, once: its state, whether it is live, its done and its total.

The console (console/runs.py RunInfo), the Discord notifier (console/notify/messages.py RunSnapshot)
and the notifier's own keep-alive (`driver_live`, console/notify/service.py) read runs by these rules,
so a run is never live on one screen and died on another, or 9/8 on a phone and 8/8 on the console.

- state: status.json's final state (stopped, done, failed) stands whatever else is seen; a run whose
  process is gone without one has died; a status.json that cannot be read (and no state) is
  unreadable; a STOP not yet acted on is stopping; then status.json's own state; a process with no
  state yet is starting (so is a run whose manifest is there, written within the grace, before its
  pid.json: a driver starting); else unknown.
- live: a driver owns the directory: no final state, and its process is there (or, before pid.json,
  it wrote within the grace).
- done: the episodes with a row by the one denominator (prereg/rundir/fold.py: the last row of each
  planned seed, per arm) once the rows are read, else status.json's count.
- total: status.json's, else the plan's episodes (seeds x arms).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prereg.rundir.discovery import ALIVE, GONE, UNKNOWN, liveness
from prereg.rundir.files import DIED, FINAL_STATES, MANIFEST, PID, STARTING, STATES, STATUS, STOPPING, UNREADABLE, mtime_age_s, read_json
from prereg.rundir.files import UNKNOWN as UNKNOWN_STATE
from prereg.rundir.manifest import Manifest, Snapshot
from prereg.rundir.status import Status

STARTING_GRACE_S = 120.0  # no pid.json yet: a run written within this is a driver starting (live)


@dataclass(frozen=True)
class RunState:
    """What a run is now, from its recorded state and its process (`liveness`, discovery's words)."""

    recorded: str | None  # status.json's state when it is one of the contract's states
    liveness: str = UNKNOWN  # ALIVE | GONE | UNKNOWN (no pid.json, or one that cannot be read)
    stop_requested: bool = False  # a STOP file is there
    unreadable: bool = False  # status.json or a field of it could not be read
    young: bool = False  # no process recorded yet, but the run wrote within the grace (a driver starting)

    @classmethod
    def of(cls, status: Status | None, liveness: str = UNKNOWN, *, stop_requested: bool = False,
           unreadable: bool = False, young: bool = False) -> "RunState":
        st = status.state if status is not None else None
        return cls(st if st in STATES else None, liveness, stop_requested, unreadable, young)

    @property
    def live(self) -> bool:
        if self.recorded in FINAL_STATES:
            return False
        return self.liveness == ALIVE or (self.liveness == UNKNOWN and self.young)

    @property
    def over(self) -> bool:
        """Ended with a final state the driver (or a kill record) wrote."""
        return self.recorded in FINAL_STATES

    @property
    def died(self) -> bool:
        return self.recorded not in FINAL_STATES and self.liveness == GONE

    @property
    def shown(self) -> str:
        st = self.recorded
        if st in FINAL_STATES:
            return st
        if self.liveness == GONE:
            return DIED
        if not st and self.unreadable:
            return UNREADABLE
        if self.stop_requested:
            return STOPPING
        if st:
            return st
        if self.live:
            return STARTING
        return UNKNOWN_STATE


class ShowsState:
    """`state`, `live`, `over` and `died` of a reader's view of a run that has a `run_state` (the console's
    RunInfo, the notifier's RunSnapshot): the words are RunState's, never the view's own."""

    run_state: RunState

    @property
    def state(self) -> str:
        """The state to show: status.json's, corrected by the process table and STOP."""
        return self.run_state.shown

    @property
    def live(self) -> bool:
        return self.run_state.live

    @property
    def over(self) -> bool:
        return self.run_state.over

    @property
    def died(self) -> bool:
        return self.run_state.died


def planned_total(status: Status | None, manifest: Manifest | None) -> int | None:
    """Episodes the run plans: status.json's total, else the manifest's seeds x arms (None: unknown)."""
    total = status.total if status is not None else None
    if total is not None and total >= 0:
        return total
    if manifest is None or manifest.seeds is None:
        return None
    return len(manifest.seeds) * (2 if manifest.is_comparison else 1)


def episodes_done(status: Status | None, counted: int | None) -> int | None:
    """Episodes with a row: the rows' count by the one denominator once they are read (`counted`),
    else status.json's (a non-negative count, or None)."""
    if counted is not None:
        return counted
    done = status.done if status is not None else None
    return done if done is not None and done >= 0 else None


def young(run_dir: Path, grace_s: float) -> bool:
    """No process recorded yet, but status.json or the manifest was written within `grace_s`: a driver
    starting (the console's launch, a resume) before its pid.json exists."""
    age = mtime_age_s(run_dir / STATUS)
    if age is None:
        age = mtime_age_s(run_dir / MANIFEST)
    return age is not None and age < grace_s


def driver_live(run_dir: str | Path, grace_s: float) -> bool:
    """Whether a driver owns this run directory now (`RunState.live`, from its files and the process table)."""
    path = Path(run_dir)
    status = Status.of(read_json(path / STATUS))
    alive = liveness(read_json(path / PID))
    return RunState.of(status, alive, young=alive == UNKNOWN and young(path, grace_s)).live


def snapshot_state(snap: Snapshot, grace_s: float = STARTING_GRACE_S) -> RunState:
    """What a run is now from one read of its small files and the process table: the state the console
    and the notifier show, and the one the report and publish judge by (a died run is never "still running")."""
    alive = liveness(snap.pid)
    return RunState.of(snap.status, alive, stop_requested=snap.stop is not None,
                       unreadable=bool(snap.unreadable.get(STATUS)),
                       young=alive == UNKNOWN and young(snap.run_dir, grace_s))
