"""Launch and manage from the console (issue 16.7): the launch dialog's settings and memory,
resume, archive and filter keys — against real run directories and real (fake-driver) processes."""

import json
import os
import shutil
import sys

from textual.widgets import Select

from console.widgets.dialogs import ConfirmScreen, LaunchScreen
from prereg import rundir as rd
from prereg.core.errors import EXIT_DONE
from tests.console.conftest import make_app, make_row, make_run_dir, notified, plain, press_button, wait_for
from tests.helpers import returns_within

FAKE = os.path.join(os.path.dirname(__file__), "fake_driver.py")


def demo_copy(prereg_dir, name="demo.md"):
    src = os.path.join(os.path.dirname(__file__), "..", "..", "prereg", "examples", "demo.md")
    dst = prereg_dir / name
    shutil.copy(src, dst)
    return dst


def fake_argv(prereg_file, arm, run_dir):
    return [sys.executable, FAKE, str(run_dir), "--rows", "1", "--total", "1", "--row-every", "0.05"]


async def test_launch_dialog_shows_settings_and_gates_marks_unfrozen_and_remembers(runs_dir, prereg_dir):
    frozen = demo_copy(prereg_dir)
    draft = prereg_dir / "draft.md"
    text = frozen.read_text()
    end = text.find("\n---", 3)
    draft.write_text(text[:end + 4] + "\n\nA draft, never frozen.\n")  # the front matter only, no seal
    app = make_app(runs_dir, prereg_dir, launch_argv=fake_argv, clock=__import__("time").time)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        labels = [str(label) for label, _ in app.screen.query_one("#prereg", Select)._options]
        assert any("draft.md" in lbl and "[not frozen]" in lbl for lbl in labels), labels
        assert any("demo.md" in lbl and "[not frozen]" not in lbl for lbl in labels), labels
        app.screen.query_one("#prereg", Select).value = str(frozen)
        box = app.screen.query_one("#launch-settings")
        await wait_for(pilot, lambda: box.display and "gates" in plain(box), what="the arm's settings")
        shown = plain(box)
        assert "policy  scripted" in shown and "6 seeds" in shown and "GPU-hours ≤ 0.25" in shown, shown
        app.screen.query_one("#prereg", Select).value = str(draft)
        await wait_for(pilot, lambda: "fontaine-prereg freeze" in plain(box), what="how to freeze",
                       state=lambda: plain(box))
        assert "not frozen" in plain(box)
        app.screen.query_one("#prereg", Select).value = str(frozen)
        await wait_for(pilot, lambda: app.screen.query_one("#arm", Select).value == "scripted"
                       and "not frozen" not in plain(box) and "policy" in plain(box))
        await press_button(pilot, "#launch")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen) and app.launched,
                       state=lambda: (app.screen, plain(app.screen.query_one("#launch-error"))
                                      if isinstance(app.screen, LaunchScreen) else ""))
        assert json.loads((runs_dir / ".console" / "last-launch.json").read_text()) == \
            {"prereg": str(frozen), "arm": "scripted"}
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        await wait_for(pilot, lambda: app.screen.query_one("#prereg", Select).value == str(frozen)
                       and app.screen.query_one("#arm", Select).value == "scripted", what="the last choice again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen))
    assert not (runs_dir / ".console").is_dir() or ".console" not in [r.run_id for r in app.runs]


async def test_resume_key_confirms_the_argv_and_starts_it_detached(runs_dir):
    d = make_run_dir(runs_dir, "r-scripted-20260101-000000", state="stopped", done=1, total=3,
                     rows=[make_row(0, run_id="r-scripted-20260101-000000")])
    ran = []

    def resume_argv(run_dir):
        argv = [sys.executable, FAKE, str(run_dir), "--rows", "2", "--total", "2", "--row-every", "0.05"]
        ran.append(argv)
        return argv

    app = make_app(runs_dir, resume_argv=resume_argv, clock=__import__("time").time)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.state == "stopped")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = plain(app.screen.query_one("#dialog-body"))
        assert " ".join(ran[0]) in body and "2 of 3 seeds left" in body
        await pilot.press("y")
        await wait_for(pilot, lambda: app.detail.info.state in ("running", "done") and app.detail.info.path == d
                       or app.detail.info.state == "done", timeout=20, what="the resumed run",
                       state=lambda: app.detail.info.state)
        await wait_for(pilot, lambda: app.detail.info.state == "done", timeout=20)
        await wait_for(pilot, lambda: all(w.popen is None for w in app.watcher.watches.values()), timeout=20)
        assert "--resume" not in " ".join(ran[0])  # the fake; the real default is below
    from console.runs import resume_argv as real

    assert real(d) == [sys.executable, "-P", "-m", "engine.cli", "--resume", str(d)]


async def test_resume_refuses_a_locked_run_and_a_done_run(runs_dir):
    d = make_run_dir(runs_dir, "l-scripted-20260101-000000", state="stopped", done=1, total=3)
    done = make_run_dir(runs_dir, "d-scripted-20250101-000000", state="done")
    lock = rd.RunLock(d)
    lock.acquire()
    try:
        app = make_app(runs_dir)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == d.name)
            await pilot.press("R")
            await wait_for(pilot, lambda: notified(app, f"{d.name} is being written by process"))
            assert not isinstance(app.screen, ConfirmScreen)
            app._select(done)
            await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == done.name)
            await pilot.press("R")
            await wait_for(pilot, lambda: notified(app, "only a stopped, failed or died run is resumed"))
            assert not isinstance(app.screen, ConfirmScreen)
    finally:
        lock.release()


async def test_archive_moves_an_ended_run_out_of_the_list(runs_dir):
    a = make_run_dir(runs_dir, "a-scripted-20260101-000000", state="done")
    b = make_run_dir(runs_dir, "b-scripted-20260101-010000", state="done")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == 2 and app.detail is not None and app.detail.info.path.name == b.name)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert ".archive" in plain(app.screen.query_one("#dialog-body"))
        await pilot.press("y")
        await wait_for(pilot, lambda: table.row_count == 1, what="the run gone from the list")
        assert (runs_dir / ".archive" / b.name / "rows.jsonl").exists() and not b.exists() and a.exists()
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == a.name)


async def test_filter_key_narrows_the_list(runs_dir):
    make_run_dir(runs_dir, "flow-a-20260101-000000", arm="a", state="done")
    make_run_dir(runs_dir, "flow-b-20260101-010000", arm="b", state="stopped", done=3)
    make_run_dir(runs_dir, "discrete-a-20260101-020000", arm="a", state="done")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == 3 and app.detail is not None)
        await pilot.press("slash")
        await wait_for(pilot, lambda: app.screen.query_one("#filter").has_focus)
        await pilot.press("f", "l", "o", "w")
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("space", "s", "t", "o", "p")
        await wait_for(pilot, lambda: table.row_count == 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.has_focus and app.detail.info.run_id == "flow-b-20260101-010000")
        assert "filter" in str(table.border_title)
        await pilot.press("slash")
        await wait_for(pilot, lambda: app.screen.query_one("#filter").has_focus)
        await pilot.press("escape")
        await wait_for(pilot, lambda: table.row_count == 3 and str(table.border_title) == "runs")


def test_the_launch_list_reads_documents_with_the_one_parser_and_its_refusals(tmp_path):
    """console/preregs.py has no front-matter parser of its own: YAML aliases are refused there too."""
    from console.preregs import read_entry

    p = tmp_path / "alias.md"
    p.write_text("---\nid: &a x\ntitle: *a\narms: [scripted]\n---\n")
    e = read_entry(p)
    assert e.arms == [] and "alias.md:2" in e.problem and "aliases" in e.problem


def _release_readers(fifo) -> None:
    """A reader blocked on the FIFO (the bug this guards against) gets end-of-file and returns."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass  # no reader waiting: nothing to release


async def test_a_fifo_named_md_is_listed_as_unreadable_and_never_hangs_the_dialog(runs_dir, prereg_dir):
    """A FIFO `*.md` hung `fontaine-prereg validate` and the launch list (an unbounded read_text)."""
    from console.preregs import list_preregs, validate_launch

    demo_copy(prereg_dir)
    fifo = prereg_dir / "pipe.md"
    os.mkfifo(fifo)
    why = "pipe.md: cannot be read: it is a FIFO (named pipe), not a regular file"
    try:
        entries = returns_within(lambda: list_preregs([prereg_dir]))
        (bad,) = [e for e in entries if e.path == fifo]
        assert why in bad.problem and bad.arms == [] and bad.frozen is None, bad
        assert why in returns_within(lambda: validate_launch(fifo, "scripted"))
        app = make_app(runs_dir, prereg_dir)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("l")
            await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen), what="the launch dialog")
            labels = [str(label) for label, _ in app.screen.query_one("#prereg", Select)._options]
            assert any("pipe.md" in lbl and "[unreadable]" in lbl for lbl in labels), labels
            assert any("demo.md" in lbl and "[unreadable]" not in lbl for lbl in labels), labels
            app.screen.query_one("#prereg", Select).value = str(fifo)
            err = app.screen.query_one("#launch-error")
            await wait_for(pilot, lambda: err.display and why in plain(err), what="why it cannot be read",
                           state=lambda: plain(err))
            assert "\n" not in plain(err).strip()
            await press_button(pilot, "#launch")
            await wait_for(pilot, lambda: why in plain(err), what="the launch refused")
            assert isinstance(app.screen, LaunchScreen) and app.launched == []
    finally:
        _release_readers(fifo)


async def test_a_plan_of_ten_million_seeds_is_refused_in_the_dialog_at_once(runs_dir, prereg_dir):
    """`seeds: 0-10000000` hung the launch and grew the dialog to 3 GB: the plan is refused at its
    line, by the validation `fontaine-prereg validate` does, before any seed list is built."""
    import resource

    frozen = demo_copy(prereg_dir)
    text = frozen.read_text().replace("seeds: 0-5", "seeds: 0-10000000")
    frozen.write_text(text)  # an edited frozen document: it does not validate, before its seal is even checked
    line = text[:text.index("seeds: 0-10000000")].count("\n") + 1
    end = text.find("\n---", 3)
    draft = prereg_dir / "draft.md"
    draft.write_text(text[:end + 4] + "\n\nA draft, never frozen.\n")
    refusal = "protocol.seeds: '0-10000000' names more than 100,000 seeds, the most one run takes"
    ran = []
    rss_before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    app = make_app(runs_dir, prereg_dir, launch_argv=lambda *a: ran.append(a) or fake_argv(*a))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen), what="the launch dialog")
        box, err = app.screen.query_one("#launch-settings"), app.screen.query_one("#launch-error")
        for doc in (frozen, draft):
            app.screen.query_one("#prereg", Select).value = str(doc)
            want = f"{doc}:{line}: {refusal}"
            await wait_for(pilot, lambda want=want: box.display and want in plain(box), timeout=5,
                           what=f"the refusal of {doc.name}", state=lambda: plain(box))
            shown = plain(box)
            assert [ln.strip().split(" (a list")[0] for ln in shown.splitlines() if refusal in ln] == [want], shown
            assert "policy" not in shown and "fontaine-prereg freeze" not in shown, shown  # no settings, no freeze hint
            assert not err.display, plain(err)  # choosing a document clears the refusal of the one before
            # Launch once it takes a press: a click within 0.2 s of the previous one is the same press
            # (Textual's Button), which is what made this test fail on a quiet, fast machine
            await press_button(pilot, "#launch")
            await wait_for(pilot, lambda want=want: err.display and want in plain(err), timeout=5,
                           what="the launch refused", state=lambda: plain(err))
            assert isinstance(app.screen, LaunchScreen)
    assert ran == [] and app.launched == []
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before_kb) / 1024
    assert grew_mb < 300, f"the dialog's process grew by {grew_mb:.0f} MB: were the seeds expanded?"


def test_a_module_in_the_consoles_working_folder_never_shadows_a_launched_runs(tmp_path):
    """Issue 33: `python -m engine.cli` put the working folder first on the import path, so a `timeit.py`
    (here `random.py`, which the engine imports) where the console was started crashed every run it
    launched. The console starts its commands with `python -P`."""
    import subprocess

    from console.runs import scripted_launch_argv
    from tests.helpers import REPO

    (tmp_path / "random.py").write_text('raise SystemExit("the working folder\'s random.py was imported")\n')
    run_dir = tmp_path / "run"
    argv = scripted_launch_argv(run_dir, num_seeds=1, episode_seconds=0.5, workers=1) + ["--video-draw", "none"]
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == EXIT_DONE and "random.py was imported" not in out.stdout + out.stderr, out.stderr[-2000:]
async def test_at_80x24_the_launch_buttons_stay_on_screen_and_long_settings_wrap_under_their_values(runs_dir, prereg_dir):
    """The dialog outgrows 24 rows once a document is chosen: its buttons are docked at its bottom
    (they were below the fold), and a long setting wraps under its value, not under the labels."""
    frozen = demo_copy(prereg_dir)
    app = make_app(runs_dir, prereg_dir, launch_argv=fake_argv, clock=__import__("time").time)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        app.screen.query_one("#prereg", Select).value = str(frozen)
        box = app.screen.query_one("#launch-settings")
        await wait_for(pilot, lambda: box.display and "gates" in plain(box), what="the arm's settings")
        dialog = app.screen.query_one("#dialog")
        await wait_for(pilot, lambda: dialog.virtual_size.height > dialog.size.height, what="a dialog taller than the screen")
        for button in ("#launch", "#cancel"):
            region = app.screen.query_one(button).region
            assert region.height and region.bottom <= 24 and app.screen.get_widget_at(*region.center)[0] is \
                app.screen.query_one(button), (button, region)
        await press_button(pilot, "#launch")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen) and app.launched)


def test_a_long_setting_wraps_under_its_value():
    from rich.console import Console

    from console.widgets.dialogs import settings_renderable

    console = Console(width=50, record=True, file=open(os.devnull, "w"))
    console.print(settings_renderable([("seeds", "6 seeds"), ("gates", "GPU-hours ≤ 0.25; projected wall ≤ 0.5 h "
                                        "after 2 episodes; stall beyond 4x median episode (≥ 120 s)")]))
    lines = console.export_text().splitlines()
    assert lines[0].startswith("seeds   6 seeds") and lines[1].startswith("gates   GPU-hours")
    assert len(lines) > 2 and all(line.startswith(" " * 8) and line[8] != " " for line in lines[2:]), lines


def test_the_oracles_settings_say_what_it_reads_for_any_scene():
    """pick-lift has no boat: the oracle reads the true poses of the object and its target."""
    from console.preregs import arm_settings
    from prereg.rundir.status import GateSpec

    class Spec:
        policy, checkpoint, revision, seeds, episode_seconds, workers = "scripted", None, None, [0, 1], 20.0, 1
        gates, env, env_sha256, video_draw, record_predicts, section = GateSpec(), "pick-lift", None, "0", False, "base"

    policy = dict(arm_settings(Spec()))["policy"]
    assert "boat" not in policy and "true poses of the object and its target" in policy, policy


def test_one_oracle_arms_settings_show_its_skill_knobs(tmp_path):
    """issue 49: the launch dialog showed clumsy and steady (grasp_miss 0.5 and 0.1) with the same settings."""
    from console.preregs import launch_settings
    from tests.comparison_run import compare_doc

    doc = compare_doc(tmp_path)
    clumsy, problem = launch_settings(doc, "clumsy")
    steady, _ = launch_settings(doc, "steady")
    assert problem is None
    assert "grasp_miss 0.5" in dict(clumsy)["policy"] and "grasp_miss 0.1" in dict(steady)["policy"]
