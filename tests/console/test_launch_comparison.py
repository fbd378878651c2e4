"""The launch dialog starts a comparison run (issue 24): a pre-registration with a `comparison:` block
offers `--arms A,B` beside its arms, shows what it would run, and launches fontaine-eval with an argv list."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from textual.widgets import Select

from console import preregs, runs
from console.widgets.dialogs import LaunchScreen
from tests.console.conftest import make_app, plain, press_button, wait_for

COMPARE = Path(__file__).resolve().parents[2] / "prereg" / "examples" / "compare.md"
LAUNCHED: list[list[str]] = []


def recording_argv(prereg_file, arm, run_dir):
    argv = runs.prereg_launch_argv(prereg_file, arm, run_dir)
    LAUNCHED.append(argv)
    return [sys.executable, "-c", "pass"]  # nothing runs: the argv it would have started is what is checked


def test_a_comparison_is_offered_validated_and_launched_as_arms():
    assert preregs.read_entry(COMPARE).comparisons == ["clumsy,steady"]
    assert preregs.comparison_pair("clumsy,steady") == ("clumsy", "steady") and preregs.comparison_pair("steady") is None
    assert preregs.run_label("clumsy,steady") == "clumsy-vs-steady"
    assert preregs.validate_launch(COMPARE, "steady,clumsy") is None  # either order: fontaine-eval runs the registered one
    demo = COMPARE.with_name("demo.md")
    assert "no frozen comparison of scripted and tiny-flow" in preregs.validate_launch(demo, "scripted,tiny-flow")
    argv = runs.prereg_launch_argv(COMPARE, "clumsy,steady", "runs/x")
    assert argv[argv.index("--arms") + 1] == "clumsy,steady" and "--arm" not in argv


async def test_the_launch_dialog_starts_a_comparison_run(runs_dir, prereg_dir):
    doc = prereg_dir / "compare.md"
    shutil.copy(COMPARE, doc)
    LAUNCHED.clear()
    app = make_app(runs_dir, prereg_dir, launch_argv=recording_argv, clock=__import__("time").time)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        app.screen.query_one("#prereg", Select).value = str(doc)
        arm = app.screen.query_one("#arm", Select)
        await wait_for(pilot, lambda: arm.value == "clumsy", what="the first arm chosen")
        arm.value = "clumsy,steady"  # offered beside the arms: the select takes it and shows its words
        shown = arm.query_one("SelectCurrent #label")
        await wait_for(pilot, lambda: "comparison run of both arms" in plain(shown), what="the option's label")
        assert plain(shown) == "clumsy vs steady · comparison run of both arms (--arms clumsy,steady)"
        box = app.screen.query_one("#launch-settings")
        await wait_for(pilot, lambda: "fontaine-eval --arms clumsy,steady" in plain(box), what="the comparison's settings")
        text = plain(box)
        assert "compare clumsy vs steady on success: paired discordant-seed e-process" in text
        assert "arm A   clumsy: scripted" in text and "grasp_miss 0.5" in text and "grasp_miss 0.1" in text
        assert "at most 60 seeds per arm (120 episodes)" in text
        await press_button(pilot, "#launch")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen) and LAUNCHED, what="the launch")
        (argv,) = LAUNCHED
        assert argv[argv.index("--prereg") + 1] == str(doc) and argv[argv.index("--arms") + 1] == "clumsy,steady"
        run_dir = Path(argv[argv.index("--run-dir") + 1])
        assert run_dir.parent == runs_dir and run_dir.name.startswith("demo-compare-clumsy-vs-steady-")
        assert app.last_launch() == {"prereg": str(doc), "arm": "clumsy,steady"}
        await pilot.press("l")  # the dialog remembers the comparison as the last choice
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        await wait_for(pilot, lambda: app.screen.query_one("#arm", Select).value == "clumsy,steady")
