"""The seam between the driver and what runs its episodes.

The driver hands seeds to an `Executor` and records the rows it returns. Two implement it:
`engine.workers.pool.LocalPool` (worker processes on this machine, batched predicts) and
`engine.scaleout.ray_pool.RayPool` (one LocalPool per shard on a Ray cluster). The command line chooses
one (`engine.cli.main.make_executor`); the driver knows only this protocol, so it never imports the
cluster code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from prereg.rundir.row import Row


class Executor(Protocol):
    respawn: bool  # replace a worker that dies (off once no seed is left to run)
    gpus_held: int | None  # GPUs the executor was granted (None: the driver decides)
    policy_resolved: dict | None  # what the policies resolved to where it loaded them (None: the driver's own)

    def free_slots(self) -> int: ...
    def submit(self, seed: int, arm: str | None = None) -> None: ...
    def in_flight(self) -> list: ...  # the episodes running: seeds, or (arm, seed) in a comparison run
    def alive(self) -> bool: ...
    def poll(self, timeout: float) -> list[Row]: ...  # the rows of the episodes that finished
    def take_requeued(self) -> list: ...  # jobs of a lost shard, to hand out again
    def abort(self) -> list: ...  # kill everything now; the episodes that were in flight
    def close(self) -> None: ...
    def stats(self) -> dict: ...
    def describe(self) -> dict | None: ...  # what the manifest records of it (None: nothing to add)


# (config, run_dir, the policy served in the driver or None, seeds to run, log) -> an Executor
ExecutorFactory = Callable[..., Executor]


def local_executor(cfg, run_dir: Path, policy, n_seeds: int, log) -> Executor:
    from engine.record.config import workers_for
    from engine.workers.pool import LocalPool

    n_workers = workers_for(cfg.workers, n_seeds) if n_seeds else 0
    return LocalPool(cfg, run_dir, policy, n_workers, log=log)
