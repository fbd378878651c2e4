"""A Ray shard on its node, and what the shards loaded.

`Shard` is the Ray actor engine/scaleout/ray_pool.py's `RayPool` places on each node: the local engine
(`engine.workers.pool.LocalPool`) with its own workers and, for a served policy, its own copy of the model.
It gets the driver's settings minus every secret (`shard_env`) and ships each filmed episode's video
back with its row. `shards_policy` makes the manifest's `policy_resolved` from what each shard
loaded; shards that loaded different weights, revisions or settings fail the run at start. Every
node needs the same fontaine install: the actor is `engine.scaleout.shard.Shard`, imported on the node.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

from engine.process.environ import SECRET_NAME
from engine.record.errors import DriverError
from prereg import rundir as rd
from prereg.core.webhook_env import is_webhook_var
from prereg.rundir.row import Row

FORWARDED_ENV_PREFIXES = ("FONTAINE_", "MUJOCO_GL", "PYOPENGL_PLATFORM")
# Secrets never travel to the shards: the Discord webhook (FONTAINE_DISCORD_WEBHOOK_URL/_FILE,
# which the console's notifier needs and no shard does), tokens, passwords, keys (the workers' rule,
# engine/process/environ.py). Ray's own auth token reaches a node through the node's environment
# (`ray start`), never through us.
SECRET_ENV = SECRET_NAME


def shard_env(environ=None) -> dict:
    """The variables a shard gets from the driver: FONTAINE_* and the GL settings, minus secrets."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items()
            if k.startswith(FORWARDED_ENV_PREFIXES) and not SECRET_ENV.search(k) and not is_webhook_var(k, v)}


def secret_env_names(environ=None) -> list[str]:
    """Names (never values) of the variables here that look like secrets: a shard reports them."""
    environ = os.environ if environ is None else environ
    return sorted(k for k in environ if SECRET_ENV.search(k))


class Shard:
    """A Ray actor: the local engine (`LocalPool`) on one node. Methods: info, step, abort, close.

    It runs with max_concurrency=2 so that `abort()` can reach it while a `step()` is running;
    only `step` and `close` touch the pool, under a lock.
    """

    def __init__(self, cfg, shard_index: int, n_workers: int, env: dict):
        os.environ.update(env)  # before the pool spawns its workers, which inherit it
        from engine.policies.factory import load_served
        from engine.workers.pool import LocalPool

        self.index = shard_index
        self.scratch = Path(tempfile.mkdtemp(prefix=f"fontaine-{cfg.run_id}-shard{shard_index}-"))
        (self.scratch / rd.VIDEOS).mkdir()
        self._logs: list[str] = []
        self._lock = threading.Lock()
        self._abort = threading.Event()
        self._closed = False
        policy, self.policy_description = load_served(cfg)  # once, on this node (a comparison: each arm's)
        self.pool = LocalPool(cfg, self.scratch, policy, n_workers, log=self._logs.append)

    def info(self) -> dict:
        import sys

        import ray

        from engine.record.provenance import package_versions, tool_git_commit

        ctx = ray.get_runtime_context()
        return {"shard": self.index, "host": socket.gethostname(), "node_id": ctx.get_node_id(),
                "pid": os.getpid(), "python": sys.version.split()[0], "ray": ray.__version__,
                "git_commit": tool_git_commit(), "versions": package_versions(),
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "env_secrets": secret_env_names(),  # names only: what a shard's node could leak
                "policy": self.policy_description, "video_scratch": str(self.scratch)}

    def step(self, jobs: list, known_free: int, respawn: bool, wait_s: float) -> dict:
        """Start `jobs` (seeds, or (arm, seed) in a comparison run), then drive the pool until an
        episode finishes, a worker becomes free that the driver does not know of, the shard is
        aborted, or `wait_s` passes."""
        with self._lock:
            if self._closed:
                return self._report([], [], aborted=[])
            pool = self.pool
            pool.respawn = respawn
            refused = []
            for job in jobs:
                if pool.free_slots() > 0:
                    arm, seed = job_parts(job)
                    pool.submit(seed, arm=arm)
                else:  # a worker died since the driver counted our free slots
                    refused.append(job)
            deadline = time.monotonic() + wait_s
            rows: list[Row] = []
            while True:
                if self._abort.is_set():
                    lost = pool.abort()
                    self._closed = True
                    report = self._report(rows, refused, aborted=lost)
                    shutil.rmtree(self.scratch, ignore_errors=True)
                    return report
                rows.extend(pool.poll(min(0.2, max(0.0, deadline - time.monotonic()))))
                if rows or pool.free_slots() > known_free or not pool.alive() or time.monotonic() >= deadline:
                    break
            return self._report(rows, refused)

    def abort(self) -> None:
        self._abort.set()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self.pool.close()
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _report(self, rows: list[Row], refused: list[int], aborted: list[int] | None = None) -> dict:
        out = []
        for row in rows:
            blob = None
            if row.get("video"):
                path = self.scratch / row.get("video")
                try:
                    blob = path.read_bytes()
                    path.unlink()
                except OSError as exc:
                    self._logs.append(f"video of seed {row.seed} not shipped: {exc}")
                    row = row.with_fields(video=None)
            out.append((row, blob))
        logs, self._logs[:] = list(self._logs), []
        pool = self.pool
        return {"rows": out, "refused": refused, "aborted": aborted,
                "free": 0 if self._closed else pool.free_slots(), "in_flight": pool.in_flight(),
                "alive": (not self._closed) and pool.alive(), "stats": pool.stats(), "logs": logs}


def job_parts(job) -> tuple[str | None, int]:
    """(arm, seed) of a job: the driver's jobs are seeds, or (arm, seed) pairs in a comparison run."""
    if isinstance(job, (tuple, list)):
        return job[0], int(job[1])
    return None, int(job)


def as_job(job):
    """A job as the driver holds it (Ray may hand a tuple back as a list)."""
    return tuple(job) if isinstance(job, list) else job


def job_words(job) -> str:
    arm, seed = job_parts(job)
    return f"seed {seed}" + (f" of arm {arm}" if arm is not None else "")


IDENTITY_KEYS = ("policy", "checkpoint", "revision", "pin", "weights_sha256", "config_sha256", "processors_sha256",
                 "tokenizer_sha256", "policy_type", "decode", "dtype", "convmap")


def shards_policy(descriptions: list, comparison: bool = False) -> dict:
    """The manifest's `policy_resolved` from what each shard loaded (a comparison run: per arm): the
    fields every shard agrees on, `served` in each Ray shard, and any other field that differs (a
    node's own cache path, its device) under `by_shard`, one value per shard. A DriverError when
    the shards loaded different weights, revisions or settings: such a run is not one policy."""
    if comparison:
        arms = dict.fromkeys(a for d in descriptions if isinstance(d, dict) for a in d)  # as the shards list them
        return {a: _agreed([(d or {}).get(a) for d in descriptions], a) for a in arms}
    return _agreed(descriptions, None)


def _agreed(descriptions: list, arm: str | None) -> dict:
    descs = [d if isinstance(d, dict) else {} for d in descriptions]
    out: dict = {}
    by_shard: dict = {}
    for key in dict.fromkeys(k for d in descs for k in d):
        values = [d.get(key) for d in descs]
        if all(v == values[0] for v in values):
            out[key] = values[0]
        elif key in IDENTITY_KEYS:
            said = ", ".join(f"shard {i}: {str(v)[:24]}" for i, v in enumerate(values))
            raise DriverError(f"the Ray shards loaded different {key}{f' for arm {arm}' if arm else ''} ({said}): "
                              "give every node the same checkpoint (a Hugging Face id pinned to a revision, or "
                              "the same folder at the same path)")
        else:
            by_shard[key] = values
    out["served"] = _served_on_shards(out.get("served"))
    if by_shard:
        out["by_shard"] = by_shard
    return out


def _served_on_shards(served) -> str:
    """Where a policy runs, said of a Ray run: a shard stands where the driver would ('in the driver,
    batched' is 'in each Ray shard, batched'); one run in each worker runs in each worker of each shard."""
    if not isinstance(served, str) or not served:
        return "in each Ray shard"
    if served.startswith("in the driver"):
        return "in each Ray shard" + served[len("in the driver"):]
    head, _, rest = served.partition(",")
    return f"{head} of each Ray shard" + (f",{rest}" if rest else "")
