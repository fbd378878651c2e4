"""The kernel's SIGKILL for a process whose parent dies (Linux PR_SET_PDEATHSIG), set in one place:
a sim worker (engine.worker.die_with_parent) and the fork server that forks them
(engine.worker_preload) both use it. Imports nothing heavy: the fork server calls it first thing."""

from __future__ import annotations

import signal

PR_SET_PDEATHSIG = 1


def die_with_parent_signal() -> bool:
    """Ask for SIGKILL when the parent dies; False where there is no prctl (not Linux), where only
    the pipe's EOF ends the process. The caller still checks the parent did not die before this took
    effect (os.getppid())."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True
