"""Gates and tripwires, evaluated from what a run directory says.

One pure function shared by the driver (which enforces: it writes STOP with the reason) and
the console (which shows: a warning before a gate trips, a banner when it does).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

OK, WARN, TRIPPED, PENDING = "ok", "warn", "tripped", "pending"


@dataclass(frozen=True)
class GateSpec:
    gpu_hours: float | None = None  # budget of allocated GPU-hours; None = no gate
    pace_limit_hours: float | None = None  # max projected wall time of the whole run
    pace_after_episodes: int = 10  # the pace tripwire is judged once this many episodes are done
    stall_factor: float = 4.0  # heartbeat age beyond this many median episode walls is a stall
    stall_min_s: float = 60.0  # ... and never below this many seconds
    warn_fraction: float = 0.8  # warn at this fraction of a limit
    decided: str | None = None  # "stop": stop once every decision rule on the arm is settled (prereg/curtail.py)


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
    """Linear projection of the whole run's wall time from the episodes done so far."""
    if done <= 0 or total <= 0:
        return None
    return elapsed_s * total / done


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
) -> list[GateReading]:
    """Every configured gate's reading, in a fixed order (gpu_hours, pace, stall)."""
    readings = []
    if spec.gpu_hours is not None:
        readings.append(_gpu_gate(spec, gpu_hours))
    if spec.pace_limit_hours is not None:
        readings.append(_pace_gate(spec, elapsed_s, done, total))
    if live and heartbeat_age_s is not None:
        readings.append(_stall_gate(spec, heartbeat_age_s, episode_walls_s))
    return readings


def first_tripped(readings: list[GateReading]) -> GateReading | None:
    return next((r for r in readings if r.state == TRIPPED), None)


def _gpu_gate(spec: GateSpec, spent: float | None) -> GateReading:
    limit = spec.gpu_hours
    if spent is None:
        return GateReading("gpu_hours", PENDING, None, limit, "GPU-hours not measured yet")
    if spent > limit:
        state = TRIPPED
    elif spent >= spec.warn_fraction * limit:
        state = WARN
    else:
        state = OK
    return GateReading("gpu_hours", state, spent, limit, f"GPU-hours {spent:.3f} of {limit:g}")


def _pace_gate(spec: GateSpec, elapsed_s: float, done: int, total: int) -> GateReading:
    limit_h = spec.pace_limit_hours
    proj = projected_wall_s(elapsed_s, done, total)
    if proj is None:
        return GateReading("pace", PENDING, None, limit_h, f"pace judged after {spec.pace_after_episodes} episodes")
    proj_h = proj / 3600.0
    msg = f"projected wall {proj_h:.2f} h vs limit {limit_h:g} h after {done}/{total} episodes"
    if proj_h > limit_h:
        state = TRIPPED if done >= spec.pace_after_episodes else WARN
    elif proj_h >= spec.warn_fraction * limit_h:
        state = WARN
    else:
        state = OK if done >= spec.pace_after_episodes else PENDING
    return GateReading("pace", state, proj_h, limit_h, msg)


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
