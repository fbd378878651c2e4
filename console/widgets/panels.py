"""The selected run's panels: line-drawn widgets fed by console.render; none reads files or clocks."""

from __future__ import annotations

from typing import Callable

from rich.console import RenderableType
from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from console.aggregate import AggregateView
from console.grid import GridLayout, grid_layout, seed_grid_text
from console.render import recent_rows_text
from console.widgets.text import FreshLayout


class LinePanel(FreshLayout, Widget):
    """Rich content drawn line by line (Textual's line API): an update repaints only the lines
    that changed, and asks for a layout pass only when the number of lines changed.

    Following a live run, a new row changes a few lines of each panel (a count, a grid cell, a
    bar); a Static repainted all of them, through Textual's Content pipeline, every second, and
    a change of height laid out the whole screen. Here the content is rendered once per update
    at the panel's width into strips (tables and text alike), compared with what is on screen,
    and only the lines that differ are marked dirty (benchmarks/bench_console.py measures it).
    Lines wrap at the panel's width as a Static's would. `content` is what was last shown.
    """

    DEFAULT_CSS = "LinePanel { height: auto; }"

    def __init__(self, title: str = "", **kwargs):
        super().__init__(**kwargs)
        if title:
            self.border_title = title
        self.content: RenderableType = ""
        self.updates = 0  # how many times `content` was replaced (a cheap key for what it shows)
        self._draw_for_width: Callable[[int], RenderableType] | None = None  # update_for_width's
        self._drawn_for: int | None = None  # the width `content` was drawn for by _draw_for_width
        self._strips: list[Strip] = []
        self._strips_width: int | None = None
        self._line_cache: dict = {}  # a Text's lines as drawn at _line_cache_width: (plain, spans, style) -> strips
        self._line_cache_width: int | None = None
        self._heights: dict[int, int] = {}  # height_at's answers for this content, by width

    def update(self, content: RenderableType = "", *, keep_drawer: bool = False) -> None:
        """Show `content` (a str is plain text, not markup)."""
        if not keep_drawer:
            self._draw_for_width = None
        self.content = Text(content) if isinstance(content, str) else content
        self.updates += 1
        self._heights.clear()
        width = self.size.width
        if self.is_attached and not self._shown():  # a page not on screen (a small terminal shows one at a time):
            self._strips_width = None  # no work and no layout now; rendered when shown (by the layout or render_line)
            return
        if not width or not self.is_attached:
            self._strips_width = None  # laid out later (get_content_height renders it at the width given)
            self.refresh(layout=True)
            return
        self._show(self._render_strips(width), width)

    def _shown(self) -> bool:
        node = self
        while isinstance(node, Widget):
            if not node.display:
                return False
            node = node.parent
        return True

    def _show(self, strips: list[Strip], width: int) -> None:
        old, self._strips, self._strips_width = self._strips, strips, width
        if len(strips) != len(old):
            height = self.styles.height
            self.refresh(layout=height is None or height.is_auto)  # a height set in CSS needs no layout
            return
        changed = [y for y, (a, b) in enumerate(zip(old, strips)) if a != b]
        if len(changed) == len(strips):
            self.refresh()
        elif changed:
            self.refresh(*(Region(0, y, width, 1) for y in changed))

    def height_at(self, width: int) -> int:
        """The lines the content takes at `width` (what is drawn and cached now is left as it is). Kept
        per width until the content changes: the main screen measures the wide layout at each size the
        terminal takes (MainScreen.wide_fits), and back at a size it had, nothing is drawn again."""
        if width == self._strips_width:
            return len(self._strips)
        if width not in self._heights:
            self._heights[width] = len(self._render_strips(width, keep=False))
        return self._heights[width]

    def _render_strips(self, width: int, keep: bool = True) -> list[Strip]:
        console = self.app.console
        options = console.options.update(width=width, height=None)
        content = self.content
        if self._draw_for_width is not None and self._drawn_for != width:  # drawn for another width
            content = self._draw_for_width(width)
            if keep:
                self.content, self._drawn_for = content, width
        try:
            if not isinstance(content, Text):
                return [Strip(line) for line in console.render_lines(content, options, pad=False)]
            # Text, line by line: a line drawn before at this width (most of a grid or a log) is not rendered again
            cache = self._line_cache if self._line_cache_width == width else {}
            kept: dict = {}
            strips: list[Strip] = []
            for line in content.split("\n", allow_blank=True):
                key = (line.plain, tuple(line.spans), str(line.style))
                drawn = cache.get(key) or kept.get(key)
                if drawn is None:
                    drawn = [Strip(segments) for segments in console.render_lines(line, options, pad=False)]
                kept[key] = drawn
                strips.extend(drawn)
            if keep:
                self._line_cache, self._line_cache_width = kept, width
            return strips
        except Exception as exc:  # noqa: BLE001 - a panel that cannot render says so rather than crashing the app
            return [Strip([Segment(f"(cannot draw: {type(exc).__name__}: {exc})"[:width])])]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width != self._strips_width:
            self._strips, self._strips_width = self._render_strips(width), width
        return len(self._strips)

    def update_for_width(self, draw: Callable[[int], RenderableType]) -> None:
        """Show `draw(width)`: content laid out for the panel's width (a histogram's bins), drawn again by
        the panel itself when it is resized, so a resize draws it once, at the new width."""
        self._draw_for_width = draw
        self._drawn_for = self.size.width or 50
        self.update(draw(self._drawn_for), keep_drawer=True)

    def on_resize(self) -> None:
        width = self.size.width
        if width and width != self._strips_width:
            self._show(self._render_strips(width), width)

    def render_line(self, y: int) -> Strip:
        width, style = self.size.width, self.rich_style
        if width != self._strips_width:  # updated while hidden, or resized before on_resize ran
            self._strips, self._strips_width = self._render_strips(width), width
        if y >= len(self._strips):
            return Strip.blank(width, style)
        return self._strips[y].apply_style(style).crop_extend(0, width, style)


class Panel(LinePanel):
    """A bordered panel with a title."""


class TripwireBanner(LinePanel):
    """Hidden when every gate is fine; amber for a warning; red, full width, when a gate tripped."""

    def show_banner(self, text: Text | None, level: str) -> None:
        self.set_class(level == "tripped", "tripped")
        self.set_class(level == "warn", "warn")
        self.display = text is not None
        self.update(text or "")


class RecentRows(LinePanel):
    """The latest rows, newest at the bottom like a log, as many as the panel has lines for.

    One Text of fixed-width columns (console.render.recent_rows_text), redrawn without a layout
    pass (the panel's height comes from the CSS, not from its rows). It was a DataTable: each new
    row invalidated every cell's render cache and changed column widths, so every row re-rendered
    the table cell by cell and laid out the whole screen; that was half of what following a live
    run cost (benchmarks/bench_console.py)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._latest: tuple = ()  # (row number, row) of the newest rows the aggregate keeps
        self._with_arm = False  # a comparison run: each row starts with its arm
        self._with_variant = False  # a crossed design: each row names its variant
        self.row_count = 0  # the rows on screen now

    def clear(self) -> None:
        self._latest = ()
        self._render_rows()

    def show_rows(self, view: AggregateView) -> None:
        self._latest, self._with_arm, self._with_variant = view.recent, view.comparison, bool(view.variants)
        self._render_rows()

    def on_resize(self) -> None:
        self._render_rows()

    def _render_rows(self) -> None:
        """As many of the newest rows as fit under the header; LinePanel repaints only what changed."""
        height, width = self.content_region.height, self.content_region.width
        latest = self._latest[-max(1, height - 1):] if height else self._latest
        self.row_count = len(latest)
        self.update(recent_rows_text([row for _, row in latest], width or 200, self._with_arm, self._with_variant))


class SeedGrid(Panel):
    """The per-seed grid, with a cursor: arrows move it, enter (or a click on a cell) opens the seed.

    A comparison run's grid has one line per arm for each stretch of seeds (console.render.grid_layout):
    up and down move between the arms at the same seed."""

    can_focus = True
    BINDINGS = [
        Binding("left", "move(-1)", "Prev seed", show=False),
        Binding("right", "move(1)", "Next seed", show=False),
        Binding("up", "move_line(-1)", show=False),
        Binding("down", "move_line(1)", show=False),
        Binding("home", "move(-1000000)", show=False),
        Binding("end", "move(1000000)", show=False),
        Binding("enter", "open", "Open seed"),
    ]

    class Open(Message):
        """A seed of the grid was chosen (enter or a click); `arm`: its arm, in a comparison run."""

        def __init__(self, seed, arm: str | None = None) -> None:
            super().__init__()
            self.seed, self.arm = seed, arm

    def __init__(self, title: str, **kwargs):
        super().__init__(title, **kwargs)
        self.cursor = (0, 0)  # (line, cell) of the layout
        self._view: AggregateView | None = None
        self._seeds: list | None = None
        self._layout = GridLayout((), 0, 0)

    def show(self, view: AggregateView, seeds: list | None) -> None:
        self._view, self._seeds = view, seeds
        self._render_grid()

    @property
    def shape(self) -> tuple:
        """What the grid's height follows besides its width: its run's seeds and arms."""
        view = self._view
        return len(self._seeds or ()), len(view.arms) if view is not None and view.comparison else 1

    def height_at(self, width: int) -> int:
        """The grid's lines at `width` (its cells per line follow the width)."""
        if self._view is None:
            return super().height_at(width)
        layout = grid_layout(self._view, self._seeds, width)
        return len(layout.lines) + (1 if layout.hidden > 0 else 0)

    def clear(self) -> None:
        """No run shown: no cells (and nothing for the cursor to open)."""
        self._view, self._seeds, self._layout = None, None, GridLayout((), 0, 0)
        self.update("")

    def _render_grid(self, focused: bool | None = None) -> None:
        """Drawn for the panel's width (LinePanel.update_for_width): a resize lays the cells out again
        once, inside the screen's layout pass that measures the grid's height. Laid out again in its
        own on_resize, the grid came out a different number of lines than that pass had measured,
        and the screen was laid out a second time (issue 49: keys after a resize)."""
        if self._view is None:
            return
        focused = self.has_focus if focused is None else focused
        self.update_for_width(lambda width: self._grid_text(width, focused))

    def _grid_text(self, width: int, focused: bool) -> Text:
        self._layout = grid_layout(self._view, self._seeds, width)
        self.cursor = self._clamp(*self.cursor)
        cursor = self.cursor if (focused and self._layout.lines) else None
        return seed_grid_text(self._view, self._seeds, width, cursor, self._layout)

    def _clamp(self, line: int, cell: int) -> tuple[int, int]:
        lines = self._layout.lines
        if not lines:
            return (0, 0)
        line = max(0, min(len(lines) - 1, line))
        return line, max(0, min(len(lines[line][1]) - 1, cell))

    @property
    def selected_key(self):
        """The seed under the cursor; (arm, seed) in a comparison run."""
        if not self._layout.lines:
            return None
        line, cell = self.cursor
        return self._layout.lines[line][1][cell]

    @property
    def selected_seed(self):
        key = self.selected_key
        return key[1] if isinstance(key, tuple) else key

    # These run before Widget's own handlers set has_focus: the cursor is drawn from the event.
    def on_focus(self) -> None:
        self._render_grid(focused=True)

    def on_blur(self) -> None:
        self._render_grid(focused=False)

    def action_move(self, step: int) -> None:
        """Along the cells in reading order (a comparison run: one arm's line, then the next)."""
        keys = [(y, x) for y, (_, line) in enumerate(self._layout.lines) for x in range(len(line))]
        if keys:
            i = max(0, min(len(keys) - 1, keys.index(self.cursor) + step))
            self.cursor = keys[i]
            self._render_grid()

    def action_move_line(self, lines: int) -> None:
        if self._layout.lines:
            self.cursor = self._clamp(self.cursor[0] + lines, self.cursor[1])
            self._render_grid()

    def action_open(self) -> None:
        if self._layout.lines:
            self._post_open(self.selected_key)

    def _post_open(self, key) -> None:
        if isinstance(key, tuple):
            self.post_message(self.Open(key[1], key[0]))
        else:
            self.post_message(self.Open(key))

    def index_at(self, x: int, y: int) -> tuple[int, int] | None:
        """The cell under content offset (x, y) as (line, cell), or None (the labels, the gaps past the end)."""
        lines, label_w = self._layout.lines, self._layout.label_w
        if x < label_w or not 0 <= y < len(lines):
            return None
        cell = (x - label_w) // 2
        return (y, cell) if cell < len(lines[y][1]) else None

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        at = self.index_at(offset.x, offset.y)
        if at is None:
            return
        self.cursor = at
        self.focus()
        self._render_grid()
        self._post_open(self.selected_key)
