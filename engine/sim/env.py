"""`BoatEnv`: one SO-101 boat scene driven at the 30 Hz control tick.

Reset distribution (drawn from the seed alone with `numpy.random.default_rng(seed)`): the
boat's and the disk's centres are each placed at a radius uniform in [0.12, 0.24] m from
the shoulder_pan axis and an azimuth uniform in [-50, +50] deg (0 = straight ahead, +x),
re-drawn within the same generator until the two are at least 0.10 m apart; the boat's yaw
is uniform in [-pi, pi). The arm starts at `HOME_RAD` and the scene settles for
`SETTLE_TICKS`. A draw that then fails validity (boat not resting upright where it was put,
arm not at home, arm touching the boat) is a *reset strike*: the scene is re-drawn from
`default_rng((seed, strike))` and the strike is counted in the row.
"""

from __future__ import annotations

import copy
import math

import mujoco
import numpy as np

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.sim.metrics import TICKS_PER_SECOND, BoatReading, EpisodeMetrics
from engine.sim.render import DEFAULT_GEOM_GROUPS, FrameRenderer
from engine.sim.scene import (
    DISK_RADIUS_M,
    DISK_TOP_Z,
    PAN_AXIS_XY,
    ROOM_GEOM_GROUP,
    SUBSTEPS_PER_TICK,
    TIMESTEP_S,
    build_model,
    joint_dof_addresses,
    joint_qpos_addresses,
    joint_ranges,
)
from prereg.core.vocabulary import JOINT_NAMES

HOME_RAD = np.array([0.0, -1.65, 1.40, 0.66, 0.0, 0.0])  # the rest pose, lifted clear of spawns
SPAWN_RADIUS_M = (0.12, 0.24)
SPAWN_AZIMUTH_DEG = 50.0
SPAWN_MIN_SEPARATION_M = 0.10
SETTLE_TICKS = 15
MAX_RESET_STRIKES = 20
CAMERAS = ("front", "wrist")
POLICY_CAMERAS = {"front": "front", "wrist": "wrist"}  # the policy's image inputs -> the scene's cameras
PAD_GEOMS = ("fixed_pad", "moving_pad")

# What a geom is to the scene's object, as bits: the contacts of one tick are folded into one OR.
_ARM, _FIXED_PAD, _MOVING_PAD, _SUPPORT = 1, 2, 4, 8


def builtin_object(model: mujoco.MjModel, name: str) -> dict:
    """ObjectEnv's object arguments for a built-in scene: the body and free joint both called `name`,
    the arm everything under `base`, the jaws `PAD_GEOMS`."""
    return {"obj_joint": model.joint(name).id, "is_obj": model.geom_bodyid == model.body(name).id,
            "is_arm": model.body_rootid[model.geom_bodyid] == model.body("base").id, "jaw_geoms": PAD_GEOMS}


class ObjectEnv:
    """What every SO-101 scene with one free-jointed object shares (BoatEnv here; engine.envs' pick-lift
    and env-file scenes): the 30 Hz tick, the state at the seam, the object's reading and contacts,
    the policy's images and the video frame. A subclass draws its own resets, metrics and privileged poses.

    `obj_joint` is the object's free joint (its qpos/qvel address), `is_obj` the geoms that are the
    object, `is_arm` the geoms that are the arm, `jaw_geoms` the (fixed, moving) jaw pads (every other
    geom supports the object) and `target_body` the mocap body the object is taken to. The six targets
    drive the first six actuators: the arm's (the built-in scenes have no others; an env file's may)."""

    film_geom_groups: tuple[int, ...] = (ROOM_GEOM_GROUP,)  # drawn in videos too: the floor, where a knocked object went
    visual_match = None  # engine.sim.composite.VisualMatch: the rig's photo behind the policy's cameras

    def __init__(self, model: mujoco.MjModel, *, render_size: int, cameras: dict[str, str], obj_joint: int,
                 is_obj: np.ndarray, is_arm: np.ndarray, jaw_geoms, target_body: str,
                 rest_box: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, data: mujoco.MjData | None = None,
                 free_cameras: dict | None = None):
        self.model = model
        self.data = mujoco.MjData(self.model) if data is None else data  # a Gymnasium env's own, when it owns it
        self.cameras = dict(cameras)
        self.render_size = int(render_size)
        self._renderer = FrameRenderer(self.model, self.render_size, self._drawn_groups())
        self._film_renderer: FrameRenderer | None = None
        self._film_option: mujoco.MjvOption | None = None
        self._qpos_adr = joint_qpos_addresses(self.model)
        self._ranges = joint_ranges(self.model)
        self._obj_qpos, self._obj_qvel = int(self.model.jnt_qposadr[obj_joint]), int(self.model.jnt_dofadr[obj_joint])
        self._target = int(self.model.body(target_body).mocapid[0])
        role = np.where(is_arm, _ARM, _SUPPORT).astype(np.int64)
        for side, bit in zip(jaw_geoms, (_FIXED_PAD, _MOVING_PAD)):  # a geom's name, or a side's geom ids
            role[[self.model.geom(side).id] if isinstance(side, str) else list(side)] |= bit
        role[is_obj] = 0
        self._is_obj = is_obj
        self._role = role
        self._arm_dofs = joint_dof_addresses(self.model)[:5]
        self._substeps = substeps_per_tick(self.model)
        self._rest = None  # (box centre, box low, box high, rest rotation): the object's base from its geometry
        if rest_box is not None:
            lo, hi, rot = (np.asarray(v, dtype=float) for v in rest_box)
            self._rest = ((lo + hi) / 2, lo, hi, rot)
        self._mat = np.zeros(9)
        self._free = {name: _look_at(cam) for name, cam in (free_cameras or {}).items()}  # {name: (MjvCamera, fovy)}
        self.tick = 0
        self._pan = self.model.joint(JOINT_NAMES[0]).id
        self.metrics: EpisodeMetrics | None = None

    @property
    def metrics(self) -> EpisodeMetrics | None:
        return self._metrics

    @metrics.setter
    def metrics(self, metrics: EpisodeMetrics | None) -> None:
        """A reset starts the episode's metrics: the start's true poses are kept for `reachable`."""
        self._metrics = metrics
        self._start_pose = None if metrics is None else self.privileged()
        self._reach = None

    def reach(self):
        """Whether the SO-101 reaches this episode's object and target from the start (engine.sim.reach),
        worked out once per episode, when first asked; None before a reset."""
        if self._reach is None and self._start_pose is not None:
            from engine.sim.reach import reach

            self._reach = reach(self._start_pose, pan_anchor=self.data.xanchor[self._pan])
        return self._reach

    def step_tick(self, targets_rad: np.ndarray) -> None:
        """One 30 Hz control tick: clamp targets to joint ranges, run the substeps, update metrics."""
        targets = np.clip(np.asarray(targets_rad, dtype=float).reshape(6), self._ranges[:, 0], self._ranges[:, 1])
        self.data.ctrl[:6] = targets
        mujoco.mj_step(self.model, self.data, nstep=self._substeps)
        self.tick += 1
        if self.metrics is not None:
            self.metrics.update(self.reading())

    @property
    def success(self) -> bool:
        return self.metrics is not None and self.metrics.success

    def row(self) -> dict:
        """The simulator's row fields for the episode so far."""
        if self.metrics is None:
            raise RuntimeError("row() before reset(): no episode has started")
        return {**self.metrics.row(), "reachable": self.reach().reachable}

    def state_rad(self) -> np.ndarray:
        """(6,) joint positions in sim radians, `JOINT_NAMES` order."""
        return self.data.qpos[self._qpos_adr].copy()

    def object_pos(self) -> np.ndarray:
        return self.data.qpos[self._obj_qpos : self._obj_qpos + 3].copy()

    def object_quat(self) -> np.ndarray:
        """(w, x, y, z)."""
        return self.data.qpos[self._obj_qpos + 3 : self._obj_qpos + 7].copy()

    def object_linvel(self) -> np.ndarray:
        return self.data.qvel[self._obj_qvel : self._obj_qvel + 3].copy()

    def target(self) -> np.ndarray:
        """The target's (mocap body's) position."""
        return self.data.mocap_pos[self._target].copy()

    def reading(self) -> BoatReading:
        """The object now: where, how upright, how fast, what it touches, how fast the arm moves."""
        vel = self.data.qvel[self._obj_qvel : self._obj_qvel + 3]
        touching = self._contacts()
        both_pads = _FIXED_PAD | _MOVING_PAD
        pos, quat = self.object_pos(), self.object_quat()
        mujoco.mju_quat2Mat(self._mat, quat)
        rot = self._mat.reshape(3, 3)
        up = None
        if self._rest is not None:  # an object whose origin is anywhere: its base from its geometry
            offset, rot = self._base(rot)
            pos, up = pos + offset, float(rot[2, 2])
        arm = self.data.qvel[self._arm_dofs]
        return BoatReading(
            pos=pos,
            upright_cos=upright_cos(quat) if up is None else up,
            speed_m_s=math.sqrt(float(vel @ vel)),
            touching_arm=bool(touching & _ARM),
            held=(touching & (both_pads | _SUPPORT)) == both_pads,
            squeezed=(touching & both_pads) == both_pads,
            face_cos=float(np.abs(rot[2]).max()),
            arm_speed_rad_s=float(np.abs(arm).max()),
        )

    def _base(self, body_rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(where the centre of the face of the object's rest box that faces down is, from its origin;
        the box's rotation from rest): at rest that is its base, (box centre x, y, low z); tipped onto
        a side, that side."""
        centre, lo, hi, rest = self._rest
        rot = body_rot @ rest.T
        axis = int(np.abs(rot[2]).argmax())
        down = (lo if rot[2, axis] > 0 else hi)[axis] - centre[axis]
        return rot @ centre + rot[:, axis] * down, rot

    def place_object(self, base_xy, quat, top_z: float) -> None:
        """Put the object in orientation `quat` (wxyz) with the centre of the face it then rests on
        at (x, y, top_z), its origin wherever its geometry puts it, at rest; forward kinematics only."""
        q = np.asarray(quat, dtype=float)
        q = q / np.linalg.norm(q)
        origin = np.array([base_xy[0], base_xy[1], top_z], dtype=float)
        if self._rest is not None:
            mujoco.mju_quat2Mat(self._mat, q)
            origin -= self._base(self._mat.reshape(3, 3))[0]
        self.data.qpos[self._obj_qpos : self._obj_qpos + 3] = origin
        self.data.qpos[self._obj_qpos + 3 : self._obj_qpos + 7] = q
        self.data.qvel[self._obj_qvel : self._obj_qvel + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def jitter_object(self, offset_xy_m) -> None:
        """Move the reset object by `offset_xy_m` (metres, world x and y), at rest, and start the episode's
        metrics from there: the jittered initial condition of a sim prediction (docs/real.md); after
        reset(), before the first tick."""
        dx, dy = (float(v) for v in offset_xy_m)
        self.data.qpos[self._obj_qpos] += dx
        self.data.qpos[self._obj_qpos + 1] += dy
        self.data.qvel[self._obj_qvel : self._obj_qvel + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)
        if self.metrics is not None:
            self.metrics.rebase(self.reading())

    def _contacts(self) -> int:
        """What the object touches now, as the OR of the `_ARM | _FIXED_PAD | _MOVING_PAD | _SUPPORT` bits."""
        ncon = self.data.ncon
        if ncon == 0:
            return 0
        geoms = self.data.contact.geom[:ncon]
        mine = self._is_obj[geoms]
        other = np.where(mine[:, 0], geoms[:, 1], geoms[:, 0])[mine[:, 0] ^ mine[:, 1]]
        return int(np.bitwise_or.reduce(self._role[other])) if len(other) else 0

    def render(self, camera: str) -> np.ndarray:
        """An HxWx3 uint8 frame from a scene camera; raises RenderUnavailable without GL. With visual
        matching (engine/sim/composite.py) the camera's photo is behind the arm, object and target."""
        frame = self._render(self._renderer, camera)
        match = self.visual_match
        if match is None or camera not in match.backgrounds:
            return frame
        seg = self._render(self._renderer, camera, segment=True) if match.needs_segmentation else None
        return match.apply(camera, frame, seg)

    def _render(self, renderer: FrameRenderer, camera: str, option: mujoco.MjvOption | None = None,
                segment: bool = False) -> np.ndarray:
        draw = renderer.segment if segment else renderer.render
        if camera not in self._free:
            return draw(self.data, camera, option)
        free, fovy = self._free[camera]  # a camera the scene lacks, placed by the env: a free camera at its fovy
        was, self.model.vis.global_.fovy = self.model.vis.global_.fovy, fovy
        try:
            return draw(self.data, free, option)
        finally:
            self.model.vis.global_.fovy = was

    def policy_images(self) -> dict[str, np.ndarray]:
        """The policy's image inputs, each from the scene camera the env maps it to."""
        return {key: self.render(camera) for key, camera in self.cameras.items()}

    def _drawn_groups(self) -> tuple[int, ...]:
        """The geom groups a frame may draw: the policy's cameras' (MuJoCo's default) and the video's."""
        return (*DEFAULT_GEOM_GROUPS, *self.film_geom_groups)

    def film_cameras(self) -> tuple[str, ...]:
        """The scene cameras a video frame shows, left to right."""
        return ("front", "wrist")

    def film(self, size: int | None = None) -> np.ndarray:
        """A video frame: the front and the wrist views side by side, H x 2H x 3 uint8,
        at `size` pixels a side (default render_size; another size gets its own renderer)."""
        renderer = self._renderer
        if size and int(size) != self.render_size:
            if self._film_renderer is None or self._film_renderer.size != int(size):
                self._film_renderer = FrameRenderer(self.model, int(size), self._drawn_groups())
            renderer = self._film_renderer
        if self._film_option is None:
            self._film_option = mujoco.MjvOption()
            for group in self.film_geom_groups:
                self._film_option.geomgroup[group] = 1
        option = self._film_option
        return np.concatenate([self._render(renderer, camera, option) for camera in self.film_cameras()], axis=1)

    def close(self) -> None:
        self._renderer.close()
        if self._film_renderer is not None:
            self._film_renderer.close()


class BoatEnv(ObjectEnv):
    """The scene, its state at the seam (sim radians) and the per-episode metrics."""

    def __init__(self, *, render_size: int = 224, cameras: dict[str, str] | None = None,
                 model: mujoco.MjModel | None = None):
        # `model`: a compiled variant of the scene (engine/envs/variant_env.py), copied: the env steps its own
        model = build_model() if model is None else copy.deepcopy(model)
        super().__init__(model, render_size=render_size, cameras=POLICY_CAMERAS if cameras is None else cameras,
                         target_body="disk", **builtin_object(model, "boat"))
        self.seed: int | None = None

    # -- episode ---------------------------------------------------------------------------

    def reset(self, seed: int) -> int:
        """Draw and settle the scene for `seed`; returns the reset strikes it took."""
        self.seed = int(seed)
        for strike in range(MAX_RESET_STRIKES + 1):
            rng = np.random.default_rng(self.seed if strike == 0 else (self.seed, strike))
            boat_xy, boat_yaw, disk_xy = draw_spawn(rng)
            self._set_scene(boat_xy, boat_yaw, disk_xy)
            self._settle()
            if self.reset_problem(boat_xy) is None:
                self._start_metrics(reset_strikes=strike)
                return strike
        raise RuntimeError(
            f"seed {self.seed}: no valid reset in {MAX_RESET_STRIKES + 1} draws "
            f"(last problem: {self.reset_problem(boat_xy)}); the scene or spawn distribution is broken"
        )

    # -- what policies see -----------------------------------------------------------------

    def privileged(self) -> dict:
        """True poses for privileged policies (the scripted oracle)."""
        return {
            "boat_pos": self.boat_pos(),
            "boat_quat": self.boat_quat(),
            "boat_linvel": self.object_linvel(),
            "disk_pos": self.disk_pos(),
            "disk_radius": DISK_RADIUS_M,
            "disk_top_z": DISK_TOP_Z,
        }

    def render(self, camera: str) -> np.ndarray:
        """An HxWx3 uint8 frame from "front" or "wrist"; raises RenderUnavailable without GL."""
        if camera not in CAMERAS:
            raise ValueError(f"unknown camera {camera!r}; expected one of {CAMERAS}")
        return super().render(camera)

    # -- poses and readings ----------------------------------------------------------------

    def boat_pos(self) -> np.ndarray:
        return self.object_pos()

    def boat_quat(self) -> np.ndarray:
        """(w, x, y, z)."""
        return self.object_quat()

    def disk_pos(self) -> np.ndarray:
        return self.target()

    def boat_reading(self) -> BoatReading:
        return self.reading()

    def arm_touches_boat(self) -> bool:
        """Any active contact between the boat and any body of the arm (pads included)."""
        return bool(self._contacts() & _ARM)

    def reset_problem(self, boat_xy: np.ndarray) -> str | None:
        """Why the settled scene is not a valid start, or None."""
        reading = self.boat_reading()
        if reading.upright_cos < 0.99 or abs(reading.pos[2]) > 0.001:
            return f"boat not upright on the table (cos {reading.upright_cos:.3f}, z {reading.pos[2] * 1000:.1f} mm)"
        if np.linalg.norm(reading.pos[:2] - boat_xy) > 0.002 or reading.speed_m_s > 0.002:
            return "boat not settled where it was put"
        if reading.touching_arm:
            return "arm touching the boat"
        error = np.abs(self.state_rad()[:5] - HOME_RAD[:5]).max()
        if error > np.deg2rad(2.0):
            return f"arm not at home ({np.rad2deg(error):.1f} deg off)"
        return None

    # -- hand placement (tests, tools) -----------------------------------------------------

    def place_boat(self, pos, quat=(1.0, 0.0, 0.0, 0.0), *, restart_metrics: bool = True, linvel=None) -> None:
        """Put the boat at a pose (base centre, wxyz quaternion), at rest or moving at `linvel`
        (m/s, world frame); forward kinematics only."""
        q = np.asarray(quat, dtype=float)
        self.data.qpos[self._obj_qpos : self._obj_qpos + 3] = pos
        self.data.qpos[self._obj_qpos + 3 : self._obj_qpos + 7] = q / np.linalg.norm(q)
        self.data.qvel[self._obj_qvel : self._obj_qvel + 6] = 0.0
        if linvel is not None:
            self.data.qvel[self._obj_qvel : self._obj_qvel + 3] = linvel
        mujoco.mj_forward(self.model, self.data)
        if restart_metrics:
            self._start_metrics(reset_strikes=0 if self.metrics is None else self.metrics.reset_strikes)

    def place_disk(self, xy) -> None:
        """Move the disk's centre (collisions included: it is a mocap body)."""
        self.data.mocap_pos[self._target] = [float(xy[0]), float(xy[1]), 0.0]
        mujoco.mj_forward(self.model, self.data)
        if self.metrics is not None:
            self.metrics.disk_pos = self.disk_pos()

    def set_arm(self, q_rad) -> None:
        """Teleport the arm (and its servo targets) to a joint configuration."""
        q = np.asarray(q_rad, dtype=float)
        self.data.qpos[self._qpos_adr] = q
        self.data.qvel[:] = 0.0
        self.data.ctrl[:] = q
        mujoco.mj_forward(self.model, self.data)

    # -- internals -------------------------------------------------------------------------

    def _set_scene(self, boat_xy: np.ndarray, boat_yaw: float, disk_xy: np.ndarray) -> None:
        mujoco.mj_resetData(self.model, self.data)
        self.data.mocap_pos[self._target] = [disk_xy[0], disk_xy[1], 0.0]
        self.set_arm(HOME_RAD)
        self.place_boat([boat_xy[0], boat_xy[1], 0.0], yaw_quat(boat_yaw), restart_metrics=False)

    def _settle(self) -> None:
        self.metrics = None
        for _ in range(SETTLE_TICKS):
            self.step_tick(HOME_RAD)

    def _start_metrics(self, reset_strikes: int) -> None:
        self.tick = 0
        self.metrics = EpisodeMetrics(self.disk_pos(), DISK_TOP_Z, self.boat_reading(), reset_strikes)


JITTER_TAG = 0x6A6974  # "jit": keeps the jitter's stream apart from the seed's own reset draws


def jitter_offset_m(seed: int, k: int, jitter_cm: float) -> np.ndarray:
    """Rollout k's (dx, dy) in metres for `seed`: each uniform in [-jitter_cm, +jitter_cm] cm, drawn from
    `default_rng((JITTER_TAG, seed, k))`: the same on every machine, independent of the seed's reset."""
    if jitter_cm <= 0:
        return np.zeros(2)
    rng = np.random.default_rng((JITTER_TAG, int(seed), int(k)))
    return rng.uniform(-jitter_cm, jitter_cm, size=2) / 100.0


def draw_spawn(rng: np.random.Generator) -> tuple[np.ndarray, float, np.ndarray]:
    """(boat_xy, boat_yaw, disk_xy) from the documented spawn distribution."""
    while True:
        boat_xy = _draw_point(rng)
        disk_xy = _draw_point(rng)
        if np.linalg.norm(boat_xy - disk_xy) >= SPAWN_MIN_SEPARATION_M:
            break
    boat_yaw = float(rng.uniform(-np.pi, np.pi))
    return boat_xy, boat_yaw, disk_xy


def _draw_point(rng: np.random.Generator) -> np.ndarray:
    radius = rng.uniform(*SPAWN_RADIUS_M)
    azimuth = np.deg2rad(rng.uniform(-SPAWN_AZIMUTH_DEG, SPAWN_AZIMUTH_DEG))
    return PAN_AXIS_XY + radius * np.array([np.cos(azimuth), np.sin(azimuth)])


def _look_at(cam: dict) -> tuple[mujoco.MjvCamera, float]:
    """A free MjvCamera at cam["pos"] looking at cam["look_at"], and its fovy (degrees)."""
    pos, look = np.asarray(cam["pos"], dtype=float), np.asarray(cam["look_at"], dtype=float)
    forward = look - pos
    distance = float(np.linalg.norm(forward))
    forward /= distance
    free = mujoco.MjvCamera()
    free.type = mujoco.mjtCamera.mjCAMERA_FREE
    free.lookat[:] = look
    free.distance = distance
    free.azimuth = float(np.degrees(np.arctan2(forward[1], forward[0])))
    free.elevation = float(np.degrees(np.arcsin(np.clip(forward[2], -1.0, 1.0))))
    return free, float(cam["fovy"])


def substeps_per_tick(model: mujoco.MjModel) -> int:
    """Physics steps in one 30 Hz tick at the model's timestep (20 at Fontaine's 1/600 s)."""
    if abs(model.opt.timestep - TIMESTEP_S) < 1e-12:
        return SUBSTEPS_PER_TICK
    return max(1, int(round(1.0 / (TICKS_PER_SECOND * model.opt.timestep))))


def yaw_quat(yaw: float) -> np.ndarray:
    """(w, x, y, z) of a rotation about world z."""
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def upright_cos(quat: np.ndarray) -> float:
    """cos of the angle between the body's z axis and world z (the R[2, 2] entry)."""
    w, x, y, z = (float(v) for v in quat)
    return (w * w - x * x - y * y + z * z) / (w * w + x * x + y * y + z * z)
