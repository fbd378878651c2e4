"""A DataTable that repaints when it is resized."""

from __future__ import annotations

from textual import events
from textual.widgets import DataTable


class Table(DataTable):
    """DataTable caches each row's render without the table's width, and a resize only starts a new
    cache generation without repainting: a row drawn between the new size and the Resize event kept
    the old width (a wider terminal left the cursor's highlight and the stripes stopping where the
    old table ended) until something else repainted the table. This one repaints on every resize."""

    def _on_resize(self, event: events.Resize) -> None:
        super()._on_resize(event)
        self.refresh()
