"""Faults for the tests, kept out of the engine: `python -m tests.engine.faults ARGS` is
`fontaine-eval ARGS` with the faults the environment names installed, in the driver and in
every worker (workers are spawned: each imports this module again as `__mp_main__`, before it
runs anything, so the same faults are installed there). The engine has no fault code at all.

- `FONTAINE_FAULT_CRASH_SEEDS=1,5`: the worker handed one of these seeds dies at once (exit 3, no row),
  as a segfault in the simulator or the policy would.
- `FONTAINE_FAULT_LOAD_S=15`: every policy load takes 15 s longer (a slow checkpoint).
- `FONTAINE_FAULT_VIDEO_ENOSPC=1`: finishing a video's file fails as a full disk would (ENOSPC), after
  its frames were encoded.

The names start with FONTAINE_: a worker's environment is an allow-list (engine/process/environ.py).
"""

from __future__ import annotations

import os
import sys
import time

import engine.cli.main  # first: it sets MUJOCO_GL before anything imports mujoco

CRASH_SEEDS = "FONTAINE_FAULT_CRASH_SEEDS"
LOAD_S = "FONTAINE_FAULT_LOAD_S"
VIDEO_ENOSPC = "FONTAINE_FAULT_VIDEO_ENOSPC"


def install(environ=os.environ) -> None:
    crash = {int(s) for s in environ.get(CRASH_SEEDS, "").split(",") if s.strip().isdigit()}
    load_s = float(environ.get(LOAD_S) or 0.0)
    if crash:
        import engine.workers.episode

        run_episode = engine.workers.episode.run_episode

        def crashing_run_episode(env, seed, *args, **kwargs):
            if seed in crash:
                os._exit(3)
            return run_episode(env, seed, *args, **kwargs)

        engine.workers.episode.run_episode = crashing_run_episode  # the worker imports it per episode
    if load_s > 0:
        from engine.policies import factory
        from engine.run import driver
        from engine.workers import worker

        make_policy = factory.make_policy

        def slow_make_policy(spec):
            time.sleep(load_s)
            return make_policy(spec)

        for module in (factory, driver, worker):  # every name it is called by
            module.make_policy = slow_make_policy
    if environ.get(VIDEO_ENOSPC):
        import errno

        from engine.workers import video as video_writer

        def full_disk(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        video_writer._Encoder.close = full_disk


install()

if __name__ == "__main__":
    sys.exit(engine.cli.main.main())
