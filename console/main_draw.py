"""The main screen drawn from the app's state: the runs list, the selected run's header and panels,
the Discord line. Only what changed is drawn again (each widget keeps the inputs it was last drawn
from), so an idle console re-renders next to nothing. The app (console/app.py) owns the state and
says when to draw; `MainDraw` reads it and writes the widgets.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

from console.notify.delivery import FAILING, NOT_RUNNING, OFF, OK, RETRYING, status_line
from console.notify.link import ConsoleNotifier
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
from console.render_variants import stories_shown, variants_table
from console.runs import shown_path
from console.widgets.main_screen import COMPACT_HEADER_LINES, MainScreen
from console.widgets.panels import Panel, RecentRows, SeedGrid, TripwireBanner
from console.widgets.runs_table import RunsTable
from prereg.core.safe_read import resolved

_NEVER = object()


class MainDraw:
    """Draws the app's state on its main screen (the app composes one: `app.painter`)."""

    def __init__(self, app):
        self.app = app
        self.drawn: dict[str, object] = {}  # widget id -> the inputs it was last drawn from

    def empty_text(self) -> Text:
        """The header when no run is shown: what the runs folder holds, and what to press."""
        where = shown_path(self.app.runs_dir)
        if not self.app.scanned:
            text = f"Reading {where}/…"
        elif not self.app.runs_dir.exists():
            text = f"{where}/ does not exist yet: the first launch creates it. Press l to launch, d for the demo."
        elif not self.app.runs:
            text = f"No runs in {where}/ yet. Press l to launch, d for the demo."
        else:
            text = "No run selected. Press l to launch, d for the demo."
        return Text(text, style="grey62")

    def show_no_run(self, screen: "MainScreen") -> None:
        """No run to show (none yet, or the shown one went away): the header says so, the panels are blank."""
        header = self.empty_text()
        screen.full_header = None
        self.update_if(screen.query_one("#run-header", Static), header.markup, lambda w: w.update(header))
        screen.show_variants(False)
        for selector in ("#counts", "#variants", "#pace", "#hist", "#grid", "#recent", "#banner"):
            widget = screen.query_one(selector)
            if self.drawn.pop(widget.id, _NEVER) is _NEVER:
                continue
            if isinstance(widget, TripwireBanner):
                widget.show_banner(None, "")
            elif isinstance(widget, SeedGrid):
                widget.clear()
            elif isinstance(widget, RecentRows):
                widget.clear()
            else:
                widget.update("")

    def draw_on(self, screen: "MainScreen") -> None:
        now = self.app.clock()
        table = screen.query_one(RunsTable)
        order = [row.key for row in table.ordered_rows]
        rows_before = table.row_count
        shown = filter_runs(self.app.runs, self.app.run_filter)
        set_border(table, "border_title", f"runs · filter “{self.app.run_filter}”: {len(shown)} of {len(self.app.runs)} "
                   "(/ to change)" if self.app.run_filter else "runs")
        table.sync(shown, now, width=table.size.width or screen.size.width - 2)
        if self.app.run_filter and shown and self.app.selected is not None and \
                resolved(self.app.selected) not in {resolved(r.path) for r in shown}:
            self.app._select(shown[0].path)  # the filter hid the selected run: show the first that matches
        if table.row_count != rows_before:
            screen.layout_for(screen.size.width, screen.size.height)
        # Follow the selection only when the rows moved under it. Otherwise the cursor is the
        # user's: a move whose highlight event is still queued must not be undone by a redraw.
        moved = [row.key for row in table.ordered_rows] != order
        if moved and self.app.selected is not None and table.row_count:
            try:
                index = table.get_row_index(str(self.app.selected))
                if table.cursor_row != index:
                    table.move_cursor(row=index)
            except Exception:
                pass
        self.draw_detail(screen, now)

    def draw_detail(self, screen: Screen, now: float) -> None:
        """Redraw only the panels whose inputs changed: an idle console re-renders next to nothing."""
        d = self.app.detail
        if d is None:
            self.show_no_run(screen)
            return
        version = (d.info.path, d.view.version)
        age = d.info.heartbeat_age(now)
        age_s = age_step(age)  # what the panel shows changes every AGE_STEP_S, not every second
        readings = gate_readings(d.info, d.view, now)
        text, level = banner_text(readings, d.info)
        self.update_if(screen.query_one(TripwireBanner), (text.plain if text else None, level),
                        lambda w: w.show_banner(text, level))
        header = header_text(d.info, d.loading, d.restart_reason)
        screen.full_header = header  # what the wide layout would show (MainScreen.wide_fits measures it)
        if screen.compact:  # its first lines, and "…" where the rest is cut (redrawn on a resize: layout_for)
            header = clip_lines(header, screen.size.width - 2, COMPACT_HEADER_LINES)  # less #run-header's padding
        self.update_if(screen.query_one("#run-header", Static), header.markup, lambda w: w.update(header))
        self.update_if(screen.query_one("#counts", Panel), version, lambda w: w.update(counts_table(d.view)))
        stories, reported = stories_shown(d.info.story, d.view.variants)  # a crossed design's (the report's once done)
        self.update_if(screen.query_one("#variants", Panel), (stories, reported),
                       lambda w: w.update_for_width(lambda width: variants_table(stories, reported, width) or ""))
        screen.show_variants(bool(stories))
        pace_key = (d.info.path, d.view.version, d.view.median_wall_s, d.info.status, d.info.live, d.info.total, age_s,
                    tuple((r.state, r.limit) for r in readings),  # what the table shows, not the snapshot's identity
                    age_step(run_elapsed(d.info, now)) if d.info.live else None)  # a live run's elapsed moves with the clock
        self.update_if(screen.query_one("#pace", Panel), pace_key,
                        lambda w: w.update(pace_table(d.info, d.view, readings, now)))
        seeds = list(d.info.seeds) if d.info.seeds is not None else None
        grid = screen.query_one("#grid", SeedGrid)
        n_seeds = len(seeds) if seeds is not None else None
        # the grid and the histogram draw themselves again at a new width (SeedGrid.on_resize, update_for_width)
        self.update_if(grid, (version, n_seeds), lambda w: w.show(d.view, seeds))
        view = d.view
        self.update_if(screen.query_one("#hist", Panel), version,
                       lambda w: w.update_for_width(lambda width: histogram_text(view, width=width - 2)))
        self.update_if(screen.query_one(RecentRows), version, lambda w: w.show_rows(d.view))
        screen.refit()  # one panel at a time, or all of them, as what they hold now fits

    def update_if(self, widget, key, draw: Callable) -> None:
        if self.drawn.get(widget.id, _NEVER) != key:
            self.drawn[widget.id] = key
            draw(widget)

    def show_discord(self) -> None:
        for _rid, outcome in (self.app.notifier.test_outcomes() if self.app.notifier is not None else []):
            if outcome.get("state") == "sent":
                self.app.notify("Discord test post sent")
            else:
                self.app.notify(f"Discord test post dropped: {outcome.get('reason')}", severity="warning", timeout=15)
        screen = self.app._main_screen()
        if screen is not None and screen.query("#discord"):
            line = discord_line(self.app.notifier)
            self.update_if(screen.query_one("#discord", Static), line.markup, lambda w: w.update(line))
            # small terminals: the Discord line rides on the runs list's border instead of its own column
            set_border(screen.query_one(RunsTable), "border_subtitle", line.markup if screen.compact else None)


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

