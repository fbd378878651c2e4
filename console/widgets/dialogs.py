"""Modal screens: confirmation, launch, results, help."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from console.preregs import (
    PreregEntry,
    appends_to,
    freeze_hint,
    launch_settings,
    report_argv,
    run_report,
    validate_launch,
)
from console.runs import shown_path
from console.widgets.images import DRAWS_CELLS, Image
from console.widgets.text import TextBlock
from prereg import rundir as rd
from prereg.core.safe_read import CHART_MAX_BYTES, Unreadable, check_regular
from prereg.outputs.publish import SPACE_KEY
from prereg.rundir.files import load_json_object
from prereg.rundir.rows import ENGAGED_CM, KNOCK_AWAY_CM


class ConfirmScreen(ModalScreen[bool]):
    """Says what will happen and asks yes or no; Escape is no."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No (esc)")]

    def __init__(self, title: str, body: str, yes_label: str = "Yes", danger: bool = False):
        super().__init__()
        self.title_text, self.body, self.yes_label, self.danger = title, body, yes_label, danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="danger" if self.danger else ""):
            # a TextBlock wraps: a Label cut 'Stop <long run id> at an episode boundar' at 160 columns
            yield TextBlock(Text(self.title_text, style="bold"), id="dialog-title")
            yield TextBlock(self.body, id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button(f"{self.yes_label} (y)", id="yes", variant="error" if self.danger else "warning")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def _comparison_option(choice: str) -> str:
    a, _, b = choice.partition(",")
    return f"{a} vs {b} · comparison run of both arms (--arms {choice})"


def _entry_label(e: PreregEntry) -> str:
    """A pre-registration in the launch list: its id and path, marked when it cannot be read or is a draft."""
    mark = "  [unreadable]" if e.problem else "  [not frozen]" if e.frozen is False else ""
    return f"{e.prereg_id}  ({shown_path(e.path)}){mark}"


def settings_renderable(lines: list[tuple[str, str]], hint: str | None = None, problem: str | None = None):
    """The launch's settings as a two-column grid: a long value wraps under its own column, never
    under the labels ("gates   GPU-hours ≤ 0.25; ... stall" then "beyond 4x ..." at the left edge)."""
    from rich.console import Group
    from rich.table import Table

    grid = Table.grid()
    grid.add_column(no_wrap=True, style="grey62", min_width=8)  # "policy  ", "arm A   ": the labels are short
    grid.add_column(ratio=1, overflow="fold")
    for label, value in lines:
        grid.add_row(label, value)
    parts = [Text(hint, style="bold yellow")] if hint else []
    parts.append(grid)
    if problem:
        parts.append(Text(problem, style="yellow"))
    return Group(*parts)


class LaunchScreen(ModalScreen[tuple | None]):
    """Pick a pre-registration and an arm; validation errors are shown here, in place."""

    BINDINGS = [Binding("escape", "cancel", "Cancel (esc)")]

    def __init__(self, entries: list[PreregEntry], last: dict | None = None):
        super().__init__()
        self.entries = {str(e.path): e for e in entries}
        self.last = last or {}  # the previous launch's {"prereg": path, "arm": name}, chosen again

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text("Launch a pre-registered run", style="bold"), id="dialog-title")
            if not self.entries:
                yield TextBlock("No pre-registrations found (*.md in the --prereg-dir folders).", id="launch-empty")
            yield Select(
                [(_entry_label(e), str(e.path)) for e in self.entries.values()],
                prompt="pre-registration", id="prereg",
            )
            yield Select([], prompt="arm", id="arm")
            yield Input(placeholder="arm name (not listed in the front matter)", id="arm-input")
            yield TextBlock("", id="launch-settings")
            yield TextBlock(Text("Starts fontaine-eval detached (its own session, output to runs/<run_id>/driver.log): "
                              "quitting the console leaves it running.", style="grey62"), id="launch-note")
            yield TextBlock("", id="launch-error")
            with Horizontal(id="dialog-buttons"):
                yield Button("Launch", id="launch", variant="success")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#arm-input").display = False
        self.query_one("#launch-error").display = False
        self.query_one("#launch-settings").display = False
        last = str(self.last.get("prereg") or "")
        if last in self.entries:
            self.query_one("#prereg", Select).value = last

    @on(Select.Changed, "#prereg")
    def _prereg_changed(self, event: Select.Changed) -> None:
        entry = self.entries.get(str(event.value)) if event.value != Select.NULL else None
        arm_select = self.query_one("#arm", Select)
        arms = entry.arms if entry else []
        comparisons = entry.comparisons if entry and arms else []  # a comparison run: "A,B", as --arms takes it
        arm_select.set_options([(a, a) for a in arms] + [(_comparison_option(c), c) for c in comparisons])
        if arms:
            last_arm = self.last.get("arm") if str(self.last.get("prereg") or "") == str(event.value) else None
            arm_select.value = last_arm if last_arm in arms + comparisons else arms[0]
        arm_select.display = bool(arms) or entry is None
        self.query_one("#arm-input").display = entry is not None and not arms
        self.query_one("#launch-error").display = False
        if entry is not None and entry.problem:
            self.show_error(entry.problem)
        self.show_settings()

    @on(Select.Changed, "#arm")
    def _arm_changed(self) -> None:
        self.show_settings()

    def show_settings(self) -> None:
        """The chosen arm's frozen settings and the plan's gates; or why it cannot launch (an
        unfrozen document says how to freeze it)."""
        entry, arm = self.chosen()
        box = self.query_one("#launch-settings", Static)
        if entry is None or not arm:
            box.display = False
            return
        lines, problem = launch_settings(entry.path, arm)
        # a draft is told how to freeze it; one that does not validate is told why first (freezing would fail)
        only_unfrozen = entry.frozen is False and (not problem or "not frozen" in problem)
        box.update(settings_renderable(lines, freeze_hint(entry.path) if only_unfrozen else None,
                                       problem if problem and not only_unfrozen else None))
        box.display = True

    def chosen(self) -> tuple[PreregEntry | None, str]:
        value = self.query_one("#prereg", Select).value
        entry = self.entries.get(str(value)) if value != Select.NULL else None
        arm_select = self.query_one("#arm", Select)
        if arm_select.display and arm_select.value != Select.NULL:
            arm = str(arm_select.value)
        else:
            arm = self.query_one("#arm-input", Input).value.strip()
        return entry, arm

    def show_error(self, message: str) -> None:
        err = self.query_one("#launch-error", Static)
        err.update(Text(message, style="bold red"))
        err.display = True

    @on(Button.Pressed, "#launch")
    @on(Input.Submitted, "#arm-input")
    def _launch(self) -> None:
        entry, arm = self.chosen()
        if entry is None:
            self.show_error("choose a pre-registration")
            return
        problem = entry.problem or validate_launch(entry.path, arm)  # an unreadable document: why, not "choose an arm"
        if problem:
            self.show_error(problem)
            return
        self.dismiss((entry.path, entry.prereg_id, arm))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class ResultsScreen(ModalScreen[None]):
    """Runs `fontaine-prereg report` in a thread and shows its output and the chart path.

    The selected run is reported with the latest ended run of each other arm of the same
    pre-registration, so the comparator reads (paired deltas) have their runs.
    """

    # Esc closes (the report goes on in its thread and still writes its files); `q` does nothing here.
    BINDINGS = [Binding("escape", "close", "Close"), Binding("o", "open_page", "Open the page")]

    def __init__(self, prereg_file: str, run_dir: Path, arm_runs: list[tuple[str, Path]]):
        super().__init__()
        self.prereg_file, self.run_dir, self.arm_runs = prereg_file, run_dir, arm_runs

    def compose(self) -> ComposeResult:
        argv = report_argv(self.prereg_file, self.arm_runs, append=appends_to(self.prereg_file))
        with Vertical(id="results"):
            yield Label(Text(f"Results: {self.run_dir.name}", style="bold"), id="dialog-title")
            yield TextBlock(Text("running: fontaine-prereg " + " ".join(argv[3:]) + " …", style="grey62"),
                         id="results-status")
            with VerticalScroll():
                yield Image(None, id="results-chart")
                yield TextBlock("", id="results-cells")
                yield TextBlock("", id="results-output")
            yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        self.query_one("#results-chart").display = False
        self.query_one("#results-cells").display = False
        self.run_report_worker()

    @work(thread=True, exclusive=True, group="report")
    def run_report_worker(self) -> None:
        code, output = run_report(self.prereg_file, self.arm_runs)
        cells = self.cell_chart() if code == 0 and DRAWS_CELLS else None
        self.app.call_from_thread(self.show_output, code, output, cells)

    def cell_chart(self) -> Text | None:
        """In a terminal drawn in cells, the chart as text and eighth-blocks (the PNG's labels would be
        smudges), drawn from what the report just recorded in results.json: never a second report."""
        from console.cell_chart import results_cell_chart

        width = min(100, self.app.size.width) - 8  # the dialog's width (app.py's #results) less frame, padding, scrollbar
        results, _why = load_json_object(self.run_dir / rd.RESULTS_JSON)
        return results_cell_chart(results, max(40, width))

    def show_output(self, code: int, output: str, cells: Text | None = None) -> None:
        if not self.is_attached:  # closed while the report ran
            return
        chart = self.run_dir / rd.CHART
        status = Text()
        if code == 0:
            status.append("report written", style="bold green")
            status.append(f" and appended to {self.prereg_file}" if appends_to(self.prereg_file)
                          else " (a shipped example: results.md and chart.png only, the document is left as is)")
        else:
            status.append(f"the report command exited with {code}", style="bold red")
        status.append(f"\nchart: {shown_path(chart)}" + ("" if chart.exists() else " (not written)"))
        results_md = self.run_dir / rd.RESULTS
        if results_md.exists():
            status.append(f"\nreads: {shown_path(results_md)}")
        page = self.run_dir / rd.RESULTS_HTML
        if page.exists():
            status.append(f"\npage: {shown_path(page)}  (o opens it)")
            published = (rd.read_json(self.run_dir / rd.RESULTS_JSON) or {}).get(SPACE_KEY)
            if isinstance(published, dict) and isinstance(published.get("page_url"), str):
                status.append(f"\non the Space: {published['page_url']}")
        self.query_one("#results-status", Static).update(status)
        self.query_one("#results-output", Static).update(Text(output or "(no output)"))
        if cells is not None:
            self.query_one("#results-cells", Static).update(cells)
            self.query_one("#results-cells").display = True
        else:
            self.show_chart(chart)

    def show_chart(self, chart: Path) -> None:
        """The chart itself, inline (textual-image: graphics or half-blocks), above the report's words."""
        widget = self.query_one("#results-chart", Image)
        try:
            from PIL import Image as PILImage

            check_regular(chart, CHART_MAX_BYTES)  # a FIFO named chart.png would hold the open forever
            with PILImage.open(chart) as img:
                img.load()
                widget.image = img.convert("RGB")
            widget.styles.height = max(8, min(22, (self.app.size.height - 12) // 1))
        except (OSError, ValueError, Unreadable):  # no chart, not a file, or one that does not decode
            widget.display = False
            return
        widget.display = True

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)

    def action_open_page(self) -> None:
        """The page in the system's browser where there is a display, else the words to copy it (tmux over SSH)."""
        from console.opener import open_page

        opened, said = open_page(self.run_dir / rd.RESULTS_HTML)
        self.notify(said, title="results page", severity="information" if opened else "warning", timeout=20)


# The help: prose paragraphs and (key, what it does) lists. Rendered as grids so that a long
# line wraps inside its own column, under its own text, at any width (it was one block of
# hard-wrapped lines, which a narrow terminal broke again mid-line: "(must be / 0);").
HELP_INTRO = "[b]fontaine-console[/b] babysits runs through their run directories (runs/<run_id>/)."
HELP_SECTIONS: tuple[tuple[str, str | None, tuple[tuple[str, str], ...]], ...] = (
    ("Keys", None, (
        ("l", "launch: pick a frozen pre-registration and an arm"),
        ("d", "launch the demo pre-registration (prereg/examples/demo.md, arm scripted)"),
        ("s", "stop the selected run at an episode boundary (writes STOP; asks first)"),
        ("K", "escalate: SIGTERM to the run's process group, then SIGKILL (asks twice)"),
        ("r", "results: the pre-registration report of the selected run (asks while it runs)"),
        ("o", "in the results view: open results.html in the browser (or the command to copy it)"),
        ("t", "send a Discord test post"),
        ("c", "compare the arms of the selected run's pre-registration (paired deltas), live"),
        ("T", "real session: mark real trials of the selected run's arm (a plan with reads.real)"),
        ("R", "resume a stopped, failed or died run (fontaine-eval --resume; asks first)"),
        ("a", "archive an ended run: move it to RUNS/.archive/ (asks first; nothing deleted)"),
        ("/", "filter the runs list (words in the id, arm or state); esc clears it"),
        ("g", "the per-seed grid and back: arrows pick a seed, enter or a click opens it"),
        ("p, 1-6", "in a small terminal: the detail panel shown (counts, pace, seeds, rows, progress; a crossed design's variants)"),
        ("up/down", "select a run; home/end the newest/oldest"),
        ("ctrl+p", "command palette"),
        ("?", "this help"),
        ("q", "quit: runs keep running, detached; reopen the console to reattach"),
    )),
    ("A seed's view", "(enter on a grid cell, or a click) The video, played in the terminal (Kitty/Sixel "
     "where the terminal has them, colour half-blocks elsewhere, plain tmux included), first and last "
     "frames beside it; the row, every field in words; the predict trail (predicts.jsonl, when the run "
     "recorded one).", (
        ("space", "play/pause"),
        ("left/right", "step one frame (or , and .; or click the bar)"),
        ("[ ]", "ten frames back/on"),
        ("home/end", "first/last frame"),
        ("v w p", "video, row, predicts"),
        ("n", "a crossed design's seed: its episode on the next variant (each variant's listed over the player)"),
        ("?", "this help (here and in the compare view)"),
        ("esc", "back to the runs list"),
    )),
    ("States", None, (
        ("starting, running", "the driver is at work (process checked by pid and create time)"),
        ("stopping", "STOP was written; in-flight episodes finish, then `stopped`"),
        ("stopped, done, failed", "final states written by the driver"),
        ("died", "the process is gone without a final state: see driver.log, resume with "
                 "fontaine-eval --resume runs/<run_id>"),
    )),
    ("Panels", "Successes with a Wilson 95% interval; knock-aways (progress_final <= "
     f"{KNOCK_AWAY_CM:g} cm); engaged (progress > {ENGAGED_CM:g} cm) vs quiet; zero-fallbacks per predict; "
     "reset strikes (must be 0); error rows; "
     "corrupt lines of rows.jsonl (counted, never parsed as data). Tripwires (GPU-hours, pace, heartbeat "
     "stall) are evaluated by prereg.rundir.gates, the same code the driver enforces: amber warns before a "
     "limit, a red banner means it tripped.", ()),
)


def help_text():
    """The help as one renderable: each list a two-column grid (the keys never wrap; a long
    description wraps under itself), each paragraph reflowed to the width it is given."""
    from rich.console import Group
    from rich.table import Table

    parts: list = [Text.from_markup(HELP_INTRO)]
    for title, prose, entries in HELP_SECTIONS:
        parts.append(Text())
        parts.append(Text.from_markup(f"[b]{title}[/b]"))
        if prose:
            parts.append(Text(prose))
        if entries:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(no_wrap=True, style="bold", min_width=10)
            grid.add_column(ratio=1, overflow="fold")
            for key, what in entries:
                grid.add_row(Text(key), Text(what))
            parts.append(grid)
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield TextBlock(help_text())

    def action_close(self) -> None:
        self.dismiss(None)
