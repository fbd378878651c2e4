"""The polling loop behind the console: one plain thread, no Textual in it.

Every `interval` seconds it looks at the runs directory and, for each run, at the small
files' mtimes; it re-reads a file only when it changed, tails rows.jsonl through a
`RowsTailer` into a `RunAggregate`, checks liveness of runs that have not ended, reaps
the processes this console launched, and hands the UI plain snapshots through a
callback (the app turns them into messages). It sleeps on an Event between polls, so
an idle console costs a few stat calls per run per poll, and quits promptly.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from console.aggregate import AggregateView, RunAggregate
from console.runs import ALIVE, GONE, RunInfo, liveness, read_run
from prereg import rundir as rd
from prereg.core.safe_read import resolved
from prereg.rundir.discovery import discover_runs, run_sort_key
from prereg.rundir.files import FINAL_STATES
from prereg.rundir.fold import Plan
from prereg.rundir.tail import RowsTailer
from prereg.stats.variants import Crossed

WATCHED_FILES = (rd.MANIFEST, rd.STATUS, rd.PID, rd.STOP, rd.RESULTS_JSON, rd.HEARTBEAT)  # the heartbeat last (its own path)
RESCAN_EVERY_S = 2.0
LIVENESS_EVERY_S = 2.0  # how often a run that has not ended is checked in the process table
FIRST_BYTES = 1024 * 1024  # the first read of the selected run: its panels appear at once
SELECTED_BYTES = 16 * 1024 * 1024  # then per poll: a big file shows progress as it loads
BACKGROUND_BYTES = 2 * 1024 * 1024  # per poll, for runs other than the selected one
NOTIFY_EVERY_S = 2.0  # how often the Discord notifier link gets its turn (start it, read its status)
LOADING_UPDATE_S = 0.5  # while a big file loads, the UI gets at most this often a new snapshot
LOADING_PAUSE_S = 0.5  # the longest a paced watcher waits for the UI to draw, between chunks of a big file


@dataclass(frozen=True)
class RunSummary:
    """A line of the runs list."""

    run_id: str
    path: Path
    state: str
    arm: str
    done: int | None
    total: int | None
    successes: int
    ok_rows: int
    rows: int  # episodes counted by the one denominator (the last row of each planned seed)
    heartbeat_mtime: float | None
    live: bool
    loading: bool  # rows.jsonl not read to its end yet
    by_arm: tuple = ()  # a comparison run's (arm, successes, episodes), each arm apart
    started_at: str | None = None  # RunInfo.started_at: orders a run whose name has no time (run_sort_key)

    @property
    def sort_key(self) -> tuple[str, str]:
        return run_sort_key(self.path.name, self.started_at)


@dataclass(frozen=True)
class RunDetail:
    """Everything the panels of the selected run show."""

    info: RunInfo
    view: AggregateView
    loading: bool
    restart_reason: str = ""


@dataclass(frozen=True)
class WatchUpdate:
    runs: tuple[RunSummary, ...]
    detail: RunDetail | None


def _key(w) -> tuple[str, str]:
    """A watched run's place in launch order (run_sort_key, with its start for a hand-named directory)."""
    return run_sort_key(w.path.name, w.info.started_at)


def default_selection(watches) -> Path:
    """The run to show first: the newest live one, else the newest."""
    watches = list(watches)
    live = [w for w in watches if w.info.live or w.popen is not None]
    return max(live or watches, key=_key).path


class RunWatch:
    """One run directory, followed incrementally."""

    def __init__(self, path: Path):
        self.path = path
        self.tailer = RowsTailer(path / rd.ROWS)
        self.info: RunInfo = read_run(path)
        self.agg = RunAggregate(Plan.of(self.info.manifest), crossed=Crossed.of(self.info.manifest))  # per arm (and variant)
        self.popen: subprocess.Popen | None = None  # when this console launched it
        self.launched_arm: str | None = None  # the arm it was launched with (shown before manifest.json exists)
        self.loading = True
        self.restart_reason = ""
        self.info_version = 0
        self._watched = tuple(os.path.join(str(path), name) for name in WATCHED_FILES)  # str: a stat each, no pathlib
        self._mtimes = self._stat_all()
        self._liveness_at = time.monotonic()
        self._torn_added = False
        self._plan_due = False
        self.error: str | None = None  # why the last poll of this run failed, shown as a problem

    def refresh(self, max_bytes: int | None = None) -> bool:
        """Poll once; True when anything shown may have changed. Never raises: whatever this
        run directory holds, a failure to read it is shown on this run and the others go on."""
        try:
            changed = self._refresh(max_bytes)
        except Exception as exc:  # noqa: BLE001 - any bytes in a run directory: this run shows it, the others go on
            self.loading = False
            problem = f"cannot be read: {type(exc).__name__}: {str(exc)[:200]}"
            changed = problem != self.error
            self.error = problem
        if self.error and self.error not in self.info.problems:
            self.info.problems.append(self.error)
        if changed:
            self.info_version += 1
        return changed

    def _refresh(self, max_bytes: int | None) -> bool:
        changed = False
        mtimes = self._stat_all()
        now = time.monotonic()
        if mtimes != self._mtimes and mtimes[:-1] == self._mtimes[:-1] and mtimes[-1] is not None \
                and self.info.heartbeat_mtime is not None:
            # only the heartbeat was touched (every few seconds of a live run): its age is all that moved
            self._mtimes = mtimes
            self.info.heartbeat_mtime = mtimes[-1] / 1e9
            changed = True
        elif mtimes != self._mtimes:
            self._mtimes = mtimes
            self.info = read_run(self.path)
            self._liveness_at = now
            changed = self._plan_due = True
        if self.info.recorded_state not in FINAL_STATES and now - self._liveness_at >= LIVENESS_EVERY_S:
            self._liveness_at = now  # the process table, at most every LIVENESS_EVERY_S (psutil reads /proc)
            before = self.info.liveness
            self.info.liveness = liveness(self.info.pid)
            changed |= before != self.info.liveness
        self.info.launched_arm = self.launched_arm
        changed |= self._apply_popen()
        if self._plan_due:  # the manifest was read again: its plan may be known (or changed) now
            self._plan_due = False
            changed |= self._replan()
        changed |= self._tail(max_bytes)
        self.info.counted = None if self.loading else self.agg.rows
        if self.error is not None:  # it reads again: the problem is history
            self.error, changed = None, True
        return changed

    def summary(self) -> RunSummary:
        info = self.info
        by_arm = self.agg.arm_successes() if self.agg.plan.arms else ()
        return RunSummary(
            run_id=info.run_id, path=self.path, state=info.state, arm=info.arm,
            done=info.done, total=info.total, successes=self.agg.successes, ok_rows=self.agg.ok_rows,
            rows=self.agg.rows, heartbeat_mtime=info.heartbeat_mtime, live=info.live, loading=self.loading,
            by_arm=by_arm,
            started_at=info.started_at,
        )

    def close(self) -> None:
        self.tailer.close()

    def _stat_all(self) -> tuple:
        out = []
        for path in self._watched:
            try:
                out.append(os.stat(path).st_mtime_ns)
            except OSError:
                out.append(None)
        return tuple(out)

    def _apply_popen(self) -> bool:
        """Reap a process this console started; it also stands in for pid.json until that appears."""
        if self.popen is None:
            return False
        code = self.popen.poll()
        before = self.info.liveness
        if code is None and self.info.liveness != ALIVE:
            self.info.liveness = ALIVE
        elif code is not None:
            self.popen = None
            self.info = read_run(self.path)  # the driver's last words
            self.info.launched_arm = self.launched_arm
            self._plan_due = True
            self.info.liveness = GONE
        return before != self.info.liveness

    def _replan(self) -> bool:
        """The manifest's plan (its seeds, a comparison run's arms) is what the rows are counted by: when
        it first becomes readable (a run starting), the rows are read again under it."""
        plan, crossed = Plan.of(self.info.manifest), Crossed.of(self.info.manifest)
        if (plan, crossed) == (self.agg.plan, self.agg.crossed) or self.info.manifest is None:
            return False
        self.tailer.close()
        self.tailer = RowsTailer(self.path / rd.ROWS)
        version = self.agg.version + 1
        self.agg = RunAggregate(plan, crossed=crossed)
        self.agg.version = version  # the UI redraws what it shows of it
        self._torn_added = False
        return True

    def _tail(self, max_bytes: int | None) -> bool:
        self.tailer.max_bytes = max_bytes
        batch = self.tailer.poll()
        if batch.restarted:
            self.agg.reset()
            self.restart_reason = batch.restart_reason
            self._torn_added = False
        self.agg.add_many(batch.rows)
        for bad in batch.bad:
            self.agg.add_bad(bad)
        was_loading, self.loading = self.loading, batch.more
        changed = bool(batch) or was_loading != self.loading
        # A run that has ended writes no more: a partial last line is torn, count it.
        if not self._torn_added and not self.loading and self.info.state in FINAL_STATES + (rd.DIED,):
            torn = self.tailer.torn_tail()
            if torn is not None:
                self.agg.add_bad(torn)
                self._torn_added = changed = True
        return changed


class Watcher:
    """Owns the RunWatches and the polling thread. `on_update(WatchUpdate)` is called from the thread."""

    def __init__(
        self,
        runs_dir: str | Path,
        on_update: Callable[[WatchUpdate], None],
        *,
        on_error: Callable[[str], None] | None = None,
        interval: float = 0.5,
        notifier=None,
        paced: bool = False,
    ):
        self.runs_dir = Path(runs_dir).resolve()
        self.on_update = on_update
        self.on_error = on_error  # an unexpected failure of a poll, in words (the thread carries on)
        self.interval = interval
        self.notifier = notifier
        self.paced = paced  # a UI that calls ui_caught_up() after drawing each update
        self.watches: dict[Path, RunWatch] = {}
        self.selected: Path | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_scan = 0.0
        self._notify_thread: threading.Thread | None = None
        self._held = False  # an update was held back while loading
        self._sent_last_poll = False
        self._ui_drew = threading.Event()
        self._last_sent = float("-inf")
        self._sent_detail: tuple | None = ()  # no key is (): the first poll always sends, an empty folder included
        self._pending_popens: dict[Path, subprocess.Popen] = {}

    # -- called from the UI thread ------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fontaine-watcher", daemon=True)
        self._thread.start()
        if self.notifier is not None:  # its own thread: a slow first read of a big run never delays the panels
            self._notify_thread = threading.Thread(target=self._run_notifier, name="fontaine-notifier", daemon=True)
            self._notify_thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        self._ui_drew.set()
        for thread in (self._thread, self._notify_thread):
            if thread is not None:
                thread.join(timeout)
        for w in self.watches.values():
            w.close()

    def select(self, path: Path | None) -> None:
        self.selected = None if path is None else resolved(path)
        self.poke()

    def adopt(self, run_dir: Path, popen: subprocess.Popen, arm: str | None = None) -> None:
        """A run this console launched: reap it, and count it alive before its pid.json exists."""
        with self._lock:
            self._pending_popens[resolved(run_dir)] = (popen, arm)
        self.poke()

    def ui_caught_up(self) -> None:
        """The UI has drawn the last update: a big file's next chunk may be read."""
        self._ui_drew.set()

    def rescan(self) -> None:
        """Look at the runs folder again at the next poll (a run was archived or added)."""
        self._last_scan = 0.0
        self.poke()

    def poke(self) -> None:
        """Poll now rather than at the next tick (after a key press)."""
        self._wake.set()

    def live_runs(self) -> list[RunSummary]:
        with self._lock:
            return [w.summary() for w in self.watches.values() if w.info.live or w.popen is not None]

    def arm_runs(self, prereg_id: str) -> tuple[str | None, dict[str, Path]]:
        """The newest run of each arm of a pre-registration, and where that document is (the compare view)."""
        with self._lock:
            newest: dict[str, RunWatch] = {}
            for w in self.watches.values():
                prereg = w.info.prereg
                if prereg is None or prereg.id != prereg_id:
                    continue
                held = newest.get(w.info.arm)
                if held is None or _key(w) > _key(held):
                    newest[w.info.arm] = w
            path = next((w.info.prereg_path for w in sorted(newest.values(), key=_key, reverse=True)
                         if w.info.prereg_path), None)
            return path, {arm: w.path for arm, w in sorted(newest.items())}

    def alive_runs(self) -> list[RunSummary]:
        """The runs whose process is alive now, checked afresh (for the quit message): a run that
        ended since the last poll, or wrote its final state and is exiting, is not listed."""
        with self._lock:
            candidates = [(w, w.popen) for w in self.watches.values() if w.info.live or w.popen is not None]
        out = []
        for w, popen in candidates:
            if popen is not None and popen.poll() is not None:
                continue
            info = read_run(w.path)
            if info.recorded_state in FINAL_STATES:
                continue
            if popen is not None or info.liveness == ALIVE:
                out.append(w.summary())
        return out

    # -- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                more = self.poll_once()
            except Exception as exc:  # noqa: BLE001 - the watcher never dies silently: say it, carry on
                more = False
                if self.on_error is not None:
                    try:
                        self.on_error(f"the run watcher hit {type(exc).__name__}: {exc}; it carries on")
                    except Exception:  # noqa: BLE001
                        pass
            if more:  # keep reading; after an update, first let the UI draw it (it says so, or a cap passes)
                if self._sent_last_poll and self.paced:
                    self._ui_drew.wait(LOADING_PAUSE_S)
            else:
                self._wake.wait(self.interval)
            self._wake.clear()

    def poll_once(self, now: float | None = None) -> bool:
        """One poll of everything; returns True when a big file still has bytes to read."""
        now = time.monotonic() if now is None else now
        with self._lock:
            changed = False
            if now - self._last_scan >= RESCAN_EVERY_S or self._pending_popens or not self._last_scan:
                changed |= self._rescan()
                self._last_scan = now
            more = False
            if self.selected is None and self.watches:
                self.selected = default_selection(self.watches.values())
            sel = self.selected  # read once: the UI thread may change it during this poll
            selected = self.watches.get(sel) if sel else None
            if selected is not None:
                changed |= selected.refresh(FIRST_BYTES if selected.tailer.offset == 0 else SELECTED_BYTES)
                more |= selected.loading
            if not more:  # the others wait while the selected run is still loading
                for w in self.watches.values():
                    if w is not selected:
                        changed |= w.refresh(BACKGROUND_BYTES)
                        more |= w.loading
            key = self._detail_key(sel)
            due = changed or key != self._sent_detail or self._held
            if due and more and now - self._last_sent < LOADING_UPDATE_S:
                self._held, due = True, False  # loading a big file: show progress, not every chunk
            update = self._update(sel, key) if due else None
            if update is not None:
                self._held, self._last_sent = False, now
        self._sent_last_poll = update is not None
        if update is not None:
            self._ui_drew.clear()
            self.on_update(update)
        return more

    def _rescan(self) -> bool:
        found = {p: p for p in discover_runs(self.runs_dir)}
        for p in list(self._pending_popens):
            found.setdefault(p, p)
        changed = False
        for key, p in found.items():
            if key not in self.watches:
                self.watches[key] = RunWatch(p)
                changed = True
        for key in [k for k in self.watches if k not in found]:
            self.watches.pop(key).close()
            changed = True
        for p, (popen, arm) in list(self._pending_popens.items()):
            w = self.watches.get(p)
            if w is not None:
                w.popen, w.launched_arm = popen, arm
                w.info.launched_arm = arm
                self._pending_popens.pop(p)
        return changed

    def _detail_key(self, sel: Path | None) -> tuple | None:
        w = self.watches.get(sel) if sel else None
        return None if w is None else (sel, w.agg.version, w.info_version, w.loading)

    def _update(self, sel: Path | None, key: tuple | None) -> WatchUpdate:
        runs = tuple(w.summary() for w in self.watches.values())
        w = self.watches.get(sel) if sel else None
        detail = None
        if w is not None:
            detail = RunDetail(info=replace(w.info), view=w.agg.snapshot(), loading=w.loading, restart_reason=w.restart_reason)
        self._sent_detail = key
        return WatchUpdate(runs=runs, detail=detail)

    def _run_notifier(self) -> None:
        while not self._stop.wait(NOTIFY_EVERY_S):
            self.notify_once()

    def notify_once(self) -> None:
        """Give the Discord notifier link its turn: it starts the folder's detached notifier when
        a run is live and none is running, and refreshes the status the UI shows. The console
        never posts itself. Off the UI thread, and off the polling thread."""
        try:
            self.notifier.tick(bool(self.live_runs()))
        except Exception:  # the link reports its own failures in its state
            pass
