"""What the env layer costs per tick, against bare physics measured in the same run.

    .venv/bin/python benchmarks/bench_env.py [--env NAME|FILE] [--seeds 3] [--episode-seconds 12] [--repeats 5]

`--env` takes any env: a built-in's name, an entry point's, or an env file (path/to/env.yaml).
The ticks are the scripted oracle's (recorded once per seed, so the arm grasps, lifts, carries
and places, and the contacts the grasp reading scans are the real ones); then the same targets
are replayed three ways from the same reset, back to back per seed and repeat (each first in
turn), so a shared machine's load drifts between runs, not within a pairing:

- bare:   data.ctrl = target; mj_step(nstep=20)                         (physics alone)
- env:    env.step_tick(target)        (+ clamping, object reading, contacts, metrics, grasp)
- served: run_episode with a replaying policy      (+ observation, chunk handling, the row)

and prints the cost per tick of each (median), what each adds to bare physics and each as a ratio
of it (bare time / its time; both the median over the pairings: 1.0 = free; the goal for the
served loop is >= 0.8).
Rendering is left out (no policy here needs images; bench_sim.py measures frames). The figures
measured are in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import mujoco
import numpy as np

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.envs import get_env
from engine.policies.base import CONTROL_HZ, Chunk
from engine.policies.scripted import ScriptedOracle
from engine.sim.scene import SUBSTEPS_PER_TICK
from engine.workers.episode import run_episode

CHUNK = 15


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episode-seconds", type=float, default=12.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--env", default="boat-on-disk", help="a registered env's name or an env file")
    parser.add_argument("--layer-reps", type=int, default=600, help="pairings in the layer-alone measurement")
    args = parser.parse_args(argv)

    env = get_env(args.env).create(render_size=64)
    ticks = int(round(args.episode_seconds * CONTROL_HZ))
    plans = {seed: record_oracle(env, seed, ticks) for seed in range(args.seeds)}
    grasped = sum(bool(p[1]) for p in plans.values())
    loops = (("bare", bare), ("env", through_env), ("served", served))
    times = {name: [] for name, _ in loops}  # seconds per tick, one per (repeat, seed)
    for r in range(args.repeats):
        for seed, (targets, _) in plans.items():  # the three back to back, each first in turn
            for name, fn in loops[r % 3:] + loops[: r % 3]:
                times[name].append(fn(env, seed, targets) / len(targets))
    per_tick = {k: statistics.median(v) for k, v in times.items()}
    ratio = {k: statistics.median(b / t for b, t in zip(times["bare"], v)) for k, v in times.items()}
    extra = {k: statistics.median(t - b for b, t in zip(times["bare"], v)) for k, v in times.items()}
    print(f"env {args.env}: {args.seeds} seeds x {ticks} ticks (oracle targets, {grasped} grasped), "
          f"{args.repeats} repeats; medians over the (repeat, seed) pairings")
    for name in ("bare", "env", "served"):
        print(f"{name:7s} {per_tick[name] * 1e6:8.1f} us/tick   x{ratio[name]:.3f} of bare physics   "
              f"({extra[name] * 1e6:+.1f} us)")
    layer = layer_alone(env, plans, args.layer_reps)
    print(f"the layer alone (step_tick less its physics; clamping, object reading, contacts, metrics, grasp; "
          f"mid-grasp state): {layer * 1e6:.1f} us/tick = {layer / per_tick['bare'] * 100:.1f}% of a physics tick")
    verdict = "meets" if ratio["served"] >= 0.8 else "MISSES"
    print(f"served loop {verdict} the goal (>= 0.8x bare physics)")
    env.close()


def record_oracle(env, seed: int, ticks: int) -> tuple[np.ndarray, bool]:
    oracle = ScriptedOracle()
    targets: list[np.ndarray] = []

    def predict(obs):
        chunk = oracle.predict_batch([obs])[0]
        targets.extend(np.asarray(chunk.targets_rad).reshape(-1, 6))
        return chunk

    row = run_episode(env, seed, ticks / CONTROL_HZ, predict, chunk_horizon=oracle.chunk_horizon,
                      needs_images=False, needs_privileged=True, stop_on_success=False)
    return np.array(targets[:ticks]), row["grasped_lifted"]


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


def layer_alone(env, plans, reps: int = 600) -> float:
    """The env layer's own work per tick: one `env.step_tick` (the contract's per-tick call, so any env:
    a built-in, an entry point's, an env file's) less the same tick's bare physics, each run from the
    same saved state in the middle of a grasp (few contacts would flatter it), paired and interleaved,
    the median difference kept: both halves step the same physics from the same state, so the
    difference is what the env adds (clamping, the object's reading and contacts, metrics, grasp)
    without the machine's drift between the loops above. The state is MuJoCo's full physics state
    (mj_getState/mj_setState), so it needs `env.model` and `env.data` as `bare` does."""
    seed, (targets, _) = next(iter(plans.items()))
    env.reset(seed)
    mid = len(targets) // 3  # the oracle holds the object by then
    for target in targets[:mid]:
        env.step_tick(target)
    model, data = env.model, env.data
    what = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(model, what))
    mujoco.mj_getState(model, data, state, what)
    env.step_tick(targets[mid])
    ctrl = data.ctrl.copy()  # the tick's controls as the env set them (clamped)
    diffs = []
    for _ in range(reps):
        mujoco.mj_setState(model, data, state, what)
        t0 = time.perf_counter()
        data.ctrl[:] = ctrl
        mujoco.mj_step(model, data, nstep=SUBSTEPS_PER_TICK)
        t1 = time.perf_counter()
        mujoco.mj_setState(model, data, state, what)
        t2 = time.perf_counter()
        env.step_tick(targets[mid])
        t3 = time.perf_counter()
        diffs.append((t3 - t2) - (t1 - t0))
    return statistics.median(diffs)


_RESET_COST: dict[tuple[int, int], float] = {}


def reset_cost(env, seed: int) -> float:
    """run_episode resets inside its timing; measured once per seed and taken out."""
    key = (id(env), seed)
    if key not in _RESET_COST:
        samples = []
        for _ in range(3):
            t0 = time.perf_counter()
            env.reset(seed)
            samples.append(time.perf_counter() - t0)
        _RESET_COST[key] = min(samples)
    return _RESET_COST[key]


if __name__ == "__main__":
    main()
