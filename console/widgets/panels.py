"""The selected run's panels. Each is a Static fed by console.render; none reads files or clocks."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static

from console.aggregate import AggregateView
from console.render import GRID_LABEL_W, grid_order, grid_per_line, recent_row_cells, seed_grid_text

RECENT_SHOWN = 12


class SteadyStatic(Static):
    """A Static whose `update` asks Textual for a new layout only when its height changes: a
    layout pass re-renders every widget on the screen (the tables included), which was most of
    what following a live run cost, while a panel redrawn at the same height only repaints itself."""

    _lines: int | None = None

    def update(self, content="", *, layout: bool | None = None) -> None:
        if layout is None:  # a caller that knows its height passes layout itself
            lines = self._count_lines(content)
            layout = lines is None or lines != self._lines
            self._lines = lines
        super().update(content, layout=layout)

    def _count_lines(self, content) -> int | None:
        width = self.content_region.width
        if not width or not self.is_attached or not self.display:
            return None
        try:
            console = self.app.console
            return len(console.render_lines(content, console.options.update(width=width, height=None), pad=False))
        except Exception:  # noqa: BLE001 - when in doubt, lay out
            return None


class Panel(SteadyStatic):
    """A bordered Static with a title."""

    def __init__(self, title: str, **kwargs):
        super().__init__("", **kwargs)
        self.border_title = title


class TripwireBanner(SteadyStatic):
    """Hidden when every gate is fine; amber for a warning; red, full width, when a gate tripped."""

    def show_banner(self, text: Text | None, level: str) -> None:
        self.set_class(level == "tripped", "tripped")
        self.set_class(level == "warn", "warn")
        self.display = text is not None
        self.update(text or "")


RECENT_COLUMNS = ("seed", "outcome", "prog_final", "zf/predicts", "wall_s", "worker", "note")


class RecentRows(DataTable):
    """The latest rows, newest at the bottom like a log. Rows are fixed slots whose cells are
    updated in place: removing a DataTable row forces a layout pass of the whole screen, which
    was most of what following a live run cost."""

    def __init__(self, **kwargs):
        super().__init__(cursor_type="none", **kwargs)
        self._shown: list = []  # the row numbers shown, slot by slot
        self._cells: list[tuple] = []
        self._source: object = None

    def on_mount(self) -> None:
        for label in RECENT_COLUMNS:
            self.add_column(label, key=label)

    def show_rows(self, source: object, view: AggregateView) -> None:
        if source != self._source:
            self.clear_rows()
            self._source = source
        latest = view.recent[-RECENT_SHOWN:]
        numbers = [n for n, _ in latest]
        if numbers == self._shown:
            return
        while len(self._cells) > len(latest):  # fewer rows than before (the file restarted)
            self.remove_row(str(len(self._cells) - 1))
            self._cells.pop()
        for slot, (_, row) in enumerate(latest):
            cells = recent_row_cells(row)
            if slot == len(self._cells):
                self.add_row(*cells, key=str(slot))
                self._cells.append(cells)
                continue
            old = self._cells[slot]
            for col, new_cell, old_cell in zip(RECENT_COLUMNS, cells, old):
                if str(new_cell) != str(old_cell) or getattr(new_cell, "style", None) != getattr(old_cell, "style", None):
                    self.update_cell(str(slot), col, new_cell, update_width=True)
            self._cells[slot] = cells
        self._shown = numbers
        self.scroll_end(animate=False)

    def clear_rows(self) -> None:
        self.clear()
        self._shown = []
        self._cells = []
        self._source = None


class SeedGrid(Panel):
    """The per-seed grid, with a cursor: arrows move it, enter (or a click on a cell) opens the seed."""

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
        """A seed of the grid was chosen (enter or a click)."""

        def __init__(self, seed) -> None:
            super().__init__()
            self.seed = seed

    def __init__(self, title: str, **kwargs):
        super().__init__(title, **kwargs)
        self.cursor = 0
        self._view: AggregateView | None = None
        self._seeds: list | None = None
        self._order: list = []
        self._hidden = 0

    def show(self, view: AggregateView, seeds: list | None) -> None:
        self._view, self._seeds = view, seeds
        self._order, self._hidden = grid_order(view, seeds)
        self.cursor = min(self.cursor, max(0, len(self._order) - 1))
        self._render_grid()

    def _render_grid(self) -> None:
        if self._view is None:
            return
        cursor = self.cursor if (self.has_focus and self._order) else None
        per_line = grid_per_line(self._width())
        lines = -(-len(self._order) // per_line) + (1 if self._hidden > 0 else 0)  # known without rendering 600 cells
        layout = lines != self._lines
        self._lines = lines
        self.update(seed_grid_text(self._view, self._seeds, self._width(), cursor, self._order, self._hidden),
                    layout=layout)

    def _width(self) -> int:
        return self.size.width or 60

    @property
    def selected_seed(self):
        return self._order[self.cursor] if self._order else None

    def on_focus(self) -> None:
        self._render_grid()

    def on_blur(self) -> None:
        self._render_grid()

    def action_move(self, step: int) -> None:
        if self._order:
            self.cursor = max(0, min(len(self._order) - 1, self.cursor + step))
            self._render_grid()

    def action_move_line(self, lines: int) -> None:
        self.action_move(lines * grid_per_line(self._width()))

    def action_open(self) -> None:
        if self._order:
            self.post_message(self.Open(self._order[self.cursor]))

    def index_at(self, x: int, y: int) -> int | None:
        """The cell under content offset (x, y), or None (the seed labels, the gaps past the end)."""
        if x < GRID_LABEL_W:
            return None
        index = y * grid_per_line(self._width()) + (x - GRID_LABEL_W) // 2
        return index if 0 <= index < len(self._order) and (x - GRID_LABEL_W) // 2 < grid_per_line(self._width()) else None

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.index_at(offset.x, offset.y)
        if index is None:
            return
        self.cursor = index
        self.focus()
        self._render_grid()
        self.post_message(self.Open(self._order[index]))
