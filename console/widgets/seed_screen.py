"""The seed drill-down: one seed's video (played in the terminal), its row in words, its predict trail.

Frames are drawn by textual-image, which picks the terminal's best: Kitty graphics or Sixel where
the terminal has them, Unicode half-blocks elsewhere (plain tmux included). Everything is read
in a thread worker (console/seedview.py); the screen only shows it.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane, Tabs
from textual.worker import get_current_worker

from console import seedview
from console.render import OUTCOME_STYLE, fmt_signed
from console.widgets.images import DRAWS_CELLS, Image, VideoFrame, forget_styles
from console.widgets.table import Table
from console.widgets.text import TextBlock
from prereg.rundir.outcomes import OUTCOME_LABELS, episode_outcome

PREDICT_COLUMNS = ("replan", "tick", "pathway", "decode", "tokens", "chunk (normalised)", "fallback", "mask", "first action °")


def seed_title(run_id: str, seed, row: dict | None, problem: str = "", arm: str | None = None,
               variant: str | None = None) -> Text:
    t = Text()
    t.append(f"seed {seed}" + (f" of {arm}" if arm else "") + (f" · {variant}" if variant else ""), style="bold")
    t.append(f"  ·  {run_id}", style="grey62")
    if row is None:
        t.append(f"\n{problem or 'reading…'}", style="yellow" if problem else "italic grey62")
        return t
    outcome = episode_outcome(row)
    t.append("  ·  ")
    t.append(OUTCOME_LABELS[outcome], style=OUTCOME_STYLE[outcome])
    pf = row.get("progress_final_cm")
    bits = []
    if isinstance(pf, (int, float)):
        bits.append(f"progress_final {fmt_signed(pf)} cm")
    if isinstance(row.get("wall_s"), (int, float)):
        bits.append(f"wall {row['wall_s']:.1f} s")
    if row.get("predicts") is not None:
        bits.append(f"zero-fallbacks {row.get('zero_fallbacks')}/{row.get('predicts')}")
    if row.get("error"):
        bits.append(f"error: {str(row['error'])[:80]}")
    if row.get("note"):
        bits.append(f"note: {str(row['note'])[:80]}")
    if bits:
        t.append("\n" + "  ·  ".join(bits), style="grey70")
    return t


def variant_list(variants, deciding, shown: str, rows: dict) -> Text:
    """'variants: base success · [dim quiet] · … (n: next)': the seed's episode on each variant of a crossed
    design, the one shown in reverse, those the plan's decision reads (`deciding`) marked."""
    t = Text("variants: ", style="grey62")
    for i, v in enumerate(variants):
        if i:
            t.append(" · ", style="grey50")
        row = rows.get(v)
        outcome = episode_outcome(row) if row is not None else None
        label = f"{v}{' (decides)' if v in deciding else ''} "
        t.append(label, style="reverse bold" if v == shown else "")
        t.append(OUTCOME_LABELS[outcome] if outcome else "no row",
                 style=(OUTCOME_STYLE[outcome] if outcome else "grey50") + (" reverse" if v == shown else ""))
    t.append("   n: next variant", style="grey50")
    return t


def frame_time(index: int, count: int, fps: float) -> str:
    """Where frame `index` (from 0) starts, of the video's length: `count` frames last count/fps
    seconds (an 89-frame video at 10 fps is 8.9 s long; its first frame starts at 0.0 s)."""
    fps = fps if fps and fps > 0 else 10.0
    return f"{index / fps:.1f} s of {count / fps:.1f} s"


def scrub_bar(index: int, count: int, width: int) -> Text:
    """━━━━●──── : where the shown frame sits in the video (click it to jump)."""
    width = max(4, width)
    if count <= 1:
        return Text("●" + "─" * (width - 1), style="cyan")
    pos = round(index * (width - 1) / (count - 1))
    t = Text("━" * pos, style="cyan")
    t.append("●", style="bold cyan")
    t.append("─" * (width - 1 - pos), style="grey42")
    return t


def fit_cells(image_w: int, image_h: int, box_w: int, box_h: int) -> tuple[int, int]:
    """(columns, rows) of the largest picture of an image_w x image_h frame that fits a box of
    box_w x box_h cells with its aspect kept, a cell being twice as tall as wide (the half-block
    rendering's assumption, and a terminal's usual cell). An image widget sized to a box of
    another aspect stretches the picture: the thumbnails, 24 x 16 cells for a 2:1 frame, were
    squeezed to about a third of its width."""
    if image_w <= 0 or image_h <= 0 or box_w <= 0 or box_h <= 0:
        return max(1, box_w), max(1, box_h)
    scale = min(box_w / image_w, 2 * box_h / image_h)
    return max(1, min(box_w, round(image_w * scale))), max(1, min(box_h, round(image_h * scale / 2)))


class ScrubBar(TextBlock):
    """The position bar; drawn at its own width whenever it lays out (no size guessed)."""

    index, count = 0, 0

    def render(self):
        return scrub_bar(self.index, self.count, self.size.width) if self.count else ""

    def show(self, index: int, count: int) -> None:
        self.index, self.count = index, count
        self.refresh()


class SeedScreen(Screen):
    """A full screen (every row of the terminal for the frames); Esc goes back to the run."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("space", "play_pause", "Play/pause", priority=True),
        Binding("left,comma", "step(-1)", "Step", priority=True),
        Binding("right,full_stop", "step(1)", "Step", show=False, priority=True),
        Binding("left_square_bracket", "step(-10)", "-10", key_display="[", priority=True),
        Binding("right_square_bracket", "step(10)", "+10", key_display="]", priority=True),
        Binding("home", "seek(0)", "First", show=False, priority=True),
        Binding("end", "seek(-1)", "Last", show=False, priority=True),
        Binding("v", "tab('tab-video')", "Video"),
        Binding("w", "tab('tab-row')", "Row"),
        Binding("p", "tab('tab-predicts')", "Predicts"),
        Binding("n", "next_variant", "Next variant"),  # a crossed design's seed: its episode on the next variant
        Binding("question_mark", "app.help", "Help", key_display="?"),
    ]

    AUTO_FOCUS = None  # focusing a table would switch to its tab: the video tab comes first

    DEFAULT_CSS = """
    SeedScreen { layout: vertical; }
    #seed-title { height: auto; padding: 0 1; }
    SeedScreen TabbedContent { height: 1fr; }
    SeedScreen TabPane { height: 1fr; padding: 0; }
    #player-row { height: 1fr; }
    #player { width: 1fr; height: 1fr; }
    #frame { width: auto; height: 1fr; }  /* until the video's aspect is known: _fit_images */
    #frame-info, #scrub { height: 1; padding: 0 1; }
    #thumbs { width: 26; height: 1fr; padding: 0 1; }
    #thumbs Static { height: 1; }
    #thumb-first, #thumb-last { width: auto; height: 1fr; }
    #video-note { height: auto; padding: 0 1; }
    #row-fields, #predicts { height: 1fr; }
    #predicts-note { height: auto; padding: 0 1; }
    """

    def __init__(self, run_dir: Path, run_id: str, seed, arm: str | None = None, variant: str | None = None):
        super().__init__()
        self.run_dir, self.run_id, self.seed, self.arm = Path(run_dir), run_id, seed, arm  # arm: a comparison run's
        self.variant = variant  # a crossed design's: the variant shown (None: the one the plan reads)
        self.variants: tuple[str, ...] = ()  # a crossed design's, `base` first; () for a run of one scene
        self.variant_rows: dict[str, dict] = {}  # variant -> the seed's last row on it
        self.deciding: tuple[str, ...] = ()  # the variants the plan's decision reads
        self.row: dict | None = None
        self.frames: seedview.Frames | None = None
        self.index = 0
        self.playing = False
        self.frames_shown = 0  # how many frames the player has drawn (tests wait on it)
        self._timer = None
        self._played_from: tuple[float, int] | None = None  # (monotonic time, frame) play started at

    def compose(self) -> ComposeResult:
        yield TextBlock(seed_title(self.run_id, self.seed, None, arm=self.arm), id="seed-title")
        with TabbedContent(initial="tab-video"):
            with TabPane("video (v)", id="tab-video"):
                yield TextBlock("", id="variant-list")  # a crossed design: the seed's episode on each variant
                yield TextBlock(Text("reading the row and the video…", style="italic grey62"), id="video-note")
                with Horizontal(id="player-row"):
                    with Vertical(id="player"):
                        yield VideoFrame(id="frame") if DRAWS_CELLS else Image(None, id="frame")
                        yield TextBlock("", id="frame-info")
                        yield ScrubBar(id="scrub")
                    with Vertical(id="thumbs"):
                        yield TextBlock(Text("first frame", style="grey62"))
                        yield Image(None, id="thumb-first")
                        yield TextBlock(Text("last frame", style="grey62"))
                        yield Image(None, id="thumb-last")
            with TabPane("row (w)", id="tab-row"):
                yield Table(id="row-fields", cursor_type="row", zebra_stripes=True)
            with TabPane("predicts (p)", id="tab-predicts"):
                yield TextBlock("", id="predicts-note")
                yield Table(id="predicts", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(Tabs).can_focus = False  # left/right step the video, not the tabs
        fields = self.query_one("#row-fields", DataTable)
        for label in ("field", "value", "what it means"):
            fields.add_column(label, key=label)
        predicts = self.query_one("#predicts", DataTable)
        for label in PREDICT_COLUMNS:
            predicts.add_column(label, key=label)
        self.query_one("#player-row").display = False
        self.query_one("#variant-list").display = False
        self.load_worker()

    @work(thread=True, exclusive=True, group="seed")
    def load_worker(self) -> None:
        worker = get_current_worker()
        rows, problem = seedview.find_rows(self.run_dir, self.seed, self.arm)
        trail = seedview.read_predicts(self.run_dir, self.seed, self.arm)
        manifest, _ = seedview.rd.read_manifest(self.run_dir)
        policy = manifest.policy_kind if manifest is not None else None
        variants = manifest.variants if manifest is not None else ()
        row = next(reversed(rows.values())) if rows else None  # a run of one scene: the seed's last row
        if variants:  # a crossed design: the chosen variant's episode (the one the plan reads, first)
            variant = self.variant if self.variant in variants else manifest.counted_variant
            row = rows.get(variant)
            problem = problem or ("" if row is not None else f"no row for seed {self.seed} on {variant} yet")
            self.app.call_from_thread(self._show_variants, variants, manifest.decision_variants, variant, rows)
        self.app.call_from_thread(self._show_row, row, problem, trail, policy)
        path = seedview.video_path(self.run_dir, row)
        if path is None:
            note = (row or {}).get("note") if row else None
            why = "this episode was not filmed" if row is not None else (problem or "no row")
            if note and "video" in str(note):
                why = str(note)
            self.app.call_from_thread(self._show_video_problem, f"No video: {why}.")
            return
        if not path.exists():
            self.app.call_from_thread(self._show_video_problem, f"No video: {path} is missing.")
            return
        frames = seedview.decode_frames(path, cancelled=lambda: worker.is_cancelled)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_frames, frames, path)

    def _show_variants(self, variants: tuple[str, ...], deciding: tuple[str, ...], variant: str, rows: dict) -> None:
        """The seed's episode on each variant, the one shown marked (n: the next), over the player."""
        if not self.is_attached:
            return
        first = not self.variants
        self.variants, self.deciding, self.variant, self.variant_rows = tuple(variants), tuple(deciding), variant, rows
        self.query_one("#variant-list", Static).update(variant_list(variants, deciding, variant, rows))
        self.query_one("#variant-list").display = True
        if first:
            self.refresh_bindings()  # `n` shows in the footer now

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """`n` (next variant) only for a crossed design's seed."""
        return bool(self.variants) if action == "next_variant" else True

    def action_next_variant(self) -> None:
        """The seed's episode on the next variant: its row, its video (decoded afresh), from the first frame."""
        if not self.variants:
            return
        i = self.variants.index(self.variant) if self.variant in self.variants else -1
        self.variant = self.variants[(i + 1) % len(self.variants)]
        self._stop_player()
        self.query_one("#variant-list", Static).update(
            variant_list(self.variants, self.deciding, self.variant, self.variant_rows))
        self._show_video_problem(f"reading seed {self.seed}'s episode on {self.variant}…")
        self.load_worker()

    def _stop_player(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.playing, self.frames, self.index, self._played_from = False, None, 0, None
        self.query_one("#player-row").display = False

    def _show_row(self, row: dict | None, problem: str, trail: seedview.Trail, policy: str | None = None) -> None:
        if not self.is_attached:
            return
        self.row = row
        self.query_one("#seed-title", Static).update(seed_title(self.run_id, self.seed, row, problem, self.arm,
                                                                self.variant if self.variants else None))
        fields = self.query_one("#row-fields", DataTable)
        fields.clear()
        for key, value, words in seedview.row_in_words(row or {}):
            fields.add_row(key, value, Text(words, style="grey62"), key=key)
        note = self.query_one("#predicts-note", Static)
        table = self.query_one("#predicts", DataTable)
        table.clear()
        if not trail.recorded:
            note.update(Text("No predict trail: the run did not record one (fontaine-eval --record-predicts, "
                             "or record_predicts: true in the pre-registration).", style="grey62"))
            table.display = False
            return
        if not trail.lines and not trail.more:  # recorded, but nothing of this seed: say why, not "0 predicts"
            counted = (row or {}).get("predicts")
            text = f"No line of seed {self.seed} in {seedview.rd.PREDICTS}"
            if isinstance(counted, int) and counted:
                text += f", though its row counts {counted} predicts"
                text += (": the scripted oracle acts in its worker, and only a model's predicts are recorded."
                         if policy == "scripted" else ".")
            else:
                text += "."
            note.update(Text(text, style="grey62"))
            table.display = False
            return
        table.display = True
        fallbacks = sum(1 for line in trail.lines if line.get("fallback"))
        text = f"{len(trail.lines) + trail.more} predicts of seed {self.seed} in {seedview.rd.PREDICTS}"
        text += f"; {fallbacks} zero-fallbacks" if fallbacks else "; no fallback"
        if trail.more:
            text += f" (first {len(trail.lines)} shown)"
        if trail.bad:
            text += f"; {trail.bad} unreadable lines in the file"
        note.update(Text(text, style="grey70"))
        for i, line in enumerate(trail.lines):
            cells = seedview.predict_cells(line)
            style = "bold yellow" if line.get("fallback") else ""
            table.add_row(*(Text(c, style=style) for c in cells), key=str(i))

    def _show_video_problem(self, text: str) -> None:
        if self.is_attached:
            self.query_one("#video-note", Static).update(Text(text, style="grey62"))

    def _show_frames(self, frames: seedview.Frames, path: Path) -> None:
        if not self.is_attached:
            return
        self.frames = frames
        if not frames.images:
            self._show_video_problem(f"No video: {frames.problem}")
            return
        note = f"{path.relative_to(self.run_dir) if path.is_relative_to(self.run_dir) else path}"
        note += f" · {len(frames.images)} frames at {frames.fps:g} fps"
        if frames.truncated:
            note += f" (first {len(frames.images)} decoded)"
        if frames.problem:
            note += f" · {frames.problem}"
        self.query_one("#video-note", Static).update(Text(note, style="grey62"))
        self.query_one("#player-row").display = True
        self.query_one("#thumb-first", Image).image = frames.images[0]
        self.query_one("#thumb-last", Image).image = frames.images[-1]
        self.call_after_refresh(self._fit_images)
        self._timer = self.set_interval(1.0 / max(1.0, min(frames.fps, 30.0)), self._tick, pause=True)
        self.show_frame(0)

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#thumbs").styles.width = max(26, min(44, event.size.width // 5))
        self.call_after_refresh(self._fit_images)

    def _fit_images(self) -> None:
        """The frame and the thumbnails sized to their boxes at the video's own aspect (a picture
        in a box of another shape is stretched): the frame fills the player above its two lines
        of info, each thumbnail the thumbnail column's width (or half its height)."""
        if not self.is_attached or not self.frames or not self.frames.images:
            return
        w, h = self.frames.images[0].size
        player = self.query_one("#player").content_size
        cols, rows = fit_cells(w, h, player.width, player.height - 2)
        frame = self.query_one("#frame")
        frame.styles.width, frame.styles.height = cols, rows
        thumbs = self.query_one("#thumbs").content_size
        cols, rows = fit_cells(w, h, thumbs.width, (thumbs.height - 2) // 2)
        for thumb in self.query("#thumb-first, #thumb-last"):
            thumb.styles.width, thumb.styles.height = cols, rows

    # -- the player --------------------------------------------------------------------

    def show_frame(self, index: int, from_clock: bool = False) -> None:
        if not self.frames or not self.frames.images:
            return
        n = len(self.frames.images)
        self.index = max(0, min(n - 1, index))
        if self.playing and not from_clock:  # a jump while playing (a click on the bar): play on from there
            self._played_from = (time.monotonic(), self.index)
        image = self.frames.images[self.index]
        frame = self.query_one("#frame")
        if isinstance(frame, VideoFrame):
            frame.show(image)
        else:
            frame.image = image
        self.frames_shown += 1
        info = Text(f"frame {self.index + 1}/{n}  ·  {frame_time(self.index, n, self.frames.fps)}  ·  ")
        info.append("playing" if self.playing else "paused", style="bold green" if self.playing else "yellow")
        self.query_one("#frame-info", Static).update(info, layout=False)  # one line, always: no layout pass
        self.query_one("#scrub", ScrubBar).show(self.index, n)

    def _tick(self) -> None:
        """The frame the clock says (the file's fps from where play started): a late tick skips
        to it rather than slowing the video down."""
        if not self.frames or not self.frames.images or self._played_from is None:
            return
        last = len(self.frames.images) - 1
        if self.index >= last:
            self.action_play_pause()  # stop at the end; space plays again from the start
            return
        t0, i0 = self._played_from
        due = min(last, i0 + int((time.monotonic() - t0) * (self.frames.fps or 10.0)))
        if due != self.index:
            self.show_frame(due, from_clock=True)

    def action_play_pause(self) -> None:
        if not self.frames or not self.frames.images or self._timer is None:
            return
        self.playing = not self.playing
        if self.playing:
            if self.index >= len(self.frames.images) - 1:
                self.index = 0
            self._played_from = (time.monotonic(), self.index)
            self._timer.resume()
        else:
            self._timer.pause()
        self.show_frame(self.index)

    def action_step(self, frames: int) -> None:
        if self.playing:
            self.action_play_pause()
        self.show_frame(self.index + frames)

    def action_seek(self, index: int) -> None:
        if self.frames and self.frames.images:
            self.show_frame(len(self.frames.images) - 1 if index < 0 else index)

    @on(events.Click, "#scrub")
    def _scrub_click(self, event: events.Click) -> None:
        if not self.frames or not self.frames.images:
            return
        scrub = self.query_one("#scrub", Static)
        offset = event.get_content_offset(scrub)
        if offset is None:
            return
        width = max(2, scrub.size.width)
        self.show_frame(round(offset.x * (len(self.frames.images) - 1) / (width - 1)))

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        table = {"tab-row": "#row-fields", "tab-predicts": "#predicts"}.get(tab)
        self.set_focus(self.query_one(table, DataTable) if table else None)

    def on_unmount(self) -> None:
        """Closed (esc, or the app quitting): the decoded frames and the video's styles go now, by
        reference count, rather than in a garbage collection later (at exit it took seconds)."""
        if self._timer is not None:
            self._timer.stop()
        self.frames = None
        for frame in self.query(VideoFrame):
            frame.forget()
        forget_styles()

    def action_back(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self.dismiss()  # the console puts the focus back on the runs list (FontaineApp._open_seed)
