"""How fast the boat scene runs: oracle rollouts against bare physics, and two-camera renders.

    .venv/bin/python benchmarks/bench_sim.py [--seeds 3] [--episode-seconds 30] [--render-pairs 30]

Prints plain lines. The rollout runs the full budget (no stop on success) so that it is
comparable with the bare `mj_step` loop over the same number of ticks on the same model.
"""

from __future__ import annotations

import argparse
import time

import mujoco

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.policies.base import CONTROL_HZ
from engine.policies.scripted import ScriptedOracle
from engine.sim.env import HOME_RAD, BoatEnv
from engine.sim.render import RenderUnavailable
from engine.sim.scene import SUBSTEPS_PER_TICK
from engine.workers.episode import run_episode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episode-seconds", type=float, default=30.0)
    parser.add_argument("--render-pairs", type=int, default=30)
    args = parser.parse_args()

    env = BoatEnv()
    oracle_rate, successes = rollout_rate(env, args.seeds, args.episode_seconds)
    bare_rate = bare_step_rate(env, args.seeds, args.episode_seconds)
    print(f"oracle rollout: {oracle_rate:.1f} simulated s per wall s "
          f"({args.seeds} seeds x {args.episode_seconds:g} s, {successes} successes)")
    print(f"bare mj_step:   {bare_rate:.1f} simulated s per wall s (same model, same ticks)")
    print(f"ratio oracle/bare: {oracle_rate / bare_rate:.2f}")
    try:
        created_s, pairs_per_s = render_rate(env, args.render_pairs)
    except RenderUnavailable as exc:
        print(f"render: unavailable ({exc})")
        return
    print(f"renderer creation: {created_s:.2f} s (once per process)")
    print(f"two-camera render: {pairs_per_s:.1f} pairs per s ({2 * pairs_per_s:.1f} frames per s, "
          f"{env.render_size}x{env.render_size}, front + wrist)")


def rollout_rate(env: BoatEnv, seeds: int, episode_seconds: float) -> tuple[float, int]:
    """Simulated seconds per wall second of full-budget oracle episodes (resets excluded)."""
    oracle = ScriptedOracle()
    simulated = wall = 0.0
    successes = 0
    for seed in range(seeds):
        t0 = time.perf_counter()
        row = run_episode(env, seed, episode_seconds, lambda obs: oracle.predict_batch([obs])[0],
                          chunk_horizon=oracle.chunk_horizon, needs_images=False, needs_privileged=True,
                          stop_on_success=False)
        wall += time.perf_counter() - t0
        simulated += row["ticks"] / CONTROL_HZ
        successes += int(row["success"])
    return simulated / wall, successes


def bare_step_rate(env: BoatEnv, seeds: int, episode_seconds: float) -> float:
    """The same ticks as plain `mj_step` calls (one call of all substeps per tick), arm held at home."""
    ticks = int(round(episode_seconds * CONTROL_HZ))
    wall = 0.0
    for seed in range(seeds):
        env.reset(seed)
        env.data.ctrl[:] = HOME_RAD
        t0 = time.perf_counter()
        for _ in range(ticks):
            mujoco.mj_step(env.model, env.data, nstep=SUBSTEPS_PER_TICK)
        wall += time.perf_counter() - t0
    return seeds * episode_seconds / wall


def render_rate(env: BoatEnv, pairs: int) -> tuple[float, float]:
    """(seconds to create the renderer, front+wrist pairs per second)."""
    env.reset(0)
    t0 = time.perf_counter()
    env.render("front")
    created = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(pairs):
        env.step_tick(HOME_RAD)
        env.render("front")
        env.render("wrist")
    return created, pairs / (time.perf_counter() - t0)


if __name__ == "__main__":
    main()
