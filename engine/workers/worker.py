"""A pool worker: one process that owns a MuJoCo scene and runs the episodes the pool hands it.

The pool (engine/workers/pool.py) starts it (`worker_main`) and talks to it over a pipe with the messages
below, pickled: the worker says it is ready, sends its observations at replans (answered by the
pool's batched predict) and the row of every finished episode. A policy that is local to the
workers (the scripted oracle) lives here and never crosses the pipe. A worker never outlives the
driver (`die_with_parent`).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from engine.policies.factory import make_policy
from engine.process.signals import ignore_stop_signals
from engine.workers.video import VideoWriter
from prereg.core.errors import FontaineError
from prereg.rundir.files import utc_now, video_relpath
from prereg.rundir.row import Row

HEAVY_MODULES = ("torch", "lerobot", "transformers", "matplotlib", "ray")  # a worker that only simulates has none


# -- the messages between the pool and its workers (pickled over a pipe) -----------------
# worker -> pool


@dataclass(frozen=True)
class Ready:
    """The worker has built its scene and waits for episodes."""

    scenes: tuple = ()  # the scenes it was handed and loaded (engine/sim/handoff.py)
    heavy: tuple = ()  # HEAVY_MODULES it has imported (none, for a worker that only simulates)


@dataclass(frozen=True)
class ObsMsg:
    obs: object  # an engine.policies.base.Observation at a replan, to be answered with a chunk


@dataclass(frozen=True)
class RowMsg:
    row: Row  # the row of a finished episode (prereg.rundir.row.Row)


@dataclass(frozen=True)
class LogMsg:
    text: str


# pool -> worker


@dataclass(frozen=True)
class Episode:
    seed: int
    film: bool
    arm: str | None = None  # a comparison run's arm; None: the run's one policy
    jitter: tuple | None = None  # (k, jitter_cm): a sim prediction's k-th rollout, its object jittered
    variant: str | None = None  # a crossed design's registered variant (cfg.variants); None: the scene as declared


@dataclass(frozen=True)
class ChunkMsg:
    chunk: object  # an engine.policies.base.Chunk


@dataclass(frozen=True)
class PredictError:
    message: str  # the batched predict raised: this episode becomes an error row


@dataclass(frozen=True)
class Quit:
    pass


@dataclass(frozen=True)
class StartFailed:
    """The worker's policy or scene could not be set up (bad input: a checkpoint changed after the run
    recorded it, processors that do not load): one line; the driver says it once and the run ends."""

    message: str


def worker_main(wid: int, conn: Connection, cfg, run_dir: str, served: dict, driver_pid: int,
                scenes: dict | None = None, environ: dict | None = None, env_bytes: dict | None = None,
                variants: dict | None = None) -> None:
    """One worker: owns its MuJoCo model (handed to it, or compiled); runs the episodes it is handed, one row each."""
    parent = os.getppid()
    ignore_stop_signals()  # the driver decides how a stop goes (forked: the fork server ignored them already)
    die_with_parent(driver_pid, parent)
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    from engine.envs import pinned
    from engine.sim import handoff

    handoff.install(scenes or {})
    pinned.install(env_bytes)  # the env file's bytes the launch read and hashed: never the disk's now
    try:
        _worker_loop(wid, conn, cfg, Path(run_dir), served, variants)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the driver is gone: nothing to report to
    except FontaineError as exc:  # before Ready (episodes turn their errors into rows): no traceback per worker
        try:
            conn.send(StartFailed(exc.one_line()))
        except OSError:
            pass


def _worker_loop(wid: int, conn: Connection, cfg, run_dir: Path, served: dict, variants: dict | None = None) -> None:
    from engine.envs import DEFAULT_ENV, get_env
    from engine.sim.env import jitter_offset_m
    from engine.workers.episode import run_episode

    arm_policies = cfg.arm_policies() if hasattr(cfg, "arm_policies") else [(None, cfg.policy)]
    predictors = {}  # arm (None: the one policy) -> (spec, horizon, needs images, needs privileged, predict)
    for arm, spec in arm_policies:
        if not spec.serve_in_driver:
            local = make_policy(spec)  # a policy that refuses to load (a changed checkpoint): StartFailed
            predictors[arm] = (spec, local.chunk_horizon, local.needs_images, local.needs_privileged,
                               _LocalPredict(local))
        else:
            predictors[arm] = (spec, *served[arm], _RemotePredict(conn))
    env = get_env(getattr(cfg, "env", DEFAULT_ENV)).create(render_size=cfg.render_size)
    scenes = _VariantScenes(cfg, env, variants)  # a crossed design's variants: each built on its first episode, kept
    from engine.sim import handoff

    handed = handoff.report()
    for key, why in handed["failed"].items():
        conn.send(LogMsg(f"scene {key} could not be loaded as handed; compiled it here ({why})"))
    conn.send(Ready(scenes=tuple(handed["loaded"]), heavy=tuple(m for m in HEAVY_MODULES if m in sys.modules)))
    while True:
        msg = conn.recv()
        if isinstance(msg, Quit):
            return
        if not isinstance(msg, Episode):
            continue
        seed, film, arm = msg.seed, msg.film, getattr(msg, "arm", None)
        jitter, variant = getattr(msg, "jitter", None), getattr(msg, "variant", None)
        spec, horizon, needs_images, needs_priv, predict = predictors[arm]
        started = utc_now()
        t0 = time.monotonic()
        video_rel, writer, note = None, None, None
        try:
            scene = scenes.get(variant)  # a variant that cannot be built: this episode's error row
            if film:
                video_rel = video_relpath(seed, arm, variant)
                writer = VideoWriter(run_dir / video_rel)
            partial = run_episode(scene, seed, cfg.episode_seconds, predict, chunk_horizon=horizon,
                                  needs_images=needs_images, needs_privileged=needs_priv,
                                  task=spec.task, frame_sink=writer.add if writer else None,
                                  video_size=getattr(cfg, "video_size", None),
                                  jitter_xy_m=None if jitter is None else jitter_offset_m(seed, *jitter))
            if writer is not None:
                writer.close()
                if writer.error:
                    note = f"video not written: {writer.error}"
                    conn.send(LogMsg(f"seed {seed}: {note}"))
                    video_rel = None
            partial.pop("seed", None)
            row = Row.episode(seed, worker=wid, arm=arm, **partial, variant=variant, video=video_rel, note=note)
        except _PredictFailed as exc:
            row = _error_row(seed, wid, arm, cfg, started, t0, str(exc), variant)
        except Exception as exc:
            conn.send(LogMsg(traceback.format_exc()))
            row = _error_row(seed, wid, arm, cfg, started, t0, f"{type(exc).__name__}: {exc}", variant)
        finally:
            if writer is not None:
                writer.close()
        if film:
            trim_heap()
        conn.send(RowMsg(row))


def trim_heap() -> None:
    """Give the memory a filmed episode freed back to the system (glibc's malloc_trim): the GL
    renderer's first frame and the encoder leave freed scratch in malloc's arenas (one per thread
    that allocated: Mesa's rasteriser threads, the encoder's). About 5 MB of a worker's RSS on the
    2-core development box, a millisecond's work; elsewhere (no glibc) it does nothing."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def die_with_parent(driver_pid: int, parent: int | None = None) -> None:
    """Never outlive the driver: the kernel sends SIGKILL when the parent dies (Linux PR_SET_PDEATHSIG),
    so a driver killed with -9 leaves no worker finishing its episode or writing its video. A spawned
    worker's parent is the driver; a forked one's is the fork server, which the kernel kills the same
    way when the driver dies (engine/workers/preload.py), and a thread watches the driver too."""
    from engine.process.signals import die_with_parent_signal

    parent = driver_pid if parent is None else parent
    die_with_parent_signal()  # not Linux: the pipe's EOF still ends the worker at its next message
    if os.getppid() != parent or not _alive(driver_pid):  # a parent died before the line above took effect
        os._exit(0)
    if parent != driver_pid:
        _watch(driver_pid)


def _watch(driver_pid: int) -> None:
    """SIGKILL this worker once the driver has exited, should the fork server outlive it: a thread
    blocked on the driver's pidfd (Linux 5.3+), or polling every 0.2 s where there is none."""
    import threading

    def kill_me() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    try:
        fd = os.pidfd_open(driver_pid)
    except ProcessLookupError:
        kill_me()
        return
    except (AttributeError, OSError):
        fd = None

    def watch() -> None:
        if fd is not None:
            import select

            select.select([fd], [], [])  # readable when the driver has exited
        else:
            while _alive(driver_pid):
                time.sleep(0.2)
        kill_me()

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _error_row(seed, wid, arm, cfg, started, t0, message, variant=None) -> Row:
    return Row.episode(seed, worker=wid, arm=arm, error=message, episode_seconds=cfg.episode_seconds, variant=variant,
                       started_at=started, finished_at=utc_now(), wall_s=round(time.monotonic() - t0, 3))


class _VariantScenes:
    """A worker's running scenes: the scene as declared (None), and each registered variant of a crossed
    design built on its first episode here (engine.envs.variant_env.create_env: the variant's compile kept
    in this process) and kept for the worker's life, so a variant costs one compile per worker, not one
    per episode. `declared`: the run's variants as the pool resolved them (name -> engine.sim.variants.Variant,
    checked against the scene once, there); else resolved here on the first variant's episode."""

    def __init__(self, cfg, base_env, declared: dict | None = None):
        self.cfg = cfg
        self.envs = {None: base_env}
        self._declared = dict(declared) if declared else None

    def get(self, name: str | None):
        if name not in self.envs:
            from engine.envs.variant_env import create_env, resolve_variants

            if self._declared is None:
                names = list(getattr(self.cfg, "variants", ()) or ())
                declared = resolve_variants(self.cfg.env, names, getattr(self.cfg, "variant_declarations", None) or {})
                self._declared = {v.name: v for v in declared}
            if name not in self._declared:
                raise ValueError(f"variant {name!r} is not one of this run's ({', '.join(self._declared) or 'none'})")
            self.envs[name] = create_env(self.cfg.env, self._declared[name], render_size=self.cfg.render_size)
        return self.envs[name]


class _PredictFailed(FontaineError):
    """The driver could not answer a worker's predict: that episode is an error row."""


class _RemotePredict:
    """A predict that is answered by the driver's batched policy."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __call__(self, obs):
        self.conn.send(ObsMsg(obs))
        msg = self.conn.recv()
        if isinstance(msg, PredictError):
            raise _PredictFailed(msg.message)
        return msg.chunk


class _LocalPredict:
    """A predict answered by the worker's own copy of a local policy (batch of one)."""

    def __init__(self, policy):
        self.policy = policy

    def __call__(self, obs):
        return self.policy.predict_batch([obs])[0]
