"""A Fontaine env as a Gymnasium env, in lerobot's convention (issue 34).

`gymnasium.make("fontaine/boat-on-disk-v0")` (after `import engine.gym`, or `gymnasium.make(
"engine.gym:fontaine/boat-on-disk-v0")`) is the env Fontaine's own driver runs, stepped once per
30 Hz tick:

- observation: `{"pixels": {"front": HxWx3 uint8, "wrist": HxWx3 uint8}, "agent_pos": (6,) float32}`,
  the keys lerobot's `preprocess_observation` turns into `observation.images.front`,
  `observation.images.wrist` and `observation.state`;
- action: the six joint targets (shoulder_pan ... gripper) held for the tick;
- units `rig` (the default): lerobot's SO-101 convention, the arm's joints in degrees and the gripper
  0-100 over its range (engine.policies.convmap.shim.sim_rad_to_rig_deg); `sim`: the simulator's radians;
- reward 1.0 once Fontaine's success test has held for its hold (success latches), else 0.0;
  `terminated` at success, `truncated` at the env's episode budget (the registration's
  max_episode_steps); `info["is_success"]` (what lerobot-eval reads), and at the episode's end
  `info["row"]`: the simulator's fields of Fontaine's row (grasped_lifted, reachable, carried_cm,
  success_streak, ...).
- `task_description`: the env's language instruction; `render()`: the front and wrist views side
  by side (Fontaine's video frame).

`env` may name any env Fontaine runs (a built-in, an entry point, an env file, `gym:ID`):
`gymnasium.make("fontaine/env-v0", env="lab/env.yaml")`.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from engine.policies.convmap.shim import rig_deg_to_sim_rad, sim_rad_to_rig_deg

UNITS = ("rig", "sim")
INPUTS = ("front", "wrist")


class FontaineGymEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, env: str = "boat-on-disk", *, image_size: int = 224, units: str = "rig",
                 render_mode: str | None = "rgb_array", task: str | None = None):
        from engine.envs import get_env

        if units not in UNITS:
            raise ValueError(f"units must be one of {UNITS}, got {units!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.spec_env = get_env(env)
        self.sim = self.spec_env.create(render_size=int(image_size))
        self.units, self.render_mode = units, render_mode
        self.task_description = task or getattr(self.sim, "task", None) or self.spec_env.task
        self.task = self.task_description
        ranges = np.asarray(self.sim._ranges, dtype=float)
        lo, hi = self._out(ranges[:, 0]), self._out(ranges[:, 1])
        self.action_space = spaces.Box(low=lo.astype(np.float32), high=hi.astype(np.float32), dtype=np.float32)
        image = spaces.Box(low=0, high=255, shape=(int(image_size), int(image_size), 3), dtype=np.uint8)
        self.observation_space = spaces.Dict({
            "pixels": spaces.Dict({k: image for k in INPUTS}),
            "agent_pos": spaces.Box(low=-np.inf, high=np.inf, shape=(6,), dtype=np.float32),
        })

    def _out(self, q_rad: np.ndarray) -> np.ndarray:
        return sim_rad_to_rig_deg(q_rad) if self.units == "rig" else np.asarray(q_rad, dtype=float)

    def _in(self, action) -> np.ndarray:
        a = np.asarray(action, dtype=float).reshape(6)
        return rig_deg_to_sim_rad(a) if self.units == "rig" else a

    def _obs(self) -> dict:
        images = self.sim.policy_images()
        return {"pixels": {k: images[k] for k in INPUTS},
                "agent_pos": self._out(self.sim.state_rad()).astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Fontaine's seeded reset: `seed` (or one drawn from the env's generator) is the scene's seed."""
        super().reset(seed=seed)
        scene_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        strikes = self.sim.reset(scene_seed)
        return self._obs(), {"seed": scene_seed, "reset_strikes": strikes, "is_success": False}

    def step(self, action):
        self.sim.step_tick(self._in(action))
        success = bool(self.sim.success)
        info = {"is_success": success, "tick": self.sim.tick}
        if success:
            info["row"] = self.sim.row()
        return self._obs(), float(success), success, False, info

    def row(self) -> dict:
        """The simulator's fields of Fontaine's row for the episode so far."""
        return self.sim.row()

    def render(self):
        return self.sim.film() if self.render_mode == "rgb_array" else None

    def close(self):
        self.sim.close()
