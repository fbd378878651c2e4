"""The real session (`T` on a run whose plan registers a real read): what to set up on the rig next, a
timer, and keys that mark the trial, each mark one fsynced line of the run's real.jsonl (console/real_trials.py).

The selected seeds are listed in the order to run them, each with its mark; the current one (the first
owed: reopening resumes there) shows its initial condition in numbers and the sim's front view, both
written by the engine (`fontaine-eval --sim-predictions RUN`). `space` starts and stops the timer (a
trial's times: success, failure and knock-away need it started, so a double press marks no next seed;
a void does not), `y` success, `n` failure, `k` knock-away,
`v` void (a reason is asked; cancelled, nothing is written), `P` the operator's progress share, `V` a
video path, `o` the operator. The operator's name (and the checkpoint's sha256, where the arm pins none)
is asked once and remembered.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Static

from console.real_trials import RealSession, recall, remember, sha_problem
from console.widgets.images import Image
from console.widgets.text import TextBlock
from prereg.rundir.files import REAL, utc_iso
from prereg.rundir.real import FAILURE, KNOCK_AWAY, SUCCESS, VOID

MARK = {SUCCESS: ("✓", "green"), FAILURE: ("✗", "red"), KNOCK_AWAY: ("K", "magenta"), VOID: ("∅", "yellow")}
WORDS = {SUCCESS: "success", FAILURE: "failure", KNOCK_AWAY: "knock-away", VOID: "void"}


class AskScreen(ModalScreen[str | None]):
    """One line asked: `enter` gives it (after `check`, which says what is wrong), `escape` gives None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical { width: 72; max-width: 95%; height: auto; border: round $accent; padding: 0 1; }
    AskScreen #ask-title, AskScreen #ask-problem { height: auto; }
    AskScreen #ask-problem { color: $error; }
    """

    def __init__(self, title: str, value: str = "", check=None, placeholder: str = ""):
        super().__init__()
        self.title_text, self.value, self.check, self.placeholder = title, value, check, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="ask-title")
            yield Input(self.value, placeholder=self.placeholder, id="ask-input")
            yield Static("", id="ask-problem")
            yield Static(Text("enter: keep · esc: cancel (nothing written)", style="grey62"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        why = self.check(event.value) if self.check else None
        if why:
            self.query_one("#ask-problem", Static).update(why)
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


def _required(name: str):
    return lambda v: f"the {name} cannot be empty" if not v.strip() else None


def _progress_problem(v: str) -> str | None:
    if not v.strip():
        return None  # no progress: cleared
    try:
        x = float(v)
    except ValueError:
        return f"{v!r} is not a number: the share of the task done, 0 to 1 (e.g. 0.5)"
    return None if 0.0 <= x <= 1.0 else f"{x:g} is outside [0, 1]: the share of the task done (e.g. 0.5)"


class RealSessionScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("space", "timer", "Timer"),
        Binding("y", "mark('success')", "Success"),
        Binding("n", "mark('failure')", "Fail"),
        Binding("k", "mark('knock_away')", "Knock"),
        Binding("v", "void", "Void"),
        Binding("P", "progress", "Progress"),
        Binding("V", "video", "Video"),
        Binding("o", "operator", "Name"),
    ]
    AUTO_FOCUS = None
    DEFAULT_CSS = """
    RealSessionScreen #real-title, RealSessionScreen #real-seeds, RealSessionScreen #real-status { height: auto; padding: 0 1; }
    RealSessionScreen #real-body { height: 1fr; }
    RealSessionScreen #real-setup { width: 1fr; min-width: 40; height: auto; padding: 0 1; }
    RealSessionScreen #real-picture { width: 1fr; height: 1fr; }
    """

    def __init__(self, session: RealSession, runs_dir: Path):
        super().__init__()
        self.session, self.runs_dir = session, Path(runs_dir)
        self.memory = recall(self.runs_dir)
        self.operator: str | None = self.memory.get("operator")
        self.sha: str | None = session.pin or self.memory.get("checkpoint_sha256")
        self.progress: float | None = None
        self.video: str | None = None
        self.shown_at: float | None = None  # when the current seed was shown (a trial without the timer starts here)
        self.timer_from: float | None = None
        self.timer_to: float | None = None
        self.seed_shown: int | None = None
        self.written = 0  # marks this screen wrote
        self.asking = False
        self._real_stamp = _stamp(session.run_dir / REAL)

    def compose(self) -> ComposeResult:
        yield TextBlock("", id="real-title")
        yield TextBlock("", id="real-seeds")
        with Horizontal(id="real-body"):
            yield TextBlock("", id="real-setup")
            yield Image(None, id="real-picture")
        yield TextBlock("", id="real-status")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.show_seed()
        self.set_interval(1.0, self._tick)
        self.call_after_refresh(self.ask_missing)

    # -- what is on screen

    def _now(self) -> float:
        return self.app.clock()

    def show_seed(self) -> None:
        s = self.session
        seed = s.current
        if seed != self.seed_shown:
            self.seed_shown, self.shown_at = seed, self._now()
            self.timer_from = self.timer_to = None
            self.progress = self.video = None
        title = Text.assemble((f"Real trials · arm {s.arm} · run {s.run_dir.name}", "bold"),
                              f" · {s.done}/{len(s.selected)} read · operator {self.operator or '(not set)'}")
        self.query_one("#real-title", Static).update(title)
        seeds = Text("seeds in order: ")
        for i in s.selected:
            mark = s.marks.get(i) if i not in s.owed else (VOID if s.marks.get(i) == VOID else None)
            glyph, style = MARK.get(mark, ("·", "grey50"))
            if i == seed:
                seeds.append(f"[{i}]", style="bold reverse")
            else:
                seeds.append(f"{i}{glyph if i not in s.owed or mark else ''}", style=style)
            seeds.append(" ")
        self.query_one("#real-seeds", Static).update(seeds)
        self._show_setup(seed)
        self._tick()

    def _show_setup(self, seed: int | None) -> None:
        setup_w = self.query_one("#real-setup", Static)
        picture = self.query_one("#real-picture", Image)
        if seed is None:
            setup_w.update(Text(f"Every selected seed has its trial ({len(self.session.selected)}). "
                                "Run the report to read them (r on the main screen).", style="bold green"))
            picture.image = None
            return
        setup, why = self.session.setup(seed)
        lines = Text(f"Set up seed {seed} on the rig\n", style="bold")
        if setup is None:
            lines.append(f"no setup for seed {seed}: {why}\n", style="yellow")
        else:
            lines.append("\n".join(setup.lines()) + "\n")
        extra = []
        if self.progress is not None:
            extra.append(f"progress {self.progress:g}")
        if self.video:
            extra.append(f"video {self.video}")
        if extra:
            lines.append(" · ".join(extra) + "\n", style="cyan")
        setup_w.update(lines)
        picture.image = _load(setup.picture) if setup is not None and setup.picture else None

    def _tick(self) -> None:
        if not self.is_attached:
            return
        stamp = _stamp(self.session.run_dir / REAL)
        if stamp != self._real_stamp:  # trials written elsewhere (another console, an import): shown as the file says
            self._real_stamp = stamp
            self.session.reload()
            self.show_seed()
            return
        if self.session.current is None:
            words = Text(f"{self.written} trial(s) marked here · esc: back", style="grey62")
        elif self.timer_from is None:
            words = Text("space: start the timer as the trial starts (a mark needs it) · v void before it",
                         style="grey62")
        else:
            end = self.timer_to if self.timer_to is not None else self._now()
            secs = int(max(0.0, end - self.timer_from))
            state = "stopped" if self.timer_to is not None else "running"
            words = Text(f"timer {secs // 60}:{secs % 60:02d} ({state}) · y success · n failure · k knock-away · v void",
                         style="bold" if self.timer_to is None else "")
        self.query_one("#real-status", Static).update(words)

    # -- asking once

    def ask_missing(self) -> None:
        """The operator's name, then the checkpoint's sha256 where the plan pins none: asked once."""
        if self.asking or not self.is_attached:
            return
        if not self.operator:
            self._ask(AskScreen("Operator's name (kept for the next sessions):", check=_required("operator's name")),
                      self._got_operator)
        elif not self.sha:
            self._ask(AskScreen(f"The arm {self.session.arm} pins no checkpoint sha256: the checkpoint's sha256 "
                                "(sha256sum of the checkpoint on the rig):", check=sha_problem), self._got_sha)

    def _ask(self, screen: AskScreen, then) -> None:
        self.asking = True

        def done(value):
            self.asking = False
            then(value)

        self.app.push_screen(screen, done)

    def _got_operator(self, name: str | None) -> None:
        if name:
            self.operator = name
            remember(self.runs_dir, operator=name)
            self.show_seed()
            self.ask_missing()

    def _got_sha(self, sha: str | None) -> None:
        if sha:
            self.sha = sha.strip().lower()
            remember(self.runs_dir, checkpoint_sha256=self.sha)

    # -- actions

    def action_timer(self) -> None:
        if self.session.current is None:
            return
        if self.timer_from is None or self.timer_to is not None:
            self.timer_from, self.timer_to = self._now(), None
        else:
            self.timer_to = self._now()
        self._tick()

    def action_mark(self, outcome: str, reason: str | None = None) -> None:
        seed = self.session.current
        if seed is None:
            self.notify("no seed is owed: every selected seed has its trial", severity="warning")
            return
        if outcome != VOID and self.timer_from is None:  # a trial's times are its own; a double press marks nothing
            self.notify(f"seed {seed}: start the timer (space) as the trial starts, then mark it; nothing written",
                        severity="warning")
            return
        if not self.operator or not self.sha:
            self.notify("the operator (and the checkpoint's sha256) first: nothing written", severity="warning")
            self.ask_missing()
            return
        start = self.timer_from if self.timer_from is not None else self.shown_at  # (a void: from when it was shown)
        end = self.timer_to if self.timer_to is not None else self._now()
        try:
            self.session.mark(seed, outcome, operator=self.operator, checkpoint_sha256=self.sha,
                              started_at=utc_iso(start), ended_at=utc_iso(max(start, end)), void_reason=reason,
                              progress=self.progress, video=self.video)
        except (ValueError, OSError) as exc:
            self.notify(f"seed {seed} not written: {exc}", severity="error", timeout=15)
            return
        self.written += 1
        self._real_stamp = _stamp(self.session.run_dir / REAL)  # our own line: already read back by mark()
        self.notify(f"seed {seed}: {WORDS[outcome]} written to real.jsonl" + (f" ({reason})" if reason else ""))
        self.show_seed()

    def action_void(self) -> None:
        seed = self.session.current
        if seed is None:
            return
        self._ask(AskScreen(f"Void seed {seed}: what went wrong on the rig (the seed stays owed)?",
                            check=_required("void reason")),
                  lambda reason: reason and self.action_mark(VOID, reason))

    def action_progress(self) -> None:
        if self.session.current is None:
            return

        def got(v):
            if v is not None:
                self.progress = float(v) if v else None
                self.show_seed()

        self._ask(AskScreen("Progress: the share of the task done, 0 to 1 (empty clears it):",
                            "" if self.progress is None else f"{self.progress:g}", check=_progress_problem), got)

    def action_video(self) -> None:
        if self.session.current is None:
            return

        def got(v):
            if v is not None:
                self.video = v or None
                self.show_seed()

        self._ask(AskScreen("Video of this trial (a path; empty clears it):", self.video or ""), got)

    def action_operator(self) -> None:
        self._ask(AskScreen("Operator's name:", self.operator or "", check=_required("operator's name")), self._got_operator)

    def action_back(self) -> None:
        self.app.pop_screen()


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _load(path: Path):
    try:
        from PIL import Image as PILImage

        with PILImage.open(path) as im:
            return im.convert("RGB")
    except (OSError, ValueError):
        return None
