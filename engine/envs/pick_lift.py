"""`pick-lift`, a second built-in env: pick a 31 mm cube off the table, lift it 5 cm and hold it.

A different task on the same arm, the same solver, jaw pads, floor and walls as boat-on-disk
(engine/sim/scene.py): there is no disk, the target is a point `LIFT_HEIGHT_M` above where the
cube spawned (a mocap marker nothing collides with, drawn only in group 3), success is the cube
held off its support by both jaw pads with its base at least that high for `HOLD_TICKS` in a row,
and progress is the 3-D distance from the cube's base centre to that point (lifting it 5 cm
straight up is 5 cm of progress; pushing it 2 cm away is a knock-away). Its own row fields:
`lift_final_mm` (the cube's base above its start at the end) and `hold_high_ticks` (the longest
run of ticks held at height). The scripted oracle picks its plan from `privileged()["plan"]`.
"""

from __future__ import annotations

import functools
import math

import mujoco
import numpy as np

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.envs.spec import BoundsSpec, EnvSpec, GraspSpec, ResetSpec, SuccessSpec
from engine.sim import handoff, scene
from engine.sim.env import HOME_RAD, MAX_RESET_STRIKES, PAD_GEOMS, POLICY_CAMERAS, SETTLE_TICKS, ObjectEnv, builtin_object, yaw_quat
from engine.sim.metrics import GRASP_HOLD_TICKS, TICKS_PER_SECOND, BoatReading, EpisodeMetrics

NAME = "pick-lift"
TASK = "pick up the cube and hold it up"
CUBE_HALF_M = 0.0155  # 31 mm: the width the jaw pads and the grasp site were tuned on (the boat's hull)
CUBE_MASS_KG = 0.015
LIFT_HEIGHT_M = 0.05  # the cube's base at least this far above where it spawned
HOLD_TICKS = 30  # 1 s at 30 Hz
SPAWN_RADIUS_M = (0.13, 0.22)  # from the pan axis: inside the top-down reach at the lift height
SPAWN_AZIMUTH_DEG = 50.0
EPISODE_SECONDS = 20.0


def build_spec() -> mujoco.MjSpec:
    """The boat scene's table, light, camera, arm, floor and walls, with a cube and a lift marker."""
    spec = mujoco.MjSpec()
    spec.modelname = "so101_pick_lift"
    scene._set_solver(spec)
    scene._set_visual(spec)
    scene._add_table_and_light(spec)
    cube = spec.worldbody.add_body(name="cube", pos=[0.2, 0.0, 0.0])
    cube.add_freejoint(name="cube")
    cube.add_geom(name="cube", type=mujoco.mjtGeom.mjGEOM_BOX, size=[CUBE_HALF_M] * 3, pos=[0.0, 0.0, CUBE_HALF_M],
                  mass=CUBE_MASS_KG, rgba=[0.95, 0.60, 0.10, 1.0], contype=scene.BIT_BOAT,
                  conaffinity=scene.BIT_BOAT, condim=4, friction=[1.0, 0.005, 0.0001])
    marker = spec.worldbody.add_body(name="lift_target", mocap=True, pos=[0.2, 0.0, LIFT_HEIGHT_M])
    marker.add_geom(name="lift_target", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.004, 0, 0],
                    contype=0, conaffinity=0, group=3, rgba=[0.2, 0.9, 0.2, 0.5])
    scene._add_front_camera(spec)
    scene._attach_arm(spec)
    scene._add_floor_and_walls(spec)
    spec.stat.extent, spec.stat.center, spec.stat.meansize = (scene.STAT_EXTENT_M, list(scene.STAT_CENTER),
                                                              scene.STAT_MEANSIZE_M)
    return spec


@functools.cache
def _compiled() -> mujoco.MjModel:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*empty prefix.*")
        return build_spec().compile()


class LiftMetrics(EpisodeMetrics):
    """EpisodeMetrics with the lift's success test, a 3-D distance and the lift's own row fields."""

    hold_ticks = HOLD_TICKS

    def __init__(self, target: np.ndarray, initial: BoatReading, reset_strikes: int = 0):
        self.hold_high = 0
        self.hold_high_max = 0
        super().__init__(target, float(target[2]), initial, reset_strikes)
        self.z_start_m = float(initial.pos[2])

    def succeeds(self, reading: BoatReading) -> bool:
        return reading.held and float(reading.pos[2]) - self.z_start_m >= LIFT_HEIGHT_M

    def update(self, reading: BoatReading) -> None:
        super().update(reading)
        self.hold_high = self.streak
        self.hold_high_max = max(self.hold_high_max, self.streak)

    def row(self) -> dict:
        row = super().row()
        row["lift_final_mm"] = round((float(self.last.pos[2]) - self.z_start_m) * 1000.0, 2)
        row["hold_high_ticks"] = self.hold_high_max
        return row

    def _dist(self, reading: BoatReading) -> float:
        d = np.asarray(reading.pos, dtype=float) - self.disk_pos
        return math.sqrt(float(d @ d))


class PickLiftEnv(ObjectEnv):
    """One pick-lift scene at the 30 Hz control tick (engine.envs.SimEnv)."""

    film_geom_groups = (scene.ROOM_GEOM_GROUP, 3)  # the floor and the lift marker

    def __init__(self, *, render_size: int = 224, cameras: dict[str, str] | None = None,
                 model: mujoco.MjModel | None = None):
        import copy

        if model is not None:  # a compiled variant of the scene (engine/envs/variant_env.py): this env's own copy
            model = copy.deepcopy(model)
        else:
            model = handoff.model(NAME)  # a worker handed the scene shares it with its oracle, read-only
            model = copy.deepcopy(_compiled()) if model is None else model
        super().__init__(model, render_size=render_size, cameras=POLICY_CAMERAS if cameras is None else cameras,
                         target_body="lift_target", **builtin_object(model, "cube"))
        self.metrics: LiftMetrics | None = None

    def reset(self, seed: int) -> int:
        for strike in range(MAX_RESET_STRIKES + 1):
            rng = np.random.default_rng(int(seed) if strike == 0 else (int(seed), strike))
            radius = rng.uniform(*SPAWN_RADIUS_M)
            az = np.deg2rad(rng.uniform(-SPAWN_AZIMUTH_DEG, SPAWN_AZIMUTH_DEG))
            xy = scene.PAN_AXIS_XY + radius * np.array([np.cos(az), np.sin(az)])
            yaw = float(rng.uniform(-np.pi, np.pi))
            mujoco.mj_resetData(self.model, self.data)
            self.data.qpos[self._qpos_adr] = HOME_RAD
            self.data.ctrl[:] = HOME_RAD
            self.data.qpos[self._obj_qpos:self._obj_qpos + 3] = [xy[0], xy[1], 0.0]
            self.data.qpos[self._obj_qpos + 3:self._obj_qpos + 7] = yaw_quat(yaw)
            self.data.mocap_pos[self._target] = [xy[0], xy[1], LIFT_HEIGHT_M]
            mujoco.mj_forward(self.model, self.data)
            self.metrics = None
            for _ in range(SETTLE_TICKS):
                self.step_tick(HOME_RAD)
            r = self.reading()
            arm_off = np.abs(self.state_rad()[:5] - HOME_RAD[:5]).max()
            if (r.upright_cos >= 0.99 and abs(r.pos[2]) <= 0.001 and np.linalg.norm(r.pos[:2] - xy) <= 0.002
                    and r.speed_m_s <= 0.002 and not r.touching_arm and arm_off <= np.deg2rad(2.0)):
                self.tick = 0
                self.metrics = LiftMetrics(self.target(), r, strike)
                return strike
        raise RuntimeError(f"seed {seed}: no valid reset in {MAX_RESET_STRIKES + 1} draws")

    def cube_pos(self) -> np.ndarray:
        return self.object_pos()

    def cube_quat(self) -> np.ndarray:
        return self.object_quat()

    def privileged(self) -> dict:
        return {"plan": "lift", "object_pos": self.cube_pos(), "object_quat": self.cube_quat(),
                "lift_height_m": LIFT_HEIGHT_M, "target_pos": self.target()}


def make_env(spec: EnvSpec, render_size: int = 224, model: mujoco.MjModel | None = None) -> PickLiftEnv:
    return PickLiftEnv(render_size=render_size, cameras=dict(spec.cameras), model=model)


def spec() -> EnvSpec:
    from engine.envs.boat_on_disk import arm_files

    return EnvSpec(
        name=NAME,
        description="SO-101 lifts a 31 mm, 15 g cube 5 cm off the table and holds it for 1 s",
        object_body="cube",
        target_body="lift_target",
        cameras=dict(POLICY_CAMERAS),
        reset=ResetSpec(
            distribution=("cube centre at a radius uniform in the spawn radius and an azimuth uniform in +-spawn "
                          "azimuth from the pan axis, yaw uniform in [-pi, pi); the target LIFT_HEIGHT above it; "
                          "arm at home; numpy.random.default_rng(seed)"),
            params={"pan_axis_xy_m": [float(v) for v in scene.PAN_AXIS_XY], "spawn_radius_m": list(SPAWN_RADIUS_M),
                    "spawn_azimuth_deg": SPAWN_AZIMUTH_DEG, "cube_side_m": 2 * CUBE_HALF_M,
                    "cube_mass_kg": CUBE_MASS_KG, "home_rad": [float(v) for v in HOME_RAD]},
            settle_ticks=SETTLE_TICKS,
            strike_rule=("after settling: the cube not flat on the table where it was put, still moving, touching "
                         "the arm, or the arm not at home is a strike; redrawn from default_rng((seed, strike))"),
            max_strikes=MAX_RESET_STRIKES,
        ),
        success=SuccessSpec(
            predicate=("the cube held by both jaw pads and touching nothing else, its base at least lift_height_m "
                       "above where it spawned, for hold_ticks ticks in a row (success latches)"),
            tolerances={"lift_height_m": LIFT_HEIGHT_M},
            hold_ticks=HOLD_TICKS,
        ),
        progress=("3-D distance from the cube's base centre to the point lift_height_m above its spawn: "
                  "progress_cm = initial - min, progress_final_cm = initial - final"),
        grasp=GraspSpec(jaw_geoms=tuple(PAD_GEOMS), hold_ticks=GRASP_HOLD_TICKS,
                        rule="both jaw geoms touch the cube and nothing else supports it"),
        bounds=BoundsSpec(floor_z_m=scene.FLOOR_Z, table_top_z_m=0.0, table_xy_m=scene.table_bounds_xy(),
                          room_xy_m=scene.room_bounds_xy(), ceiling_z_m=scene.FLOOR_Z + scene.ROOM_HEIGHT_M),
        episode_seconds=EPISODE_SECONDS,
        control_hz=TICKS_PER_SECOND,
        task=TASK,
        build_scene=build_spec,
        make=make_env,
        files=arm_files(),
    )
