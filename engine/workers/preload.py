"""What the fork server imports once for every worker the pool forks from it (engine.workers.pool.PRELOAD):
the modules a simulating worker runs (MuJoCo, numpy, the envs, the scripted oracle), never torch.

The fork server is started by the pool's process with `PARENT_ENV` naming it: the server then dies
with that process (Linux PR_SET_PDEATHSIG), and so, at once, do the workers forked from it (each
dies with the server: engine.workers.worker.die_with_parent). Without it the server would wait for its
workers and they for it, and a driver killed with -9 would leave them running.

Any import failure here (a bad MUJOCO_GL makes `import mujoco` raise) is left to each worker,
which imports the module again and fails with the reason in its own log, as a spawned worker did:
the fork server itself must stay up.
"""

import os

PARENT_ENV = "FONTAINE_FORK_SERVER_PARENT"


def _die_with(parent: str) -> None:
    from engine.process.signals import die_with_parent_signal

    if not die_with_parent_signal():
        return
    if str(os.getppid()) != parent:  # it died before the line above took effect
        os._exit(0)


_parent = os.environ.pop(PARENT_ENV, None)
if _parent:
    _die_with(_parent)
    from engine.process.signals import ignore_stop_signals

    # a SIGTERM to the run's process group killed the server, and with it (PR_SET_PDEATHSIG) every
    # worker under its episode: the run ended `failed` with "worker died" rows. The driver decides.
    ignore_stop_signals()

try:
    import engine.envs.boat_on_disk  # noqa: F401
    import engine.envs.pick_lift  # noqa: F401
    import engine.policies.scripted  # noqa: F401
    import engine.record.config  # noqa: F401  (a worker unpickles the driver's RunConfig first thing)
    import engine.sim.env  # noqa: F401
    import engine.workers.episode  # noqa: F401
    import engine.workers.pool  # noqa: F401
    import engine.workers.worker  # noqa: F401
except Exception:  # noqa: BLE001, S110 - see above
    pass
