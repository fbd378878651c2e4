"""What the console does to a run on a key press: stop it (`s`), escalate (`K`), report (`r`), resume
(`R`), archive (`a`). Each says what will happen and asks first; run control goes through
console/runs.py and console/kill.py (run-directory files, signals to a verified process), never a
pipe to the run. `RunActions` is mixed into the app (console/app.py).
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from textual import work

from console import kill, preregs, runs
from console.runs import shown_path
from console.widgets.dialogs import ConfirmScreen, ResultsScreen
from prereg import rundir as rd
from prereg.rundir.lock import lock_holder


class RunActions:
    """The app's run-control actions (FontaineApp mixes them in: `self` is the app)."""

    def selected_info(self) -> runs.RunInfo | None:
        if self.selected is None:
            self.notify("no run selected", severity="warning")
            return None
        return runs.read_run(self.selected)

    def action_stop_run(self) -> None:
        info = self.selected_info()
        if info is None:
            return
        if info.recorded_state in rd.FINAL_STATES or info.state == rd.DIED:
            self.notify(f"{info.run_id} has already ended ({info.state}); nothing to stop", severity="warning")
            return
        if info.stop is not None:
            self.notify(f"STOP already requested for {info.run_id}; waiting for the driver to confirm", severity="warning")
            return
        workers = info.manifest.workers if info.manifest is not None else None
        in_flight = f"up to {workers} episodes" if workers else "the episodes"
        body = (
            f"The driver finishes {in_flight} in flight, writes their rows, starts no new episode, "
            f"and exits with state `stopped` (shown as `stopping` until then).\n"
            f"Rows so far are kept; `fontaine-eval --resume {shown_path(info.path)}` runs the remaining seeds later.\n\n"
            f"This writes {shown_path(info.path / rd.STOP)}."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                runs.request_stop(info.path, who=f"fontaine-console ({user()})", detail="stop key in the console")
                self.watcher.poke()
                self.notify(f"STOP written for {info.run_id}: stopping at the next episode boundary")

        self.push_screen(ConfirmScreen(f"Stop {info.run_id} at an episode boundary?", body, "Stop"), answered)

    def action_escalate(self) -> None:
        info = self.selected_info()
        if info is None:
            return
        if not info.live:
            self.notify(f"{info.run_id} has no live process to signal ({info.state})", severity="warning")
            return
        pgid = (info.pid or {}).get("pgid")
        grace = kill.grace_s(info.path)  # as long as an episode of this run can take, plus a margin
        first = (
            f"Send SIGTERM to the process group {pgid} of {info.run_id} (the driver and its workers). "
            "The driver treats SIGTERM as a stop: the episodes in flight may finish at their boundary within its "
            "SIGTERM grace (--term-grace-s, default 20 s); those still running then are abandoned, owed to R; "
            "it ends `stopped` (`s` waits for the boundary however long).\n"
            f"Only if the group is still alive after {grace:g} s (its episode length and a margin) does it get "
            "SIGKILL: that loses the episodes in flight; the console then records the run `stopped` by kill, "
            "with the seeds that have no row, which R resumes."
        )
        second = (f"Really signal it? SIGTERM now; SIGKILL after {grace:g} s if it has not ended. "
                  "A second signal or SIGKILL loses the in-flight episodes.")

        def confirmed_twice(yes: bool | None) -> None:
            if yes:
                self.notify(f"escalating {info.run_id}: SIGTERM to process group {pgid}")
                self.escalate_worker(info.path, info.pid, grace)

        def confirmed_once(yes: bool | None) -> None:
            if yes:
                self.push_screen(ConfirmScreen("Second confirmation", second, f"SIGTERM now, SIGKILL after {grace:g} s",
                                               danger=True), confirmed_twice)

        self.push_screen(ConfirmScreen(f"Escalate {info.run_id}?", first, "SIGTERM", danger=True), confirmed_once)

    @work(thread=True, group="escalate")
    def escalate_worker(self, run_dir: Path, pid_info: dict | None, grace: float) -> None:
        outcome = kill.kill_run(run_dir, pid_info, who=f"fontaine-console ({user()})", grace=grace)
        self.call_from_thread(self.notify, outcome, timeout=10)
        self.watcher.poke()

    def action_results(self) -> None:
        info = self.selected_info()
        if info is None:
            return
        if info.prereg_path is None:
            self.notify(f"{info.run_id} has no pre-registration in its manifest: there is no report to run",
                        severity="warning")
            return
        arm_runs = report_runs(info, self.runs_dir)
        if not info.live:
            self.push_screen(ResultsScreen(info.prereg_path, info.path, arm_runs))
            return
        # A report of a run still going reads partial rows and writes (and may append) its results:
        # never on one key press, and never without naming the run it is about.
        done = "" if info.done is None else f" {info.done}/{info.total if info.total is not None else '?'}"
        body = (f"{info.run_id} ({info.arm}) is still {info.state}{done}. The report would read only the rows so far, "
                f"write {shown_path(info.path / rd.RESULTS)} from them"
                + (f" and append those reads to {info.prereg_path}" if preregs.appends_to(info.prereg_path) else "")
                + ".\n\nWait for the run to end for its real results.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.push_screen(ResultsScreen(info.prereg_path, info.path, arm_runs))

        self.push_screen(ConfirmScreen(f"Report on {info.run_id} while it runs?", body, "Report partial rows"), answered)

    def action_resume(self) -> None:
        """`R`: resume a stopped, failed or died run (`fontaine-eval --resume DIR`), after saying what will run."""
        info = self.selected_info()
        if info is None:
            return
        if info.live:
            self.notify(f"{info.run_id} is still running; nothing to resume", severity="warning")
            return
        if info.state not in (rd.STOPPED, rd.FAILED, rd.DIED):
            self.notify(f"{info.run_id} is {info.state}: only a stopped, failed or died run is resumed", severity="warning")
            return
        holder = lock_holder(info.path)
        if holder is not None:
            self.notify(f"{info.run_id} is being written by process {holder.get('pid', '?')}: not resumed",
                        severity="error", timeout=10)
            return
        argv = self.resume_argv(info.path)
        left = "" if info.total is None else f" ({max(0, info.total - (info.done or 0))} of {info.total} seeds left)"
        body = (f"Runs, detached (its own session, output appended to {shown_path(info.path / rd.LOG)}):\n\n"
                f"  {' '.join(argv)}\n\n"
                f"Seeds with an ok row are skipped; the rest run{left}, into the same run directory.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.start_in(info.path, argv, info.arm, f"resumed {info.run_id}")

        self.push_screen(ConfirmScreen(f"Resume {info.run_id}?", body, "Resume"), answered)

    def start_in(self, run_dir: Path, argv: list[str], arm: str | None, what: str) -> bool:
        try:
            popen = runs.launch_detached(argv, run_dir)
        except OSError as exc:  # RunBusy included: another driver holds the run's lock
            self.notify(f"could not start {' '.join(argv)}: {exc}", severity="error", timeout=15)
            return False
        self.watcher.adopt(run_dir, popen, arm)
        self._select(run_dir)
        self.notify(f"{what} (pid {popen.pid}); output in {shown_path(run_dir / rd.LOG)}")
        return True

    def action_archive(self) -> None:
        """`a`: move an ended run to RUNS/.archive/ (out of the list; nothing is deleted)."""
        info = self.selected_info()
        if info is None:
            return
        if info.live or info.state not in rd.FINAL_STATES + (rd.DIED,):
            self.notify(f"{info.run_id} is {info.state}: only an ended run is archived", severity="warning")
            return
        dest = self.runs_dir / runs.ARCHIVE / info.path.name
        body = (f"Move {shown_path(info.path)} to {shown_path(dest)}?\n"
                "It leaves the runs list; nothing is deleted (move it back to see it again).")

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                moved = runs.archive_run(info.path)
            except OSError as exc:
                self.notify(f"not archived: {exc}", severity="error", timeout=10)
                return
            self.selected = None
            self.detail = None
            self.watcher.select(None)
            self.watcher.rescan()
            self.notify(f"archived {info.run_id} to {shown_path(moved)}")

        self.push_screen(ConfirmScreen(f"Archive {info.run_id}?", body, "Archive"), answered)


def report_runs(info: runs.RunInfo, runs_dir: Path) -> list[tuple[str, Path]]:
    """The selected run for its arm, plus the newest ended run of each other arm of the same
    pre-registration (by id), so the report can compute its comparisons."""
    prereg_id = info.prereg.id if info.prereg is not None else None
    chosen = {info.arm: info.path}
    covered = set(info.manifest.arms if info.manifest is not None else ())  # a comparison run is both its arms' run
    for path in reversed(runs.discover_runs(runs_dir)):  # newest first
        other = runs.read_run(path)
        if (other.arm not in chosen and other.arm not in covered and other.recorded_state in rd.FINAL_STATES
                and (other.prereg.id if other.prereg is not None else None) == prereg_id):
            chosen[other.arm] = other.path
    return list(chosen.items())


def user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return os.environ.get("USER", "?")
