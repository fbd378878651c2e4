"""How a run stops (a mixin of the driver, engine/run/driver.py): the STOP file, the signals, a
decision or a tripwire asking for the episode boundary.

SIGTERM, SIGINT and SIGHUP (a closing terminal) stop the run at the episode boundary; a second
aborts. SIGTERM (a scheduler's, the console's `K`) waits for that boundary only `term_grace_s`: a
scheduler SIGKILLs some 30 s later, so the episodes still in flight then are abandoned (the driver's
`_abandon_past_grace`: no rows, owed to --resume) and the run ends `stopped`.

A STOP file (the console's `s`, `echo reason > STOP`) keeps its boundary stop, with no grace. It is
read every poll: its words are the reason, redacted and rewritten once acted on if they held a secret's shape. A stop asked for
(`_request_stop`: a decision, a gate, a signal) is written as a STOP so that a resume and every
reader see why. The driver says `stopping` until the episodes in flight have written their rows.
"""

from __future__ import annotations

import signal
import time

from engine.process import terminal
from engine.process.signals import STOP_SIGNALS
from prereg import rundir as rd
from prereg.rundir.stop import scrub_stop_file


class StopProtocol:
    """The driver's stop: needs `run_dir`, `log`, `stop`, `signals`, `abort`, `term_grace_s`,
    `term_deadline` and `_write_status`."""

    def _install_signals(self) -> None:
        """SIGTERM, SIGINT and SIGHUP (a closing terminal) stop the run at the episode boundary; a
        second aborts. The workers and their fork server ignore all three (engine/workers/worker.py,
        engine/workers/preload.py): a signal to the run's process group reaches the driver alone,
        which decides how the episodes in flight end."""
        def on_signal(signum, _frame):
            self.signals += 1
            name = signal.Signals(signum).name
            if signum == signal.SIGHUP:  # before anything is written: the terminal may be gone already
                terminal.hangup(self.run_dir / rd.LOG)
            if self.signals == 1:
                if signum == signal.SIGTERM:  # even after a STOP: the scheduler's SIGKILL comes all the same
                    self.term_deadline = time.monotonic() + self.term_grace_s
                    self.log(f"SIGTERM: the episodes in flight have {self.term_grace_s:g} s to finish, "
                             "then are abandoned (owed to --resume)")
                self._request_stop(self._signal_reason(name))
            else:
                self.abort = True

        for sig in STOP_SIGNALS:
            signal.signal(sig, on_signal)

    def _signal_reason(self, name: str) -> rd.StopReason:
        """Why a signal stops the run: the STOP its sender wrote first, naming who sent it (the
        console's `K`), else the signal's name."""
        sent = rd.read_stop(self.run_dir)
        return sent if sent is not None and sent.by == rd.BY_SIGNAL else rd.StopReason(rd.BY_SIGNAL, f"{name} received")

    def _check_stop_file(self) -> None:
        if self.stop is None:
            req = rd.read_stop(self.run_dir)
            if req is not None:
                self.stop = req
                self.log(f"stop requested ({req.text()}); finishing in-flight episodes")
                if scrub_stop_file(self.run_dir, req):
                    self.log("STOP held a secret's shape: rewritten as its reason, redacted")
                self._write_status(rd.STOPPING)
        elif self.stop.by == rd.BY_USER and self.stop.detail == rd.EMPTY_STOP_DETAIL:
            # an empty STOP may be one caught between its creation and its writing (`echo ... > STOP`):
            # its words, once there, are the reason
            req = rd.read_stop(self.run_dir)
            if req is not None and req.detail != rd.EMPTY_STOP_DETAIL:
                self.stop = req
                self.log(f"stop reason: {req.text()}")
                scrub_stop_file(self.run_dir, req)
                self._write_status(rd.STOPPING)

    def _stop_if(self, reason: rd.StopReason | None) -> None:
        if reason is not None:
            self._request_stop(reason)

    def _request_stop(self, reason: rd.StopReason) -> None:
        if self.stop is None:
            rd.write_stop(self.run_dir, reason)
            self.stop = reason
            self.log(f"stopping at the episode boundary: {reason.text()}")
            self._write_status(rd.STOPPING)
