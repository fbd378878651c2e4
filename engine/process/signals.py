"""How a run's processes die and stop, in one place: the kernel's SIGKILL for a process whose parent
dies (Linux PR_SET_PDEATHSIG), which a sim worker (engine.workers.worker.die_with_parent) and the fork server
that forks them (engine.workers.preload) both ask for; and the signals that stop a run (`STOP_SIGNALS`),
which the driver handles and its workers and fork server ignore (`ignore_stop_signals`). A signal
to the run's process group (the console's `K`, a closing terminal) then reaches the driver alone:
the episodes in flight finish, or a second signal aborts them; no worker dies under an episode.
Imports nothing heavy: the fork server calls it first thing."""

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

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def ignore_stop_signals() -> None:
    """A worker or the fork server: the driver decides how a stop goes (it ends them itself)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
