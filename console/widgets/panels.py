"""The selected run's panels. Each is a Static fed by console.render; none reads files or clocks."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, Static

from console.aggregate import AggregateView
from console.render import recent_row_cells

RECENT_SHOWN = 12


class Panel(Static):
    """A bordered Static with a title."""

    def __init__(self, title: str, **kwargs):
        super().__init__("", **kwargs)
        self.border_title = title


class TripwireBanner(Static):
    """Hidden when every gate is fine; amber for a warning; red, full width, when a gate tripped."""

    def show_banner(self, text: Text | None, level: str) -> None:
        self.set_class(level == "tripped", "tripped")
        self.set_class(level == "warn", "warn")
        self.display = text is not None
        self.update(text or "")


class RecentRows(DataTable):
    """The latest rows, newest at the bottom like a log, added and removed by key."""

    def __init__(self, **kwargs):
        super().__init__(cursor_type="none", **kwargs)
        self._shown: list[str] = []
        self._source: object = None

    def on_mount(self) -> None:
        for label in ("seed", "outcome", "prog_final", "zf/predicts", "wall_s", "worker", "note"):
            self.add_column(label, key=label)

    def show_rows(self, source: object, view: AggregateView) -> None:
        if source != self._source:
            self.clear()
            self._shown = []
            self._source = source
        wanted = [(str(i), row) for i, row in view.recent[-RECENT_SHOWN:]]
        wanted_keys = {k for k, _ in wanted}
        for key in [k for k in self._shown if k not in wanted_keys]:
            self.remove_row(key)
            self._shown.remove(key)
        for key, row in wanted:
            if key not in self._shown:
                self.add_row(*recent_row_cells(row), key=key)
                self._shown.append(key)
        self.scroll_end(animate=False)

    def clear_rows(self) -> None:
        self.clear()
        self._shown = []
        self._source = None
