"""Driver throughput, measured against baselines taken in the same run.

Prints three ratios (this machine is shared and noisy: compare ratios, not seconds):
  1. episodes/s with --workers 2 over --workers 1 (scripted oracle; goal >= 1.7 on 2 cores)
  2. the whole rollout's wall per simulated second over a bare mj_step loop on the same model
  3. mean batch / workers for a served policy with a fixed per-call cost (goal >= 0.9)
  4. the cost of filming an episode (front and wrist side by side, encoded to mp4): seconds of
     wall per episode and the fraction of an unfilmed episode's wall (--video-draw auto films
     every seed of runs up to engine.workers.pool.VIDEO_ALL_UP_TO seeds on the strength of this figure)
  5. what a worker costs (issue 26): RSS and start time per worker, the old way (spawned, each
     compiling its own scene) and the new (forked from the fork server, loading the scene the pool
     compiled once and handed over as MJB), side by side in this run; goal <= 250 MB, <= 0.3 s

Usage: .venv/bin/python benchmarks/bench_driver.py [--seeds N] [--episode-seconds S] [--only video|workers]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MUJOCO_GL", "egl")

from engine.policies.factory import PolicySpec  # noqa: E402
from engine.record.config import RunConfig  # noqa: E402
from engine.run.driver import run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--episode-seconds", type=float, default=15.0)
    ap.add_argument("--batch-workers", type=int, default=4)
    ap.add_argument("--latency-ms", type=float, default=40.0)
    ap.add_argument("--only", choices=("video", "workers"), default=None, help="run one measurement")
    ap.add_argument("--workers", type=int, default=4, help="workers started at once (--only workers)")
    ap.add_argument("--env", default="boat-on-disk", help="the env of the worker measurement")
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    if args.only == "video":
        video_cost(seeds, args.episode_seconds)
        return
    if args.only == "workers":
        worker_cost(args.workers, args.env)
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
    worker_cost(args.workers, args.env)


def worker_cost(n: int, env: str) -> None:
    """n workers started at once, each way; their memory at Ready, after an episode, after a filmed one."""
    print(f"worker cost, {n} workers started at once, env {env}, scripted oracle:")
    ways = (("old: spawned, each compiles its scene", dict(start_method="spawn", hand_scenes=False)),
            ("new, first pool of the process (fork server starting)", {}),
            ("new, fork server warm", {}))
    got = []
    for label, kwargs in ways:
        r = _start_workers(n, env, **kwargs)
        got.append(r)
        print(f"  {label}:")
        print(f"    all {n} ready {r['all_ready_s']:.2f} s after the pool was made (of which {r['init_s']:.2f} s "
              f"in the pool: compile, hand-over, starts); per worker start to Ready: mean {r['start_s']:.2f} s, "
              f"max {r['start_max_s']:.2f} s")
        for when in ("ready", "episode", "filmed"):
            m = r[when]
            print(f"    per worker at {when:8s}: RSS {m['rss']:6.0f} MB  PSS {m['pss']:6.0f} MB  "
                  f"private {m['private']:6.0f} MB  (peak RSS {m['hwm']:.0f} MB)")
            if m.get("children"):
                print("      child processes seen while these episodes ran: "
                      + ", ".join(f"{name} {mb:.0f} MB" for name, mb in m["children"]))
        print(f"    scenes handed: {r['scenes'] or 'none'}; heavy modules in workers: {r['heavy'] or 'none'}")
    old, new = got[0], got[2]
    for when in ("ready", "episode", "filmed"):
        print(f"  new / old RSS per worker at {when}: {new[when]['rss'] / old[when]['rss']:.2f}  "
              f"({old[when]['rss']:.0f} -> {new[when]['rss']:.0f} MB; private {old[when]['private']:.0f} -> "
              f"{new[when]['private']:.0f} MB)")
    print(f"  new / old start per worker (mean): {new['start_s'] / old['start_s']:.2f}  "
          f"({old['start_s']:.2f} -> {new['start_s']:.2f} s; first pool {got[1]['start_s']:.2f} s)")
    print(f"  new / old all {n} ready: {new['all_ready_s'] / old['all_ready_s']:.2f}  "
          f"({old['all_ready_s']:.2f} -> {new['all_ready_s']:.2f} s; first pool {got[1]['all_ready_s']:.2f} s)")


def _start_workers(n: int, env: str, **kwargs) -> dict:
    from engine.workers.pool import LocalPool

    filmed = list(range(100, 100 + n))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "videos").mkdir()  # as the driver makes it: without it no video was written
        cfg = RunConfig(run_id="bench", arm="scripted", policy=PolicySpec(kind="scripted"), seeds=list(range(n)) + filmed,
                        episode_seconds=3.0, workers=n, video_draw="seeds:" + ",".join(map(str, filmed)), env=env)
        t0 = time.perf_counter()
        pool = LocalPool(cfg, Path(tmp), None, n, log=lambda _m: None, **kwargs)
        init_s = time.perf_counter() - t0
        try:
            while not all(w.ready for w in pool.workers.values()):
                pool.poll(0.01)
            all_ready_s = time.perf_counter() - t0
            workers = list(pool.workers.values())
            out = {"init_s": init_s, "all_ready_s": all_ready_s,
                   "start_s": sum(w.ready_s for w in workers) / n, "start_max_s": max(w.ready_s for w in workers),
                   "scenes": ", ".join(sorted({s for w in workers for s in w.info.scenes})),
                   "heavy": ", ".join(sorted({m for w in workers for m in w.info.heavy})),
                   "ready": _memory(workers)}
            for when, seeds in (("episode", range(n)), ("filmed", filmed)):
                for seed in seeds:
                    pool.submit(seed)
                rows, children = [], {}  # the processes a worker starts while filming (an encoder's?)
                while len(rows) < n:
                    rows += pool.poll(0.1)
                    for w in workers:
                        for c, name, mb in _children(w.proc.pid):
                            children[c] = max(children.get(c, (0.0, ""))[0], mb), name
                assert all(r.status == "ok" and not r.get("note") for r in rows), rows
                out[when] = _memory(workers)
                out[when]["children"] = sorted((name, mb) for mb, name in children.values())
        finally:
            pool.close()
    return out


def _children(pid: int) -> list[tuple[int, str, float]]:
    """(pid, name, RSS MB) of each process under `pid` now."""
    import psutil

    out = []
    try:
        for c in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                out.append((c.pid, c.name(), c.memory_info().rss / 2**20))
    except psutil.Error:
        pass
    return out


def _memory(workers) -> dict:
    """Mean per worker, MB: RSS, PSS (shared pages split among their users) and private (what only it holds)."""
    tot = {"rss": 0.0, "pss": 0.0, "private": 0.0, "hwm": 0.0}
    for w in workers:
        rollup = _kv(f"/proc/{w.proc.pid}/smaps_rollup")
        status = _kv(f"/proc/{w.proc.pid}/status")
        tot["rss"] += rollup["Rss"]
        tot["pss"] += rollup["Pss"]
        tot["private"] += rollup["Private_Clean"] + rollup["Private_Dirty"]
        tot["hwm"] += status["VmHWM"]
    return {k: v / 1024 / len(workers) for k, v in tot.items()}


def _kv(path: str) -> dict:
    out = {}
    for line in Path(path).read_text().splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB":
            out[key.strip()] = int(parts[0])
    return out


def video_cost(seeds, episode_seconds) -> None:
    """Each episode filmed vs none, one worker, same seeds: the added wall per episode."""
    from prereg.core.video_draw import VIDEO_ALL_UP_TO

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
