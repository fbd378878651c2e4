"""The runs list: one row per run directory, updated in place by key (never cleared)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding

from console.render import fmt_age, state_text
from console.watcher import RunSummary
from console.widgets.table import Table

ID_MIN, ARM_MIN = 14, 10  # the narrowest the run id and the arm are clipped to

COLUMNS = (("run", "run"), ("state", "state"), ("arm", "arm"), ("done", "done"), ("succ", "successes"), ("heartbeat", "heartbeat"))


class RunsTable(Table):
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
        self._widths: tuple[int, ...] | None = None  # each column's width, in COLUMNS' order
        self._last: tuple[tuple[RunSummary, ...], float] | None = None  # what sync showed last

    def on_mount(self) -> None:
        self._add_columns(None)

    def _add_columns(self, widths: tuple[int, ...] | None) -> None:
        for i, (label, key) in enumerate(COLUMNS):
            self.add_column(label, key=key, width=widths[i] if widths else None)

    def widths_for(self, runs: tuple[RunSummary, ...], now: float, width: int,
                   height: int | None = None) -> tuple[int, ...]:
        """Each column's width, so that every column fits `width` (the table's, inside its border):
        the other columns get their widest value now (done and succ up to total/total, so that a
        count ticking up never pushes a column off the screen), then the run id and the arm share
        the rest, each whole when both fit; otherwise the arm keeps its whole name (it read
        "tiny…asked" beside a whole id at 80-100 columns) and the id is middle-clipped to the
        rest (its start names the plan, its end the launch time), down to ID_MIN. Fixed widths:
        DataTable's own only ever grow, and a table rebuilt with them is drawn at its labels'
        widths until its next idle."""
        width = width or 120
        cells = [self._cells_for(r, now, 1000, 1000) for r in runs]
        totals = [str(r.total if r.total is not None else r.rows) for r in runs]
        need = {"state": max([0, *(cell_len(str(c[1])) for c in cells)]),
                "done": max([0, *(2 * len(t) + 1 for t in totals)]),
                "succ": max([0, *(_succ_width(r) for r in runs)]),
                "heartbeat": max([0, *(cell_len(str(c[5])) for c in cells)])}
        need = {label: max(len(label), n) for label, n in need.items()}
        others = sum(n + 2 * self.cell_padding for n in need.values())
        scrollbar = self.styles.scrollbar_size_vertical if height is not None and len(runs) + 1 > height else 0
        room = width - scrollbar - others - 4 * self.cell_padding  # less the id's and the arm's padding
        id_full = max([3, *(len(r.run_id) for r in runs)])
        arm_full = max([3, *(len(r.arm) for r in runs)])
        if id_full + arm_full <= room:
            id_w, arm_w = id_full, arm_full
        else:  # the arm is what tells runs of one plan apart: whole, unless the id would go below ID_MIN
            arm_w = min(arm_full, max(ARM_MIN, room - ID_MIN))
            id_w = max(ID_MIN, room - arm_w)
        return id_w, need["state"], arm_w, need["done"], need["succ"], need["heartbeat"]

    def on_resize(self) -> None:
        if self._last is not None:  # refit at once, with the size the table now has
            self.sync(*self._last)

    def sync(self, runs: tuple[RunSummary, ...], now: float, width: int | None = None,
             height: int | None = None) -> None:
        """Show `runs`; the columns fit `width` x `height` (default: the table's own size)."""
        self._last = (runs, now)
        width = width or self.size.width
        height = height or self.size.height or None
        widths = self.widths_for(runs, now, width, height)
        if widths != self._widths:  # the terminal, a name or a count's width changed: columns rebuilt to fit
            self._widths = widths
            cursor_key = self._cursor_key() if self._cells else None
            self.clear(columns=True)
            self._add_columns(widths)
            self._cells = {}
            self._fill(runs, now)
            if cursor_key is not None and cursor_key in self._cells:
                self.move_cursor(row=self.get_row_index(cursor_key))  # clear() put the cursor on row 0
            return
        self._fill(runs, now)

    def _cursor_key(self) -> str | None:
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:
            return None

    def _fill(self, runs: tuple[RunSummary, ...], now: float) -> None:
        id_width, arm_width = (self._widths[0], self._widths[2]) if self._widths else (60, 10)
        seen = set()
        for run in runs:
            key = str(run.path)
            seen.add(key)
            cells = self._cells_for(run, now, id_width, arm_width)
            old = self._cells.get(key)
            if old is None:
                self.add_row(*cells, key=key)
            else:
                kept = []
                for (_, col), new_cell, old_cell in zip(COLUMNS, cells, old):
                    if str(new_cell) != str(old_cell) or getattr(new_cell, "style", None) != getattr(old_cell, "style", None):
                        # the widths are fixed (widths_for): no cell moves a column, and no layout pass
                        self.update_cell(key, col, new_cell)
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
        wanted = [str(r.path) for r in sorted(runs, key=lambda r: r.sort_key, reverse=True)]
        if [row.key.value for row in self.ordered_rows] == wanted:
            return
        rank = {id(self._cells[k][0]): i for i, k in enumerate(wanted)}
        self.sort("run", key=lambda cell: rank.get(id(cell), len(rank)))

    @staticmethod
    def _cells_for(run: RunSummary, now: float, id_width: int = 60, arm_width: int = 10) -> tuple:
        total = "?" if run.total is None else str(run.total)
        done = run.done if run.done is not None else run.rows
        succ = "…" if run.loading else succ_text(run)
        age = fmt_age(None if run.heartbeat_mtime is None else max(0.0, now - run.heartbeat_mtime)) if run.live else ""
        return (Text(middle_clip(run.run_id, id_width), no_wrap=True), state_text(run.state), middle_clip(run.arm, arm_width),
                f"{done}/{total}", succ, age)


def succ_text(run: RunSummary) -> str:
    """successes/episodes; a comparison run's arms side by side, in their registered order ('4/13 12/12')."""
    if run.by_arm:
        return " ".join(f"{k}/{n}" for _, k, n in run.by_arm)
    return f"{run.successes}/{run.rows}"


def _succ_width(run: RunSummary) -> int:
    """The widest the succ cell can get (every count up to the total), so a count ticking up never
    pushes a column off the screen. A comparison run's total is both arms' episodes: each arm's
    count goes up to its share ('60/60 60/60' for 120, not '120/120 120/120', whose four spare
    columns clipped the arm to 'clumsy…-steady' at 80 columns)."""
    arms = max(len(run.by_arm), 1)
    most = len(str(max(-(-(run.total or 0) // arms), run.rows if arms == 1 else 0,
                       *(n for _, _, n in run.by_arm))))
    return arms * (2 * most + 1) + arms - 1


def middle_clip(text: str, width: int) -> str:
    """`flow-officia…60101-000000`: the start names the plan and arm, the end is the timestamp."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]
