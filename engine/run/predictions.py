"""The sim side of a registered real read: `fontaine-eval --sim-predictions RUN` (docs/real.md).

For every sim seed of each arm of the run whose plan registers a real read (`reads.real`), `sim_k`
rollouts of the run's own policy in the run's own env, each with the object's start jittered within
±`jitter_cm` (engine.sim.env.jitter_offset_m: seeded by the seed and the rollout's k), run through the
run's worker pool (engine/workers/pool.py, the same episodes as the run's rows); the share that succeed
(and their mean progress) is one line of sim_predictions.jsonl per seed (prereg.rundir.real's writer),
written as each seed's rollouts are all back. For each seed the plan selects for a real trial, the setup
the operator copies on the rig: the poses in numbers and the front camera's picture
(prereg.rundir.real_setup).

It holds the run directory's lock (never while the run itself goes) and resumes: a seed whose prediction
is there with the registered k and jitter is not run again. A rollout that errors leaves its seed without
a prediction (said, exit 1): a prediction is K rollouts or nothing.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from pathlib import Path

from prereg import rundir as rd
from prereg.core.errors import RunFailed, UsageError
from prereg.rundir.outcomes import is_error
from prereg.rundir.real import Prediction, append_prediction, read_predictions
from prereg.rundir.real_setup import setup_paths, write_setup

POLL_S = 0.5


def plan_of(cfg):
    """The frozen plan the run was launched from (its manifest's record), loaded; UsageError if none."""
    from prereg.document.read import load

    path = (cfg.prereg or {}).get("path")
    if not path:
        raise UsageError(f"run {cfg.run_id} was not launched from a pre-registration: no real read is registered "
                         "for it (launch it with --prereg DOC --arm A from a plan with reads.real)")
    if not Path(path).is_file():
        raise UsageError(f"run {cfg.run_id} was launched from {path}, which is not there now: put the plan back")
    return load(path)


def registered(cfg, doc) -> dict[str | None, tuple]:
    """{the pool's arm key (None: the run's one policy): (the arm's name, its RealSpec, its selected seeds)}
    for the run's arms with a registered real read; UsageError when none has one."""
    from prereg.document.real_spec import real_spec_of, selected_seeds

    names = cfg.arm_names() or [cfg.arm]
    out = {}
    for name in names:
        got = real_spec_of(doc, name)
        if got is not None:
            out[name if cfg.arms else None] = (name, got[0], selected_seeds(doc, name))
    if not out:
        raise UsageError(f"{doc.path}: no real read is registered for arm(s) "
                         f"{', '.join(names)} (add reads.real to the section and freeze it: docs/real.md)")
    return out


def write_setups(cfg, run_dir: Path, seeds, log=print) -> int:
    """Each seed's initial condition (poses, and the front view where rendering works) that is not written
    yet; how many were written."""
    from engine.envs import get_env

    todo = [s for s in dict.fromkeys(seeds) if not setup_paths(run_dir, s)[0].exists()]
    if not todo:
        return 0
    env = get_env(cfg.env).create(render_size=max(cfg.render_size, 480))
    try:
        for seed in todo:
            env.reset(seed)
            png, why = _front_png(env)
            if why and seed == todo[0]:
                log(f"sim predictions: no picture of the setups ({why}); the poses are written")
            w, x, y, z = (float(v) for v in env.object_quat())
            yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
            write_setup(run_dir, seed, cfg.env, env.object_pos(), yaw, env.target(), png)
    finally:
        env.close()
    return len(todo)


def _front_png(env) -> tuple[bytes | None, str | None]:
    try:
        from PIL import Image

        frame = env.render("front")
        buf = io.BytesIO()
        Image.fromarray(frame).save(buf, format="PNG")
        return buf.getvalue(), None
    except Exception as exc:  # noqa: BLE001 - no GL, no camera: the numbers still tell the operator
        return None, f"{type(exc).__name__}: {exc}"


def run_predictions(cfg, run_dir: Path, *, executor=None, log=print) -> dict:
    """Run the missing jittered rollouts of every registered arm and write their predictions; a summary
    {written, skipped, failed: {(arm, seed): why}, setups}. RunFailed when a seed's rollout errored."""
    from engine.policies.factory import load_served
    from engine.workers.executor import local_executor

    run_dir = Path(run_dir)
    doc = plan_of(cfg)
    arms = registered(cfg, doc)
    lock = rd.RunLock(run_dir).acquire()  # RunLocked: the run is still going (or another mode runs)
    try:
        setups = write_setups(cfg, run_dir, [s for _, _, sel in arms.values() for s in sel], log)
        jobs, need, skipped = [], {}, 0
        for key, (name, spec, _) in arms.items():
            have = read_predictions(run_dir, name).by_seed
            for seed in cfg.seeds:
                p = have.get(seed)
                if p is not None and p.k == spec.sim_k and p.jitter_cm == spec.jitter_cm:
                    skipped += 1
                    continue
                need[(key, seed)] = spec
                jobs += [(key, seed, k) for k in range(spec.sim_k)]
        summary = {"written": 0, "skipped": skipped, "failed": {}, "setups": setups}
        if not jobs:
            log(f"sim predictions: every seed has its prediction ({skipped}); nothing to run")
            return summary
        log(f"sim predictions: {len(jobs)} jittered rollouts for {len(need)} seed(s) "
            f"({', '.join(f'{n}: k {s.sim_k} within ±{s.jitter_cm:g} cm' for n, s, _ in arms.values())})")
        policy, _ = load_served(cfg)
        pool = (executor or local_executor)(cfg, run_dir, policy, len(jobs), log)
        try:
            _drive(pool, jobs, need, arms, run_dir, summary, log)
        finally:
            pool.close()
    finally:
        lock.release()
    if summary["failed"]:
        worst = "; ".join(f"seed {s}: {why}" for (_, s), why in list(summary["failed"].items())[:3])
        raise RunFailed(f"{len(summary['failed'])} seed(s) have no prediction (a rollout failed: {worst}); "
                        f"run --sim-predictions {run_dir} again to retry them")
    return summary


def _drive(pool, jobs, need, arms, run_dir: Path, summary: dict, log) -> None:
    """Hand the rollouts to the pool, fold their rows per (arm, seed), write each seed's prediction."""
    pending = list(jobs)
    back: dict = defaultdict(list)  # (arm key, seed) -> its rows so far
    in_flight = 0
    while pending or in_flight:
        while pending and pool.free_slots() > 0:
            key, seed, k = pending.pop(0)
            pool.submit(seed, key, (k, need[(key, seed)].jitter_cm))
            in_flight += 1
        if not pool.alive():
            raise RunFailed("every worker died: no prediction can be run (driver.log says why)")
        for row in pool.poll(POLL_S):
            in_flight -= 1
            job = (row.arm if row.arm in arms else None, row.seed)
            back[job].append(row)
            spec = need[job]
            if len(back[job]) < spec.sim_k:
                continue
            rows = back.pop(job)
            errors = [r.error for r in rows if is_error(r.as_dict())]  # (a worker's death included)
            if errors:
                summary["failed"][job] = errors[0] or "error row"
                continue
            wins = sum(1 for r in rows if r.get("success"))
            progress = [_progress_share(r) for r in rows]
            mean = None if any(p is None for p in progress) else round(sum(progress) / len(progress), 6)
            append_prediction(run_dir, Prediction(arms[job[0]][0], job[1], spec.sim_k, wins, spec.jitter_cm, mean))
            summary["written"] += 1
            log(f"sim predictions: seed {job[1]}: {wins}/{spec.sim_k} succeed")


def _progress_share(row) -> float | None:
    """A rollout's progress as a share of the task, [0, 1]: the distance to the target it closed by the end
    over the distance at the start (a success is 1)."""
    if row.get("success"):
        return 1.0
    start, gained = row.get("dist_initial_cm"), row.get("progress_final_cm")
    if start is None or gained is None or start <= 0:
        return None
    return min(1.0, max(0.0, gained / start))
