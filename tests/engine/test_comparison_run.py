"""Comparison runs (issue 24): `fontaine-eval --prereg DOC --arms A,B` runs both arms of a registered
comparison in one run directory, interleaved by seed, and stops when the comparison decides.

The end-to-end tests run the scripted oracle at grasp_miss 0.5 against 0.1 (arms of known
skill, coupled by seed); the bad-input tests run nothing."""

from __future__ import annotations

import pytest

from engine.cli import main
from tests.helpers import REPO, read_rows, read_status, run_eval

COMPARE = REPO / "prereg" / "examples" / "compare.md"
DEMO = REPO / "prereg" / "examples" / "demo.md"
ARMS = ("--prereg", str(COMPARE), "--arms", "clumsy,steady")
DECIDED_AT = 19  # seeds 0-18: the 8th seed only steady wins (the discordant e-process reaches 2/alpha = 40)


@pytest.mark.parametrize("argv, needle", [
    (["--arms", "a,b"], "--arms needs --prereg FILE"),
    ([*ARMS, "--ray", "local"], "--ray with --arms is not supported yet"),
    (["--prereg", str(COMPARE), "--arms", "clumsy"], "name two different arms"),
    (["--prereg", str(COMPARE), "--arms", "steady,steady"], "name two different arms"),
    ([*ARMS, "--arm", "steady"], "give --arm NAME (one arm) or --arms A,B"),
    ([*ARMS, "--workers", "3"], "--workers: the frozen pre-registration decides this"),
    (["--prereg", str(DEMO), "--arms", "scripted,tiny-flow"], "no frozen comparison of scripted and tiny-flow"),
    (["--resume", "/nonexistent/run", "--arms", "clumsy,steady"], "the run's manifest decides this"),
])
def test_bad_comparison_launches_are_one_line_and_exit_2(argv, needle, capsys, tmp_path):
    assert main([*argv, "--run-dir", str(tmp_path / "r")] if "--resume" not in argv else argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()


SWAPPED = """---
fontaine: fontaine-prereg/1
id: t-compare
title: a comparison whose B is the clumsy arm
created: 2026-12-01
arms:
  - name: steady
    policy: scripted
    grasp_miss: 0.1
  - name: clumsy
    policy: scripted
    grasp_miss: 0.5
protocol:
  seeds: 0-39
  episode_seconds: 20
  workers: 2
  video_draw: "seeds:0"
reads:
  primary: successes
gates:
  gpu_hours: 0.05
decision_rules:
  - if: clumsy.successes < steady.successes
    then: the clumsy arm is worse
comparison: {arms: [steady, clumsy], metric: success, test: savi, alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: 30}
---

Plain words.
"""


@pytest.mark.slow
def test_a_comparison_run_interleaves_the_arms_and_stops_when_b_is_worse(tmp_path):
    from prereg.seal import freeze

    doc = tmp_path / "swapped.md"
    doc.write_text(SWAPPED)
    freeze(doc)
    run_dir = tmp_path / "run"
    out = run_eval("--prereg", str(doc), "--arms", "clumsy,steady", "--run-dir", str(run_dir))  # registered order wins
    assert out.returncode == 3, out.stdout + out.stderr
    assert "arms steady and clumsy interleaved by seed" in out.stdout and "30 seeds" in out.stdout  # max_seeds caps
    status = read_status(run_dir)
    assert status["stop"]["by"] == "decided" and status["comparison"]["outcome"] == "B worse"
    assert status["stop"]["detail"].startswith("(comparison) clumsy worse than steady at 19/30 seeds")
    assert status["total"] == 60 and status["arms"] == ["steady", "clumsy"]
    rows = read_rows(run_dir)
    order = [(r["arm"], r["seed"]) for r in rows]
    assert {s for _, s in order[:2]} == {0} and {a for a, _ in order[:2]} == {"steady", "clumsy"}  # seed 0 together
    assert max(s for _, s in order) <= DECIDED_AT  # nothing past the decision but the episodes in flight
    videos = sorted(p.name for p in (run_dir / "videos").iterdir())
    assert videos == ["rollout_clumsy_seed000.mp4", "rollout_steady_seed000.mp4"]  # one per arm, never overwritten
    assert {r["video"] for r in rows if r["seed"] == 0} == {f"videos/{v}" for v in videos}
    assert "arm steady: successes" in out.stdout and "comparison    clumsy worse than steady" in out.stdout
