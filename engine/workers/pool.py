"""The local episode pool: worker processes, each owning a MuJoCo scene, and batched predicts.

`LocalPool` is the executor the driver hands seeds to and takes finished rows from. For a
policy served in the driver (MolmoAct2, the hold baseline) it is also the one place the model
lives: workers send their observations at replans, the pool gathers the ones waiting (one per
busy worker at most, with a bounded wait) and answers them with one batched predict. Local
policies (the scripted oracle) live inside each worker and never cross a process boundary. The
worker process itself, and the messages it exchanges with the pool, are engine/workers/worker.py's.

A comparison run (two arms, `cfg.arms`) hands each worker both arms: an episode names its arm,
the worker predicts with that arm's local policy or asks for that arm's served one, and the pool
batches the waiting observations per served policy. Its rows carry their arm; its videos are
`rollout_<arm>_seed006.mp4`. A crossed design's episode names its variant too: the worker runs it on that
variant's scene (built there once) and the row, and the video (`rollout_[<arm>_]<variant>_seed006.mp4`), say which.

The same pool runs inside a Ray shard (engine/scaleout/ray_pool.py): a shard is this pool on a node.

Light workers (issue 26): the pool compiles the scenes its workers need once, here, and hands them
over as MJB (engine/sim/handoff.py); workers are forked from multiprocessing's fork server, a clean
process (never the driver, which may hold CUDA) that has imported what a worker runs (`PRELOAD`:
MuJoCo, numpy, the envs and the oracle; never torch). A worker then starts in a fraction of a
second and holds one model instead of compiling its own: benchmarks/bench_driver.py measures both
ways in one run (`start_method="spawn", hand_scenes=False` is the old one).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path

from engine.process.environ import worker_environ
from engine.record.predict_trail import PredictTrail
from engine.workers.worker import (
    ChunkMsg,
    Episode,
    LogMsg,
    ObsMsg,
    PredictError,
    Quit,
    Ready,
    RowMsg,
    StartFailed,
    worker_main,
)
from prereg.core.errors import UsageError
from prereg.core.video_draw import films
from prereg.rundir.files import utc_now
from prereg.rundir.row import Row

_ONE_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
START_TOGETHER_S = 60.0
# What the fork server imports once for every worker it forks: what a simulating worker runs, no more.
PRELOAD = ("__main__", "engine.workers.preload")
FORK_SERVER_PARENT = "FONTAINE_FORK_SERVER_PARENT"  # engine.workers.preload.PARENT_ENV


class LocalPool:
    """Worker processes on this machine. Not thread-safe: one caller drives it."""

    def __init__(self, cfg, run_dir: Path, policy, n_workers: int, log=print, *, start_method: str | None = None,
                 hand_scenes: bool = True):
        """`policy`: the policy served here (None: local to the workers), or in a comparison run
        {arm: policy} for the arms served here. `start_method` (default: forkserver where there is one,
        else spawn) and `hand_scenes` exist for the benchmark's old-way baseline."""
        self.cfg, self.run_dir, self.policy, self.log = cfg, Path(run_dir), policy, log
        self.policies: dict = dict(policy) if isinstance(policy, dict) else ({None: policy} if policy is not None else {})
        self.workers: dict[int, _Worker] = {}
        self.respawn = True
        self.gpus_held: int | None = None  # the driver counts the GPUs it serves the policy on
        self.policy_resolved: dict | None = None  # the driver loaded them: its description stands
        self.predict_rounds = 0
        self.predicted_obs = 0
        self.worker_crashes = 0
        self.exit_codes: list[int | None] = []  # of the workers that died
        self._turnaround_s: float | None = None  # EMA of chunk sent -> next observation back
        self._obs_waiting: list[tuple[_Worker, object]] = []
        self._first_obs_at = 0.0
        self._start_by = time.monotonic() + START_TOGETHER_S
        self._started = False
        self.trail = PredictTrail.for_run(self.run_dir) if getattr(cfg, "record_predicts", False) else None
        for var in _ONE_THREAD_ENV:  # one core per worker: BLAS/OpenMP pools would oversubscribe
            os.environ.setdefault(var, "1")  # (before the fork server starts: it imports numpy)
        self._ctx = _worker_context(start_method, cfg.pass_env) if n_workers > 0 else None
        self._export = None
        self.scenes: dict[str, str] = {}
        if hand_scenes and n_workers > 0:
            self._export_scenes()
        self.variants = resolved_variants(cfg) if n_workers > 0 else {}  # checked here once, handed to each worker
        for wid in range(max(0, n_workers)):
            self._spawn_worker(wid)

    # -- the executor interface the driver uses

    def free_slots(self) -> int:
        """Workers ready for a new episode now. Workers start together: those that begin their
        first episodes at the same moment stay in step, so their replans meet in one batch."""
        self._started = self._started or all(w.ready for w in self.workers.values() if w.alive) \
            or time.monotonic() > self._start_by
        if not self._started:
            return 0
        return sum(1 for w in self.workers.values() if w.alive and w.ready and w.idle)

    def submit(self, seed: int, arm: str | None = None, jitter: tuple | None = None, variant: str | None = None) -> None:
        """Start `seed` on an idle worker; `jitter` (k, jitter_cm): a sim prediction's rollout, never filmed;
        `variant`: a crossed design's registered variant (None: the scene as declared)."""
        w = next(w for w in self.workers.values() if w.alive and w.ready and w.idle)
        w.start_episode(seed, jitter is None and self._film(w, seed), arm, jitter, variant)

    def in_flight(self) -> list:
        """The episodes running, as the driver's jobs (engine.record.config.RunConfig.job): seeds, or
        (arm, seed) in a comparison run, (arm?, variant, seed) in a crossed design."""
        return [self._job(w) for w in self.workers.values() if w.seed is not None]

    def _job(self, w: "_Worker"):
        if getattr(self.cfg, "variants", None):
            return self.cfg.job(w.arm, w.variant, w.seed)
        return w.seed if w.arm is None else (w.arm, w.seed)

    def alive(self) -> bool:
        return any(w.alive for w in self.workers.values())

    def poll(self, timeout: float) -> list[Row]:
        """Wait up to `timeout` for worker messages; serve a batch when it is due; return the
        rows of the episodes that finished (a worker that died leaves an error row)."""
        rows: list[Row] = []
        if self._obs_waiting:
            timeout = min(timeout, max(0.0, self._first_obs_at + self._batch_wait_s() - time.monotonic()))
        live = [w for w in self.workers.values() if w.alive]
        ready = wait([w.conn for w in live] + [w.proc.sentinel for w in live], timeout)
        for w in live:
            if w.conn in ready:
                for msg in w.drain():
                    match msg:
                        case ObsMsg(obs):
                            if not self._obs_waiting:
                                self._first_obs_at = time.monotonic()
                            self._obs_waiting.append((w, obs))
                            self._note_turnaround(w, obs)
                        case RowMsg(row):
                            rows.append(row)
                            w.seed = None
                        case Ready():
                            w.ready = True
                            w.ready_s = time.monotonic() - w.started_at
                            w.info = msg
                        case LogMsg(text):
                            self.log(f"worker {w.wid}: {text}")
                        case StartFailed(text):  # bad input found in a worker: the run cannot start (exit 2)
                            raise UsageError(f"worker {w.wid}: {text}")
            if w.proc.sentinel in ready or not w.proc.is_alive():
                row = self._on_worker_death(w)
                if row is not None:
                    rows.append(row)
                self._obs_waiting = [(ow, o) for ow, o in self._obs_waiting if ow is not w]
        if self._obs_waiting:
            waiting_for = [w for w in self.workers.values() if w.seed is not None and w.alive]
            if len(self._obs_waiting) >= len(waiting_for) or time.monotonic() >= self._first_obs_at + self._batch_wait_s():
                for arm in dict.fromkeys(w.arm for w, _ in self._obs_waiting):  # one batch per policy
                    self._serve([(w, o) for w, o in self._obs_waiting if w.arm == arm], self.policies.get(arm))
                self._obs_waiting = []
        return rows

    def take_requeued(self) -> list[int]:
        """Seeds to hand out again (a lost Ray shard's); a local worker's crash is an error row."""
        return []

    def abort(self) -> list:
        """Kill every worker now; return the episodes that were in flight (not run, no rows)."""
        lost = self.in_flight()
        for w in self.workers.values():
            w.kill()
            w.seed = None
        return lost

    def close(self, grace_s: float = 10.0) -> None:
        """Ask every worker to quit, wait for them together (at most `grace_s`), kill the rest."""
        for w in self.workers.values():
            if w.alive:
                w.send(Quit())
        deadline = time.monotonic() + grace_s
        for w in self.workers.values():
            w.proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for w in self.workers.values():
            w.kill()
        if self._export is not None:
            self._export.close()
            self._export, self.scenes = None, {}
        if self.trail is not None:
            self.trail.close()

    def describe(self) -> dict | None:
        return None  # this machine: the manifest already says so

    def stats(self) -> dict:
        return {"predict_rounds": self.predict_rounds, "predicted_obs": self.predicted_obs,
                "worker_crashes": self.worker_crashes, "exit_codes": list(self.exit_codes)}

    # -- internals

    def _spawn_worker(self, wid: int) -> None:
        served = {arm: (p.chunk_horizon, p.needs_images, p.needs_privileged) for arm, p in self.policies.items()}
        self.workers[wid] = _Worker(wid, self.cfg, self.run_dir, served, self._ctx, self.scenes, self.variants)

    def _export_scenes(self) -> None:
        """Compile the scenes the workers would each compile (the env's; the boat scene for a scripted
        oracle's kinematics), once, and hold them as MJB for the workers to load. Anything that fails
        here leaves the workers to compile as they used to, with the reason in the log."""
        export = None
        try:  # (a driver that cannot import MuJoCo, with a bad MUJOCO_GL say, leaves it to the workers)
            from engine.envs import DEFAULT_ENV, compiled_scenes
            from engine.sim import handoff

            if not handoff.available():
                return
            export = handoff.Export()
            scenes = compiled_scenes(getattr(self.cfg, "env", DEFAULT_ENV))
            arm_policies = self.cfg.arm_policies() if hasattr(self.cfg, "arm_policies") else [(None, self.cfg.policy)]
            if any(spec.kind == "scripted" for _, spec in arm_policies):  # the oracle's own kinematics model
                from engine.sim import scene

                scenes.setdefault(scene.SCENE_KEY, scene.compiled_model())
            for key, model in scenes.items():
                export.add(key, model)
        except Exception as exc:  # noqa: BLE001 - the workers compile it themselves and say what is wrong
            if export is not None:
                export.close()
            self.log(f"scenes not handed to the workers (each compiles its own): {type(exc).__name__}: {exc}")
            return
        self._export, self.scenes = export, export.names()

    def _film(self, w: "_Worker", seed: int) -> bool:
        """Which episodes are filmed: prereg.core.video_draw's one rule (auto = every seed of a run of
        up to VIDEO_ALL_UP_TO seeds, else the first episode of each worker)."""
        return films(self.cfg.video_draw, seed, len(self.cfg.seeds), w.episodes_started)

    def _batch_wait_s(self) -> float:
        """How long a waiting observation may wait for the other busy workers' observations.

        A predict costs far more than a short wait, and workers that are answered together
        simulate their chunks side by side and come back together. A worker that fell out of
        step (a slow reset) is brought back into step by waiting about one chunk's simulation
        time for the others, so the wait follows the measured chunk turnaround, within bounds.
        """
        adaptive = 1.5 * self._turnaround_s if self._turnaround_s is not None else 0.0
        return min(self.cfg.batch_wait_max_ms / 1000.0, max(self.cfg.batch_wait_ms / 1000.0, adaptive))

    def _note_turnaround(self, w: "_Worker", obs) -> None:
        if w.chunk_sent_at is not None and getattr(obs, "replan_index", 0) > 0:
            dt = time.monotonic() - w.chunk_sent_at
            self._turnaround_s = dt if self._turnaround_s is None else 0.8 * self._turnaround_s + 0.2 * dt
        w.chunk_sent_at = None

    def _serve(self, obs_waiting, policy) -> None:
        observations = [o for _, o in obs_waiting]
        try:
            if policy is None:
                raise RuntimeError(f"no policy is served here for arm {obs_waiting[0][0].arm!r}")
            chunks = policy.predict_batch(observations)
        except Exception as exc:  # a predict that raises fails those episodes, not the run
            msg = f"predict failed: {type(exc).__name__}: {exc}"
            self.log(traceback.format_exc())
            for w, _ in obs_waiting:
                w.send(PredictError(msg))
            return
        self.predict_rounds += 1
        self.predicted_obs += len(observations)
        if self.trail is not None:
            self.trail.record(observations, chunks, arm=obs_waiting[0][0].arm)
        for (w, _), chunk in zip(obs_waiting, chunks):
            chunk.batch_size = len(observations)
            w.send(ChunkMsg(chunk))
            w.chunk_sent_at = time.monotonic()

    def _on_worker_death(self, w: "_Worker") -> Row | None:
        w.alive = False
        code = w.proc.exitcode
        self.worker_crashes += 1
        self.exit_codes.append(code)
        row = None
        if w.seed is not None:
            row = Row.episode(w.seed, worker=w.wid, arm=w.arm, episode_seconds=self.cfg.episode_seconds, variant=w.variant,
                              error=f"worker {w.wid} died (exit code {code}) during this episode",
                              finished_at=utc_now())
            w.seed = None
        if self.respawn and self.worker_crashes <= 2 * max(1, len(self.workers)):
            self.log(f"worker {w.wid} died (exit code {code}); starting a replacement")
            self._spawn_worker(w.wid)
        return row


def resolved_variants(cfg) -> dict:
    """A crossed design's variants (name -> engine.sim.variants.Variant), resolved on the run's env once, here:
    each worker is handed them and builds a variant's scene on its first episode of it, never checking the
    declarations again ({} for a run of the scene alone)."""
    names = list(getattr(cfg, "variants", None) or ())
    if not names:
        return {}
    from engine.envs.variant_env import resolve_variants

    return {v.name: v for v in resolve_variants(cfg.env, names, getattr(cfg, "variant_declarations", None) or {})}


def _worker_context(start_method: str | None, passed=()):
    """Workers are forked from the fork server (where the platform has one) with `PRELOAD` imported
    there once; `spawn` starts each from a bare interpreter. Never `fork`: the driver may hold CUDA."""
    method = start_method or ("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    ctx = mp.get_context(method)
    if method == "forkserver":
        from multiprocessing import forkserver

        ctx.set_forkserver_preload(list(PRELOAD))  # read when the server starts (once per process)
        kept = dict(os.environ)  # the server starts with the workers' allow-list only (engine/process/environ.py)
        os.environ.clear()
        os.environ.update(worker_environ(kept, passed), **{FORK_SERVER_PARENT: str(os.getpid())})  # it dies with us
        try:
            forkserver.ensure_running()  # now: it imports PRELOAD while the pool compiles the scenes
        finally:
            os.environ.clear()
            os.environ.update(kept)
    return ctx


class _Worker:
    """The driver's handle on one worker process."""

    def __init__(self, wid: int, cfg, run_dir: Path, served: dict, ctx=None, scenes: dict | None = None,
                 variants: dict | None = None):
        ctx = ctx or mp.get_context("spawn")
        self.wid = wid
        self.conn, child = ctx.Pipe(duplex=True)
        # Not this process's environment (HF_TOKEN, *_KEY): the allow-list, forked or spawned (engine/process/environ.py).
        environ = worker_environ(passed=getattr(cfg, "pass_env", ()) or ())
        self.started_at = time.monotonic()
        from engine.envs import pinned

        self.proc = ctx.Process(target=worker_main, args=(wid, child, cfg, str(run_dir), served, os.getpid(),
                                                          dict(scenes or {}), environ, pinned.pinned(),
                                                          dict(variants or {})),
                                name=f"fontaine-worker-{wid}", daemon=True)
        self.proc.start()
        child.close()
        self.alive = True
        self.ready = False  # the worker has built its scene and waits for episodes
        self.ready_s: float | None = None  # from start() to its Ready
        self.info: Ready | None = None
        self.chunk_sent_at: float | None = None
        self.seed: int | None = None
        self.arm: str | None = None  # the arm of the episode in flight (a comparison run)
        self.variant: str | None = None  # ... and its variant (a crossed design; None: the scene as declared)
        self.episodes_started = 0

    @property
    def idle(self) -> bool:
        return self.seed is None

    def start_episode(self, seed: int, film: bool, arm: str | None = None, jitter: tuple | None = None,
                      variant: str | None = None) -> None:
        self.seed, self.arm, self.variant = seed, arm, variant
        self.send(Episode(seed, film, arm, jitter, variant))
        self.episodes_started += 1

    def send(self, msg) -> None:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            pass  # its death is noticed through the sentinel

    def drain(self) -> list:
        msgs = []
        try:
            while self.conn.poll():
                msgs.append(self.conn.recv())
        except (EOFError, OSError):
            pass
        return msgs

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=5)
        self.alive = False
