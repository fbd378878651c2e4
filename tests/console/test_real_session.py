"""The real session (`T`): the selected seeds in order, the next owed seed's setup (poses and the sim's
front view, as the engine writes them), marks written as fsynced real.jsonl lines, a void with its
reason (cancelled: nothing written), the operator asked once, resuming at the next owed seed; snapshots
at 80x24 and 120x40. Every wait is on a condition."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from console.real_trials import RealSession, remember
from console.widgets.real_session import AskScreen, RealSessionScreen
from prereg.document.read import load
from prereg.document.real_spec import selected_seeds
from prereg.document.seal import freeze
from prereg.rundir.real import Trial, append_trial, read_trials
from prereg.rundir.real_setup import write_setup
from tests.console.conftest import make_app, make_row, make_run_dir, screen_text, until_steady, wait_for

SHA = "b" * 64
RUN = "real-oracle-20260101-000000"
PLAN = """---
fontaine: fontaine-prereg/1
id: real-console
title: "The oracle on the rig"
created: 2026-12-07
arms:
  - name: oracle
    policy: scripted
protocol:
  seeds: 0-5
  episode_seconds: 20
reads:
  primary: successes
  real: {trials: 4, alpha: 0.1, metric: success, selection_seed: 11, sim_k: 2, jitter_cm: 1.0}
gates:
  gpu_hours: 0.1
---

Four real trials.
"""


def _picture() -> bytes:
    import io

    img = Image.new("RGB", (160, 120), (235, 235, 230))
    draw = ImageDraw.Draw(img)
    draw.ellipse((90, 60, 130, 100), fill=(200, 60, 50))  # the disk
    draw.rectangle((30, 40, 60, 60), fill=(40, 90, 200))  # the boat
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def real_run(here) -> Path:
    plan = here / "real.md"
    plan.write_text(PLAN)
    freeze(plan, now="2026-12-07T12:00:00Z", commit="0" * 40)
    runs = here / "runs"
    d = make_run_dir(runs, RUN, arm="oracle", total=6, done=6, rows=[make_row(s, arm="oracle") for s in range(6)],
                     prereg={"id": "real-console", "sha256": "x", "path": str(plan)})
    for i, seed in enumerate(selected_seeds(load(plan), "oracle")):
        write_setup(d, seed, "boat-on-disk", (0.30 + 0.01 * i, -0.05, 0.0), math.radians(30), (0.25, 0.08, 0.0),
                    _picture())
    return d


def knows_everyone(runs: Path) -> None:
    remember(runs, operator="ana", checkpoint_sha256=SHA)


async def open_session(pilot, app) -> RealSessionScreen:
    await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id == RUN, what="the run selected")
    await pilot.press("T")
    await wait_for(pilot, lambda: any(isinstance(s, RealSessionScreen) for s in app.screen_stack),
                   what="the real session")  # (under the operator's dialog, when it is asked)
    return next(s for s in app.screen_stack if isinstance(s, RealSessionScreen))


def order(run: Path) -> tuple[int, ...]:
    return RealSession.open(json.loads((run / "manifest.json").read_text())["prereg"]["path"], "oracle", run).selected


async def test_marking_a_trial_writes_one_line_and_moves_to_the_next_seed(real_run):
    knows_everyone(real_run.parent)
    seeds = order(real_run)
    app = make_app(real_run.parent)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, app)
        assert screen.session.current == seeds[0]
        await pilot.press("space", "space")  # the timer: started, stopped
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), what="the progress dialog")
        await pilot.press("2", "enter")  # outside [0, 1]: said in the dialog, nothing kept
        await wait_for(pilot, lambda: "outside [0, 1]" in str(app.screen.query_one("#ask-problem").render()))
        await pilot.press("backspace", *"0.5", "enter")
        await wait_for(pilot, lambda: app.screen is screen and screen.progress == 0.5)
        await pilot.press("V")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), what="the video dialog")
        await pilot.press(*"clips/t1.mp4", "enter")
        await wait_for(pilot, lambda: app.screen is screen and screen.video == "clips/t1.mp4")
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.session.current == seeds[1], what="the next seed")
        await pilot.press("k")  # a double press: the next seed's timer has not started, nothing is written
        await wait_for(pilot, lambda: any("start the timer" in str(n.message) for n in app._notifications))
        assert len(read_trials(real_run, "oracle").trials) == 1
        await pilot.press("space", "k")
        await wait_for(pilot, lambda: screen.session.current == seeds[2], what="the third seed")
    got = read_trials(real_run, "oracle")
    assert not got.bad and [(t.seed, t.outcome) for t in got.trials] == [(seeds[0], "success"), (seeds[1], "knock_away")]
    t = got.trials[0]
    assert (t.operator, t.checkpoint_sha256, t.selection_seed, t.source) == ("ana", SHA, 11, "console")
    assert (t.progress, t.video) == (0.5, "clips/t1.mp4") and got.trials[1].progress is None  # kept for its trial only


async def test_void_asks_a_reason_and_a_cancelled_dialog_writes_nothing(real_run):
    knows_everyone(real_run.parent)
    seeds = order(real_run)
    app = make_app(real_run.parent)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, app)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), what="the reason dialog")
        await pilot.press(*"gripper", "escape")  # cancelled: nothing written, the seed still owed
        await wait_for(pilot, lambda: app.screen is screen, what="back on the session")
        assert not (real_run / "real.jsonl").exists()
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), what="the reason dialog")
        await pilot.press("enter")  # an empty reason is refused, said in the dialog
        await wait_for(pilot, lambda: "cannot be empty" in str(app.screen.query_one("#ask-problem").render()))
        await pilot.press(*"cable caught", "enter")
        await wait_for(pilot, lambda: (real_run / "real.jsonl").exists(), what="the void line")
        assert screen.session.current == seeds[0]  # a void keeps its seed owed
    (t,) = read_trials(real_run, "oracle").trials
    assert (t.seed, t.outcome, t.void_reason) == (seeds[0], "void", "cable caught")


async def test_reopening_resumes_at_the_next_owed_seed_and_the_operator_is_asked_once(real_run):
    seeds = order(real_run)
    append_trial(real_run, Trial.make(arm="oracle", seed=seeds[0], checkpoint_sha256=SHA, operator="bo",
                                      started_at="2026-12-08T10:00:00Z", ended_at="2026-12-08T10:01:00Z",
                                      outcome="failure", selection_seed=11, source="console"))
    remember(real_run.parent, checkpoint_sha256=SHA)
    app = make_app(real_run.parent)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, app)
        assert screen.session.current == seeds[1]  # the file decides
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), what="the operator asked")
        await pilot.press(*"cy", "enter")
        await wait_for(pilot, lambda: app.screen is screen and screen.operator == "cy")
        await pilot.press("space", "n")
        await wait_for(pilot, lambda: screen.session.current == seeds[2])
    app = make_app(real_run.parent)  # a second session: the name is remembered, the seed is the next owed
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, app)
        assert screen.session.current == seeds[2] and screen.operator == "cy"
        await pilot.press("space", "y")
        await wait_for(pilot, lambda: screen.session.current == seeds[3])
        assert not isinstance(app.screen, AskScreen)
        # a trial imported meanwhile (another console, fontaine-prereg import-real): the screen follows the file
        append_trial(real_run, Trial.make(arm="oracle", seed=seeds[3], checkpoint_sha256=SHA, operator="bo",
                                          started_at="2026-12-08T11:00:00Z", ended_at="2026-12-08T11:01:00Z",
                                          outcome="success", selection_seed=11, source="import:x.csv"))
        await wait_for(pilot, lambda: screen.session.current is None, what="the imported trial read")
        assert "Every selected seed has its trial" in str(screen.query_one("#real-setup").render())
    assert [t.operator for t in read_trials(real_run, "oracle").trials] == ["bo", "cy", "cy", "bo"]


async def test_a_run_without_a_real_read_says_so(here):
    runs = here / "runs"
    make_run_dir(runs, RUN, arm="oracle", total=2, done=2, rows=[make_row(s) for s in range(2)])
    app = make_app(runs)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id == RUN)
        await pilot.press("T")
        await wait_for(pilot, lambda: any("not launched from a pre-registration" in str(n.message)
                                          for n in app._notifications), what="the warning")
        assert not isinstance(app.screen, RealSessionScreen)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_real_session_snapshot(snap_compare, real_run, size):
    knows_everyone(real_run.parent)
    seeds = order(real_run)
    append_trial(real_run, Trial.make(arm="oracle", seed=seeds[0], checkpoint_sha256=SHA, operator="ana",
                                      started_at="2026-12-08T10:00:00Z", ended_at="2026-12-08T10:01:00Z",
                                      outcome="success", selection_seed=11, source="console"))
    app = make_app(real_run.parent)

    async def run_before(pilot):
        screen = await open_session(pilot, app)
        await wait_for(pilot, lambda: screen.seed_shown == seeds[1])
        await until_steady(pilot, lambda: screen_text(app), what="the screen")

    assert snap_compare(app, terminal_size=size, run_before=run_before)
