"""The compare view: the arms of one pre-registration side by side, refreshed live; for a comparison
run (issue 24), its paired delta with the confidence-sequence band over seeds, the decision, in words."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.compare import (
    ARM_COLUMNS,
    PAIRED_COLUMNS,
    CompareView,
    band_chart,
    band_legend,
    compare_view,
    focused_runs,
    inputs_key,
)
from console.widgets.table import Table


class CompareScreen(Screen):
    BINDINGS = [Binding("escape", "back", "Back")]
    AUTO_FOCUS = None
    DEFAULT_CSS = """
    CompareScreen #compare-title, CompareScreen #paired-title, CompareScreen #compare-note,
    CompareScreen #verdicts, CompareScreen #comparison-title, CompareScreen #band,
    CompareScreen #evidence { height: auto; padding: 0 1; }
    CompareScreen #evidence { margin-bottom: 1; }
    CompareScreen #arms, CompareScreen #paired { height: auto; max-height: 40%; margin-bottom: 1; }
    """

    def __init__(self, prereg_id: str, refresh_s: float = 1.0, focus: Path | None = None):
        super().__init__()
        self.prereg_id, self.refresh_s = prereg_id, refresh_s
        self.focus = focus  # the run the view was opened on: a comparison run stands for both of its arms
        self.view: CompareView | None = None
        self.updates = 0
        self._key: tuple | None = None
        self._texts: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Arms of {self.prereg_id}: the newest run of each", style="bold"), id="compare-title")
        yield Table(id="arms", cursor_type="none")
        yield Static("", id="comparison-title")
        yield Static("", id="band")
        yield Static("", id="evidence")
        yield Static("", id="paired-title")
        yield Table(id="paired", cursor_type="none")
        yield Static("", id="verdicts")
        yield Static(Text("Read as `fontaine-prereg report` reads them: successes over every "
                          "episode with a row, an error row a non-success; each arm against its registered "
                          "comparator. Live: refreshed when a run's files change.", style="grey62"), id="compare-note")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        for table, cols in (("#arms", ARM_COLUMNS), ("#paired", PAIRED_COLUMNS)):
            t = self.query_one(table, DataTable)
            for c in cols:
                t.add_column(c, key=c)
        self.refresh_worker()
        self.set_interval(self.refresh_s, self.refresh_worker)

    @work(thread=True, exclusive=True, group="compare")
    def refresh_worker(self) -> None:
        path, runs = self.app.watcher.arm_runs(self.prereg_id)
        runs = focused_runs(runs, self.focus)
        key = inputs_key(path, runs)
        if key == self._key:  # nothing the view reads has changed: no re-read, no bootstrap
            return
        view = compare_view(self.prereg_id, path, runs)
        self._key = key
        self.app.call_from_thread(self.show, view)

    def show(self, view: CompareView) -> None:
        if not self.is_attached:
            return
        self.view = view
        self.updates += 1
        _sync(self.query_one("#arms", DataTable), view.arms, ARM_COLUMNS)
        n_pairs = len(view.paired)
        title = (view.error and f"Cannot read the arms: {view.error}") or (
            f"Each arm against its registered comparator ({view.interval} interval above)" if n_pairs else
            "No arm of this pre-registration has a registered comparator (reads.comparator), or none has a run yet.")
        self._set("#paired-title", title, "bold red" if view.error else "bold")
        _sync(self.query_one("#paired", DataTable), view.paired, PAIRED_COLUMNS)
        self._set("#verdicts", "Decision rules\n" + "\n".join(view.verdicts) if view.verdicts else "", "")
        self._show_comparison(view)

    def _show_comparison(self, view: CompareView) -> None:
        """A comparison run's band over seeds, the decision marked, and the evidence in words (hidden otherwise)."""
        c = view.comparison
        for w in ("#comparison-title", "#band", "#evidence"):
            self.query_one(w, Static).display = c is not None
        if c is None:
            return
        self._set("#comparison-title", f"Comparison run {c.run}: {c.title}", "bold")
        width = max(20, self.size.width - 12)
        height = min(12, max(5, self.size.height - 30))
        band = self.query_one("#band", Static)
        band.update(band_chart(c.path, c.decided_at, width, height))
        self._set("#evidence", "\n".join([band_legend(c.path), *c.words]), "")

    def on_resize(self) -> None:
        if self.view is not None and self.is_attached:
            self._show_comparison(self.view)

    def _set(self, widget: str, text: str, style: str) -> None:
        if self._texts.get(widget) != text:  # refreshed every second: repaint only what changed
            self._texts[widget] = text
            self.query_one(widget, Static).update(Text(text, style=style))

    def action_back(self) -> None:
        self.app.pop_screen()


def _sync(table: DataTable, rows: list[tuple[str, tuple]], columns: tuple) -> None:
    """Rows by key: added, updated cell by cell, removed; never cleared (no flicker)."""
    wanted = {k for k, _ in rows}
    for key in [r.key.value for r in table.ordered_rows if r.key.value not in wanted]:
        table.remove_row(key)
    present = {r.key.value for r in table.ordered_rows}
    for key, cells in rows:
        if key not in present:
            table.add_row(*cells, key=key)
            continue
        for col, cell in zip(columns, cells):
            old = str(table.get_cell(key, col))
            if old != str(cell):  # a cell as wide as before cannot move its column: no width pass
                table.update_cell(key, col, cell, update_width=cell_len(old) != cell_len(str(cell)))
