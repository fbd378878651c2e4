"""Does the harness work on every env? The scripted oracle's successes among the seeds the SO-101 can reach
(issue 45), with the env's own success and both grasp notions beside Fontaine's, seed by seed.

    .venv/bin/python benchmarks/oracle_reach.py [--seeds 20] [--first 0] [--episode-seconds 30] [--env NAME ...]

Envs: every built-in, so101-nexus's two Gymnasium envs (`gym:MuJoCoPickAndPlace-v1`, `gym:MuJoCoPickLift-v1`)
and its pick-and-place scene as an env file (tests/engine/nexus_fixture.py writes it, unedited), unless
`--env` names others. For each: one line per seed (reachable, success, env_success, grasped_lifted,
grasped_squeezed, where the object and target started, the outcome), then the totals: successes among
reachable seeds (the goal is >= 95%), unreachable seeds, and agreements between Fontaine's success and the
env's own. The figures measured are in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import engine.sim  # noqa: F401  (MUJOCO_GL before mujoco)
from engine.envs import get_env
from engine.envs.registry import BUILTINS
from engine.policies.scripted import ScriptedOracle
from engine.sim.scene import PAN_AXIS_XY
from engine.workers.episode import run_episode
from prereg.rundir.outcomes import episode_outcome
from prereg.rundir.rows import OK

NEXUS_GYM = ("gym:MuJoCoPickAndPlace-v1", "gym:MuJoCoPickLift-v1")


def default_envs(tmp: Path) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.engine.nexus_fixture import write_nexus_env

    return [*BUILTINS, *NEXUS_GYM, str(write_nexus_env(tmp / "nexus"))]


def run_env(name: str, seeds: range, seconds: float) -> dict:
    spec = get_env(name)
    env = spec.create(render_size=64)
    oracle = ScriptedOracle()
    tally = {"reachable": 0, "successes": 0, "unreachable": 0, "unreachable_successes": 0, "agree": 0, "n": 0}
    try:
        for seed in seeds:
            t0 = time.perf_counter()
            env.reset(seed)
            start = env.privileged()
            row = run_episode(env, seed, seconds, oracle.predict, chunk_horizon=oracle.chunk_horizon,
                              needs_images=False, needs_privileged=True)
            obj = np.asarray(start.get("object_pos", start.get("boat_pos")))
            tgt = np.asarray(start.get("target_pos", start.get("disk_pos")))
            print(f"  seed {seed:3d}  reachable {row['reachable']!s:5}  success {row['success']!s:5}  "
                  f"env_success {row['env_success']!s:5}  lifted {row['grasped_lifted']!s:5}  "
                  f"squeezed {row['grasped_squeezed']!s:5}  object {np.linalg.norm(obj[:2] - PAN_AXIS_XY):.3f} m  "
                  f"target {np.linalg.norm(tgt[:2] - PAN_AXIS_XY):.3f} m  {episode_outcome({**row, "status": OK}):20s} "
                  f"{time.perf_counter() - t0:5.1f} s", flush=True)
            key = "reachable" if row["reachable"] else "unreachable"
            tally[key] += 1
            tally["successes" if row["reachable"] else "unreachable_successes"] += bool(row["success"])
            tally["agree"] += row["success"] == row["env_success"]
            tally["n"] += 1
    finally:
        env.close()
    return tally


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="the first seed (seeds first .. first + seeds - 1)")
    ap.add_argument("--episode-seconds", type=float, default=30.0)
    ap.add_argument("--env", action="append", help="an env (name, gym:ID or env file); repeatable")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        envs = args.env or default_envs(Path(tmp))
        totals = {}
        for name in envs:
            seeds = range(args.first, args.first + args.seeds)
            print(f"{name}: the scripted oracle, seeds {seeds[0]}-{seeds[-1]}, {args.episode_seconds:g} s", flush=True)
            totals[name] = run_env(name, seeds, args.episode_seconds)
    print()
    print(f"{'env':40s} {'reachable':>9s} {'successes among them':>22s} {'unreachable (succ.)':>20s} "
          f"{'success = env_success':>22s}")
    for name, t in totals.items():
        share = f"{t['successes']}/{t['reachable']}" + (f" ({100 * t['successes'] / t['reachable']:.0f}%)"
                                                       if t["reachable"] else "")
        label = Path(name).parent.name + "/" + Path(name).name if name.endswith((".yaml", ".yml")) else name
        print(f"{label:40s} {t['reachable']:>4d}/{t['n']:<4d} {share:>22s} "
              f"{t['unreachable']:>12d} ({t['unreachable_successes']})    {t['agree']:>10d}/{t['n']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
