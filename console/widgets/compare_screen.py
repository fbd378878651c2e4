"""The compare view: the arms of one pre-registration side by side, refreshed live."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.compare import arm_cells, paired, paired_cells

ARM_COLUMNS = ("arm", "state", "done", "successes", "CI95 %", "knock-aways", "zero-fallbacks", "run")
PAIRED_COLUMNS = ("pair", "Δ success", "CI95 pp", "shared seeds", "both", "ref only", "other only", "neither")


class CompareScreen(Screen):
    BINDINGS = [Binding("escape", "back", "Back")]
    AUTO_FOCUS = None
    DEFAULT_CSS = """
    CompareScreen #compare-title, CompareScreen #paired-title, CompareScreen #compare-note { height: auto; padding: 0 1; }
    CompareScreen #arms, CompareScreen #paired { height: auto; max-height: 50%; margin-bottom: 1; }
    """

    def __init__(self, prereg_id: str, refresh_s: float = 1.0):
        super().__init__()
        self.prereg_id, self.refresh_s = prereg_id, refresh_s
        self.lines: list = []
        self.updates = 0
        self._paired_title = ""

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Arms of {self.prereg_id}: the newest run of each", style="bold"), id="compare-title")
        yield DataTable(id="arms", cursor_type="none")
        yield Static("", id="paired-title")
        yield DataTable(id="paired", cursor_type="none")
        yield Static(Text("Paired: on the seeds both arms have finished (error rows left out); Δ = other − ref "
                          "success rate, with a 95% interval for paired proportions. Live: refreshed every second.",
                          style="grey62"), id="compare-note")
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
        lines = self.app.watcher.arm_lines(self.prereg_id)
        self.app.call_from_thread(self.show, lines)

    def show(self, lines: list) -> None:
        if not self.is_attached:
            return
        self.lines = lines
        self.updates += 1
        _sync(self.query_one("#arms", DataTable), [(line.arm, arm_cells(line)) for line in lines], ARM_COLUMNS)
        pairs = [paired(lines[0], other) for other in lines[1:]] if lines else []
        ref = lines[0].arm if lines else "—"
        title = (f"Paired per-seed deltas against {ref}" if len(lines) > 1 else
                 "Paired deltas need a second arm of this pre-registration (launch one with l).")
        if title != self._paired_title:  # refreshed every second: repaint only what changed
            self._paired_title = title
            self.query_one("#paired-title", Static).update(Text(title, style="bold"))
        _sync(self.query_one("#paired", DataTable), [(p.other, paired_cells(p)) for p in pairs], PAIRED_COLUMNS)

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
