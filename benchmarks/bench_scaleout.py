"""Overhead of the Ray path (engine/scaleout/ray_pool.py) against the local path, measured in the same run.

The same run twice: the local executor (LocalPool) and `--ray local` (a private one-node Ray
cluster, one shard running the same LocalPool inside a Ray actor). Printed (this machine is
shared and noisy: compare the ratios, not the seconds):
  1. Ray / local wall time of the episodes once started (first episode start -> last row):
     the cost of running the engine inside a shard and streaming rows back. Goal <= 1.10.
     As the machine is shared, also: the workers' idle time between episodes on each path (a
     worker's time not spent in an episode), which does not depend on how fast the sim runs.
  2. Ray / local wall time of the whole run, including Ray's start (a fixed cost per run:
     private cluster, actor, workers), which a long run amortises.
  3. With --served: mean batch of a served policy (fixed per-call cost) on both paths: the shard
     batches its workers' predicts exactly as the local pool does.

Usage: .venv/bin/python benchmarks/bench_scaleout.py [--seeds N] [--episode-seconds S] [--workers W] [--repeats R] [--served]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from engine.policies.factory import PolicySpec  # noqa: E402
from engine.record.config import RunConfig  # noqa: E402
from engine.run.driver import run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--episode-seconds", type=float, default=12.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--served", action="store_true", help="also compare a served policy's mean batch")
    ap.add_argument("--latency-ms", type=float, default=40.0)
    args = ap.parse_args()
    seeds = list(range(args.seeds))

    print(f"scripted oracle, {len(seeds)} seeds x {args.episode_seconds:g} s, --workers {args.workers}, video off, "
          f"{args.repeats} interleaved repeats")
    ratios, gaps, whole, same = [], [], [], True
    for rep in range(args.repeats):
        res = {}
        for path in ("local", "ray"):
            res[path] = r = _timed_run(PolicySpec(kind="scripted"), seeds, args.episode_seconds, args.workers, path)
            ep = sum(float(x["wall_s"]) for x in r["rows"]) / len(r["rows"])
            r["gap"] = (args.workers * r["rollout"] - ep * len(r["rows"])) / len(r["rows"])
            print(f"  #{rep} {path:>5}: {r['wall']:6.2f} s wall ({r['startup']:.2f} s until the first episode), "
                  f"{r['rollout']:.2f} s of episodes ({len(r['rows']) / r['rollout']:.2f} episodes/s, "
                  f"{ep:.3f} s each, {1000 * r['gap']:.0f} ms idle per episode), "
                  f"{sum(bool(x['success']) for x in r['rows'])}/{len(r['rows'])} successes")
        same = same and _stable(res["local"]["rows"]) == _stable(res["ray"]["rows"])
        ratios.append(res["ray"]["rollout"] / res["local"]["rollout"])
        gaps.append(res["ray"]["gap"] - res["local"]["gap"])
        whole.append((res["ray"]["wall"] / res["local"]["wall"], res["ray"]["wall"] - res["local"]["wall"]))
    print(f"  rows equal on both paths: {same}")
    print(f"  Ray / local, episodes once started: median {statistics.median(ratios):.3f}  "
          f"({', '.join(f'{x:.3f}' for x in ratios)})  (goal <= 1.10)")
    print(f"  executor overhead of the Ray path (worker idle time between episodes, Ray - local): median "
          f"{1000 * statistics.median(gaps):+.0f} ms per episode; independent of how loaded this shared machine is")
    print(f"  Ray / local, whole run incl. Ray start-up: median {statistics.median(w[0] for w in whole):.3f}  "
          f"(+{statistics.median(w[1] for w in whole):.1f} s, a fixed cost per run)")

    if args.served:
        n = args.workers
        spec = PolicySpec(kind="hold", inject_latency_ms=args.latency_ms)
        for path in ("local", "ray"):
            r = _timed_run(spec, list(range(4 * n)), 5.0, n, path)
            s = r["summary"]
            print(f"  served policy, {args.latency_ms:g} ms per call, --workers {n}, {path:>5}: mean batch "
                  f"{s['mean_batch']:.2f} over {s['predict_rounds']} rounds, {r['rollout']:.2f} s of episodes")


def _timed_run(spec: PolicySpec, seeds, episode_seconds, workers, path: str) -> dict:
    ray = {"address": "local", "shards": 1, "gpus_per_shard": 0, "dashboard": False} if path == "ray" else None
    row_times: list[float] = []

    def log(msg: str) -> None:
        if msg.startswith("["):  # a progress line: one per row, logged as the row is recorded
            row_times.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(run_id=f"bench-{path}", arm=spec.kind, policy=spec, seeds=seeds, episode_seconds=episode_seconds,
                        workers=workers, video_draw="none", ray=ray)
        t0 = time.perf_counter()
        result = run(cfg, Path(tmp) / "run", log=log)
        wall = time.perf_counter() - t0
    rows = result.rows
    first_start = row_times[0] - float(rows[0]["wall_s"])
    return {"wall": wall, "startup": first_start - t0, "rollout": row_times[-1] - first_start, "rows": rows,
            "summary": result.summary}


def _stable(rows: list[dict]) -> dict:
    volatile = {"wall_s", "started_at", "finished_at", "worker", "run_id", "video", "arm"}
    return {r["seed"]: {k: v for k, v in r.items() if k not in volatile} for r in rows}


if __name__ == "__main__":
    main()
