"""The runs list: one row per run directory, updated in place by key (never cleared)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from console.render import fmt_age, state_text
from console.runs import run_sort_key
from console.watcher import RunSummary

COLUMNS = (("run", "run"), ("state", "state"), ("arm", "arm"), ("done", "done"), ("succ", "successes"), ("heartbeat", "heartbeat"))


class RunsTable(DataTable):
    """Rows are keyed by the run directory's path; cells are updated only when they change."""

    # DataTable's home/end scroll sideways (to the first/last column): in a list of runs they
    # go to the newest/oldest run, as they do in any list.
    BINDINGS = [
        Binding("home", "first_run", "First run", show=False),
        Binding("end", "last_run", "Last run", show=False),
    ]

    def action_first_run(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_run(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._cells: dict[str, tuple] = {}
        self._id_width: int | None = None

    @staticmethod
    def id_width_for(screen_width: int) -> int:
        """Room for the run id so every column fits: the other five columns, their padding and
        the border take about 52 columns (arms are clipped to 10)."""
        return max(14, (screen_width or 120) - 52)

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    def sync(self, runs: tuple[RunSummary, ...], now: float, id_width: int = 60) -> None:
        if id_width != self._id_width:  # the terminal changed size: columns are rebuilt to fit
            self._id_width = id_width
            if self._cells:
                self.clear()
                self._cells = {}
        seen = set()
        for run in runs:
            key = str(run.path)
            seen.add(key)
            cells = self._cells_for(run, now, id_width)
            old = self._cells.get(key)
            if old is None:
                self.add_row(*cells, key=key)
            else:
                kept = []
                for (_, col), new_cell, old_cell in zip(COLUMNS, cells, old):
                    if str(new_cell) != str(old_cell) or getattr(new_cell, "style", None) != getattr(old_cell, "style", None):
                        # a cell as wide as before cannot move its column's width: skip that work (and its
                        # layout pass) for the counts that tick every second, "37/100" -> "38/100"
                        self.update_cell(key, col, new_cell, update_width=cell_len(str(new_cell)) != cell_len(str(old_cell)))
                        kept.append(new_cell)
                    else:
                        kept.append(old_cell)  # the object the table holds (the sort finds rows by it)
                cells = tuple(kept)
            self._cells[key] = cells
        for key in [k for k in self._cells if k not in seen]:
            self.remove_row(key)
            del self._cells[key]
        self._sort_newest_first(runs)

    def _sort_newest_first(self, runs: tuple[RunSummary, ...]) -> None:
        """Newest launch at the top (run_sort_key), stable across restarts; sorted only when needed."""
        wanted = [str(r.path) for r in sorted(runs, key=lambda r: run_sort_key(r.path.name), reverse=True)]
        if [row.key.value for row in self.ordered_rows] == wanted:
            return
        rank = {id(self._cells[k][0]): i for i, k in enumerate(wanted)}
        self.sort("run", key=lambda cell: rank.get(id(cell), len(rank)))

    @staticmethod
    def _cells_for(run: RunSummary, now: float, id_width: int = 60) -> tuple:
        total = "?" if run.total is None else str(run.total)
        done = run.done if run.done is not None else run.rows
        succ = "…" if run.loading else f"{run.successes}/{run.rows}"
        age = fmt_age(None if run.heartbeat_mtime is None else max(0.0, now - run.heartbeat_mtime)) if run.live else ""
        return (Text(middle_clip(run.run_id, id_width), no_wrap=True), state_text(run.state), middle_clip(run.arm, 10),
                f"{done}/{total}", succ, age)


def middle_clip(text: str, width: int) -> str:
    """`flow-officia…60101-000000`: the start names the plan and arm, the end is the timestamp."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]
