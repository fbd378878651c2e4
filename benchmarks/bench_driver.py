"""Driver throughput, measured against baselines taken in the same run.

Prints three ratios (this machine is shared and noisy: compare ratios, not seconds):
  1. episodes/s with --workers 2 over --workers 1 (scripted oracle; goal >= 1.7 on 2 cores)
  2. the whole rollout's wall per simulated second over a bare mj_step loop on the same model
  3. mean batch / workers for a served policy with a fixed per-call cost (goal >= 0.9)
  4. the cost of filming an episode (front and wrist side by side, encoded to mp4): seconds of
     wall per episode and the fraction of an unfilmed episode's wall (--video-draw auto films
     every seed of runs up to engine.pool.VIDEO_ALL_UP_TO seeds on the strength of this figure)

Usage: .venv/bin/python benchmarks/bench_driver.py [--seeds N] [--episode-seconds S] [--only video]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MUJOCO_GL", "egl")

from engine.driver import RunConfig, run  # noqa: E402
from engine.policies.factory import PolicySpec  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--episode-seconds", type=float, default=15.0)
    ap.add_argument("--batch-workers", type=int, default=4)
    ap.add_argument("--latency-ms", type=float, default=40.0)
    ap.add_argument("--only", choices=("video",), default=None, help="run one measurement")
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    if args.only == "video":
        video_cost(seeds, args.episode_seconds)
        return

    print(f"scripted oracle, {len(seeds)} seeds x {args.episode_seconds:g} s, video off")
    walls, ticks = {}, {}
    for workers in (1, 2):
        wall, rows, summary = _timed_run(PolicySpec(kind="scripted"), seeds, args.episode_seconds, workers)
        rollout = summary["rollout_s"]
        walls[workers], ticks[workers] = rollout, sum(r["ticks"] for r in rows)
        print(f"  --workers {workers}: {wall:6.2f} s wall ({wall - rollout:.2f} s worker start-up), "
              f"{len(rows) / rollout:.2f} episodes/s once started, "
              f"{sum(bool(r['success']) for r in rows)}/{len(rows)} successes")
    print(f"  speed-up workers 2 / workers 1 (episodes/s once started): {walls[1] / walls[2]:.2f}x  (goal >= 1.7x)")

    sim_s = ticks[1] / 30.0
    bare = _bare_physics_wall(sim_s)
    print(f"  bare mj_step for the same {sim_s:.0f} simulated s: {bare:.2f} s wall")
    print(f"  rollout (workers 1: oracle + IK + metrics + resets + IPC) / bare physics: {walls[1] / bare:.2f}x")

    n = args.batch_workers
    _, _, summary = _timed_run(PolicySpec(kind="hold", inject_latency_ms=args.latency_ms), list(range(2 * n)), 5.0, n)
    print(f"served policy with a fixed {args.latency_ms:g} ms per call, --workers {n}: mean batch "
          f"{summary['mean_batch']:.2f} over {summary['predict_rounds']} rounds -> mean batch / workers "
          f"{summary['mean_batch'] / n:.2f}  (goal >= 0.9)")
    video_cost(seeds, args.episode_seconds)


def video_cost(seeds, episode_seconds) -> None:
    """Each episode filmed vs none, one worker, same seeds: the added wall per episode."""
    from prereg.video_draw import VIDEO_ALL_UP_TO

    print(f"video cost, scripted oracle, {len(seeds)} seeds x {episode_seconds:g} s, --workers 1:")
    base = None
    for draw, size in (("none", None), ("all", None), ("all", 320)):
        _, rows, summary, sizes = _timed_run(PolicySpec(kind="scripted"), seeds, episode_seconds, 1,
                                             video_draw=draw, video_size=size, keep_sizes=True)
        per_episode = summary["rollout_s"] / len(rows)
        if base is None:
            base = per_episode
            print(f"  not filmed: {per_episode:.2f} s wall per episode")
            continue
        extra = per_episode - base
        mb = sum(sizes) / max(1, len(sizes)) / 1e6
        print(f"  filmed (front | wrist, {size or 224} px a side): {per_episode:.2f} s per episode, "
              f"+{extra:.2f} s = +{100 * extra / base:.0f}% per episode; {mb:.2f} MB per video ({len(sizes)} videos)")
    print(f"  --video-draw auto films every seed of runs up to {VIDEO_ALL_UP_TO} seeds")


def _timed_run(spec: PolicySpec, seeds, episode_seconds, workers, video_draw="none", video_size=None,
               keep_sizes=False):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(run_id="bench", arm=spec.kind, policy=spec, seeds=seeds, episode_seconds=episode_seconds,
                        workers=workers, video_draw=video_draw, video_size=video_size)
        t0 = time.perf_counter()
        result = run(cfg, Path(tmp) / "run", log=lambda _m: None)
        wall = time.perf_counter() - t0
        sizes = [p.stat().st_size for p in (Path(tmp) / "run" / "videos").glob("*.mp4")] if keep_sizes else []
    if keep_sizes:
        return wall, result.rows, result.summary, sizes
    return wall, result.rows, result.summary


def _bare_physics_wall(sim_seconds: float) -> float:
    import mujoco

    from engine.sim.env import BoatEnv

    env = BoatEnv(render_size=64)
    env.reset(0)
    steps = int(round(sim_seconds / env.model.opt.timestep))
    t0 = time.perf_counter()
    mujoco.mj_step(env.model, env.data, nstep=steps)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
