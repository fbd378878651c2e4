"""The compare view: the arms of one pre-registration side by side, refreshed live; for a comparison
run (issue 24), its paired delta with the confidence-sequence band over seeds, the decision, in words."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Group
from rich.table import Table as RichTable
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

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
from console.widgets.text import TextBlock


class CompareScreen(Screen):
    BINDINGS = [Binding("escape", "back", "Back"), Binding("question_mark", "app.help", "Help", key_display="?")]
    AUTO_FOCUS = None
    DEFAULT_CSS = """
    CompareScreen #compare-title, CompareScreen #paired-title, CompareScreen #compare-note,
    CompareScreen #verdicts, CompareScreen #comparison-title, CompareScreen #band,
    CompareScreen #evidence, CompareScreen #invalid, CompareScreen #reading { height: auto; padding: 0 1; }
    CompareScreen #evidence, CompareScreen #invalid { margin-bottom: 1; }
    CompareScreen #arms, CompareScreen #paired { height: auto; padding: 0 1; margin-bottom: 1; }
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
        yield TextBlock(Text(f"Arms of {self.prereg_id}: the newest run of each", style="bold"), id="compare-title")
        yield TextBlock(Text("reading the arms' runs as the report reads them…", style="italic grey62"), id="reading")
        yield TextBlock("", id="arms")
        yield TextBlock("", id="invalid")
        yield TextBlock("", id="comparison-title")
        yield TextBlock("", id="band")
        yield TextBlock("", id="evidence")
        yield TextBlock("", id="paired-title")
        yield TextBlock("", id="paired")
        yield TextBlock("", id="verdicts")
        yield TextBlock(Text("Read as `fontaine-prereg report` reads them: successes over every "
                          "episode with a row, an error row a non-success; each arm against its registered "
                          "comparator. Live: refreshed when a run's files change.", style="grey62"), id="compare-note")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        for hidden in ("#arms", "#invalid", "#paired"):
            self.query_one(hidden).display = False
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
        self.query_one("#reading").display = False
        self._table("#arms", ARM_COLUMNS, view.arms)
        invalid = self.query_one("#invalid", Static)
        invalid.display = bool(view.invalid)
        self._set("#invalid", "\n".join(["Why INVALID:", *view.invalid]) if view.invalid else "", "yellow")
        n_pairs = len(view.paired)
        title = (view.error and f"Cannot read the arms: {view.error}") or (
            f"Each arm against its registered comparator ({view.interval} interval above)" if n_pairs else
            "No arm of this pre-registration has a registered comparator (reads.comparator), or none has a run yet.")
        self._set("#paired-title", title, "bold red" if view.error else "bold")
        self._table("#paired", PAIRED_COLUMNS, view.paired)
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
        self._set("#evidence", "\n".join([band_legend(c.path, self.size.width - 2), *c.words]), "")

    def on_resize(self) -> None:
        if self.view is not None and self.is_attached:
            self._table("#arms", ARM_COLUMNS, self.view.arms)
            self._table("#paired", PAIRED_COLUMNS, self.view.paired)
            self._show_comparison(self.view)

    def _table(self, widget: str, columns: tuple, rows: list[tuple[str, tuple]]) -> None:
        """A table's Static, updated only when its cells or the width change (refreshed every second)."""
        static = self.query_one(widget, Static)
        static.display = bool(rows)
        width = max(20, self.size.width - 4)  # its padding, and the screen's scrollbar
        key = repr((rows, width))
        if self._texts.get(widget) != key:
            self._texts[widget] = key
            table, runs = fitted_table(columns, rows, width)
            static.update(Group(table, Text(runs, style="grey62")) if runs else table)

    def _set(self, widget: str, text: str, style: str) -> None:
        if self._texts.get(widget) != text:  # refreshed every second: repaint only what changed
            self._texts[widget] = text
            self.query_one(widget, Static).update(Text(text, style=style))

    def action_back(self) -> None:
        self.app.pop_screen()


GAP = 2  # cells between columns: the box's divider and one of padding


def fitted_table(columns: tuple, rows: list[tuple[str, tuple]], width: int) -> tuple[RichTable, str]:
    """The rows under their column names, fitted to `width` cells (a DataTable cut its last columns
    off at 80x24). Where the table is wider, the names break onto lines at their spaces, hyphens and
    slashes, the run column leaves the table for the line returned with it (its ids fit nowhere
    in 80 columns), and the widest columns give up cells first, down to their longest word: a
    cell wraps only between its words."""
    def cell_words(i: int) -> list[str]:
        return [w for _, cells in rows for w in str(cells[i]).split()]

    def natural(i: int) -> int:
        return max([len(columns[i]), *(len(str(cells[i])) for _, cells in rows)])

    narrow = sum(natural(i) + GAP for i in range(len(columns))) > width  # each column is padded on its right
    shown = [i for i, c in enumerate(columns) if not (narrow and c == "run")]
    names = {i: columns[i] for i in shown}
    if sum(natural(i) + GAP for i in shown) > width:
        names = {i: n.replace("-", "-\n").replace("/", "/\n").replace(" (", "\n(").replace(" ", "\n")
                 for i, n in names.items()}
    least = {i: max([len(line) for line in names[i].split("\n")] + [len(w) for w in cell_words(i)]) for i in shown}
    widths = {i: max(least[i], *(len(line) for line in names[i].split("\n")),
                     *(len(str(cells[i])) for _, cells in rows)) for i in shown}
    while sum(widths.values()) + GAP * len(shown) > width:
        i = max(shown, key=lambda j: (widths[j] - least[j], widths[j]))
        if widths[i] <= least[i]:
            break  # every column at its longest word: wider than the screen, scrolled sideways
        widths[i] -= 1
    table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold",
                      padding=(0, GAP - 1, 0, 0))
    for i in shown:
        table.add_column(names[i], width=widths[i], overflow="fold")
    for _, cells in rows:
        table.add_row(*(cells[i] for i in shown))
    runs = ""
    if narrow and "run" in columns:
        at = columns.index("run")
        runs = "runs: " + "; ".join(f"{key} {cells[at]}" for key, cells in rows if cells[at])
    return table, runs
