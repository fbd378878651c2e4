"""How a run that never got going ends: `DriverError` (it cannot start: a bad run directory, a policy
that cannot load, no cluster; one clear message, exit 2) and `StartInterrupted` (a stop arrived while
the executor was starting; nothing ran, exit 3)."""

from __future__ import annotations

from prereg.core.errors import EXIT_STOPPED, FontaineError, UsageError


class DriverError(UsageError):
    """A run that cannot start (bad run directory, policy that cannot load, no cluster): one clear message, exit 2."""


class StartInterrupted(FontaineError):
    """A stop (SIGTERM, SIGINT) arrived while the executor was starting (connecting to a cluster):
    nothing ran; the driver ends the run `stopped`, with the stop the signal asked for (exit 3)."""

    exit_code = EXIT_STOPPED
    label = "stopped"
