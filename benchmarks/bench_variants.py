"""What registered visual variants cost a worker: time per episode on 1 variant vs on 3, against a
baseline that compiles the variant's scene every episode, measured in the same run.

    .venv/bin/python benchmarks/bench_variants.py --env lab/env.yaml [--seeds 3] [--episode-seconds 4]
        [--render-size 64] [--repeats 3]

The env file must declare at least two variants (docs/envs.md). One simulated worker, started cold
each time (the per-process compile caches emptied: the base scene's too), runs every seed:

- one:      on the scene as declared (`base`) only;
- three:    on `base` and the first two variants (a crossed design: each seed on each);
- naive:    on the same three, the variant's scene built and compiled for every episode.

An episode is the seeded reset, the arm held at home for the episode's ticks, and the policy's two
images rendered every 15 ticks (a chunk's replan: variants change what is seen, so frames count).
It prints the median time per episode of each over the repeats, `three / one` (1.0: a variant costs
no more per episode than the base scene: the compile is paid once per worker) and `naive / one`.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.envs import envfile, get_env
from engine.envs.envfile import build_scene, read_declaration
from engine.envs.place_scene import _place_env_class
from engine.envs.variant_env import make_variant_env, variant_of
from engine.policies.base import CONTROL_HZ
from engine.sim import variants as sim_variants
from engine.sim.env import HOME_RAD

REPLAN_TICKS = 15


def episode(env, seed: int, ticks: int) -> None:
    env.reset(seed)
    for t in range(ticks):
        if t % REPLAN_TICKS == 0:
            env.policy_images()
        env.step_tick(HOME_RAD)


def worker(decl, names, seeds, ticks: int, render_size: int, naive: bool = False) -> float:
    """Seconds per episode of one cold worker running every seed on every named variant."""
    sim_variants._COMPILED.clear()  # cold: every scene it runs, the base's included, compiled in it
    envfile._COMPILED.clear()
    envs = {}
    t0 = time.perf_counter()
    for seed in seeds:
        for name in names:
            if naive:
                variant = variant_of(decl, name)
                spec = build_scene(decl)
                model = (sim_variants.apply(spec, variant) if variant is not None else spec).compile()
                env = _place_env_class()(decl, model, render_size=render_size)
                episode(env, seed, ticks)
                env.close()
                continue
            if name not in envs:
                envs[name] = make_variant_env(decl, name, render_size=render_size)
            episode(envs[name], seed, ticks)
    elapsed = time.perf_counter() - t0
    for env in envs.values():
        env.close()
    return elapsed / (len(seeds) * len(names))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="an env file declaring at least two variants")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episode-seconds", type=float, default=4.0)
    parser.add_argument("--render-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*empty prefix.*")  # the arm attached as the env file attaches it

    path = Path(args.env).expanduser().resolve()
    get_env(str(path))  # checked: its variants name what the scene has
    decl = read_declaration(path)
    if len(decl.variants) < 2:
        raise SystemExit(f"bench_variants: {path} declares {len(decl.variants)} variant(s); it needs two "
                         "(variants: in the env file, docs/envs.md)")
    three = [sim_variants.BASE, decl.variants[0].name, decl.variants[1].name]
    seeds, ticks = list(range(args.seeds)), int(round(args.episode_seconds * CONTROL_HZ))
    runs = (("one", [sim_variants.BASE], False), ("three", three, False), ("naive", three, True))
    times = {name: [] for name, _, _ in runs}
    for r in range(args.repeats):
        for name, names, naive in runs[r % 3:] + runs[: r % 3]:  # each first in turn
            times[name].append(worker(decl, names, seeds, ticks, args.render_size, naive))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"env {decl.name}: {args.seeds} seeds x {ticks} ticks, images {args.render_size} px every "
          f"{REPLAN_TICKS} ticks, {args.repeats} repeats; variants {', '.join(three)}")
    for name, _, _ in runs:
        print(f"{name:6s} {med[name] * 1e3:9.1f} ms/episode")
    print(f"three / one = {med['three'] / med['one']:.2f} (1.0: a variant's compile paid once per worker)")
    print(f"naive / one = {med['naive'] / med['one']:.2f} (a compile every episode)")


if __name__ == "__main__":
    main()
