"""Where the console's keys take the user: a seed's view (from the grid), the compare view (`c`), the
real session (`T`), the runs filter (`/`), the help (`?`). `ViewActions` is mixed into the app (console/app.py); the app's
message handlers (a seed chosen, the filter typed into) call these.
"""

from __future__ import annotations

from textual.widgets import Input

from console.widgets.compare_screen import CompareScreen
from console.widgets.dialogs import HelpScreen
from console.widgets.runs_table import RunsTable
from console.widgets.seed_screen import SeedScreen


class ViewActions:
    """The app's actions that open a screen or a box (FontaineApp mixes them in: `self` is the app)."""

    def open_seed(self, seed, arm: str | None) -> None:
        """A seed chosen in the grid: its view; back from it, the keys move the runs list again."""
        if self.detail is None:
            return
        self.push_screen(SeedScreen(self.detail.info.path, self.detail.info.run_id, seed, arm=arm),
                         self.back_from_seed)

    def back_from_seed(self, _result=None) -> None:
        """Back from a seed's view, up/down move the runs list again (the grid keeps its cursor for
        the next `g`): keys that silently moved a hidden cursor made `r` report a run not meant."""
        screen = self._main_screen()
        if screen is not None:
            screen.query_one(RunsTable).focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_compare(self) -> None:
        """`c`: the arms of the selected run's pre-registration side by side, live."""
        info = self.selected_info()
        if info is None:
            return
        prereg = info.prereg
        if prereg is None or not prereg.id:
            self.notify(f"{info.run_id} has no pre-registration: no arms to compare", severity="warning")
            return
        self.push_screen(CompareScreen(prereg.id, focus=info.path))  # a comparison run: both its arms

    def action_real_session(self) -> None:
        """`T`: the real session of the selected run's arm (console/widgets/real_session.py)."""
        from console.real_trials import NoRealRead, RealSession
        from console.widgets.real_session import RealSessionScreen

        info = self.selected_info()
        if info is None:
            return
        try:
            session = RealSession.open(info.prereg_path, info.arm, info.path)
        except NoRealRead as exc:
            self.notify(str(exc), severity="warning", timeout=10)
            return
        self.push_screen(RealSessionScreen(session, self.runs_dir))

    def action_filter(self) -> None:
        screen = self._main_screen()
        if screen is None:
            return
        box = screen.query_one("#filter", Input)
        box.disabled = False
        box.add_class("shown")
        box.value = self.run_filter
        box.focus()

    def close_filter(self, clear: bool = False) -> None:
        screen = self._main_screen()
        if screen is None:
            return
        if clear:
            self.run_filter = ""
        box = screen.query_one("#filter", Input)
        box.remove_class("shown")
        box.disabled = True
        screen.query_one(RunsTable).focus()
        self._draw()
