"""The console's main screen: the runs list on top, the selected run's panels under it, and the
layout that fits them to the terminal (one panel at a time in a small one). The app (console/app.py)
draws into it; it reads no file and no clock.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from console.grid import grid_legend
from console.widgets.panels import Panel, RecentRows, SeedGrid, TripwireBanner
from console.widgets.runs_table import RunsTable
from console.widgets.text import TextBlock

# In a small terminal the run's header takes at most this many lines, the last ending in "…" when
# there is more (the app clips it so: console.render.clip_lines).
COMPACT_HEADER_LINES = 3

# The app's stylesheet (FontaineApp.CSS): the main screen's layout, its compact pages, the dialogs.
APP_CSS = f"MainScreen.compact #run-header {{ max-height: {COMPACT_HEADER_LINES}; }}" + """
    #banner { display: none; height: auto; padding: 0 1; }
    #banner.tripped { background: $error; color: $text; text-style: bold; }
    #banner.warn { background: $warning 40%; }
    #runs { height: 8; border: round $primary 50%; }
    #pages { display: none; height: 1; padding: 0 1; }
    #filter { display: none; height: 3; }
    #filter.shown { display: block; }
    MainScreen.compact #pages { display: block; }
    MainScreen.compact #discord { display: none; }
    MainScreen.compact #counts, MainScreen.compact #pace, MainScreen.compact #grid, MainScreen.compact #hist,
    MainScreen.compact #recent, MainScreen.compact #top-panels, MainScreen.compact #left-col,
    MainScreen.compact #grid-legend { display: none; }
    MainScreen.compact #left-col { width: 1fr; }
    MainScreen.compact #bottom { height: 1fr; }
    MainScreen.page-counts #top-panels, MainScreen.page-counts #counts { display: block; }
    MainScreen.page-pace #top-panels, MainScreen.page-pace #pace { display: block; }
    MainScreen.page-seeds #left-col, MainScreen.page-seeds #grid, MainScreen.page-seeds #grid-legend,
    MainScreen.page-seeds #hist { display: block; }
    MainScreen.page-rows #recent { display: block; }
    MainScreen.two-line-footer KeysFooter { height: 2; layout: grid; grid-columns: auto; grid-gutter: 0 1; }
    MainScreen.two-line-footer KeysFooter FooterKey { margin: 0; }  /* the gutter parts the columns */
    #header-row { height: auto; }
    #run-header { width: 1fr; height: auto; padding: 0 1; }
    #discord { width: auto; height: 1; padding: 0 1; }
    Panel { border: round $primary 50%; padding: 0 1; height: auto; }
    #top-panels { height: auto; }
    #counts, #pace { width: 1fr; }
    #bottom { height: 1fr; }
    #left-col { width: 52; height: auto; }
    #grid-legend { height: auto; padding: 0 1; }
    SeedGrid:focus { border: round $accent; }
    #recent { width: 1fr; height: 1fr; border: round $primary 50%; padding: 0 1; }
    ConfirmScreen, LaunchScreen, ResultsScreen, HelpScreen { align: center middle; }
    #dialog { width: 80; max-width: 100%; height: auto; max-height: 100%; overflow-y: auto;
              border: thick $warning; background: $surface; padding: 1 2; }
    #dialog.danger { border: thick $error; }
    #dialog-title { margin-bottom: 1; }
    #dialog-buttons { dock: bottom; height: auto; margin-top: 1; }  /* on screen however long the dialog */
    #dialog-buttons Button { margin-right: 2; }
    #dialog Select, #dialog Input { margin-bottom: 1; }
    #launch-error { margin-top: 1; }
    #launch-settings { margin-bottom: 1; }
    #results { width: 100; max-width: 100%; height: 80%; min-height: 20; max-height: 100%;
               border: thick $primary; background: $surface; padding: 1 2; }
    #results VerticalScroll { height: 1fr; }
    #results-chart { width: auto; height: 22; margin-bottom: 1; }
    #results-cells { margin-bottom: 1; }
    #help { width: 104; max-width: 100%; height: 90%; min-height: 20; max-height: 100%;
            border: thick $primary; background: $surface; padding: 1 2; }
"""


class KeysFooter(Footer):
    """Textual's footer, its keys in two rows when its screen says one line cannot hold them (the
    class `two-line-footer`): at 80 columns the main screen's last four keys were cut off."""

    def compose(self) -> ComposeResult:
        keys = list(super().compose())
        if self.screen.has_class("two-line-footer"):
            self.styles.grid_size_columns = -(-len(keys) // 2)  # row by row: the first half on top
        yield from keys


class MainScreen(Screen):
    """The runs list on the left, the selected run's panels on the right."""

    ready = False

    # On the main screen only: a key pressed in a dialog never starts another action.
    BINDINGS = [
        Binding("q", "app.quit", "Quit"),
        Binding("question_mark", "app.help", "Help", key_display="?"),
        Binding("l", "app.launch", "Launch"),
        Binding("d", "app.demo", "Demo"),
        Binding("s", "app.stop_run", "Stop"),
        Binding("K", "app.escalate", "Kill"),
        Binding("r", "app.results", "Results"),
        Binding("g", "focus_grid", "Seeds"),
        Binding("p", "next_page", "Panels"),  # only in a small terminal, where one panel shows at a time
        Binding("c", "app.compare", "Compare"),
        Binding("T", "app.real_session", "Real"),
        Binding("R", "app.resume", "Resume"),
        Binding("a", "app.archive", "Archive"),
        Binding("slash", "app.filter", "Filter", key_display="/"),
        Binding("t", "app.discord_test", "Discord"),
        Binding("1", "page('counts')", show=False),
        Binding("2", "page('pace')", show=False),
        Binding("3", "page('seeds')", show=False),
        Binding("4", "page('rows')", show=False),
        Binding("escape", "escape", show=False),
    ]

    # Below these sizes the detail panels show one at a time (p cycles, 1-4 pick); the runs list
    # is sized to the terminal either way.
    COMPACT_WIDTH, COMPACT_HEIGHT = 110, 34
    PAGES = ("counts", "pace", "seeds", "rows")
    page = "counts"
    compact = False

    def on_mount(self) -> None:
        self.ready = True
        self.app.call_after_refresh(self.app.redraw)

    def action_focus_grid(self) -> None:
        """`g`: to the per-seed grid (arrows pick a seed, enter opens it); `g` again back to the runs."""
        grid = self.query_one(SeedGrid)
        if grid.has_focus:
            self.query_one(RunsTable).focus()
        else:
            if self.compact:
                self.action_page("seeds")
            grid.focus()

    def action_escape(self) -> None:
        """Esc: out of the filter box (clearing it), or from the seed grid back to the runs."""
        if self.query_one("#filter", Input).has_focus:
            self.app._close_filter(clear=True)
        elif self.query_one(SeedGrid).has_focus:
            self.query_one(RunsTable).focus()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("next_page", "page") and not self.compact:
            return False  # every panel is on screen: nothing to page through (and no footer entry)
        return True

    def action_next_page(self) -> None:
        self.action_page(self.PAGES[(self.PAGES.index(self.page) + 1) % len(self.PAGES)])

    def action_page(self, page: str) -> None:
        self.page = page
        self.layout_for(self.size.width, self.size.height)

    def footer_width(self) -> int:
        """Columns the footer's keys take on one line (compact: 'q Quit', a column between): the keys it
        shows, as Footer picks them (the screen's active bindings, one per action, check_action's say
        included: the panels key only when the panels are paged)."""
        shown = {b.action: b for _, b, _, _ in self.active_bindings.values() if b.show}
        return sum(len(self.app.get_key_display(b)) + 1 + len(b.description) + 1 for b in shown.values()) - 1

    def on_resize(self, event) -> None:
        self.layout_for(event.size.width, event.size.height)

    def layout_for(self, width: int, height: int) -> None:
        """Fit the terminal: the runs list gets up to a quarter of the rows (at least 3 runs), and
        below COMPACT_* the detail panels show one at a time, full width."""
        if not width or not height:
            return
        compact = width < self.COMPACT_WIDTH or height < self.COMPACT_HEIGHT
        if compact != self.compact:
            self.compact = compact
            self.refresh_bindings()
        self.set_class(compact, "compact")
        two_lines = width < self.footer_width()  # every key on screen, never cut off the right
        if two_lines != self.has_class("two-line-footer"):
            self.set_class(two_lines, "two-line-footer")
            self.query_one(KeysFooter).refresh(recompose=True)
        for page in self.PAGES:
            self.set_class(compact and self.page == page, f"page-{page}")
        runs = self.query_one(RunsTable)
        n = max(1, runs.row_count)
        runs.styles.height = max(5, min(n + 3, height // 4 if compact else height // 3))
        titles = {"counts": "1 counts", "pace": "2 pace", "seeds": "3 seeds", "rows": "4 rows"}
        bar = "  ".join(f"[reverse]{t}[/]" if p == self.page else t for p, t in titles.items())
        self.query_one("#pages", Static).update(f"[grey62]panels (p):[/] {bar}")
        self.app.call_after_refresh(self.app.redraw)

    def compose(self) -> ComposeResult:
        yield TripwireBanner("", id="banner")
        yield Input(placeholder="filter runs: words in the id, arm or state (enter keeps it, esc clears)", id="filter",
                    disabled=True)  # never focused (and never typed into) while hidden
        runs_table = RunsTable(id="runs")
        runs_table.border_title = "runs"
        yield runs_table
        with Horizontal(id="header-row"):
            yield TextBlock(Text("Reading the runs folder…", style="grey62"), id="run-header")
            yield TextBlock("", id="discord")
        yield TextBlock("", id="pages")
        with Horizontal(id="top-panels"):
            yield Panel("counts", id="counts")
            yield Panel("pace · gates · heartbeat", id="pace")
        with Horizontal(id="bottom"):
            with Vertical(id="left-col"):
                grid = SeedGrid("per-seed outcomes (g, enter: open a seed)", id="grid")
                yield grid
                # the glyphs in words, under the grid and wrapped to the column (as the grid's
                # subtitle it was cut to "▼off-table…" once the outcomes outgrew the column)
                yield TextBlock(grid_legend(), id="grid-legend")
                yield Panel("progress_final_cm", id="hist")
            recent = RecentRows(id="recent")
            recent.border_title = "latest rows"
            yield recent
        yield KeysFooter(compact=True, show_command_palette=False)  # ctrl+p still opens it (see ?)
