"""A run's time: elapsed over every session (a resume adds to the sessions before), its pace, and
its heartbeat through start-up.

The pace tripwire and the ETA project the whole run from its own throughput
(prereg/rundir/gates.py does the arithmetic): the start-up (model load, workers ready) counted
once, then the episodes left at the measured per-episode wall over the workers, the ones in
flight counted half done. Rollout time starts with the first episode handed out.
"""

from __future__ import annotations

import statistics
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from prereg import rundir as rd
from prereg.rundir.gates import PaceInputs, fair_projected_wall_s, projected_wall_s


class RunClock:
    def __init__(self):
        self.t0 = time.monotonic()
        self.prior_s = 0.0  # the sessions before a resume (status.json's elapsed_s)
        self.first_submit_at: float | None = None  # rollout time excludes worker start-up
        self.last_row_at: float | None = None

    def submitted(self) -> None:
        """An episode was handed out (the first one ends the start-up)."""
        if self.first_submit_at is None:
            self.first_submit_at = time.monotonic()

    def row_arrived(self) -> None:
        self.last_row_at = time.monotonic()

    @property
    def elapsed_s(self) -> float:
        return self.prior_s + (time.monotonic() - self.t0)

    @property
    def rollout_s(self) -> float | None:
        """From the first episode handed out to the last row (None before both)."""
        if self.first_submit_at is None or self.last_row_at is None:
            return None
        return round(self.last_row_at - self.first_submit_at, 3)

    def pace_inputs(self, *, done: int, in_flight: int, total: int, lanes: int, walls: list) -> PaceInputs | None:
        """The fair pace projection's inputs (None before the first episode is handed out)."""
        if self.first_submit_at is None:
            return None
        return PaceInputs(startup_s=self.first_submit_at - self.t0, rollout_s=time.monotonic() - self.first_submit_at,
                          done=done, in_flight=in_flight, total=total, lanes=lanes,
                          episode_wall_s=statistics.fmean(walls) if walls else None, prior_s=self.prior_s)

    def projections(self, *, done: int, remaining: int, in_flight: int, lanes: int,
                    walls: list) -> tuple[PaceInputs | None, float | None, float | None, float | None]:
        """(pace inputs, fair projected wall, naive projected wall, ETA): the same numbers for
        status.json and the log's progress lines. The ETA follows the fair projection when it has
        its inputs, else the naive one (elapsed x total / done, this session)."""
        session_elapsed = time.monotonic() - self.t0
        proj = projected_wall_s(session_elapsed, done, done + remaining)
        pace = self.pace_inputs(done=done, in_flight=in_flight, total=done + remaining, lanes=lanes, walls=walls)
        fair = fair_projected_wall_s(pace) if pace is not None else None
        naive = None if proj is None else round(self.prior_s + proj, 1)
        if fair is not None:
            eta = max(0.0, fair - self.elapsed_s)
        else:
            eta = None if proj is None else max(0.0, proj - session_elapsed)
        return pace, fair, naive, eta


@contextmanager
def beating(run_dir: Path, every_s: float):
    """Beat the run's heartbeat from a thread while the driver's own thread is busy elsewhere (a model
    loading, the registered tripwires' rollouts, a cluster starting), so that no reader takes start-up
    for a stall; the driver's loop beats it itself once episodes run. A beat that cannot be written is
    skipped (the loop's own checks say why a run cannot go on)."""
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every_s):
            try:
                rd.touch_heartbeat(run_dir)
            except OSError:
                pass

    thread = threading.Thread(target=beat, name="fontaine-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(every_s + 1.0)
