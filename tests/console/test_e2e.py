"""End to end with the real driver: launch a scripted run from the console, quit, reopen,
reattach, stop it at an episode boundary with the key, and check the rows."""

import importlib.util
import json
import os
import signal
import time

import pytest

from console import runs
from console.widgets.dialogs import ConfirmScreen
from prereg.rundir.rows import ROW_FIELDS, read_rows
from tests.console.conftest import make_app, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("mujoco") is None or importlib.util.find_spec("engine.cli") is None,
                       reason="needs the engine (MuJoCo and engine.cli)"),
]

NUM_SEEDS = 40


def scripted_argv(prereg_file, arm, run_dir):
    """The demo key, but with enough seeds that the stop lands mid-run, and no video (nothing here reads one:
    filming each worker's first episode was ~7 s of rendering)."""
    return [*runs.scripted_launch_argv(run_dir, num_seeds=NUM_SEEDS, episode_seconds=20, workers=2), "--video-draw", "none"]


async def test_launch_quit_reattach_stop_with_the_real_driver(runs_dir):
    clock = time.time
    app = make_app(runs_dir, clock=clock, launch_argv=scripted_argv, poll_s=0.2)
    run_dir = None
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("d")
            await wait_for(pilot, lambda: app.launched, what="the launch")
            run_dir = app.launched[0]
            await wait_for(pilot, lambda: app.detail is not None and app.detail.info.live
                           and app.detail.view.rows >= 1, timeout=120, what="the first row of a live run")
            await pilot.press("q")
        pid = json.loads((run_dir / "pid.json").read_text())
        assert runs.run_process(pid) is not None, "the run must outlive the console"
        assert pid["pgid"] == pid["pid"], "the run has its own process group (start_new_session)"

        app2 = make_app(runs_dir, clock=clock, poll_s=0.2)
        async with app2.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app2.detail is not None and app2.detail.info.path == run_dir.resolve()
                           and app2.detail.info.live, timeout=30, what="reattach to the live run")
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(app2.screen, ConfirmScreen))
            await pilot.press("y")
            await wait_for(pilot, lambda: (run_dir / "STOP").exists())
            await wait_for(pilot, lambda: app2.detail.info.state in ("stopping", "stopped"), timeout=30)
            await wait_for(pilot, lambda: app2.detail.info.state == "stopped", timeout=180, what="stopped")
            await wait_for(pilot, lambda: app2.detail.view.rows == app2.detail.info.done, timeout=10)
            shown = app2.detail.view.rows

        status = json.loads((run_dir / "status.json").read_text())
        assert status["state"] == "stopped"
        read = read_rows(run_dir / "rows.jsonl")
        assert read.bad == [], "a stop at an episode boundary leaves no torn line"
        assert 1 <= len(read.rows) < NUM_SEEDS
        assert len(read.rows) == status["done"] == shown
        seeds = [r["seed"] for r in read.rows]
        assert len(set(seeds)) == len(seeds)
        for row in read.rows:
            assert all(k in row for k in ROW_FIELDS) and row["status"] == "ok"
        await_exit = time.monotonic() + 30
        while runs.run_process(pid) is not None and time.monotonic() < await_exit:
            time.sleep(0.1)
        assert runs.run_process(pid) is None, "the driver exits after a stop"
    finally:
        if run_dir is not None and (run_dir / "pid.json").exists():
            pid = json.loads((run_dir / "pid.json").read_text())
            if runs.run_process(pid) is not None:
                os.killpg(pid["pgid"], signal.SIGKILL)
