"""Gates and tripwires, evaluated from what a run directory says.

One pure function shared by the driver (which enforces: it writes STOP with the reason) and
the console (which shows: a warning before a gate trips, a banner when it does).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from prereg.rundir.rows import number
from prereg.rundir.status import GateSpec as GateSpec  # noqa: F401 - the run-directory contract's type, used here

OK, WARN, TRIPPED, PENDING = "ok", "warn", "tripped", "pending"


@dataclass(frozen=True)
class GateReading:
    name: str  # "gpu_hours" | "pace" | "stall"
    state: str  # ok | warn | tripped | pending
    value: float | None
    limit: float | None
    message: str

    def as_dict(self) -> dict:
        return asdict(self)


def projected_wall_s(elapsed_s: float, done: int, total: int) -> float | None:
    """Naive linear projection of the whole run's wall time: elapsed x total / done.

    It multiplies the start-up cost (model load, workers ready) by total / done and ignores
    the episodes in flight, so early on it over-projects a run with a slow start; the pace
    gate uses `fair_projected_wall_s` when the driver gives its inputs (`PaceInputs`)."""
    if done <= 0 or total <= 0:
        return None
    return elapsed_s * total / done


@dataclass(frozen=True)
class PaceInputs:
    """What the fair projection is made of; the driver writes them into status.json ("pace")."""

    startup_s: float  # driver start -> first episode submitted: model load, workers ready (paid once)
    rollout_s: float  # first episode submitted -> now
    done: int  # episodes finished in this session
    in_flight: int  # episodes running now
    total: int  # episodes of this session (done + still to finish)
    episode_wall_s: float | None  # mean wall of a finished episode, as its worker measured it
    lanes: int  # episodes that run at once (workers)
    prior_s: float = 0.0  # wall of earlier sessions of the run (a resume)

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d) -> "PaceInputs | None":
        """The inputs status.json's `pace` holds; None when any is missing or of the wrong type
        (a string, a bool, NaN): the projection is then unknown, never a crash."""
        if not isinstance(d, dict):
            return None
        kw = {}
        for k in cls.__dataclass_fields__:
            if k not in d:
                continue
            v = d[k]
            if k in ("done", "in_flight", "total", "lanes"):
                if type(v) is not int or v < 0:
                    return None
                kw[k] = v
            elif v is None and k == "episode_wall_s":
                kw[k] = None
            else:
                x = number(v)
                if x is None or x < 0:
                    return None
                kw[k] = x
        try:
            return cls(**kw)
        except TypeError:  # a required input missing
            return None


def per_episode_wall_s(p: PaceInputs) -> float | None:
    """Seconds one lane spends per episode: max(workers' mean wall, rollout x lanes / episodes begun).

    The throughput term counts the episodes in flight as begun (their lanes were busy all the
    rollout), so it never over-projects a pool that finishes in lock-step; the workers' mean
    wall keeps it from under-projecting a staggered one."""
    if p.done <= 0:
        return None
    work_done = p.done + max(0, p.in_flight)
    throughput = p.rollout_s * max(1, p.lanes) / work_done if p.rollout_s > 0 else 0.0
    w = max(p.episode_wall_s or 0.0, throughput)
    return w if w > 0 else None


def fair_projected_wall_s(p: PaceInputs) -> float | None:
    """The run's wall time projected from its own throughput.

    start-up (once) + rollout so far + the work left at the measured per-episode wall, spread
    over the lanes: episodes not started count whole, episodes in flight count half (on
    average half done). The per-episode wall is the larger of the workers' own mean and what
    the rollout's throughput implies (rollout x lanes / episodes begun), so a cost outside the
    episodes' own clocks (a reset, a queue) is not left out. None until an episode has finished."""
    w = per_episode_wall_s(p)
    if w is None:
        return None
    lanes = max(1, p.lanes)
    not_started = max(0, p.total - p.done - p.in_flight)
    in_flight = max(0, min(p.in_flight, p.total - p.done))
    work = not_started * w + in_flight * w / 2
    left = work / lanes
    if not_started or in_flight:  # the last episode runs alone, however many lanes there are
        left = max(left, w / 2 if not not_started else w)
    return p.prior_s + p.startup_s + p.rollout_s + left


def evaluate_gates(
    spec: GateSpec,
    *,
    elapsed_s: float,
    done: int,
    total: int,
    gpu_hours: float | None,
    heartbeat_age_s: float | None = None,
    episode_walls_s: list[float] | tuple[float, ...] = (),
    live: bool = True,
    pace: PaceInputs | None = None,
    gpus: float | None = None,
    starting: bool = False,
) -> list[GateReading]:
    """Every configured gate's reading, in a fixed order (gpu_hours, pace, stall).

    `starting`: the run is starting (status.json `starting`: loading its model, running its registered
    tripwires, starting its workers). The driver beats the heartbeat through start-up too, but its
    stall is judged against the start-up limit (`GateSpec.startup_limit_s`), not the stall limit made
    for episodes: a model load is not an episode that hangs.

    With `pace` (the driver's inputs) the pace gate projects from the rollout's throughput
    (`fair_projected_wall_s`), else the naive elapsed x total / done; with `pace` and `gpus`
    the GPU-hour gate also warns when the projected spend passes the budget (it trips only on
    what was spent)."""
    readings = []
    fair = fair_projected_wall_s(pace) if pace is not None else None
    if spec.gpu_hours is not None:
        readings.append(_gpu_gate(spec, gpu_hours, None if fair is None or gpus is None else gpus * fair / 3600.0))
    if spec.pace_limit_hours is not None:
        readings.append(_pace_gate(spec, elapsed_s, done, total, pace))
    if live and heartbeat_age_s is not None:
        readings.append(_startup_gate(spec, heartbeat_age_s) if starting
                        else _stall_gate(spec, heartbeat_age_s, episode_walls_s))
    return readings


def first_tripped(readings: list[GateReading]) -> GateReading | None:
    return next((r for r in readings if r.state == TRIPPED), None)


def _gpu_gate(spec: GateSpec, spent: float | None, projected: float | None = None) -> GateReading:
    limit = spec.gpu_hours
    if spent is None:
        return GateReading("gpu_hours", PENDING, None, limit, "GPU-hours not measured yet")
    msg = f"GPU-hours {spent:.3f} of {limit:g}"
    if projected is not None and projected > 0:
        msg += f" (projected {projected:.3f} at the end)"
    if spent > limit:
        state = TRIPPED
    elif spent >= spec.warn_fraction * limit or (projected is not None and projected > limit):
        state = WARN
    else:
        state = OK
    return GateReading("gpu_hours", state, spent, limit, msg)


def _pace_gate(spec: GateSpec, elapsed_s: float, done: int, total: int, pace: PaceInputs | None = None) -> GateReading:
    limit_h = spec.pace_limit_hours
    if pace is not None:
        proj = fair_projected_wall_s(pace)
        done, total = pace.done, pace.total
    else:
        proj = projected_wall_s(elapsed_s, done, total)
    if proj is None:
        return GateReading("pace", PENDING, None, limit_h, f"pace judged after {spec.pace_after_episodes} episodes")
    proj_h = proj / 3600.0
    msg = f"projected wall {proj_h:.2f} h vs limit {limit_h:g} h after {done}/{total} episodes"
    if pace is not None:
        msg += (f" (start-up {pace.startup_s:.0f} s + rollout {pace.rollout_s:.0f} s + {total - done} episodes left"
                f" at {per_episode_wall_s(pace) or 0:.1f} s on {pace.lanes} lane{'s' if pace.lanes != 1 else ''},"
                f" {pace.in_flight} in flight)")
    if proj_h > limit_h:
        state = TRIPPED if done >= spec.pace_after_episodes else WARN
    elif proj_h >= spec.warn_fraction * limit_h:
        state = WARN
    else:
        state = OK if done >= spec.pace_after_episodes else PENDING
    return GateReading("pace", state, proj_h, limit_h, msg)


def _startup_gate(spec: GateSpec, age_s: float) -> GateReading:
    limit = spec.startup_limit_s
    state = TRIPPED if age_s > limit else WARN if age_s > spec.warn_fraction * limit else OK
    return GateReading("stall", state, age_s, limit,
                       f"heartbeat {age_s:.0f} s old while starting (start-up stall beyond {limit:.0f} s)")


def _stall_gate(spec: GateSpec, age_s: float, walls: list[float] | tuple[float, ...]) -> GateReading:
    median = statistics.median(walls) if walls else None
    limit = max(spec.stall_min_s, spec.stall_factor * median) if median else spec.stall_min_s
    if age_s > limit:
        state = TRIPPED
    elif age_s > spec.warn_fraction * limit:
        state = WARN
    else:
        state = OK
    return GateReading("stall", state, age_s, limit, f"heartbeat {age_s:.0f} s old (stall beyond {limit:.0f} s)")
