"""The console's main screen: the runs list on top, the selected run's panels under it, and the
layout that fits them to the terminal (one panel at a time in a small one). The app (console/app.py)
draws into it; it reads no file and no wall clock (a monotonic one paces how often a followed run's
panels are measured against the wide layout).
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from console.grid import grid_legend
from console.widgets.panels import Panel, RecentRows, SeedGrid, TripwireBanner
from console.widgets.runs_table import RunsTable
from console.widgets.text import TextBlock

# In a small terminal the run's header takes at most this many lines, the last ending in "…" when
# there is more (the app clips it so: console.render.clip_lines).
COMPACT_HEADER_LINES = 3

# The wide layout's seed grid and histogram column: LEFT_MIN to LEFT_MAX columns, the latest rows the
# rest (at least RECENT_WIDTH, a comparison run's columns); the bottom row at least RECENT_MIN_HEIGHT.
LEFT_MIN, LEFT_MAX, RECENT_WIDTH, RECENT_MIN_HEIGHT = 52, 100, 70, 6
FIT_EVERY_S = 2.0  # a followed run's growing panels are measured against the wide layout at most this often


def set_style(widget, name: str, value) -> None:
    """Set an inline style only when it changes (each assignment asks for a layout pass)."""
    if getattr(widget, f"_set_{name}", None) != value:
        setattr(widget, f"_set_{name}", value)
        setattr(widget.styles, name, value)


def text_height(console, text, width: int) -> int:
    """The lines `text` takes wrapped at `width` (as a Static or a LinePanel draws it)."""
    return len(console.render_lines(text, console.options.update(width=max(1, width), height=None), pad=False))


# The app's stylesheet (FontaineApp.CSS): the main screen's layout, its compact pages, the dialogs.
APP_CSS = """
    #banner { display: none; height: auto; padding: 0 1; }
    #banner.tripped { background: $error; color: $text; text-style: bold; }
    #banner.warn { background: $warning 40%; }
    #runs { height: 8; border: round $primary 50%; }
    #pages { display: none; height: 1; padding: 0 1; }
    #filter { display: none; height: 3; }
    #filter.shown { display: block; }
    #variants { display: none; }
    #counts-col.crossed #counts { border-bottom: none; }  /* the variants' titled border closes the counts */
    KeysFooter.two-lines { height: 2; layout: grid; grid-columns: auto; grid-gutter: 0 1; }
    KeysFooter.two-lines FooterKey { margin: 0; }  /* the gutter parts the columns */
    #header-row { height: auto; }
    #run-header { width: 1fr; height: auto; padding: 0 1; }
    #discord { width: auto; height: 1; padding: 0 1; }
    Panel { border: round $primary 50%; padding: 0 1; height: auto; }
    #top-panels { height: auto; }
    #counts-col, #pace { width: 1fr; }
    #counts-col { height: auto; }
    #bottom { height: 1fr; }
    #left-col { height: auto; }  /* its width: MainScreen.left_width */
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
    class `two-lines`): at 80 columns the main screen's last four keys were cut off."""

    def compose(self) -> ComposeResult:
        keys = list(super().compose())
        if self.has_class("two-lines"):
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
        Binding("5", "page('hist')", show=False),
        Binding("6", "page('variants')", show=False),  # a crossed design's variants, on a page of their own
        Binding("escape", "escape", show=False),
    ]

    # Below these sizes, or where the panels would not all fit whole (a comparison run's grid and
    # histogram are twice as tall), the detail panels show one at a time (p cycles, 1-5 pick); the
    # runs list is sized to the terminal either way.
    COMPACT_WIDTH, COMPACT_HEIGHT = 110, 34
    PAGES = ("counts", "pace", "seeds", "rows", "hist")
    PAGE_TITLES = {"counts": "1 counts", "pace": "2 pace", "seeds": "3 seeds", "rows": "4 rows", "hist": "5 progress",
                   "variants": "6 variants"}
    VARIANTS_PAGE = "variants"  # a crossed design's: its variants panel, paged like the others
    # What each page shows of the paged widgets (all of them show when the panels are not paged; the
    # variants panel only for a crossed design).
    PAGE_WIDGETS = {"counts": ("#top-panels", "#counts-col", "#counts"), "pace": ("#top-panels", "#pace"),
                    "seeds": ("#left-col", "#grid", "#grid-legend"), "hist": ("#left-col", "#hist"), "rows": ("#recent",),
                    "variants": ("#top-panels", "#counts-col", "#variants")}
    PAGED = ("#top-panels", "#counts-col", "#counts", "#variants", "#pace", "#left-col", "#grid", "#grid-legend", "#hist",
             "#recent")
    page = "counts"
    crossed = False  # the run shown is a crossed design (MainDraw says): the variants panel shows
    compact = False
    full_header: Text | None = None  # the run's header before a small terminal clips it (the app sets it)
    _fit_shape: tuple | None = None
    _fit_content: tuple | None = None
    _fit_at = float("-inf")
    _laid_out: tuple | None = None  # what layout_for last fitted (size, paging, footer lines, runs)
    _pages_bar = ""
    _fits = True

    def on_mount(self) -> None:
        self.ready = True
        # Fit the terminal before the first paint: waiting for the first Resize event painted the wide
        # layout first (at 80x24: panels past the bottom, a scrollbar), until the next key or redraw.
        self.layout_for(*self.app.size)

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
            self.app.close_filter(clear=True)
        elif self.query_one(SeedGrid).has_focus:
            self.query_one(RunsTable).focus()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("next_page", "page") and not self.compact:
            return False  # every panel is on screen: nothing to page through (and no footer entry)
        return True

    @property
    def pages(self) -> tuple[str, ...]:
        """The pages a small terminal cycles through: the variants panel's too, for a crossed design."""
        return self.PAGES + ((self.VARIANTS_PAGE,) if self.crossed else ())

    def action_next_page(self) -> None:
        pages = self.pages
        self.action_page(pages[(pages.index(self.page) + 1) % len(pages)] if self.page in pages else pages[0])

    def action_page(self, page: str) -> None:
        if page not in self.pages:  # 6 for a run of one scene: nothing there
            return
        self.page = page
        self.layout_for(self.size.width, self.size.height)

    def show_variants(self, crossed: bool) -> None:
        """The run shown is (or is not) a crossed design: its variants panel shows (under the counts, or on
        page 6 of a small terminal), or goes with its page."""
        if crossed == self.crossed:
            return
        self.crossed = crossed
        if not crossed and self.page == self.VARIANTS_PAGE:
            self.page = "counts"
        self._fit_shape = None  # measure the wide layout again: the counts column grew or shrank
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
        compact = width < self.COMPACT_WIDTH or height < self.COMPACT_HEIGHT or not self.wide_fits(width, height)
        bindings_changed = compact != self.compact
        if bindings_changed:
            self.compact = compact
            self.refresh_bindings()  # the footer composes its keys again (the panels key comes or goes)
        two_lines = width < self.footer_width()  # every key on screen, never cut off the right
        runs = self.query_one(RunsTable)
        layout = (width, height, compact, self.page, two_lines, runs.row_count, self.crossed)
        if layout == self._laid_out:  # asked again for the same (a resize arrives twice): nothing to restyle
            return
        self._laid_out = layout
        # Paging shows and hides widgets by their own inline styles, set only when they differ: a class
        # on the screen restyled every widget on it (Textual's update_styles: 110-135 ms on a loaded
        # machine each time the panels were paged or unpaged), and a style needs only the layout pass
        # the resize makes anyway (issue 49: keys lagged 0.5-1.65 s after a resize).
        shown = set(self.PAGE_WIDGETS[self.page]) if compact else set(self.PAGED) - (set() if self.crossed else {"#variants"})
        for selector in self.PAGED:
            set_style(self.query_one(selector), "display", "block" if selector in shown else "none")
        # The variants' border closes the counts' box when both show (a crossed run, not paged): a class on
        # the counts' column, changed only for a crossed run (restyles its three widgets, never the screen).
        self.query_one("#counts-col").set_class(self.crossed and not compact, "crossed")
        set_style(self.query_one("#pages"), "display", "block" if compact else "none")
        set_style(self.query_one("#discord"), "display", "none" if compact else "block")
        set_style(self.query_one("#run-header"), "max_height", COMPACT_HEADER_LINES if compact else None)
        footer = self.query_one(KeysFooter)
        if two_lines != footer.has_class("two-lines"):
            footer.set_class(two_lines, "two-lines")  # restyles the footer's keys only
            if not bindings_changed:  # (refresh_bindings has the footer compose again already)
                footer.refresh(recompose=True)
        set_style(runs, "height", self.runs_height(height, compact))
        set_style(self.query_one("#left-col"), "width", "1fr" if compact else self.left_width(width))
        bar = "  ".join(f"[reverse]{self.PAGE_TITLES[p]}[/]" if p == self.page else self.PAGE_TITLES[p] for p in self.pages)
        if bar != self._pages_bar:
            self._pages_bar = bar
            self.query_one("#pages", Static).update(f"[grey62]panels (p):[/] {bar}")
        self.app.call_after_refresh(self.app.redraw)

    def refit(self) -> None:
        """After the panels were drawn: page them, or not, again when what they hold now fits otherwise
        (a comparison run selected after a one-arm run, its rows' histogram grown)."""
        width, height = self.size
        if not width or not height:
            return
        if self.compact != (width < self.COMPACT_WIDTH or height < self.COMPACT_HEIGHT
                            or not self.wide_fits(width, height)):
            self.layout_for(width, height)

    def runs_height(self, height: int, compact: bool) -> int:
        """The runs list: up to a quarter of the rows in a small terminal, a third otherwise, at least 5."""
        n = max(1, self.query_one(RunsTable).row_count)
        return max(5, min(n + 3, height // 4 if compact else height // 3))

    @staticmethod
    def left_width(width: int) -> int:
        """The seed grid's and histogram's column when every panel shows: wider in a wide terminal
        (fewer grid lines), the latest rows keeping RECENT_WIDTH columns."""
        return max(LEFT_MIN, min(LEFT_MAX, width - RECENT_WIDTH))

    def wide_fits(self, width: int, height: int) -> bool:
        """Whether every panel, whole, fits `height` rows with all of them on screen (the wide layout)."""
        panels = [self.query_one(s) for s in ("#banner", "#counts", "#pace", "#grid", "#hist", "#variants")]
        # Measured again at once for a new size, run or shape (arms, seeds); for new rows of the same
        # run at most every FIT_EVERY_S (measuring draws the panels at other widths: ~10 ms).
        shape = (width, height, self.query_one(RunsTable).row_count, self.query_one("#filter").has_class("shown"),
                 panels[0].display, panels[3].shape)
        content = (self.full_header.markup if self.full_header else None, *(p.updates for p in panels))
        now = time.monotonic()
        if shape != self._fit_shape or (content != self._fit_content and now - self._fit_at >= FIT_EVERY_S):
            self._fit_shape, self._fit_content, self._fit_at = shape, content, now
            self._fits = self.wide_height(width, height) <= height
        return self._fits

    def wide_height(self, width: int, height: int) -> int:
        """The rows the wide layout takes at `width`: the panels' heights drawn at its column widths."""
        banner, counts, pace, grid, hist = (self.query_one(s) for s in ("#banner", "#counts", "#pace", "#grid", "#hist"))
        discord = self.query_one("#discord", Static)
        rows = self.runs_height(height, False) + (3 if self.query_one("#filter").has_class("shown") else 0)
        rows += banner.height_at(width - 2) if banner.display else 0
        discord_w = discord.get_content_width(Size(width, 1), Size(width, 1)) + 2  # beside the header, padded
        rows += text_height(self.app.console, self.full_header, width - discord_w - 2) if self.full_header else 1
        half = width // 2  # counts and pace share the width; each has a border and a column of padding a side
        variants = self.query_one("#variants", Panel)  # a crossed design's: under the counts, its top border theirs
        column = counts.height_at(half - 4) + (1 + variants.height_at(half - 4) if self.crossed else 0)
        rows += 2 + max(column, pace.height_at(width - half - 4))
        left = self.left_width(width) - 4  # the grid's and histogram's text; the legend has no border
        legend = text_height(self.app.console, grid_legend(), left + 2)
        rows += max(RECENT_MIN_HEIGHT, 2 + grid.height_at(left) + legend + 2 + hist.height_at(left))
        return rows + (2 if width < self.footer_width() else 1)

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
            with Vertical(id="counts-col"):
                yield Panel("counts", id="counts")
                yield Panel("variants", id="variants")
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
