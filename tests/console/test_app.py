"""Pilot tests of the console against run directories on disk (waiting on conditions, never sleeping)."""

import json
import os
import shutil
import sys
from pathlib import Path

import psutil
from textual.widgets import Select

from console.widgets.dialogs import ConfirmScreen, HelpScreen, LaunchScreen, ResultsScreen
from prereg import rundir as rd
from prereg.rundir.files import write_json_atomic
from tests.console.conftest import make_app, make_row, make_run_dir, notified, plain, press_button, wait_file, wait_for


def counts_text(app):
    return plain(app.screen.query_one("#counts"))


def header_text(app):
    return plain(app.screen.query_one("#run-header"))


async def test_rows_appended_to_the_file_appear_in_the_panels(runs_dir):
    d = make_run_dir(runs_dir, "live-scripted-20260101-000000", total=30, done=0, state="running", rows=[])
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None, what="the run's detail")
        await wait_for(pilot, lambda: "0/0" in counts_text(app))
        with open(d / "rows.jsonl", "a") as f:
            for s in range(10):
                f.write(json.dumps(make_row(s)) + "\n")
            f.write(json.dumps(make_row(10))[:30])  # a partial line: held, not counted
        await wait_for(pilot, lambda: "2/10" in counts_text(app), what="10 rows in the counts")
        assert app.detail.view.corrupt == 0
        with open(d / "rows.jsonl", "a") as f:
            f.write(json.dumps(make_row(10))[30:] + "\n")
        await wait_for(pilot, lambda: "3/11" in counts_text(app), what="the completed 11th row")
        grid = plain(app.screen.query_one("#grid"))
        assert grid.count("■") == 11
        recent = app.screen.query_one("#recent")
        assert recent.row_count == 11


async def test_corrupt_line_is_counted_and_shown(runs_dir):
    make_run_dir(runs_dir, "bad-scripted-20260101-000000", total=5, done=5, extra_lines=["{this is not json"])
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "line 6: not JSON" in counts_text(app))
        assert app.detail.view.corrupt == 1


async def test_torn_last_line_of_an_ended_run_is_counted(runs_dir):
    d = make_run_dir(runs_dir, "torn-scripted-20260101-000000", total=5, done=3)
    with open(d / "rows.jsonl", "a") as f:
        f.write('{"seed": 3, "succ')
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "torn last line" in counts_text(app))
        assert app.detail.view.corrupt == 1


async def test_missing_files_are_shown(runs_dir):
    d = runs_dir / "bare-scripted-20260101-000000"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"run_id": d.name, "arm": "scripted", "seeds": [0, 1]}))
    (d / "status.json").write_text("{broken")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "missing" in header_text(app))
        text = header_text(app)
        assert "missing: pid.json, heartbeat, rows.jsonl" in text
        assert "unreadable: status.json: not JSON" in text


async def test_stop_key_with_confirmation_writes_stop_and_shows_stopping(runs_dir):
    d = make_run_dir(runs_dir, "live-scripted-20260101-000000", total=30, done=3, state="running")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = plain(app.screen.query_one("#dialog-body"))
        assert "finishes up to 4 episodes in flight" in body and "STOP" in body
        await pilot.press("s", "d", "l", "n")  # main-screen keys do nothing inside a dialog; n answers it
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert len(app.screen_stack) == 1 and not app.launched  # no second dialog, no launch behind it
        assert not (d / "STOP").exists()
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")  # Esc closes a dialog as "no"
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert not (d / "STOP").exists()
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: (d / "STOP").exists(), what="the STOP file")
        stop = json.loads((d / "STOP").read_text())
        assert stop["by"] == "user" and "console" in stop["who"] and stop["detail"] == "stop key in the console"
        await wait_for(pilot, lambda: app.detail.info.state == "stopping")
        await wait_for(pilot, lambda: "STOP requested" in header_text(app))
        # the driver confirms: the console shows stopped
        status = json.loads((d / "status.json").read_text())
        status.update(state="stopped", reason="STOP file")
        (d / "status.json").write_text(json.dumps(status))
        await wait_for(pilot, lambda: app.detail.info.state == "stopped", what="stopped")


async def test_stop_on_an_ended_run_says_so(runs_dir):
    d = make_run_dir(runs_dir, "done-scripted-20260101-000000")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: notified(app, "has already ended (done); nothing to stop"))
        assert not isinstance(app.screen, ConfirmScreen)
        assert not (d / "STOP").exists()


async def test_reattach_after_restart_and_died_detection(runs_dir, procs):
    d = runs_dir / "live-scripted-20260101-000000"
    proc = procs(d, "--rows", 3, "--total", 50, "--row-every", 0.05)
    wait_file(d / "status.json")
    app = make_app(runs_dir, clock=__import__("time").time)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.live, what="a live run")
        await wait_for(pilot, lambda: app.detail.view.rows == 3)
        await pilot.press("q")
    assert proc.poll() is None, "quitting the console must leave the run running"
    assert app.return_code == 0

    app2 = make_app(runs_dir, clock=__import__("time").time)
    async with app2.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app2.detail is not None and app2.detail.info.state == "running")
        assert app2.detail.view.rows == 3
        proc.kill()
        proc.wait(timeout=10)
        await wait_for(pilot, lambda: app2.detail.info.state == "died", what="died")
        await wait_for(pilot, lambda: "died" in header_text(app2) and "rows so far" in header_text(app2))


async def test_quit_says_which_runs_keep_running(runs_dir, procs):
    d = runs_dir / "live-scripted-20260101-000000"
    proc = procs(d)
    wait_file(d / "pid.json")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.live)
        await pilot.press("q")
    assert proc.poll() is None
    assert "keep running" in app.quit_notice and d.name in app.quit_notice


async def test_a_reused_pid_is_not_the_run(runs_dir):
    me = psutil.Process()
    make_run_dir(runs_dir, "reused-scripted-20260101-000000", state="running", done=2,
                 pid={"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time() - 3600})
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        assert app.detail.info.state == "died" and not app.detail.info.live
        await pilot.press("K")  # no live process: nothing to signal, and no dialog
        await wait_for(pilot, lambda: notified(app, "has no live process to signal (died)"))
        assert not isinstance(app.screen, ConfirmScreen)


async def test_escalate_needs_two_confirmations_then_kills_the_group(runs_dir, procs):
    d = runs_dir / "live-scripted-20260101-000000"
    proc = procs(d)
    wait_file(d / "pid.json")
    app = make_app(runs_dir, clock=__import__("time").time)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.live)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = plain(app.screen.query_one("#dialog-body"))
        assert "SIGTERM" in body and "ends `stopped`" in body
        assert "loses the episodes in flight" not in body.split("SIGKILL")[0]
        await pilot.press("q", "y")  # q never quits from a dialog: the y that follows still answers it
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and "Really" in plain(app.screen.query_one("#dialog-body")))
        said = str(app.screen.query_one("#yes").label)  # what the button does, in order: it said "Kill"
        assert said.startswith("SIGTERM now, SIGKILL after ") and said.endswith(" s (y)"), said
        assert proc.poll() is None
        await pilot.press("y")
        await wait_for(pilot, lambda: proc.poll() is not None, what="the process to end")
        # it died on SIGTERM without its final state: the console records the kill it made
        await wait_for(pilot, lambda: app.detail.info.state == "stopped")


LAUNCHED_ARGV = []


def fake_argv(prereg_file, arm, run_dir):
    argv = [sys.executable, os.path.join(os.path.dirname(__file__), "fake_driver.py"), str(run_dir),
            "--rows", "2", "--total", "2", "--row-every", "0.05"]
    LAUNCHED_ARGV.append(argv)
    return argv


def frozen_demo(prereg_dir):
    src = os.path.join(os.path.dirname(__file__), "..", "..", "prereg", "examples", "demo.md")
    dst = prereg_dir / "demo.md"
    shutil.copy(src, dst)
    return dst


async def open_launch(pilot, app, path):
    await pilot.press("l")
    await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
    app.screen.query_one("#prereg", Select).value = str(path)
    await wait_for(pilot, lambda: app.screen.query_one("#arm", Select).value != Select.NULL)


async def test_launch_dialog_shows_validation_errors_in_place(runs_dir, prereg_dir):
    path = frozen_demo(prereg_dir)
    text = path.read_text().replace("episode_seconds: 20", "episode_seconds: 25", 1)
    assert "episode_seconds: 25" in text
    path.write_text(text)  # edited after freezing: the launch guard refuses it
    app = make_app(runs_dir, prereg_dir, launch_argv=fake_argv)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_launch(pilot, app, path)
        await press_button(pilot, "#launch")
        err = app.screen.query_one("#launch-error")
        await wait_for(pilot, lambda: err.display and plain(err), what="the validation message")
        assert "demo.md" in plain(err)
        assert isinstance(app.screen, LaunchScreen)
        assert list(runs_dir.iterdir()) == []


async def test_launch_dialog_starts_a_detached_run_that_the_console_follows(runs_dir, prereg_dir, tmp_path):
    path = frozen_demo(prereg_dir)
    app = make_app(runs_dir, prereg_dir, launch_argv=fake_argv, clock=__import__("time").time)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_launch(pilot, app, path)
        await press_button(pilot, "#launch")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen))
        assert app.launched, "a run directory was created"
        run_dir = app.launched[0]
        assert run_dir.name.startswith("demo-tiny-engine-scripted-")
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.state == "done", timeout=20)
        assert app.detail.view.rows == 2
        assert (run_dir / "driver.log").exists()
        # the console reaps its child once it exits (the final status is written just before): no zombie
        await wait_for(pilot, lambda: all(w.popen is None for w in app.watcher.watches.values()), timeout=20,
                       what="the launched child reaped")


async def test_results_without_prereg_and_with_one(runs_dir):
    make_run_dir(runs_dir, "a-scripted-20260101-000000")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("r")
        await wait_for(pilot, lambda: notified(app, "has no pre-registration in its manifest"))
        assert not isinstance(app.screen, ResultsScreen)


async def test_help_and_discord_test_post(runs_dir):
    from console.notify.link import ConsoleNotifier, LinkState

    class FakeNotifier(ConsoleNotifier):  # the console's whole view of the Discord side
        state = LinkState("ok", "Discord: ok")
        setup_hint = None
        sent = 0
        polled = []

        def send_test(self):
            FakeNotifier.sent += 1
            return True

        def test_outcomes(self):
            return [("t1", {"state": "sent"})] if FakeNotifier.sent else []

        def tick(self, live):  # the link to the detached notifier: start it if needed, read its status
            FakeNotifier.polled.append(live)

        def close(self):
            pass

    make_run_dir(runs_dir, "a-scripted-20260101-000000", state="running", done=3)
    app = make_app(runs_dir, notifier=FakeNotifier())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await wait_for(pilot, lambda: "Discord: ok" in plain(app.screen.query_one("#discord")))
        await pilot.press("t")
        await wait_for(pilot, lambda: FakeNotifier.sent == 1)
        await wait_for(pilot, lambda: FakeNotifier.polled, what="the notifier link's turn")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_results_key_runs_the_report_and_shows_the_chart_path(runs_dir, prereg_dir):
    doc = frozen_demo(prereg_dir)
    before = doc.read_text()
    d = make_run_dir(runs_dir, "demo-tiny-engine-scripted-20260101-000000", total=6, done=6,
                     prereg={"id": "demo-tiny-engine", "sha256": "x", "path": str(doc)},
                     rows=[make_row(s, run_id="demo-tiny-engine-scripted-20260101-000000") for s in range(6)])
    from tests.prereg.conftest import launched_manifest  # a run of this registration: its results are appended

    man = {**json.loads((d / "manifest.json").read_text()), **launched_manifest(doc, "scripted", run_id=d.name)}
    (d / "manifest.json").write_text(json.dumps(man))
    app = make_app(runs_dir, prereg_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen))
        status = app.screen.query_one("#results-status")
        await wait_for(pilot, lambda: "chart:" in plain(status), timeout=60, what="the report to finish")
        text = plain(status)
        output = plain(app.screen.query_one("#results-output"))
        assert str(d / "chart.png") in text
        assert "report written" in text, output
        assert (d / "chart.png").exists()
        # headless, the terminal gets cells: the chart is drawn as text and eighth-blocks, not the PNG's smudges
        cells = app.screen.query_one("#results-cells")
        assert cells.display and not app.screen.query_one("#results-chart").display
        drawn = plain(cells)
        assert "■ scripted  1/6 successes, 2 knock-aways" in drawn  # console/fixtures.py make_row's seeds 0-5
        assert "+4.5 cm ┤" in drawn and "-6.1 cm ┤" in drawn  # the range in words, not tick smudges
        assert drawn.splitlines()[-1].split()[:3] == ["seed", "0", "1"]
        assert doc.read_text() != before, "the report appends its results to the document"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ResultsScreen))


async def test_arrow_keys_select_another_run(runs_dir):
    make_run_dir(runs_dir, "a-scripted-20260101-000000", done=20)
    make_run_dir(runs_dir, "b-scripted-20260101-010000", done=10, total=20, state="stopped")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id.startswith("b-")
                       and table.row_count == 2 and table.cursor_row == 0)  # newest first
        table.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: app.detail.info.run_id.startswith("a-") and "4/20" in counts_text(app),
                       state=lambda: (app.detail.info.run_id, counts_text(app)[:80]))
        await pilot.press("up")
        await wait_for(pilot, lambda: app.detail.info.run_id.startswith("b-") and "2/10" in counts_text(app))


async def test_command_palette_offers_every_action(runs_dir):
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.05)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Launch a run", "Launch the demo", "Stop the selected run", "Escalate: kill the selected run",
                      "Results of the selected run", "Discord test post", "Keys and states"):
            assert title in titles
        footer_keys = {b.key for b in app.screen.BINDINGS}
        assert {"l", "d", "s", "K", "r", "t", "question_mark", "q"} <= footer_keys


def test_main_parses_its_options(monkeypatch, tmp_path):
    from console import app as app_module

    seen = {}

    def fake_run(self):
        seen.update(runs_dir=self.runs_dir, prereg_dirs=self.prereg_dirs, poll=self.poll_s)

    monkeypatch.setattr(app_module.FontaineApp, "run", fake_run)
    assert app_module.main(["--runs-dir", str(tmp_path), "--prereg-dir", "a", "--prereg-dir", "b", "--poll", "1"]) == 0
    assert seen["runs_dir"] == tmp_path and seen["poll"] == 1.0
    from console.preregs import EXAMPLES_DIR  # a folder of one's own adds to the shipped examples
    assert seen["prereg_dirs"] == [__import__("pathlib").Path("a"), __import__("pathlib").Path("b"), EXAMPLES_DIR]


async def test_a_starting_run_shows_starting_and_its_arm_and_quit_lists_only_live_processes(runs_dir, prereg_dir):
    path = frozen_demo(prereg_dir)

    def slow_start(prereg_file, arm, run_dir):
        return [sys.executable, os.path.join(os.path.dirname(__file__), "fake_driver.py"), str(run_dir),
                "--rows", "2", "--total", "2", "--row-every", "0.05", "--wait-for", "go"]

    app = make_app(runs_dir, prereg_dir, launch_argv=slow_start, clock=__import__("time").time)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_launch(pilot, app, path)
        await press_button(pilot, "#launch")
        await wait_for(pilot, lambda: app.launched and app.detail is not None
                       and app.detail.info.path.resolve() == app.launched[0].resolve(), what="the launched run shown")
        run_dir = app.launched[0]
        await wait_for(pilot, lambda: app.detail.info.state == "starting", state=lambda: app.detail.info.state)
        await wait_for(pilot, lambda: "starting" in header_text(app) and "arm scripted" in header_text(app),
                       state=lambda: header_text(app))
        assert "missing:" not in header_text(app) and "arm ?" not in header_text(app)
        table = app.screen.query_one("#runs")
        assert [str(c) for c in table.get_row(str(run_dir))][1:3] == ["starting", "scripted"]
        (run_dir / "go").touch()
        await wait_for(pilot, lambda: app.detail.info.state == "done", timeout=20, what="the run to end")
        popen = next(w.popen for w in app.watcher.watches.values() if w.path.resolve() == run_dir.resolve())
        if popen is not None:
            popen.wait(timeout=10)  # ended seconds ago, possibly not reaped by the console yet
        await pilot.press("q")
    assert app.quit_notice == "No run is live.", app.quit_notice


async def test_q_does_not_close_the_results_dialog_while_the_report_runs(runs_dir, prereg_dir, monkeypatch):
    import threading

    from console.widgets import dialogs

    release = threading.Event()

    def slow_report(prereg_file, arm_runs):
        release.wait(20)
        return 0, "report output"

    monkeypatch.setattr(dialogs, "run_report", slow_report)
    doc = frozen_demo(prereg_dir)
    make_run_dir(runs_dir, "demo-tiny-engine-scripted-20260101-000000", total=6, done=6,
                 prereg={"id": "demo-tiny-engine", "sha256": "x", "path": str(doc)})
    app = make_app(runs_dir, prereg_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await pilot.press("q")  # does not quit while the report runs: the app is still there to show it
        release.set()
        await wait_for(pilot, lambda: "report output" in plain(app.screen.query_one("#results-output")))
        assert isinstance(app.screen, ResultsScreen) and app.is_running
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ResultsScreen))


async def test_runs_newest_first_whatever_their_names_and_the_selected_run_stays_in_view_at_80x24(runs_dir):
    for i in range(12):  # names in the reverse order of their launch times
        make_run_dir(runs_dir, f"{chr(ord('z') - i)}-scripted-20260101-{i:02d}0000", done=5, total=5)
    app = make_app(runs_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == 12 and app.detail is not None)
        order = [row.key.value.rsplit("/", 1)[-1] for row in table.ordered_rows]
        assert order == sorted(order, key=lambda n: n[-15:], reverse=True), order
        assert table.size.height < 12  # sized to the terminal, so the selection must scroll
        table.focus()
        for _ in range(11):
            await pilot.press("down")
        await wait_for(pilot, lambda: app.detail.info.run_id.startswith("z-"))
        row_y = table.cursor_row - table.scroll_offset.y + 1  # the header row
        assert 0 < row_y < table.size.height, (table.cursor_row, table.scroll_offset, table.size)


async def test_a_page_not_on_screen_shows_the_newest_rows_when_it_comes_forward(runs_dir):
    """In a small terminal the hidden pages are not drawn while rows arrive (no work, no layout),
    and show what arrived meanwhile when they come forward."""
    import json

    d = make_run_dir(runs_dir, "live-scripted-20260101-000000", total=40, done=0, state="running", rows=[], mtime=None)
    app = make_app(runs_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and "0/0" in counts_text(app))
        screen = app.screen
        assert screen.compact and screen.page == "counts"
        with open(d / "rows.jsonl", "a") as f:
            for s in range(30):
                f.write(json.dumps(make_row(s)) + "\n")
        await wait_for(pilot, lambda: "6/30" in counts_text(app), what="30 rows counted on the counts page")
        await pilot.press("4")

        def shown():
            return [strip.text for strip in app.screen._compositor.render_strips()]

        await wait_for(pilot, lambda: any(line.strip("│ ").startswith("29 ") for line in shown()),
                       what="the newest row on the rows page")
        await pilot.press("3")
        await wait_for(pilot, lambda: sum(line.count("■") for line in shown() if "success" not in line) == 30,
                       what="30 cells on the seeds page (the legend aside)",
                       state=lambda: "\n".join(shown()))


async def test_a_small_terminal_shows_one_panel_at_a_time(runs_dir):
    make_run_dir(runs_dir, "a-scripted-20260101-000000", done=20)
    app = make_app(runs_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and "4/20" in counts_text(app))
        screen = app.screen
        assert screen.compact and screen.query_one("#counts").display and not screen.query_one("#recent").display
        await pilot.press("p")
        assert screen.page == "pace" and screen.query_one("#pace").display and not screen.query_one("#counts").display
        await pilot.press("4")
        assert screen.query_one("#recent").display
        await pilot.press("g")  # the seed grid comes forward with its page
        assert screen.page == "seeds" and screen.query_one("#grid").has_focus
    app2 = make_app(runs_dir)
    async with app2.run_test(size=(200, 60)) as pilot:
        await wait_for(pilot, lambda: app2.detail is not None)
        screen = app2.screen
        assert not screen.compact
        assert all(screen.query_one(w).display for w in ("#counts", "#pace", "#grid", "#hist", "#recent"))


# -- focus: where the keys go (issue 27) ------------------------------------------------------

def grid_cursor_cells(app) -> list[str]:
    """The grid's cells drawn reversed (the seed cursor), as the grid shows them now."""
    grid = app.screen.query_one("#grid")
    return [grid.content.plain[s.start:s.end] for s in grid.content.spans if "reverse" in str(s.style)]


async def test_g_shows_the_seed_cursor_at_once_and_esc_from_a_seed_gives_the_keys_back_to_the_runs(runs_dir):
    from console.widgets.seed_screen import SeedScreen

    make_run_dir(runs_dir, "a-scripted-20260101-000000", done=20)
    make_run_dir(runs_dir, "b-scripted-20260101-010000", done=10, total=20, state="stopped",
                 rows=[make_row(s) for s in range(10)])
    make_run_dir(runs_dir, "c-scripted-20260101-020000", done=5, total=20, state="stopped",
                 rows=[make_row(s) for s in range(5)])
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id.startswith("c-")
                       and table.row_count == 3 and not app.detail.loading and "/5" in counts_text(app))
        assert table.has_focus and grid_cursor_cells(app) == []
        await pilot.press("g")
        await wait_for(pilot, lambda: app.screen.query_one("#grid").has_focus, what="the grid focused")
        assert grid_cursor_cells(app) == ["■"], "the seed under the cursor is marked before any arrow key"
        await pilot.press("right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.seed == 1)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SeedScreen))
        await wait_for(pilot, lambda: app.screen.query_one("#runs").has_focus, what="the runs list focused")
        assert grid_cursor_cells(app) == []
        await pilot.press("down")  # the runs list moves, not a hidden grid cursor
        await wait_for(pilot, lambda: app.detail.info.run_id.startswith("b-") and "/10" in counts_text(app))
        await pilot.press("down")
        await wait_for(pilot, lambda: app.detail.info.run_id.startswith("a-"))
        await pilot.press("home")
        await wait_for(pilot, lambda: table.cursor_row == 0 and app.detail.info.run_id.startswith("c-"),
                       what="home: the newest run")
        await pilot.press("end")
        await wait_for(pilot, lambda: table.cursor_row == 2 and app.detail.info.run_id.startswith("a-"),
                       what="end: the oldest run")
        await pilot.press("g")  # the grid kept its seed
        await wait_for(pilot, lambda: app.screen.query_one("#grid").has_focus)
        assert app.screen.query_one("#grid").cursor == (0, 1) and grid_cursor_cells(app) == ["■"]


async def test_results_of_a_live_run_asks_first_and_names_the_run(runs_dir, prereg_dir):
    me = psutil.Process()
    make_run_dir(runs_dir, "live-scripted-20260101-000000", total=30, done=3, state="running",
                 prereg={"id": "demo", "sha256": "x", "path": str(prereg_dir / "demo.md")},
                 pid={"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time()})
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.live)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = plain(app.screen.query_one("#dialog-body"))
        assert "live-scripted-20260101-000000 (scripted) is still running 3/30" in body
        assert "only the rows so far" in body
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert not isinstance(app.screen, ResultsScreen)


# -- folders that are not what they seem (issue 27) ----------------------------------------------

def test_a_runs_dir_that_is_a_file_is_refused_in_one_line(tmp_path, capsys):
    from console import app as app_module

    f = tmp_path / "runs"
    f.write_text("not a folder")
    assert app_module.main(["--runs-dir", str(f)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder of run directories" in err and len(err.strip().splitlines()) == 1


async def test_a_missing_runs_dir_is_said_and_an_empty_one_too(tmp_path):
    app = make_app(tmp_path / "nowhere")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "does not exist yet: the first launch creates it" in header_text(app),
                       state=lambda: header_text(app))
    (tmp_path / "empty").mkdir()
    app = make_app(tmp_path / "empty")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "No runs in" in header_text(app), state=lambda: header_text(app))


async def test_a_deleted_run_leaves_the_header_and_the_panels(runs_dir):
    make_run_dir(runs_dir, "a-scripted-20260101-000000", done=20)
    gone = make_run_dir(runs_dir, "b-scripted-20260101-010000", done=10, total=20, state="stopped",
                        rows=[make_row(s) for s in range(10)])
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id.startswith("b-")
                       and "/10" in counts_text(app))
        shutil.rmtree(gone)
        app.watcher.rescan()
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id.startswith("a-")
                       and "a-scripted" in header_text(app) and "/20" in counts_text(app),
                       state=lambda: (header_text(app), counts_text(app)[:60]))
        assert "b-scripted" not in header_text(app) and app.screen.query_one("#runs").row_count == 1
        assert notified(app, "b-scripted-20260101-010000 is no longer in")
        shutil.rmtree(runs_dir / "a-scripted-20260101-000000")
        app.watcher.rescan()
        await wait_for(pilot, lambda: "No runs in" in header_text(app) and counts_text(app) == "",
                       state=lambda: (header_text(app), counts_text(app)[:60]))


async def test_a_starting_run_counts_its_elapsed_time_from_its_process(runs_dir):
    me = psutil.Process()
    make_run_dir(runs_dir, "slow-scripted-20260101-000000", total=30, done=0, state="starting", elapsed_s=0.0, rows=[],
                 pid={"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time()})
    app = make_app(runs_dir, clock=lambda: me.create_time() + 75.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "elapsed" in plain(app.screen.query_one("#pace")))
        assert "elapsed 1m15s" in " ".join(plain(app.screen.query_one("#pace")).split())


async def test_prereg_dirs_add_to_the_examples_and_the_quit_message_reopens_with_them(runs_dir, prereg_dir):
    from console import preregs

    me = psutil.Process()  # a live run: its recorded process is this one
    make_run_dir(runs_dir, "live-scripted-20260101-000000", total=30, done=3, state="running",
                 pid={"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time()})
    frozen_demo(prereg_dir)
    app = make_app(runs_dir)
    app.prereg_dirs = preregs.prereg_dirs([str(prereg_dir)])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        shown = {str(o[1]) for o in app.screen.query_one("#prereg", Select)._options}
        assert any(str(preregs.DEMO_PREREG) in s or "examples" in s for s in shown), shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen))
        await wait_for(pilot, lambda: any(r.live for r in app.runs))
        await pilot.press("q")
    assert f"--runs-dir {runs_dir} --prereg-dir {prereg_dir} to reattach" in app.quit_notice, app.quit_notice


def test_the_launch_dialog_says_each_setting_once_and_none_of_a_model_for_the_oracle():
    from console import preregs

    oracle, problem = preregs.launch_settings(preregs.DEMO_PREREG, "scripted")
    assert problem is None
    labels = dict(oracle)
    assert "model" not in labels and "no model, no checkpoint" in labels["policy"]
    assert not any(word in value for _, value in oracle for word in ("bf16", "convmap", "decode"))
    masked, problem = preregs.launch_settings(preregs.DEMO_PREREG, "tiny-masked")
    assert problem is None
    model = dict(masked)["model"]
    assert model.startswith("grammar-masked decode") and "decode decode" not in model and model.count("decode") == 1


LONG_ID = "demo-tiny-grammar-masked-20260101-030000-a1b2c3d4"  # 49 wide, as a registered launch's


def _columns(table):
    return {c.key.value: c.get_render_width(table) for c in table.columns.values()}


async def test_the_runs_list_fits_its_width_after_a_resize_and_the_arm_is_whole_when_there_is_room(runs_dir):
    make_run_dir(runs_dir, LONG_ID, arm="tiny-grammar-masked", total=100, done=100)
    make_run_dir(runs_dir, "flow-officialmap-a-20260101-000000", arm="a", total=100, done=37)
    app = make_app(runs_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == 2 and not any(r.loading for r in app.runs))

        def fits():
            from tests.console.test_snapshots import columns_settled

            return columns_settled(table) and table.virtual_size.width <= table.scrollable_content_region.width

        def state():
            return table.size, table.virtual_size, _columns(table)

        await wait_for(pilot, fits, what="the columns within the table at 160", state=state)
        def long_row():
            return next([str(c) for c in table.get_row_at(i)] for i in range(table.row_count)
                        if str(table.get_row_at(i)[0]).startswith("demo-tiny"))

        row = long_row()
        assert LONG_ID in row and "tiny-grammar-masked" in row  # whole: there is room for both
        selected = app.selected
        for width, height in ((80, 24), (200, 60), (120, 40), (80, 24)):
            await pilot.resize_terminal(width, height)
            await wait_for(pilot, lambda w=width: table.size.width == w - 2 and fits(),
                           what=f"the columns within the table at {width}x{height}", state=state)
            assert table.max_scroll_x == 0  # succ and heartbeat on screen, no sideways scrollbar
            assert app.selected == selected  # rebuilding the columns kept the selection
        cells = long_row()
        assert cells[0].startswith("demo-tiny") and "…" in cells[0] and cells[0].endswith("a1b2c3d4")  # cut at 80
        assert cells[2] == "tiny-grammar-masked"  # the arm whole, the id clipped (it read "tiny…asked")
        await pilot.resize_terminal(100, 30)
        await wait_for(pilot, lambda: table.size.width == 98 and fits(), what="the columns at 100x30", state=state)
        assert long_row()[2] == "tiny-grammar-masked"


async def test_a_hand_named_run_directory_sorts_by_when_it_started(runs_dir):
    """`fontaine-eval --run-dir runs/oracle50` (the README's example) has no time in its name: it sorted
    as the oldest, so a live one sat at the bottom of the list, off screen at 80x24."""
    from prereg.rundir.discovery import run_sort_key

    make_run_dir(runs_dir, "demo-tiny-engine-scripted-20260101-000000", total=6, done=6)
    make_run_dir(runs_dir, "demo-tiny-engine-scripted-20260103-000000", total=6, done=6)
    d = make_run_dir(runs_dir, "oracle50", total=50, done=3, state="running")
    manifest = json.loads((d / rd.MANIFEST).read_text())
    write_json_atomic(d / rd.MANIFEST, {**manifest, "started_at": "2026-01-02T09:30:00Z"})
    app = make_app(runs_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == 3 and not any(r.loading for r in app.runs))
        await wait_for(pilot, lambda: [Path(r.key.value).name for r in table.ordered_rows] == [
            "demo-tiny-engine-scripted-20260103-000000", "oracle50", "demo-tiny-engine-scripted-20260101-000000"],
            what="launch order", state=lambda: [Path(r.key.value).name for r in table.ordered_rows])
    assert run_sort_key("oracle50", "2026-01-02T09:30:00+00:00") == ("20260102-093000", "oracle50")
    assert run_sort_key("oracle50", "2026-01-02T10:30:00+01:00") == ("20260102-093000", "oracle50")
    assert run_sort_key("oracle50", "yesterday") == run_sort_key("oracle50") == ("", "oracle50")
    assert run_sort_key("demo-x-20260101-000000", "2030-01-01T00:00:00Z")[0] == "20260101-000000"  # the name's own


async def test_the_latest_rows_fill_a_tall_panel(runs_dir):
    make_run_dir(runs_dir, "many-scripted-20260101-000000", total=100, done=100,
                 rows=[make_row(s) for s in range(100)])
    app = make_app(runs_dir)
    async with app.run_test(size=(220, 60)) as pilot:
        recent = app.screen.query_one("#recent")
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 100)
        await wait_for(pilot, lambda: recent.row_count == recent.content_region.height - 1 > 30,
                       what="as many rows as the panel has lines", state=lambda: (recent.row_count, recent.content_region))
        assert plain(recent).splitlines()[-1].split()[0] == "99"  # the newest at the bottom


async def test_help_wraps_each_entry_under_its_own_text(runs_dir):
    app = make_app(runs_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        from rich.console import Console

        shown = app.screen.query_one("#help Static")
        await wait_for(pilot, lambda: shown.content_size.width > 0)
        assert shown.content_size.width < 80  # the help is narrower than its lines: they wrap
        console = Console(width=shown.content_size.width, record=True, file=open(os.devnull, "w"))
        console.print(shown.content)  # what the Static draws, at its width
        lines = console.export_text().splitlines()
        k = next(i for i, line in enumerate(lines) if line.startswith("K "))
        assert lines[k + 1].startswith(" " * 10) and "twice" in lines[k + 1]  # under its text, not under the key
        assert any("(must be 0)" in line for line in lines)  # a paragraph reflows as one


async def test_every_key_of_the_main_screen_is_in_its_footer_at_80_columns(runs_dir):
    """At 80x24 the footer's last keys (R Resume, a Archive, / Filter, t Discord) were cut off the
    right: where one line cannot hold them the keys take two rows, and one again when it can."""
    from textual.widgets._footer import FooterKey

    from console.widgets.main_screen import KeysFooter, MainScreen

    make_run_dir(runs_dir, "demo-scripted-20260101-000000", rows=[make_row(s) for s in range(5)])
    app = make_app(runs_dir)
    shown = {b.key_display or b.key for b in MainScreen.BINDINGS if b.show}

    def keys_on_screen() -> set[str]:
        footer = app.screen.query_one(KeysFooter)
        return {k.key_display for k in footer.query(FooterKey)
                if k.region.width and footer.region.contains_region(k.region)}

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and keys_on_screen() == shown, what="every key",
                       state=lambda: sorted(shown - keys_on_screen()))
        assert app.screen.query_one(KeysFooter).region.height == 2
        await pilot.resize_terminal(160, 48)  # the panels all on screen: no p, and one line holds the rest
        await wait_for(pilot, lambda: app.screen.query_one(KeysFooter).region.height == 1
                       and keys_on_screen() == shown - {"p"}, what="the footer on one line",
                       state=lambda: (app.screen.query_one(KeysFooter).region, sorted(keys_on_screen())))
        await pilot.resize_terminal(100, 30)
        await wait_for(pilot, lambda: app.screen.query_one(KeysFooter).region.height == 2
                       and keys_on_screen() == shown, what="two rows again")
