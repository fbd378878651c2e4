"""Can the SO-101 do this seed's task at all? Inverse kinematics to a grasp pose on the object and a
place pose at the target, within the arm's joint limits and clear of its support (issue 45).

The arm is the SO-101 of every env Fontaine runs (its own scenes, env files, so101-nexus's Gymnasium
envs): its five arm joints (pan, shoulder lift, elbow, wrist flex, wrist roll) and the grasp site
between the jaw pads (engine/sim/scene.py). The solver is damped least squares on those five joints,
clipped to their ranges, on Fontaine's own model of the arm (`ArmKinematics`, the scripted oracle's too).

A grasp pose is the grasp site `GRASP_SITE_Z_M` above the object's base, the jaws closing across it
(along one of its faces, `grasp_yaws`), pointing down, or tilted outward about the pan axis by up to
`MAX_TILT_DEG` (a five-joint arm can point its jaws only in the vertical plane through the pan axis:
tilting them outward is how it reaches past where it can point straight down). A pose counts when the
site lands within `REACH_TOLERANCE_M` and `ROTATION_TOLERANCE` of it and, the jaws open or closed, no
link dips more than `CLEARANCE_M` into the support (the table or floor the object rests on) nor a jaw
pad more than `PAD_CLEARANCE_M`. The place pose is the same grasp with the object's base
`PLACE_CLEARANCE_M` above the target (a lift's target: the point it is lifted to). A seed is
`reachable` when both have a pose: a row says so (`reachable`), and reads count the seeds that are not
apart (prereg/rundir/fold.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import mujoco
import numpy as np

from engine.sim.scene import PAN_AXIS_XY, build_model, joint_dof_addresses, joint_qpos_addresses, joint_ranges

GRASP_SITE_Z_M = 0.016  # grasp site above the object's base at the grasp (the boat's hull is 20 mm tall)
PLACE_CLEARANCE_M = 0.003  # the object's base above the target when it is let go
# Tried in order: the most upright pose that reaches. Past 40 deg the jaws meet a 25 mm cube edge-first and
# push it away (so101-nexus seed 11: a pose at 50 deg, three misses): such a start counts as out of reach.
TILTS_DEG = (0.0, 10.0, 20.0, 30.0, 40.0)
MAX_TILT_DEG = TILTS_DEG[-1]
REACH_TOLERANCE_M = 0.002
ROTATION_TOLERANCE = 0.05  # |orientation error| (about 3 deg)
STALLED_M = 0.005  # a solve this far off that gained under 10% in 10 iterations is given up
FAR_MISS_M = 0.02  # a pose this far off at one closing axis is not tried at the others (the wrist's roll)
CLEARANCE_M = 0.003  # how far a link may dip into the support (contact softness)
PAD_CLEARANCE_M = 0.007  # a jaw pad's: its rubber tip may press the floor; deeper, it jams the closing jaw
JAW_OPEN_RAD, JAW_CLOSED_RAD = 0.5, -0.17  # the gripper open over the object (54 mm at the tips) and closed on it

IK_DAMPING = 0.01
IK_ROTATION_WEIGHT = 0.3
IK_TOLERANCE_M = 1e-4
IK_MAX_STEP_RAD = 0.2
IK_SEEDS = ((0.0, 0.3, 1.4, 0.0), (0.6, -0.2, 1.0, 0.0), (1.2, -0.9, 0.9, 0.0))  # lift, elbow, wrist flex, roll


def top_down_rotation(yaw: float) -> np.ndarray:
    """Site frame pointing straight down (z = -world z) with its closing axis x at `yaw`."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])


def grasp_rotation(yaw: float, tilt: float, az: float) -> np.ndarray:
    """The top-down frame at `yaw`, its approach (z) tilted by `tilt` radians outward, away from the pan
    axis, in the vertical plane at azimuth `az` (a rotation about the horizontal tangent there)."""
    t = np.array([-math.sin(az), math.cos(az), 0.0])
    k = np.array([[0.0, -t[2], t[1]], [t[2], 0.0, -t[0]], [-t[1], t[0], 0.0]])
    rot = np.eye(3) + math.sin(-tilt) * k + (1.0 - math.cos(tilt)) * (k @ k)  # Rodrigues, -tilt about t
    return rot @ top_down_rotation(yaw)


def azimuth(xy) -> float:
    d = np.asarray(xy[:2]) - PAN_AXIS_XY
    return float(np.arctan2(d[1], d[0]))


def object_yaw(quat) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def grasp_yaws(heading: float, square: bool) -> tuple[float, ...]:
    """Closing axes across the object: across its width (the boat), or along either face (a cube)."""
    quarter = (1, -1, 0, 2) if square else (1, -1)
    return tuple(heading + k * np.pi / 2 for k in quarter)


class ArmKinematics:
    """Forward and inverse kinematics of the grasp site on a model of the arm of its own."""

    def __init__(self):
        self.model = build_model()
        self.data = mujoco.MjData(self.model)
        self._qpos = joint_qpos_addresses(self.model)
        self._dofs = joint_dof_addresses(self.model)[:5]
        self.ranges = joint_ranges(self.model)
        self._site = self.model.site("grasp").id
        self._jacp = np.zeros((3, self.model.nv))
        self._jacr = np.zeros((3, self.model.nv))
        m = self.model
        base = m.body("base").id
        arm = m.body_rootid[m.geom_bodyid] == base
        pads = np.isin(np.arange(m.ngeom), [m.geom("fixed_pad").id, m.geom("moving_pad").id])
        self._links, self._pads = arm & ~pads, pads  # the pads may press into the support a little more
        self._support = np.isin(np.arange(m.ngeom), [m.geom("table").id])
        self._shoulder = m.joint("shoulder_lift").id
        self.span_m = self._span()
        self.site_pose(np.zeros(6))
        self.pan_anchor = self.data.xanchor[m.joint("shoulder_pan").id].copy()

    def _span(self) -> float:
        """The farthest the grasp site gets from the shoulder-lift axis (over a grid of the three pitch
        joints): a point farther than that is out of reach without solving anything."""
        lo, hi = self.ranges[:4, 0], self.ranges[:4, 1]
        best = 0.0
        for q1 in np.linspace(lo[1], hi[1], 15):
            for q2 in np.linspace(lo[2], hi[2], 15):
                for q3 in np.linspace(lo[3], hi[3], 9):
                    pos, _ = self.site_pose(np.array([0.0, q1, q2, q3, 0.0, 0.0]))
                    best = max(best, float(np.linalg.norm(pos - self.data.xanchor[self._shoulder])))
        return best

    def too_far(self, pos) -> bool:
        self.site_pose(np.zeros(6))
        return float(np.linalg.norm(np.asarray(pos) - self.data.xanchor[self._shoulder])) > self.span_m + 0.001

    def site_pose(self, q6: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position, 3x3 rotation) of the grasp site for a joint configuration."""
        self.data.qpos[self._qpos] = q6
        mujoco.mj_kinematics(self.model, self.data)
        return self.data.site_xpos[self._site].copy(), self.data.site_xmat[self._site].reshape(3, 3).copy()

    def solve(self, pos: np.ndarray, yaw: float, q_init: np.ndarray, iterations: int = 60,
              tilt: float = 0.0) -> tuple[np.ndarray, float]:
        """Arm joints (5,) putting the site at `pos` in `grasp_rotation(yaw, tilt, azimuth(pos))`.

        Returns the solution and its remaining position error (m)."""
        q, err, _ = self._solve(pos, grasp_rotation(yaw, tilt, azimuth(pos)), q_init, iterations)
        return q, err

    def _solve(self, pos, target_rot, q_init, iterations):
        q = np.array(q_init[:5], dtype=float)
        lo, hi = self.ranges[:5, 0], self.ranges[:5, 1]
        err_pos, err_rot = np.inf, np.inf
        checkpoint = np.inf
        for i in range(iterations):
            self.data.qpos[self._qpos[:5]] = q
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_comPos(self.model, self.data)
            rot = self.data.site_xmat[self._site].reshape(3, 3)
            e_pos = pos - self.data.site_xpos[self._site]
            e_rot = 0.5 * _column_cross_sum(rot, target_rot)
            err_pos, err_rot = math.sqrt(float(e_pos @ e_pos)), math.sqrt(float(e_rot @ e_rot))
            if err_pos < IK_TOLERANCE_M and err_rot < 1e-3:
                break
            if i % 10 == 9:  # stalled far off (against a joint limit): it will not get there
                if err_pos > STALLED_M and err_pos > 0.9 * checkpoint:
                    break
                checkpoint = err_pos
            mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self._site)
            jac = np.vstack([self._jacp[:, self._dofs], IK_ROTATION_WEIGHT * self._jacr[:, self._dofs]])
            err = np.concatenate([e_pos, IK_ROTATION_WEIGHT * e_rot])
            step = jac.T @ np.linalg.solve(jac @ jac.T + IK_DAMPING**2 * np.eye(6), err)
            step *= min(1.0, IK_MAX_STEP_RAD / max(np.abs(step).max(), 1e-12))  # no leaps across branches
            q = np.clip(q + step, lo, hi)
        return q, err_pos, err_rot

    def site_error(self, pos, yaw: float, tilt: float, q_init, iterations: int = 60) -> float:
        """How far (m) the best solution from `q_init` leaves the site from `pos` in that orientation
        (infinite when the orientation is off by more than ROTATION_TOLERANCE)."""
        _, err, err_rot = self._solve(pos, grasp_rotation(yaw, tilt, azimuth(pos)), q_init, iterations)
        return err if err_rot < ROTATION_TOLERANCE else math.inf

    def dips(self, q5: np.ndarray) -> bool:
        """Whether a link dips more than CLEARANCE_M (a jaw pad PAD_CLEARANCE_M) into the table at `q5`,
        the jaws open or closed (a tilted moving jaw sweeps down as it closes)."""
        for jaw in (JAW_OPEN_RAD, JAW_CLOSED_RAD):
            self.data.qpos[self._qpos] = np.append(q5[:5], jaw)
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_collision(self.model, self.data)
            n = self.data.ncon
            if not n:
                continue
            g, dist = self.data.contact.geom[:n], self.data.contact.dist[:n]
            on_support = self._support[g[:, 0]] | self._support[g[:, 1]]
            links = (self._links[g[:, 0]] | self._links[g[:, 1]]) & on_support
            pads = (self._pads[g[:, 0]] | self._pads[g[:, 1]]) & on_support
            if (links & (dist < -CLEARANCE_M)).any() or (pads & (dist < -PAD_CLEARANCE_M)).any():
                return True
        return False

    def pose(self, pos: np.ndarray, yaws, q_init=None, tilts=TILTS_DEG) -> "GraspPose | None":
        """The most upright pose (smallest tilt, then the first of `yaws`) putting the site at `pos`
        within tolerance and clear of the table; None when there is none."""
        if self.too_far(pos):
            return None
        az = azimuth(pos)
        seeds = [np.array([-az, *s]) for s in IK_SEEDS] if q_init is None else [np.asarray(q_init, dtype=float)]
        for tilt_deg in tilts:
            tilt = math.radians(tilt_deg)
            for i, yaw in enumerate(yaws):
                rot = grasp_rotation(yaw, tilt, az)
                nearest = math.inf
                for seed in seeds:
                    seed = seed[:5].copy()
                    seed[4] = self.roll_for(rot, seed)
                    q, err, err_rot = self._solve(pos, rot, seed, 100)
                    if err < REACH_TOLERANCE_M and err_rot < ROTATION_TOLERANCE and not self.dips(q):
                        return GraspPose(float(yaw), tilt, q)
                    nearest = min(nearest, err)
                if i == 0 and nearest > FAR_MISS_M:  # the yaw only turns the wrist: no other reaches either
                    break
        return None

    def roll_for(self, rot: np.ndarray, seed: np.ndarray) -> float:
        """The wrist roll that turns the closing axis to `rot`'s at the seed's other joints, in range."""
        q6 = np.append(np.asarray(seed[:5], dtype=float), 0.0)
        q6[4] = 0.0
        _, r0 = self.site_pose(q6)
        roll = float(np.arctan2(float(np.cross(r0[:, 0], rot[:, 0]) @ r0[:, 2]), float(r0[:, 0] @ rot[:, 0])))
        q6[4] = roll
        _, r1 = self.site_pose(q6)
        if float(r1[:, 0] @ rot[:, 0]) < 0.9:
            roll = -roll  # the roll axis points the other way at this pose
        lo, hi = self.ranges[4]
        for wrapped in (roll, roll + 2 * np.pi, roll - 2 * np.pi):
            if lo <= wrapped <= hi:
                return float(wrapped)
        return float(np.clip(roll, lo, hi))


@dataclass(frozen=True)
class GraspPose:
    yaw: float  # the closing axis, radians from world x
    tilt: float  # the approach's tilt from straight down, outward, radians
    q: np.ndarray  # the five arm joints


@dataclass(frozen=True)
class Reach:
    """A seed's initial condition against the arm: a pose at the object, one at the target."""

    grasp: GraspPose | None
    place: GraspPose | None
    object_r_m: float  # the object's and the target's distance from the pan axis (XY)
    target_r_m: float

    @property
    def reachable(self) -> bool:
        return self.grasp is not None and self.place is not None

    def why(self) -> str:
        if self.reachable:
            return "reachable"
        where = [f"the object ({self.object_r_m:.3f} m from the pan axis)" if self.grasp is None else "",
                 f"the target ({self.target_r_m:.3f} m)" if self.place is None else ""]
        return "no grasp pose within the joint limits at " + " nor at ".join(w for w in where if w)


@functools.cache
def kinematics() -> ArmKinematics:
    """One model of the arm per process (compiling it takes about a second)."""
    return ArmKinematics()


def reach(privileged: dict, kin: ArmKinematics | None = None, pan_anchor=None) -> Reach:
    """Whether the arm reaches this seed's object and target, from an env's privileged poses at the
    start (`object_pos` (its base), `object_quat`, `target_pos`, `plan`; the boat's `boat_pos`,
    `boat_quat`, `disk_pos`, `disk_top_z`). `pan_anchor`: where the env's shoulder_pan axis is (its
    world position); the poses are moved by its offset from Fontaine's (an arm mounted elsewhere)."""
    kin = kin or kinematics()
    shift = np.zeros(3) if pan_anchor is None else np.asarray(pan_anchor, float) - kin.pan_anchor
    if "object_pos" in privileged:
        pos, quat = np.asarray(privileged["object_pos"], float) - shift, np.asarray(privileged["object_quat"], float)
        square = True
    else:
        pos, quat = np.asarray(privileged["boat_pos"], float) - shift, np.asarray(privileged["boat_quat"], float)
        square = False
    if privileged.get("plan") == "lift":
        goal = np.asarray(privileged["target_pos"], float) - shift + np.array([0.0, 0.0, GRASP_SITE_Z_M])
    else:
        target = np.asarray(privileged.get("target_pos", privileged.get("disk_pos")), float) - shift
        top = float(privileged.get("disk_top_z", target[2] + shift[2])) - shift[2]
        goal = np.array([target[0], target[1], top + PLACE_CLEARANCE_M + GRASP_SITE_Z_M])
    yaws = grasp_yaws(object_yaw(quat), square)
    grasp = kin.pose(pos + np.array([0.0, 0.0, GRASP_SITE_Z_M]), yaws)
    place_yaws = grasp_yaws(azimuth(goal) + (grasp.yaw - azimuth(pos) if grasp else 0.0), square)
    place = kin.pose(goal, place_yaws)
    return Reach(grasp, place, float(np.linalg.norm(pos[:2] - PAN_AXIS_XY)),
                 float(np.linalg.norm(goal[:2] - PAN_AXIS_XY)))


def _column_cross_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_i a[:, i] x b[:, i]: the orientation error of `a` against `b` (times 2)."""
    return np.array([
        a[1] @ b[2] - a[2] @ b[1],
        a[2] @ b[0] - a[0] @ b[2],
        a[0] @ b[1] - a[1] @ b[0],
    ])
