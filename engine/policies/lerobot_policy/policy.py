"""A loaded lerobot policy behind the engine's Policy protocol, acting as lerobot's `select_action` would.

lerobot-eval runs, every control tick: `preprocess_observation` (HWC uint8 -> CHW float in [0, 1],
state -> float32, a batch dimension), the task text, the checkpoint's saved preprocessor
(normalisation, device), `policy.select_action`, the saved postprocessor (unnormalisation), then
the env steps with that action. This adapter builds the same batch from the sim (cameras and
joints mapped to the checkpoint's features by `features.FeaturePlan`; the joints in LeRobot
calibrated degrees through the joint-convention shim) and serves it in one of two modes:

- `chunk` (served in the driver, batched across workers): for a policy whose `select_action` is
  exactly "when the queue is empty, `predict_action_chunk(batch)[:, :n_action_steps]`, then pop
  one action per tick" with a stateless postprocessor (ACT without temporal ensembling). One call
  answers the observations of several episodes; the chunk of `n_action_steps` actions is executed
  tick by tick, and the next observation comes when it is used up: what the queue does.
- `step` (one policy per worker, one episode at a time, as lerobot-eval runs it): every other
  policy (Diffusion's observation history, ACT's temporal ensembling, stochastic samplers, relative
  actions): `select_action` itself is called at every tick (chunk horizon 1), `reset()` at the
  start of each episode, torch's generator seeded by the episode's seed so a seed reproduces.

Actions come back in the checkpoint's units (LeRobot calibrated degrees), go through the shim
(model -> rig) and become sim radians clamped to the sim's joint ranges.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from engine.policies.base import Chunk, Observation
from engine.policies.convmap.shim import ConvMap, first_action_delta_deg, rig_deg_to_sim_rad, sim_rad_to_rig_deg
from engine.policies.lerobot_policy.features import FeaturePlan
from engine.policies.lerobot_policy.serving import CHUNK
from engine.policies.molmoact2.policy import JOINT_HIGH_RAD, JOINT_LOW_RAD


def episode_seed(seed: int) -> int:
    """torch's seed for an episode of a `step`-mode policy (its samplers draw from the global generator)."""
    mixed = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, 0x4C52]).generate_state(2, np.uint32)
    return int(mixed[0]) << 32 | int(mixed[1])


class LerobotPolicy:
    """A lerobot checkpoint served by the engine (see `engine.policies.lerobot_policy.load_policy`)."""

    needs_privileged = False

    def __init__(self, *, policy, preprocessor, postprocessor, plan: FeaturePlan, convmap: ConvMap,
                 task: str | None, mode: str, description: dict[str, Any]):
        self.policy = policy
        self.preprocessor = preprocessor
        self.postprocessor = postprocessor
        self.plan = plan
        self.convmap = convmap
        self.task = task
        self.mode = mode
        self.config = policy.config
        self.name = f"lerobot-{self.config.type}"
        self.needs_images = bool(plan.images)
        self.serve_in_driver = mode == CHUNK
        self.n_action_steps = int(getattr(self.config, "n_action_steps", 1) or 1)
        self.chunk_horizon = self.n_action_steps if mode == CHUNK else 1
        self.device = torch.device(str(self.config.device))
        self._episode: int | None = None  # step mode: the seed of the episode the policy's queues hold
        self._description = description

    def describe(self) -> dict[str, Any]:
        return dict(self._description)

    # ------------------------------------------------------------------ the batch lerobot sees

    def model_state(self, state_rad: np.ndarray) -> np.ndarray:
        """Sim radians -> the checkpoint's state units: LeRobot calibrated degrees through the shim."""
        return self.convmap.to_model(sim_rad_to_rig_deg(np.asarray(state_rad, dtype=np.float64)))

    def raw_batch(self, observations: list[Observation]) -> dict[str, Any]:
        """What lerobot-eval hands the preprocessor: `preprocess_observation`'s tensors and the task."""
        batch: dict[str, Any] = {}
        for (feature, camera), shape in zip(self.plan.images, self.plan.image_shapes):
            frames = []
            for obs in observations:
                img = (obs.images or {}).get(camera)
                if img is None:
                    raise ValueError(f"{feature} needs the camera {camera!r}; observation (seed {obs.seed}) has "
                                     f"{sorted(obs.images or {})}")
                frames.append(np.asarray(img))
            pixels = torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2).contiguous().to(torch.float32) / 255
            if tuple(pixels.shape[-2:]) != tuple(shape[-2:]):  # the checkpoint's image size, as it was trained
                pixels = torch.nn.functional.interpolate(pixels, size=tuple(shape[-2:]), mode="bilinear",
                                                         align_corners=False, antialias=True).clamp_(0, 1)
            batch[feature] = pixels
        if self.plan.state:
            states = np.stack([self.model_state(o.state_rad) for o in observations])
            batch[self.plan.state] = torch.from_numpy(states).to(torch.float32)
        batch["task"] = [self.task or o.task for o in observations]
        return batch

    # ------------------------------------------------------------------ protocol

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        if not observations:
            return []
        started = time.perf_counter()
        if self.mode == CHUNK:
            actions = self.chunk_actions(observations)
        else:
            actions = np.stack([self.step_action(o) for o in observations])[:, None, :]
        targets = self.to_sim(actions)
        wall = time.perf_counter() - started
        return [Chunk(targets_rad=targets[i], batch_size=len(observations),
                      info={"predict_wall_s": wall, "first_action_delta_deg": first_action_delta_deg(o.state_rad, targets[i])})
                for i, o in enumerate(observations)]

    @torch.inference_mode()
    def chunk_actions(self, observations: list[Observation]) -> np.ndarray:
        """(B, n_action_steps, 6) in the checkpoint's units: `select_action`'s queue, filled at once and
        each action postprocessed as lerobot postprocesses the one it pops."""
        self.policy.eval()
        batch = self.preprocessor(self.raw_batch(observations))
        chunk = self.policy.predict_action_chunk(batch)[:, : self.n_action_steps]
        steps = [self.postprocessor(chunk[:, t]) for t in range(chunk.shape[1])]
        return torch.stack(steps, dim=1).to(torch.float64).cpu().numpy()

    @torch.inference_mode()
    def step_action(self, obs: Observation) -> np.ndarray:
        """One tick of lerobot's loop for this episode: reset at its first observation, then select_action."""
        if obs.replan_index == 0 or self._episode != obs.seed:
            self.policy.reset()
            torch.manual_seed(episode_seed(obs.seed))
            self._episode = obs.seed
        batch = self.preprocessor(self.raw_batch([obs]))
        action = self.postprocessor(self.policy.select_action(batch))
        return action[0].to(torch.float64).cpu().numpy()

    def to_sim(self, actions: np.ndarray) -> np.ndarray:
        """(..., 6) checkpoint units -> sim radians: the shim (model -> rig degrees), then the sim's ranges."""
        sim = rig_deg_to_sim_rad(self.convmap.to_rig(np.asarray(actions, dtype=np.float64)))
        return np.clip(sim, JOINT_LOW_RAD, JOINT_HIGH_RAD)

