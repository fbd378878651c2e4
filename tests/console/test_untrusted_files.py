"""The console over files an attacker or an unlucky operator made (issue 33): escape sequences in an
arm name or a stop reason are drawn escaped, one bad entry in the runs folder is one bad row, a FIFO
where a video or a chart goes never hangs a screen, a symlink-loop pre-registration is listed with why."""

from __future__ import annotations

import json
import os

from console.widgets.dialogs import LaunchScreen
from console.widgets.seed_screen import SeedScreen
from prereg import rundir as rd
from tests.console.conftest import make_app, make_row, make_run_dir, notified, plain, wait_for

EVIL = "a\u001b[2J\u001b]0;T\u0007"


async def test_escape_sequences_from_a_run_are_drawn_escaped_never_sent_to_the_terminal(runs_dir):
    d = make_run_dir(runs_dir, "z-evil", total=4, done=1, state="stopped")
    manifest = json.loads((d / rd.MANIFEST).read_text())
    (d / rd.MANIFEST).write_text(json.dumps({**manifest, "arm": EVIL}))
    status = json.loads((d / rd.STATUS).read_text())
    (d / rd.STATUS).write_text(json.dumps({**status, "reason": f"stopped {EVIL}", "arm": EVIL}))
    app = make_app(runs_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == "z-evil",
                       what="the run selected")
        await wait_for(pilot, lambda: "\\x1b[2J" in app.export_screenshot(), what="the arm drawn escaped")
        screen = app.export_screenshot()
        assert "\x1b" not in screen and "\x07" not in screen  # nothing a terminal would obey
        assert "a\\x1b[2J\\x1b]0;T" in screen  # the arm, as the file holds it, in words (Rich drops the BEL)


async def test_a_symlink_loop_in_the_runs_folder_is_one_unreadable_row(runs_dir):
    make_run_dir(runs_dir, "a-good", total=4, done=2, state="done")
    make_run_dir(runs_dir, "c-good", total=4, done=1, state="running")
    os.symlink("b-loop", runs_dir / "b-loop")
    app = make_app(runs_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_for(pilot, lambda: len(app.runs) == 3, what="three runs listed",
                       state=lambda: [r.run_id for r in app.runs])
        states = {r.run_id: r.state for r in app.runs}
        assert states == {"a-good": "done", "b-loop": "unreadable", "c-good": "running"}, states
        assert not notified(app, "loop")  # before: every poll failed, the list emptied, a notice each time


async def test_a_symlink_loop_pre_registration_is_listed_with_why_and_the_launch_dialog_opens(runs_dir, prereg_dir):
    os.symlink("loop.md", prereg_dir / "loop.md")
    (prereg_dir / "fifo.md").unlink(missing_ok=True)
    os.mkfifo(prereg_dir / "fifo.md")
    app = make_app(runs_dir, prereg_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen), what="the launch dialog")
        entries = {e.path.name: e for e in app.screen.entries.values()}
        assert "symbolic link loop" in entries["loop.md"].problem, entries["loop.md"]
        assert "FIFO" in entries["fifo.md"].problem, entries["fifo.md"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen), what="the dialog closed")


async def test_a_fifo_where_the_video_goes_is_said_and_the_seed_view_closes(runs_dir):
    d = make_run_dir(runs_dir, "z-fifo-video", total=3, done=3, state="done",
                     rows=[make_row(s, video=f"videos/rollout_seed00{s}.mp4") for s in range(3)])
    (d / "videos").mkdir(exist_ok=True)
    os.mkfifo(d / "videos" / "rollout_seed000.mp4")
    app = make_app(runs_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 3, what="the rows read")
        await pilot.press("g")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen), what="the seed screen")
        screen = app.screen
        await wait_for(pilot, lambda: "FIFO" in plain(screen.query_one("#video-note")), what="the FIFO named",
                       state=lambda: plain(screen.query_one("#video-note")))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SeedScreen), what="back from the seed view")


async def test_a_secret_in_a_row_someone_wrote_is_never_on_screen(runs_dir):
    """The driver redacts what it writes; a row written by another hand can quote a token all the same."""
    token = "hf_" + "K" * 34
    rows = [make_row(s) for s in range(3)]
    rows[1] = {**rows[1], "note": f"see {token}", "status": "error", "error": f"HF_TOKEN={token}"}
    make_run_dir(runs_dir, "z-secret", total=3, done=3, state="done", rows=rows)
    app = make_app(runs_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 3, what="the rows read")
        assert token not in app.export_screenshot()
        await pilot.press("g", "right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen), what="the seed screen")
        await wait_for(pilot, lambda: "note" in app.export_screenshot(), what="the row in words")
        shot = app.export_screenshot()
        assert token not in shot and "redacted" in shot
