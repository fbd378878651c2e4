"""`fontaine-console`: the Textual app that babysits runs through their run directories.

The app owns a `Watcher` (a plain polling thread) that posts snapshots as messages; the
widgets only draw them. Run control goes through console.runs (launch detached, STOP) and
console.kill (escalate) and never through a pipe to the run, so quitting the console leaves runs
running and a new console reattaches from pid.json.
"""

from __future__ import annotations

import gc
import shlex
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input

from console import preregs, runs
from console.launch_actions import LaunchActions
from console.main_draw import MainDraw
from console.notify.link import ConsoleNotifier, NotifierLink
from console.run_actions import RunActions
from console.runs import shown_path
from console.view_actions import ViewActions
from console.watcher import RunDetail, RunSummary, Watcher, WatchUpdate
from console.widgets.escape import SHOW_CONTROLS
from console.widgets.main_screen import APP_CSS, MainScreen
from console.widgets.panels import SeedGrid
from console.widgets.runs_table import RunsTable
from console.widgets.seed_screen import SeedScreen  # noqa: F401 - imports textual-image: it probes the terminal before the app starts
from prereg.core.argcheck import POLL_MAX_S, OneLineParser, bounded_float, parse_once, path_type
from prereg.core.errors import UsageError, run_cli
from prereg.core.safe_read import resolved

FROM_ENV = "from-env"


def main(argv: list[str] | None = None) -> int:
    """`fontaine-console`; an error is one line and its exit code (prereg.core.errors.run_cli)."""
    return run_cli("fontaine-console", lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    parser = OneLineParser(prog="fontaine-console", description="Launch, watch and stop pre-registered runs.",
                           allow_abbrev=False)
    parser.add_argument("--runs-dir", type=path_type, default=Path("runs"), help="folder of run directories (default: ./runs)")
    parser.add_argument("--prereg-dir", type=path_type, action="append", default=None,
                        help="folder of pre-registrations (*.md); repeatable (default: ./preregs and the shipped examples)")
    parser.add_argument("--poll", type=bounded_float(0, POLL_MAX_S), default=0.5,
                        help=f"seconds between polls of the run directories (at most {POLL_MAX_S:g})")
    args = parse_once(parser, list(sys.argv[1:] if argv is None else argv))  # ASCII numbers, no flag given twice
    runs_dir = Path(args.runs_dir)
    if runs_dir.exists() and not runs_dir.is_dir():
        raise UsageError(f"--runs-dir {runs_dir} is a file, not a folder of run directories")
    app = FontaineApp(runs_dir=Path(args.runs_dir), prereg_dirs=preregs.prereg_dirs(args.prereg_dir), poll_s=args.poll)
    app.run()
    # The terminal is back: nothing is left to collect. Without this the interpreter's last
    # garbage collection walked every object a played video left behind (Textual's caches of its
    # screen), and the shell prompt came back 2-20 s after `q` instead of under a second.
    gc.freeze()
    return app.return_code or 0


class WatchUpdated(Message):
    """A snapshot from the watcher thread. Only the newest matters, so queued ones are merged."""

    def __init__(self, update: WatchUpdate):
        super().__init__()
        self.update = update

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, WatchUpdated)


class WatcherTrouble(Message):
    """The watcher thread hit something unexpected (it carries on); shown as an error toast."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text


class FontaineApp(RunActions, LaunchActions, ViewActions, App):
    """The app: the watcher's snapshots in, the selection, the drawing's timing, quitting. What keys do
    lives apart: run_actions (s K r R a), launch_actions (l d t), view_actions (c / ? a seed's view);
    main_draw draws the state on the main screen."""

    TITLE = "fontaine-console"
    CSS = APP_CSS

    def __init__(
        self,
        runs_dir: Path = Path("runs"),
        prereg_dirs: list[Path] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        poll_s: float = 0.5,
        notifier=FROM_ENV,
        age_refresh_s: float = 1.0,
        launch_argv: Callable[[Path, str, Path], list[str]] = runs.prereg_launch_argv,
        resume_argv: Callable[[Path], list[str]] = runs.resume_argv,
        min_draw_s: float = 1.0,
    ):
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.prereg_dirs = prereg_dirs if prereg_dirs is not None else preregs.prereg_dirs(None)
        self.clock = clock
        self.poll_s = poll_s
        self.age_refresh_s = age_refresh_s
        self.launch_argv = launch_argv  # tests substitute a fake driver here
        self.resume_argv = resume_argv
        self.run_filter = ""
        self.notifier = _make_notifier(self.runs_dir) if notifier == FROM_ENV else notifier
        self.watcher = Watcher(self.runs_dir, self._from_watcher, on_error=self._watcher_error, interval=poll_s,
                               notifier=self.notifier, paced=True)
        self.runs: tuple[RunSummary, ...] = ()
        self.detail: RunDetail | None = None
        self.selected: Path | None = None
        self.launched: list[Path] = []
        self.quit_notice = ""
        self.scanned = False  # the watcher has looked at the runs folder once
        self.painter = MainDraw(self)  # draws this state on the main screen (console/main_draw.py)
        self.min_draw_s = min_draw_s
        self._last_draw = float("-inf")
        self._draw_timer = None

    # -- lifecycle --------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        return MainScreen()

    def get_line_filters(self):
        """Textual's filters, then `ShowControls`: a control character from a file is drawn escaped."""
        return [*super().get_line_filters(), SHOW_CONTROLS]

    def on_mount(self) -> None:
        self.watcher.start()
        self.set_interval(self.age_refresh_s, self._refresh_ages)

    def on_unmount(self) -> None:
        self.watcher.stop()
        if self.notifier is not None:
            try:
                self.notifier.close()  # the detached notifier keeps posting after the console is gone
            except Exception:
                pass

    def _from_watcher(self, update: WatchUpdate) -> None:
        self.post_message(WatchUpdated(update))

    def _watcher_error(self, text: str) -> None:
        self.post_message(WatcherTrouble(text))  # thread-safe, never waits for the UI

    @on(WatcherTrouble)
    def _watcher_trouble(self, message: WatcherTrouble) -> None:
        self.notify(message.text, severity="error", timeout=15)

    @on(WatchUpdated)
    def _watch_updated(self, message: WatchUpdated) -> None:
        update = message.update
        self.runs = update.runs
        self.scanned = True
        if self.selected is not None and resolved(self.selected) not in {resolved(r.path) for r in update.runs}:
            self._selected_gone()  # deleted or moved away: its last snapshot must not stay on screen
        if self.selected is None and update.detail is not None:  # the watcher chose the first run to show
            self.selected = update.detail.info.path
        before = self.detail
        if update.detail is not None and resolved(update.detail.info.path) == resolved(self.selected or Path()):
            self.detail = update.detail
        # A run that keeps changing is redrawn at most every min_draw_s; a newly selected one at once,
        # and so is the snapshot that ends a big file's first read (its complete panels are not held back).
        finished_loading = before is not None and before.loading and self.detail is not None and not self.detail.loading
        wait = self._last_draw + self.min_draw_s - time.monotonic()
        if before is not None and not finished_loading and wait > 0:
            if self._draw_timer is None:
                self._draw_timer = self.set_timer(wait, self._deferred_draw)
            # the snapshot is taken (drawn at the timer): the watcher need not wait for that draw
            self.call_after_refresh(self.watcher.ui_caught_up)
        else:
            self._draw_now()

    def _selected_gone(self) -> None:
        gone = self.selected
        self.selected = None
        self.detail = None
        self.watcher.select(None)  # the watcher picks the next run to show, as at start
        self.notify(f"{gone.name} is no longer in {shown_path(self.runs_dir)}/ (deleted or moved)", severity="warning",
                    timeout=10)
        screen = self._main_screen()
        if screen is not None:
            self.painter.show_no_run(screen)

    def _deferred_draw(self) -> None:
        self._draw_timer = None
        self._draw_now()

    def _draw_now(self) -> None:
        self._last_draw = time.monotonic()
        self._draw()
        self.call_after_refresh(self.watcher.ui_caught_up)

    @on(DataTable.RowHighlighted, "#runs")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None or event.cursor_row != event.data_table.cursor_row:
            return  # no row, or a stale event from a cursor move that has since been superseded
        try:  # stale too when the rows were re-sorted under the cursor since the event was sent
            if event.data_table.coordinate_to_cell_key(Coordinate(event.cursor_row, 0)).row_key != event.row_key:
                return
        except Exception:
            return
        path = Path(event.row_key.value)
        if self.selected is None or resolved(path) != resolved(self.selected):
            self._select(path)

    def _select(self, path: Path) -> None:
        self.selected = path
        self.detail = None
        self.watcher.select(path)
        screen = self._main_screen()
        if screen is not None:
            table = screen.query_one(RunsTable)
            try:
                index = table.get_row_index(str(path))
            except Exception:
                return
            if table.cursor_row != index:
                table.move_cursor(row=index)

    # -- drawing ---------------------------------------------------------------------

    def redraw(self) -> None:
        self._draw()
        self.painter.show_discord()

    def _main_screen(self) -> MainScreen | None:
        screen = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        return screen if screen is not None and screen.ready else None

    def _draw(self) -> None:
        screen = self._main_screen()
        if screen is None:
            return
        try:
            self.painter.draw_on(screen)
        except NoMatches:  # the screen is being torn down (quitting)
            pass

    def _refresh_ages(self) -> None:
        """Heartbeat ages move with the clock even when no file changes. A snapshot waiting for its
        turn (min_draw_s) is not drawn early here: that would draw a live run twice a second."""
        if self.runs and self._draw_timer is None:
            self._draw()
        self.painter.show_discord()


    # -- what the main screen's messages ask (the actions themselves: run_actions, launch_actions, view_actions) --

    @on(SeedGrid.Open)
    def _open_seed(self, message: SeedGrid.Open) -> None:
        self.open_seed(message.seed, message.arm)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.run_filter = event.value.strip()
        self._draw()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.close_filter()

    async def action_quit(self) -> None:
        live = self.watcher.alive_runs()
        if live:
            names = ", ".join(r.run_id for r in live)
            message = (f"{len(live)} run(s) keep running, detached (their process is alive): {names}\n"
                       f"Reopen {self.reopen_command()} to reattach.")
        else:
            message = "No run is live."
        self.quit_notice = message
        self.exit(message=message)

    def reopen_command(self) -> str:
        """The command that opens this console again: the same runs and pre-registration folders."""
        argv = ["fontaine-console", "--runs-dir", str(self.runs_dir), *preregs.reopen_flags(self.prereg_dirs)]
        return " ".join(shlex.quote(a) for a in argv)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Launch a run", "Pick a frozen pre-registration and an arm (l)", self.action_launch)
        yield SystemCommand("Launch the demo", f"{preregs.DEMO_PREREG.name}, arm {preregs.DEMO_ARM} (d)", self.action_demo)
        yield SystemCommand("Stop the selected run", "At an episode boundary, after a confirmation (s)", self.action_stop_run)
        yield SystemCommand("Escalate: kill the selected run", "SIGTERM then SIGKILL, two confirmations (K)", self.action_escalate)
        yield SystemCommand("Results of the selected run", "Run the pre-registration report (r)", self.action_results)
        yield SystemCommand("Compare the arms", "The selected run's pre-registration, arm by arm, live (c)",
                            self.action_compare)
        yield SystemCommand("Resume the selected run", "fontaine-eval --resume, after a confirmation (R)", self.action_resume)
        yield SystemCommand("Archive the selected run", "Move an ended run to RUNS/.archive/ (a)", self.action_archive)
        yield SystemCommand("Filter the runs", "Words in the id, arm or state (/)", self.action_filter)
        yield SystemCommand("Open a seed", "The per-seed grid: arrows pick, enter opens its row, trail and video (g)",
                            lambda: self.screen.action_focus_grid() if isinstance(self.screen, MainScreen) else None)
        yield SystemCommand("Discord test post", "Send a test message to the webhook (t)", self.action_discord_test)
        yield SystemCommand("Keys and states", "The help screen (?)", self.action_help)



def _make_notifier(runs_dir: Path) -> ConsoleNotifier:
    """The console's link to the folder's detached notifier (console/notify/service.py), which it
    starts when a webhook is configured; the console itself never posts."""
    return NotifierLink(runs_dir)


if __name__ == "__main__":
    sys.exit(main())
