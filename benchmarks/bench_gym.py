"""What the Gymnasium paths cost per tick, each against its baseline measured in the same run.

    .venv/bin/python benchmarks/bench_gym.py [--seeds 3] [--episode-seconds 10] [--repeats 5] [--image-size 64]

The scripted oracle's targets are recorded once per seed (so the arm grasps, lifts, carries and
places, and the contacts read are the real ones), then replayed, back to back per seed and repeat,
each loop first in turn (a shared machine's drift falls between runs, not within a pairing):

1. Fontaine's env as a Gymnasium env (engine.gym, `fontaine/boat-on-disk-v0`):
   - native:      env.step_tick(target)                             (the driver's tick between replans)
   - native+obs:  env.step_tick(target); env.policy_images(); env.state_rad()   (the same observation)
   - gym:         gym_env.step(rig degrees)         (lerobot's convention: an observation every step)
2. so101-nexus's MuJoCoPickAndPlace-v1 through its adapter (`--env gym:MuJoCoPickAndPlace-v1`):
   - bare:        the env's own step(action), as many as the tick takes (its 50 Hz in our 30 Hz)
   - adapter:     GymSceneEnv.step_tick(target)  (+ Fontaine's clamping, reading, contacts, metrics)

and prints each loop's cost per tick (median) and its ratio to the path's baseline (baseline time /
its time, the median over the pairings: 1.0 = free). Figures measured: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.envs import get_env
from engine.policies.base import CONTROL_HZ
from engine.policies.convmap.shim import sim_rad_to_rig_deg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_env import record_oracle as _record  # noqa: E402 - the oracle's targets, as bench_env records them

NEXUS = "gym:MuJoCoPickAndPlace-v1"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episode-seconds", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--image-size", type=int, default=64, help="pixels a side of each policy image")
    args = parser.parse_args(argv)
    ticks = int(round(args.episode_seconds * CONTROL_HZ))
    print(f"{args.seeds} seeds x {ticks} ticks (oracle targets), {args.repeats} repeats, images "
          f"{args.image_size} px; medians over the (repeat, seed) pairings")
    fontaine_as_gym(args, ticks)
    gym_in_fontaine(args, ticks)


def record_oracle(env, seed: int, ticks: int) -> np.ndarray:
    return _record(env, seed, ticks)[0]


def pairings(loops, plans, repeats: int) -> dict[str, list[float]]:
    """Seconds per tick of each loop, one per (repeat, seed), the loops back to back, each first in turn."""
    times = {name: [] for name, _ in loops}
    for r in range(repeats):
        for seed, targets in plans.items():
            for name, fn in loops[r % len(loops):] + loops[: r % len(loops)]:
                times[name].append(fn(seed, targets) / len(targets))
    return times


def report(times: dict[str, list[float]], baseline: str) -> None:
    base = times[baseline]
    for name, t in times.items():
        ratio = statistics.median(b / x for b, x in zip(base, t))
        extra = statistics.median(x - b for b, x in zip(base, t))
        print(f"  {name:11s} {statistics.median(t) * 1e6:8.1f} us/tick   x{ratio:.3f} of {baseline}   "
              f"({extra * 1e6:+.1f} us)")


def fontaine_as_gym(args, ticks: int) -> None:
    from engine.gym.env import FontaineGymEnv

    native = get_env("boat-on-disk").create(render_size=args.image_size)
    gym_env = FontaineGymEnv("boat-on-disk", image_size=args.image_size)
    plans = {seed: record_oracle(native, seed, ticks) for seed in range(args.seeds)}

    def bare(seed, targets):
        native.reset(seed)
        t0 = time.perf_counter()
        for target in targets:
            native.step_tick(target)
        return time.perf_counter() - t0

    def with_obs(seed, targets):
        native.reset(seed)
        t0 = time.perf_counter()
        for target in targets:
            native.step_tick(target)
            native.policy_images()
            native.state_rad()
        return time.perf_counter() - t0

    def through_gym(seed, targets):
        gym_env.reset(seed=seed)
        rig = sim_rad_to_rig_deg(targets)
        t0 = time.perf_counter()
        for action in rig:
            gym_env.step(action)
        return time.perf_counter() - t0

    times = pairings((("native", bare), ("native+obs", with_obs), ("gym", through_gym)), plans, args.repeats)
    print("1. Fontaine's boat-on-disk as a Gymnasium env (fontaine/boat-on-disk-v0)")
    report(times, "native+obs")
    ratio = statistics.median(b / x for b, x in zip(times["native"], times["gym"]))
    print(f"  the gym step against the native tick without images: x{ratio:.3f}")
    gym_env.close()
    native.close()


def gym_in_fontaine(args, ticks: int) -> None:
    try:
        spec = get_env(NEXUS)
    except Exception as exc:  # noqa: BLE001 - the optional extra: say why and skip
        print(f"2. {NEXUS}: skipped ({exc})")
        return
    env = spec.create(render_size=16)
    plans = {seed: record_oracle(env, seed, ticks) for seed in range(args.seeds)}
    per_tick = [int(np.floor((k + 1) / CONTROL_HZ / env._dt + 1e-9) - np.floor(k / CONTROL_HZ / env._dt + 1e-9))
                for k in range(ticks)]  # the env steps each tick takes (GymSceneEnv.step_tick's rule)
    space = env.gym.action_space

    def bare(seed, targets):
        env.gym.reset(seed=seed)
        actions = np.clip(targets, space.low, space.high).astype(space.dtype)
        t0 = time.perf_counter()
        for action, n in zip(actions, per_tick):
            for _ in range(n):
                env.gym.step(action)
        return time.perf_counter() - t0

    def adapter(seed, targets):
        env.reset(seed)
        t0 = time.perf_counter()
        for target in targets:
            env.step_tick(target)
        return time.perf_counter() - t0

    times = pairings((("bare", bare), ("adapter", adapter)), plans, args.repeats)
    print(f"2. {NEXUS} through its adapter ({sum(per_tick)} env steps of {env._dt * 1000:g} ms in {ticks} ticks)")
    report(times, "bare")
    env.close()


if __name__ == "__main__":
    main()
