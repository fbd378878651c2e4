"""How a run stops (a mixin of the driver, engine/run/driver.py): the STOP file, the signals, a
decision or a tripwire asking for the episode boundary.

SIGTERM, SIGINT and SIGHUP (a closing terminal) stop the run at the episode boundary; a second
aborts. SIGTERM (a scheduler's, the console's `K`) waits for that boundary only `term_grace_s`: a
scheduler SIGKILLs some 30 s later, so the episodes still in flight then are abandoned (the driver's
`_abandon_past_grace`: no rows, owed to --resume) and the run ends `stopped`.

When the plan decides (a registered curtailment, sequential test or comparison) the run stops at
once: the episodes in flight are cancelled (`_cancel_in_flight`: never rows, owed nothing).

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
from prereg.rundir.row import Row
from prereg.rundir.stop import scrub_stop_file


class StopProtocol:
    """The driver's stop: needs `run_dir`, `log`, `stop`, `signals`, `abort`, `term_grace_s`,
    `term_deadline`, `pool`, `arms`, `cfg`, `lost_seeds`, `cancelled`, `aborted_note` and `_write_status`."""

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
            if reason.by != rd.BY_DECIDED:
                self.log(f"stopping at the episode boundary: {reason.text()}")
            elif self.pool is None:  # a resumed run that had decided: the driver starts no worker
                self.log(f"stopping now, before any episode of this session: {reason.text()}")
            else:
                self.log(f"stopping now, the episodes in flight cancelled: {reason.text()}")
            self._write_status(rd.STOPPING)

    # -- how the episodes in flight end: finished (a boundary stop), abandoned (past SIGTERM's grace,
    # a second signal: owed to --resume) or cancelled (the plan decided: owed nothing)

    def _decided(self) -> bool:
        """The plan decided (a registered curtailment, sequential test or comparison): nothing more runs."""
        return self.stop is not None and self.stop.by == rd.BY_DECIDED

    def _cancel_in_flight(self) -> None:
        """The plan decided with episodes in flight: they are cancelled now (their workers killed), never
        written as rows nor counted, and owed nothing (issue 47: they ran to their end and cost 3-5% of
        the batch at 8 workers)."""
        jobs = self.pool.abort()
        self.cancelled.extend(as_json_jobs(jobs))
        if jobs:
            self.log(f"decided: {len(jobs)} episode{'s' if len(jobs) != 1 else ''} in flight cancelled, "
                     f"not recorded and not owed: {as_json_jobs(jobs)}")

    def _cancel(self, done: Row) -> None:
        """A row that finished after the decision, in the same poll as the row that decided: not recorded
        (it was in flight at the decision), its video removed."""
        self.cancelled.extend(as_json_jobs([self.cfg.job_of(done)]))
        video = done.get("video")
        if video:
            try:
                (self.run_dir / video).unlink()
            except OSError:
                pass
        variant = done.get("variant")
        self.log(f"decided: seed {done.seed}{f' ({done.arm})' if self.arms else ''}{f' [{variant}]' if variant else ''} "
                 "finished after the decision: not recorded")

    def _abort_pool(self) -> None:
        self.lost_seeds.extend(as_json_jobs(self.pool.abort()))
        self.aborted_note = f"aborted by a second signal, in-flight seeds not run: {sorted(self.lost_seeds)}"

    def _abandon_past_grace(self) -> bool:
        """SIGTERM's grace spent with episodes still in flight: kill them (no rows: their seeds are owed
        to --resume) so that the run ends `stopped` before a scheduler's SIGKILL."""
        if self.term_deadline is None or time.monotonic() < self.term_deadline or not self.pool.in_flight():
            return False
        lost = as_json_jobs(self.pool.abort())
        self.lost_seeds.extend(lost)
        self.aborted_note = (f"SIGTERM's {self.term_grace_s:g} s grace ran out: {len(lost)} episode"
                             f"{'s' if len(lost) != 1 else ''} in flight abandoned, owed to --resume: {lost}")
        self.log(self.aborted_note)
        return True


def as_json_jobs(jobs) -> list:
    """Jobs (engine.record.config.RunConfig.job) as status.json holds them: seeds, [arm, seed] in a
    comparison run, [variant, seed] in a crossed design ([arm, variant, seed] in both; `base` named)."""
    return [list(j) if isinstance(j, tuple) else j for j in jobs]
