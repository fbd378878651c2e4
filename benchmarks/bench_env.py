"""What the env layer costs per tick, against bare physics measured in the same run.

    .venv/bin/python benchmarks/bench_env.py [--seeds 3] [--episode-seconds 12] [--repeats 5]

The ticks are the scripted oracle's (recorded once per seed, so the arm grasps, lifts, carries
and places, and the contacts the grasp reading scans are the real ones); then the same targets
are replayed three ways from the same reset, repeats interleaved, medians kept:

- bare:   data.ctrl = target; mj_step(nstep=20)                         (physics alone)
- env:    env.step_tick(target)          (+ clamping, boat reading, contacts, metrics, grasp)
- served: run_episode with a replaying policy      (+ observation, chunk handling, the row)

and prints the cost per tick of each, and each as a ratio of bare physics (bare time / its
time: 1.0 = free; the goal for the served loop is >= 0.8). Rendering is left out (no policy
here needs images; bench_sim.py measures frames).
"""

from __future__ import annotations

import argparse
import statistics
import time

import mujoco
import numpy as np

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.envs import get_env
from engine.episode import run_episode
from engine.policies.base import CONTROL_HZ, Chunk
from engine.policies.scripted import ScriptedOracle
from engine.sim.scene import SUBSTEPS_PER_TICK

CHUNK = 15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episode-seconds", type=float, default=12.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--env", default="boat-on-disk")
    args = parser.parse_args()

    env = get_env(args.env).create(render_size=64)
    ticks = int(round(args.episode_seconds * CONTROL_HZ))
    plans = {seed: record_oracle(env, seed, ticks) for seed in range(args.seeds)}
    grasped = sum(bool(p[1]) for p in plans.values())
    times = {"bare": [], "env": [], "served": []}
    for _ in range(args.repeats):
        for name, fn in (("bare", bare), ("env", through_env), ("served", served)):
            t = 0.0
            for seed, (targets, _) in plans.items():
                t += fn(env, seed, targets)
            times[name].append(t / (len(plans) * ticks))
    per_tick = {k: statistics.median(v) for k, v in times.items()}
    print(f"env {args.env}: {args.seeds} seeds x {ticks} ticks (oracle targets, {grasped} grasped), "
          f"{args.repeats} repeats, median per tick")
    for name in ("bare", "env", "served"):
        ratio = per_tick["bare"] / per_tick[name]
        extra = (per_tick[name] - per_tick["bare"]) * 1e6
        print(f"{name:7s} {per_tick[name] * 1e6:8.1f} us/tick   x{ratio:.3f} of bare physics   (+{extra:.1f} us)")
    layer = layer_alone(env, plans)
    print(f"the layer alone (boat reading, contacts, metrics, grasp; mid-grasp state): {layer * 1e6:.1f} us/tick "
          f"= {layer / per_tick['bare'] * 100:.1f}% of a physics tick")
    verdict = "meets" if per_tick["bare"] / per_tick["served"] >= 0.8 else "MISSES"
    print(f"served loop {verdict} the goal (>= 0.8x bare physics)")


def record_oracle(env, seed: int, ticks: int) -> tuple[np.ndarray, bool]:
    oracle = ScriptedOracle()
    targets: list[np.ndarray] = []

    def predict(obs):
        chunk = oracle.predict_batch([obs])[0]
        targets.extend(np.asarray(chunk.targets_rad).reshape(-1, 6))
        return chunk

    row = run_episode(env, seed, ticks / CONTROL_HZ, predict, chunk_horizon=oracle.chunk_horizon,
                      needs_images=False, needs_privileged=True, stop_on_success=False)
    return np.array(targets[:ticks]), row["grasped"]


def bare(env, seed: int, targets: np.ndarray) -> float:
    env.reset(seed)
    model, data = env.model, env.data
    t0 = time.perf_counter()
    for target in targets:
        data.ctrl[:] = target
        mujoco.mj_step(model, data, nstep=SUBSTEPS_PER_TICK)
    return time.perf_counter() - t0


def through_env(env, seed: int, targets: np.ndarray) -> float:
    env.reset(seed)
    t0 = time.perf_counter()
    for target in targets:
        env.step_tick(target)
    return time.perf_counter() - t0


def served(env, seed: int, targets: np.ndarray) -> float:
    def predict(obs):
        return Chunk(targets[obs.tick: obs.tick + CHUNK])

    t0 = time.perf_counter()
    run_episode(env, seed, len(targets) / CONTROL_HZ, predict, chunk_horizon=CHUNK, needs_images=False,
                needs_privileged=False, stop_on_success=False)
    elapsed = time.perf_counter() - t0
    return elapsed - reset_cost(env, seed)


def layer_alone(env, plans, reps: int = 2000) -> float:
    """The env layer's own work per tick, without physics: read the boat and its contacts and
    fold them into the metrics, repeated on one state in the middle of a grasp (few contacts
    would flatter it). Noise-free where the interleaved loops above differ by the machine's jitter."""
    seed, (targets, _) = next(iter(plans.items()))
    env.reset(seed)
    for target in targets[: len(targets) // 3]:  # the oracle holds the boat by then
        env.step_tick(target)
    metrics = env.metrics
    t0 = time.perf_counter()
    for _ in range(reps):
        metrics.update(env.boat_reading())
    return (time.perf_counter() - t0) / reps


_RESET_COST: dict[int, float] = {}


def reset_cost(env, seed: int) -> float:
    """run_episode resets inside its timing; measured once per seed and taken out."""
    if seed not in _RESET_COST:
        samples = []
        for _ in range(3):
            t0 = time.perf_counter()
            env.reset(seed)
            samples.append(time.perf_counter() - t0)
        _RESET_COST[seed] = min(samples)
    return _RESET_COST[seed]


if __name__ == "__main__":
    main()
