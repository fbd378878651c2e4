"""One episode: reset, replan from the policy's chunks tick by tick, and report the partial row.

The budget is stated in seconds (ticks = round(episode_seconds * 30)); the number of
replans follows from the lengths of the chunks the policy returns, never from a fixed
count. The driver adds run_id, arm, worker, video, status, error and schema to the row.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from engine.policies.base import CONTROL_HZ, DEFAULT_TASK, Chunk, Observation
from engine.policies.convmap.shim import sim_rad_to_rig_deg
from prereg.rundir.files import utc_now

VIDEO_FPS = 10  # video frames (front and wrist views side by side, BoatEnv.film) handed to frame_sink


def run_episode(
    env,
    seed: int,
    episode_seconds: float,
    predict: Callable[[Observation], Chunk],
    *,
    chunk_horizon: int,
    needs_images: bool,
    needs_privileged: bool,
    task: str = DEFAULT_TASK,
    frame_sink: Callable[[np.ndarray], Any] | None = None,
    stop_on_success: bool = True,
    video_size: int | None = None,
) -> dict:
    """Run one seeded episode in `env` (an engine.envs.SimEnv, e.g. BoatEnv) and return its partial row.

    `stop_on_success` ends the episode once the success hold completes (`ticks` then records
    the ticks executed). `chunk_horizon` is what the policy declared: a chunk may be shorter
    (the next replan comes sooner), a longer one is cut to it, and an empty one is an error
    (it would stall the episode).
    """
    started_at = utc_now()
    wall_start = time.perf_counter()
    env.reset(seed)
    budget_ticks = int(round(episode_seconds * CONTROL_HZ))
    frame_every = CONTROL_HZ // VIDEO_FPS
    stats = _PredictStats()
    replan_index = 0
    if frame_sink is not None:
        frame_sink(_video_frame(env, video_size))

    while env.tick < budget_ticks and not (stop_on_success and env.success):
        state = env.state_rad()
        obs = Observation(
            seed=int(seed),
            tick=env.tick,
            replan_index=replan_index,
            state_rad=state,
            task=task,
            images=env.policy_images() if needs_images else None,
            privileged=env.privileged() if needs_privileged else None,
        )
        chunk = predict(obs)
        targets = np.asarray(chunk.targets_rad, dtype=float).reshape(-1, 6)
        if len(targets) == 0:
            raise ValueError(f"seed {seed}: the policy returned an empty chunk at tick {env.tick}")
        if len(targets) > chunk_horizon:
            targets = targets[:chunk_horizon]
        stats.record(chunk, targets[0], state)
        replan_index += 1
        for target in targets:
            env.step_tick(target)
            if frame_sink is not None and env.tick % frame_every == 0:
                frame_sink(_video_frame(env, video_size))
            if env.tick >= budget_ticks or (stop_on_success and env.success):
                break

    row = env.row()  # carries reset_strikes from env.reset
    row.update(
        seed=int(seed),
        episode_seconds=float(episode_seconds),
        **stats.fields(),
        wall_s=round(time.perf_counter() - wall_start, 3),
        started_at=started_at,
        finished_at=utc_now(),
    )
    return row


def _video_frame(env, size: int | None) -> np.ndarray:
    """Front and wrist side by side (BoatEnv.film); an env without film() gives its front view."""
    film = getattr(env, "film", None)
    return film(size) if film is not None else env.render("front")


class _PredictStats:
    """Counts over this episode's predicts: fallbacks, mask interventions, batch, first-action delta."""

    def __init__(self):
        self.predicts = 0
        self.zero_fallbacks = 0
        self.mask_violations = 0
        self.batch_sizes: list[int] = []
        self.first_deltas: list[np.ndarray] = []

    def record(self, chunk: Chunk, first_target: np.ndarray, state: np.ndarray) -> None:
        self.predicts += 1
        self.zero_fallbacks += int(bool(chunk.zero_fallback))
        self.mask_violations += int(chunk.mask_violations)
        self.batch_sizes.append(int(chunk.batch_size))
        self.first_deltas.append(np.abs(sim_rad_to_rig_deg(first_target) - sim_rad_to_rig_deg(state)))

    def fields(self) -> dict:
        first = np.mean(self.first_deltas, axis=0) if self.first_deltas else None
        return {
            "predicts": self.predicts,
            "zero_fallbacks": self.zero_fallbacks,
            "mask_violations": self.mask_violations,
            "mean_batch": round(float(np.mean(self.batch_sizes)), 3) if self.batch_sizes else None,
            "first_action_delta_deg": None if first is None else [round(float(v), 3) for v in first],
        }

