"""The seed drill-down: grid cell -> the seed's screen (row in words, predict trail, video frames that advance)."""

import json

import numpy as np
import pytest

from console import seedview
from console.widgets.dialogs import HelpScreen
from console.widgets.seed_screen import SeedScreen
from tests.console.conftest import make_app, make_row, make_run_dir, plain, until_steady, wait_for


def write_video(path, frames=60, size=(96, 48)):
    """A real mp4 (imageio's bundled ffmpeg) whose frames differ: a bar that moves right."""
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = size
    with imageio.get_writer(str(path), fps=10, codec="libx264", macro_block_size=1, quality=7) as writer:
        for i in range(frames):
            img = np.zeros((h, w, 3), dtype=np.uint8)
            img[:, : w // 2] = (40, 90, 200)
            x = int(i * (w - 8) / max(1, frames - 1))
            img[:, x:x + 8] = (250, 220, 30)
            writer.append_data(img)


def predicts_line(seed, replan, fallback=None):
    return {"seed": seed, "replan": replan, "tick": replan * 30, "pathway": "discrete", "decode": "reference",
            "tokens": [1, 2, 3], "chunk_normalized": [[0.0] * 6] * 3 if fallback else [[0.1, -0.5, 0.2, 0, 0, 0]] * 3,
            "fallback": fallback, "mask_interventions": 0, "first_action_deg": [1.0, 2.0, 3.0, 4.0, 5.0, 50.0]}


@pytest.fixture
def filmed_run(runs_dir):
    rows = [make_row(s, video="videos/rollout_seed003.mp4" if s == 3 else None) for s in range(10)]
    d = make_run_dir(runs_dir, "film-scripted-20260101-000000", total=10, done=10, rows=rows)
    write_video(d / "videos" / "rollout_seed003.mp4")
    with open(d / "predicts.jsonl", "w") as f:
        for r in range(4):
            f.write(json.dumps(predicts_line(3, r, fallback="no action tokens" if r == 2 else None)) + "\n")
        f.write(json.dumps(predicts_line(4, 0)) + "\n")
        f.write("{torn\n")
    return d


def test_seed_readers(filmed_run):
    row, problem = seedview.find_row(filmed_run, 3)
    assert row["seed"] == 3 and problem == ""
    assert seedview.find_row(filmed_run, 42) == (None, "no row for seed 42 yet")
    words = dict((k, (v, m)) for k, v, m in seedview.row_in_words(row))
    assert words["progress_final_cm"][0] == "1.7 cm" and "progress kept" in words["progress_final_cm"][1]
    assert words["success"][0] == "no"
    trail = seedview.read_predicts(filmed_run, 3)
    assert trail.recorded and len(trail.lines) == 4 and trail.bad == 1
    assert "(zeros)" in seedview.predict_cells(trail.lines[2])[5]
    frames = seedview.decode_frames(seedview.video_path(filmed_run, row))
    assert len(frames.images) == 60 and frames.fps == 10 and not frames.problem
    assert seedview.video_path(filmed_run, {"video": "../../etc/passwd"}) is None


async def test_grid_cell_opens_the_seed_and_its_frames_advance(runs_dir, filmed_run):
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 10)
        await pilot.press("g")
        grid = app.screen.query_one("#grid")
        await wait_for(pilot, lambda: grid.has_focus)
        await pilot.press("right", "right", "right")
        assert grid.selected_seed == 3
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen), what="the seed screen")
        screen = app.screen
        await wait_for(pilot, lambda: screen.frames is not None and screen.frames_shown >= 1, what="the first frame")
        assert "seed 3" in plain(screen.query_one("#seed-title")) and "touched" in plain(screen.query_one("#seed-title"))
        assert "frame 1/60" in plain(screen.query_one("#frame-info"))
        assert screen.query_one("#thumb-first").image is screen.frames.images[0]
        assert screen.query_one("#thumb-last").image is screen.frames.images[-1]
        # play: frames advance on their own
        await pilot.press("space")
        await wait_for(pilot, lambda: screen.index >= 3, what="frames to advance while playing")
        assert screen.playing  # 60 frames at 10 fps: still playing
        await pilot.press("space")
        assert not screen.playing
        at = screen.index
        await pilot.press("right")
        assert screen.index == at + 1 and screen.query_one("#frame").image is screen.frames.images[at + 1]
        await pilot.press("end")
        assert screen.index == 59 and "frame 60/60" in plain(screen.query_one("#frame-info"))
        await pilot.press("left_square_bracket")
        assert screen.index == 49
        # the row in words and the predict trail
        await pilot.press("w")
        fields = screen.query_one("#row-fields")
        assert fields.row_count >= 30 and str(fields.get_row("progress_final_cm")[1]) == "1.7 cm"
        await pilot.press("p")
        assert screen.query_one("#predicts").row_count == 4
        assert "1 zero-fallbacks" in plain(screen.query_one("#predicts-note"))
        # `?` is the help here too (its footer says so), and closing it comes back to the seed
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help over the seed")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="back at the seed")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SeedScreen))


async def test_a_click_on_a_cell_opens_that_seed_and_a_seed_without_video_says_so(runs_dir, filmed_run):
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 10)
        grid = app.screen.query_one("#grid")
        await wait_for(pilot, lambda: "■" in plain(grid) and grid.content_region.height >= 1, what="the grid drawn")
        for _ in range(200):  # the panels above may still be moving: click again until the cell opens
            await pilot.click("#grid", offset=(1 + 1 + 6 + 2 * 5, 1))  # border, padding, label, 5 cells of 2
            await pilot.pause(0.05)
            if isinstance(app.screen, SeedScreen):
                break
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen), what="the seed screen after a click",
                       state=lambda: (app.focused, grid.content_region, plain(grid)[:40]))
        screen = app.screen
        assert screen.seed == 5
        await wait_for(pilot, lambda: "not filmed" in plain(screen.query_one("#video-note")), what="no video",
                       state=lambda: plain(screen.query_one("#video-note")))
        await wait_for(pilot, lambda: "No line of seed 5" in plain(screen.query_one("#predicts-note")))
        assert screen.query_one("#predicts").row_count == 0
        # the row counts the oracle's predicts; the trail holds a model's only: said, never "0 predicts"
        note = plain(screen.query_one("#predicts-note"))
        assert "though its row counts 30 predicts: the scripted oracle acts in its worker" in note, note
        assert " 0 predicts" not in note


async def test_the_half_block_fallback_draws_a_picture():
    """Where textual-image's terminal probe fails at import, frames are drawn by HalfBlockImage."""
    from PIL import Image as PILImage
    from textual.app import App

    from console.widgets.images import HalfBlockImage

    img = PILImage.new("RGB", (40, 20), (255, 0, 0))
    img.paste((0, 0, 255), (0, 10, 40, 20))  # red above blue

    class One(App):
        def compose(self):
            yield HalfBlockImage(img, id="pic")

    app = One()
    async with app.run_test(size=(40, 12)) as pilot:
        pic = app.query_one("#pic")
        await wait_for(pilot, lambda: pic.content_size.width > 0 and pic.content_size.height > 0)
        strip = pic.render_line(0)
        seg = list(strip)[0]
        assert seg.text == "▀" and seg.style.color.triplet == (255, 0, 0)
        last = list(pic.render_line(pic.content_size.height - 1))[0]
        assert last.style.bgcolor.triplet == (0, 0, 255)


async def test_the_frame_and_its_thumbnails_keep_the_videos_aspect_at_every_size(runs_dir):
    from console.widgets.seed_screen import fit_cells

    rows = [make_row(s, video="videos/rollout_seed000.mp4" if s == 0 else None) for s in range(3)]
    d = make_run_dir(runs_dir, "wide-scripted-20260101-000000", total=3, done=3, rows=rows)
    write_video(d / "videos" / "rollout_seed000.mp4", size=(320, 160), frames=10)  # 2:1, as the driver films
    app = make_app(runs_dir)

    def aspects(screen):  # width / height of each picture, in pixels (a cell is 1 x 2)
        return [w.region.width / (2 * w.region.height) for w in screen.query("#frame, #thumb-first, #thumb-last")]

    def fitted(screen) -> bool:  # 2:1 pictures, the thumbnails as wide as their column, the frame inside its box
        thumbs, player = screen.query_one("#thumbs"), screen.query_one("#player")
        return (all(abs(a - 2.0) < 0.25 for a in aspects(screen))
                and screen.query_one("#thumb-first").region.width == thumbs.content_size.width
                and screen.query_one("#frame").region.width <= player.content_size.width)

    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 3)
        await pilot.press("g", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.frames_shown >= 1)
        screen = app.screen
        for size in ((160, 48), (80, 24), (200, 60), (120, 40)):
            await pilot.resize_terminal(*size)
            # the aspect alone can hold at the previous size's layout (30x8 cells is within 0.25 of 2:1)
            await wait_for(pilot, lambda: fitted(screen), what=f"2:1 pictures fitted to their boxes at {size}",
                           state=lambda: (aspects(screen), screen.query_one("#thumbs").content_size, [
                               w.region for w in screen.query("#frame, #thumb-first, #thumb-last")]))
    assert fit_cells(320, 160, 24, 16) == (24, 6) and fit_cells(320, 160, 94, 10) == (40, 10)


def test_half_block_strips_put_the_upper_pixel_in_front_and_the_lower_behind():
    from PIL import Image as PILImage

    from console.widgets.images import half_block_strips

    img = PILImage.new("RGB", (8, 2), (255, 0, 0))
    img.paste((0, 0, 252), (0, 1, 8, 2))  # red above blue, one pixel each: no resampling
    strips = half_block_strips(img, 8, 1)
    assert len(strips) == 1 and strips[0].cell_length == 8
    segs = list(strips[0])
    assert len(segs) == 1 and segs[0].text == "▀" * 8  # one colour pair: one segment
    assert segs[0].style.color.triplet == (252, 0, 0) and segs[0].style.bgcolor.triplet == (0, 0, 252)


async def test_the_player_repaints_only_what_changed_and_shows_the_frame_the_clock_says(runs_dir, filmed_run):
    """A step repaints the cells the moving bar touched, not the picture; playing shows the frame
    the clock says (a late tick skips to it): no timing is asserted, only which frame is due.
    Closing the view lets go of the frames and the video's styles."""
    from console.widgets import images
    from console.widgets.images import DRAWS_CELLS, VideoFrame

    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 10)
        await pilot.press("g", "right", "right", "right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.frames_shown >= 1)
        screen = app.screen
        frame = screen.query_one("#frame")
        assert DRAWS_CELLS and isinstance(frame, VideoFrame)  # half-blocks here (headless): the cell player
        size = lambda: (frame.content_size.height, frame.content_size.width)  # noqa: E731
        await wait_for(pilot, lambda: frame._keys is not None and frame._keys.shape == size() and size()[0] > 4,
                       what="the first frame drawn at the frame's size")
        rows, cols = size()
        # the first frame's paints all done (under two busy loops one landed after the count was
        # read, and the step looked like a whole repaint): the count still over three looks
        painted = await until_steady(pilot, lambda: frame.painted, looks=3, interval=0.05,
                                     what="the first frame's paint count")
        await pilot.press("right")
        assert screen.index == 1 and frame.image is screen.frames.images[1]
        assert 0 < frame.painted - painted < rows * cols / 4  # the bar's move, a few cells a line
        await pilot.press("space")
        await wait_for(pilot, lambda: screen.index >= 3, what="frames to advance while playing")
        assert frame.image is screen.frames.images[screen.index]
        t0, i0 = screen._played_from
        screen._played_from = (t0 - 3.0, i0)  # as if the UI had been busy for 3 s: 30 frames are due
        screen._tick()
        assert screen.index >= i0 + 30
        await pilot.press("space")
        assert not screen.playing
        assert images._STYLES
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SeedScreen))
        assert screen.frames is None and not images._STYLES


def test_the_time_of_a_frame_counts_the_whole_video():
    """89 frames at 10 fps last 8.9 s: the first starts at 0.0 s, the last at 8.8 s (it read 'of 8.8 s')."""
    from console.widgets.seed_screen import frame_time

    assert frame_time(0, 89, 10.0) == "0.0 s of 8.9 s"
    assert frame_time(88, 89, 10.0) == "8.8 s of 8.9 s"
    assert frame_time(0, 1, 0.0) == "0.0 s of 0.1 s"  # a file without a frame rate: the run's 10 fps


async def test_in_a_terminal_the_changed_cells_are_written_straight_and_only_when_nothing_covers_them(
        runs_dir, filmed_run, monkeypatch):
    """A step writes cursor moves and the changed runs of cells, inside the picture, as Textual's
    Strip.render makes them, and puts the cursor back; while anything can cover the picture (a
    notification, the help over the screen, another tab, the app suspended) the picture goes
    Textual's way, and Textual's own draw afterwards is the same cells (the tiles draw from the keys)."""
    import re

    from textual.css.scalar import Unit

    from console.widgets.dialogs import HelpScreen
    from console.widgets.images import VideoFrame, _Tile, key_strip

    written: list[str] = []
    monkeypatch.setattr(VideoFrame, "_terminal", lambda self: written.append)
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40), notifications=True, tooltips=True) as pilot:  # as in a terminal
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 10)
        await pilot.press("g", "right", "right", "right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.frames_shown >= 1)
        screen = app.screen
        frame = screen.query_one(VideoFrame)
        await wait_for(pilot, lambda: frame.styles.height.unit == Unit.CELLS and frame._keys is not None and (
            frame._keys.shape == (frame.content_size.height, frame.content_size.width) == (
                frame.styles.height.value, frame.styles.width.value)),
            what="the first frame drawn at the video's aspect",  # until its aspect is known the frame is 1fr tall:
            state=lambda: (frame.styles.height, frame.content_region))  # 32 rows, then 24 (seen under load)
        box = frame.content_region

        def step_written() -> str | None:
            """One step right: what it wrote straight to the terminal (None: nothing)."""
            before, index = len(written), screen.index
            screen.action_step(1)
            assert screen.index == index + 1
            assert len(written) in (before, before + 1)
            return written[-1] if len(written) > before else None

        painted = frame.painted
        out = step_written()
        assert out is not None and out.startswith("\x1b[?2026h") and out.endswith("\x1b[?2026l")
        moves = [(int(r) - 1, int(c) - 1) for r, c in re.findall(r"\x1b\[(\d+);(\d+)H", out)]
        assert moves[:-1] and all(box.y <= y < box.bottom and box.x <= x < box.right for y, x in moves[:-1])
        assert moves[-1] == (app.cursor_position.y, app.cursor_position.x)  # the cursor back where Textual keeps it
        assert out.count("▀") == frame.painted - painted  # the changed runs, not the picture
        (y, x), run = moves[0], re.split(r"\x1b\[\d+;\d+H", out)[1]  # the first run, byte for byte Textual's
        assert run == key_strip(frame._keys[y - box.y, x - box.x:x - box.x + run.count("▀")]).render(app.console)
        assert all(t.lines is None for t in frame.query(_Tile))  # Textual draws them from the keys if it must

        app.notify("a short toast, below the picture", timeout=30)
        await wait_for(pilot, lambda: screen.query_one("Toast").region, what="the toast")
        toast = screen.query_one("Toast").region
        assert not toast.overlaps(box) and step_written() is not None  # a toast elsewhere covers nothing
        app.clear_notifications()
        app.notify("\n".join(f"a tall toast, line {i}" for i in range(14)), timeout=30)
        await wait_for(pilot, lambda: screen.query_one("Toast").region.overlaps(box), what="a toast over the picture")
        assert step_written() is None  # Textual's way while the toast is over it
        app.clear_notifications()
        await wait_for(pilot, lambda: not screen.query("Toast"), what="the toast gone")
        assert step_written() is not None

        app.action_help()  # a modal over the seed view (what its `?` opens)
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert step_written() is None  # the help over the screen
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)

        await pilot.press("w")  # the row's tab: the player is not shown
        await wait_for(pilot, lambda: not frame.display or not frame.is_on_screen, what="the video tab hidden")
        assert step_written() is None
        await pilot.press("v")
        await wait_for(pilot, lambda: frame.content_region == box, what="the video tab back")

        app.app_suspend_signal.publish(app)
        assert step_written() is None  # suspended: no terminal to write to
        app.app_resume_signal.publish(app)
        assert step_written() is not None

        screen.refresh()  # Textual's own draw of the whole picture: the cells on screen
        await pilot.pause()

        def cells(strip):
            return [(seg.style.color, seg.style.bgcolor) for seg in strip for _ in seg.text]

        drawn = app.screen._compositor.render_strips()
        assert all(cells(drawn[box.y + y].crop(box.x, box.right)) == cells(key_strip(frame._keys[y]))
                   for y in range(box.height))
