"""Per-tick task metrics and the success criterion, kept free of MuJoCo so they test alone.

Success = the boat rests upright on the disk, released (the arm clear of it) and still: its base centre within the disk radius, at
disk height, upright, still and not touching the arm, all held for `SUCCESS_HOLD_TICKS`
consecutive ticks. Success latches: once held it stays a success even if the boat is
disturbed later. `success_tick` is the tick count at which the hold first completed (the
streak began `SUCCESS_HOLD_TICKS - 1` ticks earlier); tick 1 is the first executed tick.

Grasps, read from the contacts at the end of each tick: the boat is *held* when both jaw pads
touch it and it touches nothing else (not the table, the disk, the floor or a wall: it is
off its support). `grasped_lifted` = held for `GRASP_HOLD_TICKS` ticks in a row at least once, and
`grasp_tick` the tick that streak completed (as `success_tick`); `lift_max_mm` = the highest
the boat's base rose above where the episode started while held; `carried_cm` = the boat's
XY travel (path length) over consecutive held ticks; `released` = grasped and not held at the
end (false when never grasped); `grasped_squeezed` = both jaw pads touched it, whatever else it
touched (on its support: so101-nexus's `is_grasped`), for `GRASP_HOLD_TICKS` ticks in a row;
`touched` = the arm touched the boat at some tick; `off_table` =
the boat's base ended more than `OFF_TABLE_DROP_M` below where it started (it fell off the table:
on the floor); `success_streak` = the ticks in a row the success test held at the end (a hold the
episode's end cut short). prereg.rundir.outcomes.episode_outcome reads these into the episode's one outcome.

An env file composes its success test from `PREDICATES` (`success_test`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prereg.rundir.rows import ENGAGED_CM, KNOCK_AWAY_CM

DISK_RADIUS_M = 0.045
HEIGHT_TOLERANCE_M = 0.0015  # |base z - disk top|
UPRIGHT_COS = 0.95  # cos of the tilt between the boat's up axis and world up
STILL_SPEED_M_S = 0.01
SUCCESS_HOLD_TICKS = 15  # 0.5 s at 30 Hz
GRASP_HOLD_TICKS = 3  # 0.1 s: a grasp is a hold, not a brush of both pads
OFF_TABLE_DROP_M = 0.01  # the table is 20 mm thick: a base 10 mm below the top is past its edge
TICKS_PER_SECOND = 30  # the control rate: `dist_by_second_cm` samples the distance every this many ticks


@dataclass(frozen=True)
class BoatReading:
    """What the criterion needs about the boat at one tick (world frame, metres)."""

    pos: np.ndarray  # (3,) base centre
    upright_cos: float
    speed_m_s: float
    touching_arm: bool
    held: bool = False  # both jaw pads touch it and nothing else supports it
    squeezed: bool = False  # both jaw pads touch it (whatever else does)
    face_cos: float = 1.0  # how squarely it rests on one of its faces: max over its axes of |cos(axis, up)|
    arm_speed_rad_s: float = 0.0  # the fastest of the five arm joints


def rests_on_disk(reading: BoatReading, disk_pos: np.ndarray, disk_top_z: float) -> bool:
    """The instantaneous success test; it must hold `SUCCESS_HOLD_TICKS` ticks in a row."""
    dist = math.hypot(reading.pos[0] - disk_pos[0], reading.pos[1] - disk_pos[1])
    return (
        dist <= DISK_RADIUS_M
        and abs(float(reading.pos[2]) - disk_top_z) < HEIGHT_TOLERANCE_M
        and reading.upright_cos >= UPRIGHT_COS
        and reading.speed_m_s < STILL_SPEED_M_S
        and not reading.touching_arm
    )


class EpisodeMetrics:
    """Accumulates one episode's task metrics tick by tick and reports the row fields.

    Another task's metrics (engine/envs/pick_lift.py) override `succeeds`, `hold_ticks` and
    `_dist` (the distance its progress is measured in) and add their own row fields."""

    hold_ticks = SUCCESS_HOLD_TICKS

    def __init__(self, disk_pos: np.ndarray, disk_top_z: float, initial: BoatReading, reset_strikes: int = 0):
        self.disk_pos = np.asarray(disk_pos, dtype=float).copy()
        self.disk_top_z = float(disk_top_z)
        self.reset_strikes = int(reset_strikes)
        self.ticks = 0
        self.streak = 0
        self.success_tick: int | None = None
        self.env_streak = 0
        self.env_success_tick: int | None = None
        self.dist_initial_m = self._dist(initial)
        self.dist_min_m = self.dist_initial_m
        self.last = initial
        self.dist_by_second_m = [self.dist_initial_m]  # at t = 0 s, then after every TICKS_PER_SECOND ticks
        self.z_initial_m = float(initial.pos[2])
        self.held_streak = 0
        self.held_xy = (0.0, 0.0)
        self.grasp_tick: int | None = None
        self.lift_max_m = 0.0
        self.carried_m = 0.0
        self.touched = bool(initial.touching_arm)
        self.squeeze_streak = 0
        self.squeezed = False

    def rebase(self, initial: BoatReading) -> None:
        """Start the episode's distances again from `initial` (an object moved after the reset: a jittered
        start, engine.sim.env.ObjectEnv.jitter_object); before any tick only."""
        if self.ticks:
            raise RuntimeError("rebase() after the episode's first tick: the start can only move before it")
        self.dist_initial_m = self.dist_min_m = self._dist(initial)
        self.dist_by_second_m = [self.dist_initial_m]
        self.last, self.z_initial_m, self.touched = initial, float(initial.pos[2]), bool(initial.touching_arm)

    @property
    def success(self) -> bool:
        return self.success_tick is not None

    def update(self, reading: BoatReading) -> None:
        """Record one executed tick."""
        self.ticks += 1
        self.last = reading
        self.touched = self.touched or reading.touching_arm
        dist = self._dist(reading)
        self.dist_min_m = min(self.dist_min_m, dist)
        if self.ticks % TICKS_PER_SECOND == 0:
            self.dist_by_second_m.append(dist)
        self.streak = self.streak + 1 if self.succeeds(reading) else 0
        if self.success_tick is None and self.streak >= self.hold_ticks:
            self.success_tick = self.ticks
        self.env_streak = self.env_streak + 1 if self.env_succeeds(reading) else 0
        if self.env_success_tick is None and self.env_streak >= self.hold_ticks:
            self.env_success_tick = self.ticks
        self.squeeze_streak = self.squeeze_streak + 1 if reading.squeezed else 0
        self.squeezed = self.squeezed or self.squeeze_streak >= GRASP_HOLD_TICKS
        if reading.held:
            pos = reading.pos
            if self.held_streak:
                self.carried_m += math.hypot(pos[0] - self.held_xy[0], pos[1] - self.held_xy[1])
            self.held_xy = (float(pos[0]), float(pos[1]))
            self.held_streak += 1
            self.lift_max_m = max(self.lift_max_m, float(pos[2]) - self.z_initial_m)
            if self.grasp_tick is None and self.held_streak >= GRASP_HOLD_TICKS:
                self.grasp_tick = self.ticks
        else:
            self.held_streak = 0

    def succeeds(self, reading: BoatReading) -> bool:
        """The instantaneous success test (held `hold_ticks` ticks in a row for a success)."""
        return rests_on_disk(reading, self.disk_pos, self.disk_top_z)

    def env_succeeds(self, reading: BoatReading) -> bool:
        """The env's own test, as it declares it (`env_success`): a built-in's is Fontaine's."""
        return self.succeeds(reading)

    def row(self) -> dict:
        """The row fields owned by the simulator (see prereg.rundir.rows.ROW_FIELDS)."""
        dist_final_m = self._dist(self.last)
        progress_cm = (self.dist_initial_m - self.dist_min_m) * 100.0
        progress_final_cm = (self.dist_initial_m - dist_final_m) * 100.0
        upright = float(self.last.upright_cos)
        return {
            "success": self.success,
            "success_tick": self.success_tick,
            "ticks": self.ticks,
            "dist_initial_cm": _cm(self.dist_initial_m),
            "dist_final_cm": _cm(dist_final_m),
            "dist_min_cm": _cm(self.dist_min_m),
            "progress_cm": round(progress_cm, 3),
            "progress_final_cm": round(progress_final_cm, 3),
            "dist_by_second_cm": [_cm(d) for d in self.dist_by_second_m],
            "knock_away": bool(progress_final_cm <= KNOCK_AWAY_CM),
            "engaged": bool(progress_cm > ENGAGED_CM),
            "upright_final": round(upright, 4),
            "object_z_mm": round(float(self.last.pos[2]) * 1000.0, 2),
            "tipped": bool(upright < UPRIGHT_COS),
            "reset_strikes": self.reset_strikes,
            "success_streak": self.streak,
            "env_success": self.env_success_tick is not None,
            "env_success_tick": self.env_success_tick,
            "grasped_lifted": self.grasp_tick is not None,
            "grasped_squeezed": self.squeezed,
            "grasp_tick": self.grasp_tick,
            "lift_max_mm": round(self.lift_max_m * 1000.0, 2),
            "carried_cm": _cm(self.carried_m),
            "released": self.grasp_tick is not None and not self.last.held,
            "touched": self.touched,
            "off_table": bool(float(self.last.pos[2]) < self.z_initial_m - OFF_TABLE_DROP_M),
        }

    def _dist(self, reading: BoatReading) -> float:
        return math.hypot(reading.pos[0] - self.disk_pos[0], reading.pos[1] - self.disk_pos[1])


# The success tests a lab composes (an env file's `success.test`): each one's tolerances, in words.
PREDICATES: dict[str, tuple[tuple[str, ...], str]] = {
    "within": (("radius_m",), "the object's base within radius_m of the target's centre (XY)"),
    "height": (("place_height_m", "height_tolerance_m"),
               "its base place_height_m above the target's origin, within height_tolerance_m"),
    "upright": (("upright_cos_min",), "upright: the cosine of its tilt from how it stood at rest >= upright_cos_min"),
    "any_face": (("face_cos_min",), "resting on any face: one of its axes within acos(face_cos_min) of vertical"),
    "object_still": (("still_speed_m_s",), "the object slower than still_speed_m_s"),
    "robot_still": (("robot_still_rad_s",), "every arm joint slower than robot_still_rad_s"),
    "arm_clear": ((), "the arm not touching the object"),
    "held": ((), "held by both jaws and touching nothing else (off its support)"),
    "lifted": ((), "its base at or above the target's height (a lift: the target is that high above its start)"),
}
DEFAULT_TEST = ("within", "height", "upright", "object_still", "arm_clear")  # boat-on-disk's, as env files had it
# "Placed" is physical (issue 45): a place's success adds these to the declared test, so a success is the
# object let go and at rest on the target; the declared test alone is the env's own (`env_success`).
PLACED = ("arm_clear", "object_still")


def placed_test(names) -> tuple[str, ...]:
    """Fontaine's success test for a declared test `names`: a place's (a test without `held`) with the
    object released and still (PLACED) added; a lift's (`held`: the object in the jaws) as declared."""
    names = tuple(names)
    return names if "held" in names else tuple(dict.fromkeys(names + PLACED))


def success_test(names, tol: dict):
    """The instantaneous test `names` (PREDICATES) compose with tolerances `tol`: a function of
    (reading, target position, place height z) that holds when every predicate holds."""
    names = tuple(names)
    for name in names:
        if name not in PREDICATES:
            raise ValueError(f"unknown success predicate {name!r} (known: {', '.join(PREDICATES)})")
    return lambda reading, target, z: all(_holds(name, reading, target, z, tol) for name in names)


def _holds(name: str, x: BoatReading, target, z: float, tol: dict) -> bool:
    if name == "within":
        return math.hypot(x.pos[0] - target[0], x.pos[1] - target[1]) <= tol["radius_m"]
    if name == "height":
        return abs(float(x.pos[2]) - z) < tol["height_tolerance_m"]
    if name == "upright":
        return x.upright_cos >= tol["upright_cos_min"]
    if name == "any_face":
        return x.face_cos >= tol["face_cos_min"]
    if name == "object_still":
        return x.speed_m_s < tol["still_speed_m_s"]
    if name == "robot_still":
        return x.arm_speed_rad_s < tol["robot_still_rad_s"]
    if name == "held":
        return x.held
    if name == "lifted":
        return float(x.pos[2]) >= float(target[2])
    return not x.touching_arm  # arm_clear


def _cm(metres: float) -> float:
    return round(metres * 100.0, 3)
