"""The runs list: one row per run directory, updated in place by key (never cleared)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from console.render import fmt_age, state_text
from console.watcher import RunSummary

COLUMNS = (("run", "run"), ("state", "state"), ("arm", "arm"), ("done", "done"), ("succ", "successes"), ("heartbeat", "heartbeat"))


class RunsTable(DataTable):
    """Rows are keyed by the run directory's path; cells are updated only when they change."""

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._cells: dict[str, tuple] = {}

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    def sync(self, runs: tuple[RunSummary, ...], now: float) -> None:
        seen = set()
        for run in runs:
            key = str(run.path)
            seen.add(key)
            cells = self._cells_for(run, now)
            old = self._cells.get(key)
            if old is None:
                self.add_row(*cells, key=key)
            else:
                for (_, col), new_cell, old_cell in zip(COLUMNS, cells, old):
                    if str(new_cell) != str(old_cell) or getattr(new_cell, "style", None) != getattr(old_cell, "style", None):
                        self.update_cell(key, col, new_cell, update_width=True)
            self._cells[key] = cells
        for key in [k for k in self._cells if k not in seen]:
            self.remove_row(key)
            del self._cells[key]

    @staticmethod
    def _cells_for(run: RunSummary, now: float) -> tuple:
        total = "?" if run.total is None else str(run.total)
        done = run.done if run.done is not None else run.rows
        succ = "…" if run.loading else f"{run.successes}/{run.rows}"
        age = fmt_age(None if run.heartbeat_mtime is None else max(0.0, now - run.heartbeat_mtime)) if run.live else ""
        return (Text(run.run_id, overflow="ellipsis", no_wrap=True), state_text(run.state), run.arm,
                f"{done}/{total}", succ, age)
