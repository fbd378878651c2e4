"""The running scene of an env file (engine.envs.SimEnv, issue 23, 34): its seeded reset into the declared
regions (the object's base from its collision geometry, whatever its origin; strikes redrawn), its
target, privileged poses and film cameras; the tick, readings and images are engine.sim.env.ObjectEnv's.
`_metrics_class` is the declared success test's metrics, a Gymnasium env's adapter's too."""

from __future__ import annotations

import copy
import functools
import math

import numpy as np

from engine.envs.declare import POLICY_INPUTS
from prereg.core.errors import RunFailed


class ResetFailed(RunFailed, RuntimeError):
    """No valid reset in the draws allowed: the scene or its reset regions are broken (found at load, it is
    the env file's problem, exit 2; in a run, the episode's failure)."""

    def __init__(self, seed: int, draws: int, why: str):
        self.why = (f"no valid reset in {draws} draws (last: the object {why}); the scene or its reset regions "
                    "are broken")
        super().__init__(f"seed {seed}: {self.why}")


def _metrics_class():
    from engine.sim.metrics import STILL_SPEED_M_S, EpisodeMetrics, placed_test, success_test

    class PlaceMetrics(EpisodeMetrics):
        """EpisodeMetrics with the file's (or an adapter's) declared test, tolerances and hold: the
        declared test is the env's own (`env_success`); Fontaine's success is `placed_test`'s."""

        def __init__(self, test, tol: dict, hold_ticks: int, *args, dist3d: bool = False, **kwargs):
            self.tol, self.hold_ticks, self.dist3d = tol, hold_ticks, dist3d
            self._env_test = success_test(test, tol)
            self._test = success_test(placed_test(test), {"still_speed_m_s": STILL_SPEED_M_S, **tol})
            super().__init__(*args, **kwargs)

        def succeeds(self, r) -> bool:
            return self._test(r, self.disk_pos, self.disk_top_z)

        def env_succeeds(self, r) -> bool:
            return self._env_test(r, self.disk_pos, self.disk_top_z)

        def _dist(self, r) -> float:
            if not self.dist3d:  # a place: XY to the target's centre; a lift: 3-D to the point above the start
                return super()._dist(r)
            d = np.asarray(r.pos, dtype=float) - self.disk_pos
            return math.sqrt(float(d @ d))

    return PlaceMetrics


@functools.cache
def _place_env_class():
    """PlaceEnv: `_PlaceScene` on engine.sim.env.ObjectEnv, joined at first use so that reading an
    env file imports no mujoco."""
    from engine.sim.env import ObjectEnv

    return type("PlaceEnv", (_PlaceScene, ObjectEnv), {"__module__": __name__, "__qualname__": "PlaceEnv"})


class _PlaceScene:
    """One running pick-and-place scene from an env file (engine.envs.SimEnv): its reset, target height,
    privileged poses and film cameras; the tick, readings and images are ObjectEnv's (`_place_env_class`)."""

    def __init__(self, decl, model, *, render_size: int = 224):  # decl: engine.envs.envfile.Declared
        from engine.sim import handoff
        from engine.sim.geometry import rest_box
        from engine.sim.metrics import PREDICATES
        from engine.sim.scene import JOINT_NAMES

        if not handoff.is_handed(model):  # a worker's handed scene is its own already
            model = copy.deepcopy(model)
        obj = model.body(decl.object_body)
        arm_root = model.body_rootid[model.jnt_bodyid[model.joint(JOINT_NAMES[0]).id]]
        is_arm = model.body_rootid[model.geom_bodyid] == arm_root
        super().__init__(model, render_size=render_size, cameras=decl.cameras,
                         obj_joint=int(model.body_jntadr[obj.id]),
                         is_obj=model.body_rootid[model.geom_bodyid] == obj.id,
                         is_arm=is_arm, jaw_geoms=decl.jaw_geoms,
                         target_body=decl.target_body, rest_box=rest_box(model, obj.id))
        self.decl = decl
        if decl.visual is not None:  # the rig's photos behind the policy's cameras (issue 48)
            from engine.envs.visual import make_visual_match
            from engine.sim.composite import keep_geoms

            keep = keep_geoms(model, is_arm, self._is_obj, decl.target_body)
            self.visual_match = make_visual_match(decl.visual, self.cameras, keep, self.render_size)
        self._rest_quat = model.qpos0[self._obj_qpos + 3:self._obj_qpos + 7].copy()
        target = model.body(decl.target_body)
        self._target_z = float(model.body_pos[target.id][2])  # the target's height, as the MJCF puts it
        self._target_quat = model.body_quat[target.id].copy()
        self._tol = {k: decl.success[k] for t in decl.success["test"] for k in PREDICATES[t][0]}
        self._metrics_cls = _metrics_class()

    def _place_height(self) -> float:
        return float(self.target()[2]) + self.decl.success.get("place_height_m", 0.0)

    def reset(self, seed: int) -> int:
        import mujoco

        from engine.sim.env import HOME_RAD

        r, top = self.decl.reset, self.decl.bounds["table_top_z_m"]

        def point(rng, region):
            rad = rng.uniform(*region["radius_m"])
            a = np.deg2rad(rng.uniform(*region["azimuth_deg"]))
            return np.asarray(region["center_xy_m"]) + rad * np.array([np.cos(a), np.sin(a)])

        def turn(rng, region, rest):
            if region["yaw_deg"] == "fixed":
                return rest
            out = np.zeros(4)
            mujoco.mju_mulQuat(out, _yaw(np.deg2rad(rng.uniform(*region["yaw_deg"]))), rest)
            return out

        problem = None
        for strike in range(r["max_strikes"] + 1):
            rng = np.random.default_rng(int(seed) if strike == 0 else (int(seed), strike))
            for _ in range(1000):
                obj_xy = point(rng, r["object"])
                tgt_xy = point(rng, r["target"])
                if np.linalg.norm(obj_xy - tgt_xy) >= r["min_separation_m"]:
                    break
            quat = turn(rng, r["object"], self._rest_quat)
            target_quat = turn(rng, r["target"], self._target_quat)
            mujoco.mj_resetData(self.model, self.data)
            self.data.mocap_pos[self._target] = [tgt_xy[0], tgt_xy[1], self._target_z]
            self.data.mocap_quat[self._target] = target_quat
            self.data.qpos[self._qpos_adr] = HOME_RAD
            self.data.ctrl[:6] = HOME_RAD
            self.place_object(obj_xy, quat, top)
            up = self._up()
            self.metrics = None
            for _ in range(r["settle_ticks"]):
                self.step_tick(HOME_RAD)
            reading = self.reading()
            arm_off = np.abs(self.state_rad()[:5] - HOME_RAD[:5]).max()
            tilt = float(np.dot(up, self._up()))
            problem = (f"not resting where it was put (tilted {np.rad2deg(np.arccos(min(1.0, tilt))):.0f} deg, "
                       f"z {1000 * (reading.pos[2] - top):+.1f} mm from the table top)"
                       if tilt < 0.99 or abs(reading.pos[2] - top) > 0.001
                       else "not settled where it was put" if np.linalg.norm(reading.pos[:2] - obj_xy) > 0.002
                       or reading.speed_m_s > 0.002
                       else "touching the arm" if reading.touching_arm
                       else "arm not at home" if arm_off > np.deg2rad(2.0) else None)
            if problem is None:
                self.tick = 0
                self.metrics = self._metrics_cls(self.decl.success["test"], self._tol, self.decl.success["hold_ticks"],
                                                 self.target(), self._place_height(), reading, strike)
                return strike
        raise ResetFailed(seed, r["max_strikes"] + 1, problem)

    def _up(self) -> np.ndarray:
        """The object's z axis now (world), from its quaternion: the tilt between two moments."""
        import mujoco

        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, self.object_quat())
        return mat.reshape(3, 3)[:, 2]

    def privileged(self) -> dict:
        """True poses: the generic names, and the boat plan's (the scripted oracle places the object
        as it places the boat). `object_pos` is the object's base, wherever its origin is."""
        reading = self.reading()
        pos, quat, target = reading.pos, self.object_quat(), self.target()
        return {"plan": "place", "object_pos": pos, "object_quat": quat, "target_pos": target,
                "boat_pos": pos, "boat_quat": quat,
                "boat_linvel": self.object_linvel(),
                "disk_pos": target, "disk_radius": self._tol.get("radius_m", 0.045), "disk_top_z": self._place_height()}

    def film_cameras(self) -> tuple[str, ...]:
        """The policy's views side by side (front, wrist)."""
        return tuple(self.cameras[k] for k in POLICY_INPUTS)


def _yaw(angle: float) -> np.ndarray:
    return np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)])
