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

from rich.text import Text
from textual import on, work
from textual.app import App, SystemCommand
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from console import preregs, runs
from console.notify.delivery import FAILING, NOT_RUNNING, OFF, OK, RETRYING, status_line
from console.notify.link import ConsoleNotifier, NotifierLink
from console.render import (
    age_step,
    banner_text,
    clip_lines,
    counts_table,
    gate_readings,
    header_text,
    histogram_text,
    pace_table,
    run_elapsed,
)
from console.run_actions import RunActions
from console.runs import shown_path
from console.watcher import RunDetail, RunSummary, Watcher, WatchUpdate
from console.widgets.compare_screen import CompareScreen
from console.widgets.dialogs import HelpScreen, LaunchScreen
from console.widgets.escape import SHOW_CONTROLS
from console.widgets.main_screen import APP_CSS, COMPACT_HEADER_LINES, MainScreen
from console.widgets.panels import Panel, RecentRows, SeedGrid, TripwireBanner
from console.widgets.runs_table import RunsTable
from console.widgets.seed_screen import SeedScreen  # imports textual-image: it probes the terminal before the app starts
from prereg import rundir as rd
from prereg.core.argcheck import POLL_MAX_S, OneLineParser, bounded_float, parse_once, path_type
from prereg.core.errors import UsageError, run_cli
from prereg.core.safe_read import resolved

FROM_ENV = "from-env"
_NEVER = object()


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


class FontaineApp(RunActions, App):
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
        self._drawn: dict[str, object] = {}  # widget id -> the inputs it was last drawn from
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
            self._show_no_run(screen)

    def empty_text(self) -> Text:
        """The header when no run is shown: what the runs folder holds, and what to press."""
        where = shown_path(self.runs_dir)
        if not self.scanned:
            text = f"Reading {where}/…"
        elif not self.runs_dir.exists():
            text = f"{where}/ does not exist yet: the first launch creates it. Press l to launch, d for the demo."
        elif not self.runs:
            text = f"No runs in {where}/ yet. Press l to launch, d for the demo."
        else:
            text = "No run selected. Press l to launch, d for the demo."
        return Text(text, style="grey62")

    def _show_no_run(self, screen: "MainScreen") -> None:
        """No run to show (none yet, or the shown one went away): the header says so, the panels are blank."""
        header = self.empty_text()
        self._update_if(screen.query_one("#run-header", Static), header.markup, lambda w: w.update(header))
        for selector in ("#counts", "#pace", "#hist", "#grid", "#recent", "#banner"):
            widget = screen.query_one(selector)
            if self._drawn.pop(widget.id, _NEVER) is _NEVER:
                continue
            if isinstance(widget, TripwireBanner):
                widget.show_banner(None, "")
            elif isinstance(widget, SeedGrid):
                widget.clear()
            elif isinstance(widget, RecentRows):
                widget.clear()
            else:
                widget.update("")

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
        self._show_discord()

    def _main_screen(self) -> MainScreen | None:
        screen = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        return screen if screen is not None and screen.ready else None

    def _draw(self) -> None:
        screen = self._main_screen()
        if screen is None:
            return
        try:
            self._draw_on(screen)
        except NoMatches:  # the screen is being torn down (quitting)
            pass

    def _draw_on(self, screen: "MainScreen") -> None:
        now = self.clock()
        table = screen.query_one(RunsTable)
        order = [row.key for row in table.ordered_rows]
        rows_before = table.row_count
        shown = filter_runs(self.runs, self.run_filter)
        set_border(table, "border_title", f"runs · filter “{self.run_filter}”: {len(shown)} of {len(self.runs)} "
                   "(/ to change)" if self.run_filter else "runs")
        table.sync(shown, now, width=table.size.width or screen.size.width - 2)
        if self.run_filter and shown and self.selected is not None and \
                resolved(self.selected) not in {resolved(r.path) for r in shown}:
            self._select(shown[0].path)  # the filter hid the selected run: show the first that matches
        if table.row_count != rows_before:
            screen.layout_for(screen.size.width, screen.size.height)
        # Follow the selection only when the rows moved under it. Otherwise the cursor is the
        # user's: a move whose highlight event is still queued must not be undone by a redraw.
        moved = [row.key for row in table.ordered_rows] != order
        if moved and self.selected is not None and table.row_count:
            try:
                index = table.get_row_index(str(self.selected))
                if table.cursor_row != index:
                    table.move_cursor(row=index)
            except Exception:
                pass
        self._draw_detail(screen, now)

    def _draw_detail(self, screen: Screen, now: float) -> None:
        """Redraw only the panels whose inputs changed: an idle console re-renders next to nothing."""
        d = self.detail
        if d is None:
            self._show_no_run(screen)
            return
        version = (d.info.path, d.view.version)
        age = d.info.heartbeat_age(now)
        age_s = age_step(age)  # what the panel shows changes every AGE_STEP_S, not every second
        readings = gate_readings(d.info, d.view, now)
        text, level = banner_text(readings, d.info)
        self._update_if(screen.query_one(TripwireBanner), (text.plain if text else None, level),
                        lambda w: w.show_banner(text, level))
        header = header_text(d.info, d.loading, d.restart_reason)
        if screen.compact:  # its first lines, and "…" where the rest is cut (redrawn on a resize: layout_for)
            header = clip_lines(header, screen.size.width - 2, COMPACT_HEADER_LINES)  # less #run-header's padding
        self._update_if(screen.query_one("#run-header", Static), header.markup, lambda w: w.update(header))
        self._update_if(screen.query_one("#counts", Panel), version, lambda w: w.update(counts_table(d.view)))
        pace_key = (d.info.path, d.view.version, d.view.median_wall_s, d.info.status, d.info.live, d.info.total, age_s,
                    tuple((r.state, r.limit) for r in readings),  # what the table shows, not the snapshot's identity
                    age_step(run_elapsed(d.info, now)) if d.info.live else None)  # a live run's elapsed moves with the clock
        self._update_if(screen.query_one("#pace", Panel), pace_key,
                        lambda w: w.update(pace_table(d.info, d.view, readings, now)))
        seeds = list(d.info.seeds) if d.info.seeds is not None else None
        grid = screen.query_one("#grid", SeedGrid)
        n_seeds = len(seeds) if seeds is not None else None
        self._update_if(grid, (version, grid.size.width, n_seeds), lambda w: w.show(d.view, seeds))
        hist = screen.query_one("#hist", Panel)
        self._update_if(hist, (version, hist.size.width), lambda w: w.update(
            histogram_text(d.view, width=(w.size.width or 52) - 2)))
        self._update_if(screen.query_one(RecentRows), version, lambda w: w.show_rows(d.view))

    def _update_if(self, widget, key, draw: Callable) -> None:
        if self._drawn.get(widget.id, _NEVER) != key:
            self._drawn[widget.id] = key
            draw(widget)

    def _refresh_ages(self) -> None:
        """Heartbeat ages move with the clock even when no file changes. A snapshot waiting for its
        turn (min_draw_s) is not drawn early here: that would draw a live run twice a second."""
        if self.runs and self._draw_timer is None:
            self._draw()
        self._show_discord()

    def _show_discord(self) -> None:
        for _rid, outcome in (self.notifier.test_outcomes() if self.notifier is not None else []):
            if outcome.get("state") == "sent":
                self.notify("Discord test post sent")
            else:
                self.notify(f"Discord test post dropped: {outcome.get('reason')}", severity="warning", timeout=15)
        screen = self._main_screen()
        if screen is not None and screen.query("#discord"):
            line = discord_line(self.notifier)
            self._update_if(screen.query_one("#discord", Static), line.markup, lambda w: w.update(line))
            # small terminals: the Discord line rides on the runs list's border instead of its own column
            set_border(screen.query_one(RunsTable), "border_subtitle", line.markup if screen.compact else None)

    # -- actions ---------------------------------------------------------------------

    @on(SeedGrid.Open)
    def _open_seed(self, message: SeedGrid.Open) -> None:
        if self.detail is None:
            return
        self.push_screen(SeedScreen(self.detail.info.path, self.detail.info.run_id, message.seed, arm=message.arm),
                         self._back_from_seed)

    def _back_from_seed(self, _result=None) -> None:
        """Back from a seed's view, up/down move the runs list again (the grid keeps its cursor for
        the next `g`): keys that silently moved a hidden cursor made `r` report a run not meant."""
        screen = self._main_screen()
        if screen is not None:
            screen.query_one(RunsTable).focus()

    def action_launch(self) -> None:
        entries = preregs.list_preregs(self.prereg_dirs)

        def launched(choice: tuple | None) -> None:
            if choice:
                path, prereg_id, arm = choice
                self.remember_launch(Path(path), arm)
                self.launch(Path(path), prereg_id, arm)

        self.push_screen(LaunchScreen(entries, last=self.last_launch()), launched)

    @property
    def _last_launch_file(self) -> Path:
        return self.runs_dir / ".console" / "last-launch.json"

    def last_launch(self) -> dict:
        """The launch dialog's previous choice (kept beside the runs, so every console on this folder shares it)."""
        return rd.read_json(self._last_launch_file) or {}

    def remember_launch(self, path: Path, arm: str) -> None:
        try:
            self._last_launch_file.parent.mkdir(parents=True, exist_ok=True)
            rd.write_json_atomic(self._last_launch_file, {"prereg": str(path), "arm": arm})
        except OSError:
            pass  # a read-only runs folder: the dialog simply starts blank next time

    def action_demo(self) -> None:
        path = preregs.DEMO_PREREG
        problem = preregs.validate_launch(path, preregs.DEMO_ARM)
        if problem:
            self.notify(f"demo cannot launch: {problem}", severity="error", timeout=10)
            return
        self.launch(path, preregs.read_entry(path).prereg_id, preregs.DEMO_ARM)

    def launch(self, prereg_file: Path, prereg_id: str, arm: str) -> Path | None:
        """Start a run of `arm` ("A,B": a comparison run of both arms, labelled "A-vs-B") detached."""
        label = preregs.run_label(arm)
        run_id = rd.new_run_id(prereg_id, label)
        run_dir = self.runs_dir / run_id
        argv = self.launch_argv(prereg_file, arm, run_dir)
        try:
            popen = runs.launch_detached(argv, run_dir)
        except OSError as exc:
            self.notify(f"could not start {' '.join(argv)}: {exc}", severity="error", timeout=15)
            return None
        self.launched.append(run_dir)
        self.watcher.adopt(run_dir, popen, label)
        self._select(run_dir)
        self.notify(f"launched {run_id} (pid {popen.pid}); output in {shown_path(run_dir / rd.LOG)}")
        return run_dir

    def action_discord_test(self) -> None:
        if self.notifier is None:
            self.notify(discord_line(None).plain, severity="warning")
            return
        self.discord_test_worker()

    @work(thread=True, group="discord")
    def discord_test_worker(self) -> None:
        try:
            queued = self.notifier.send_test()
            if queued is False:
                hint = self.notifier.setup_hint or f"{discord_line(self.notifier).plain}: no post sent"
                self.call_from_thread(self.notify, hint, severity="warning", timeout=20)
            else:
                self.call_from_thread(self.notify, "Discord test post asked of the notifier")
        except Exception as exc:
            self.call_from_thread(self.notify, f"Discord test post failed: {exc}", severity="error")
        self.call_from_thread(self._show_discord)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_compare(self) -> None:
        """`c`: the arms of the selected run's pre-registration side by side, live."""
        info = self.selected_info()
        if info is None:
            return
        prereg = info.prereg
        if prereg is None or not prereg.id:
            self.notify(f"{info.run_id} has no pre-registration: no arms to compare", severity="warning")
            return
        self.push_screen(CompareScreen(prereg.id, focus=info.path))  # a comparison run: both its arms

    def action_real_session(self) -> None:
        """`T`: the real session of the selected run's arm (console/widgets/real_session.py)."""
        from console.real_trials import NoRealRead, RealSession
        from console.widgets.real_session import RealSessionScreen

        info = self.selected_info()
        if info is None:
            return
        try:
            session = RealSession.open(info.prereg_path, info.arm, info.path)
        except NoRealRead as exc:
            self.notify(str(exc), severity="warning", timeout=10)
            return
        self.push_screen(RealSessionScreen(session, self.runs_dir))

    def action_filter(self) -> None:
        screen = self._main_screen()
        if screen is None:
            return
        box = screen.query_one("#filter", Input)
        box.disabled = False
        box.add_class("shown")
        box.value = self.run_filter
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.run_filter = event.value.strip()
        self._draw()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._close_filter()

    def _close_filter(self, clear: bool = False) -> None:
        screen = self._main_screen()
        if screen is None:
            return
        if clear:
            self.run_filter = ""
        box = screen.query_one("#filter", Input)
        box.remove_class("shown")
        box.disabled = True
        screen.query_one(RunsTable).focus()
        self._draw()

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


def set_border(widget, which: str, value: str | None) -> None:
    """Set a border title only when it changes: Textual repaints the widget on every assignment,
    and an idle console must not repaint the runs list every second."""
    key = f"_shown_{which}"
    if getattr(widget, key, _NEVER) != value:
        setattr(widget, key, value)
        setattr(widget, which, value)


def filter_runs(all_runs, text: str) -> tuple:
    """The runs whose id, arm or state contain every word of `text` (case-insensitive)."""
    words = text.lower().split()
    if not words:
        return tuple(all_runs)
    return tuple(r for r in all_runs if all(w in f"{r.run_id} {r.arm} {r.state}".lower() for w in words))


def discord_line(notifier: ConsoleNotifier | None) -> Text:
    """One line on the Discord notifier's state (off / ok / retrying / failing + last error)."""
    if notifier is None:
        return Text(status_line(OFF, error="no notifier"), style="grey50")
    state = notifier.state
    name = state.name.lower()
    style = {OK: "green", RETRYING: "yellow", FAILING: "bold red", NOT_RUNNING: "yellow"}.get(name, "grey50")
    t = Text(state.line(), style=style)
    if name == OFF and notifier.setup_hint:
        t.append(" (t: how to turn on)", style="grey50")
    return t


def _make_notifier(runs_dir: Path) -> ConsoleNotifier:
    """The console's link to the folder's detached notifier (console/notify/service.py), which it
    starts when a webhook is configured; the console itself never posts."""
    return NotifierLink(runs_dir)


if __name__ == "__main__":
    sys.exit(main())
