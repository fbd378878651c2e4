"""The sim side of a registered real read: the jitter hook (a deterministic offset of the reset object,
the metrics started from there), and `fontaine-eval --sim-predictions RUN` end to end on a small plan
(2 seeds, K = 2, short episodes, the scripted oracle through the run's worker pool)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prereg.document.seal import freeze
from prereg.rundir.real import read_predictions
from prereg.rundir.real_setup import read_setup
from tests.helpers import run_eval

PLAN = """---
fontaine: fontaine-prereg/1
id: real-small
title: "The oracle, 2 seeds, paired with real trials"
created: 2026-12-07
arms:
  - name: oracle
    policy: scripted
protocol:
  seeds: 0-1
  episode_seconds: 12
  workers: 2
  video_draw: none
reads:
  primary: successes
  real: {trials: 2, alpha: 0.1, metric: success, selection_seed: 7, sim_k: 2, jitter_cm: 1.0}
gates:
  gpu_hours: 0.1
---

Two seeds, two jittered rollouts each.
"""


def test_the_jitter_is_deterministic_bounded_and_moves_only_the_object():
    from engine.sim.env import BoatEnv, jitter_offset_m

    a, b = jitter_offset_m(3, 0, 1.0), jitter_offset_m(3, 1, 1.0)
    assert np.array_equal(a, jitter_offset_m(3, 0, 1.0)) and not np.array_equal(a, b)
    draws = np.array([jitter_offset_m(s, k, 1.0) for s in range(50) for k in range(4)])
    assert np.abs(draws).max() <= 0.01 and np.abs(draws).max() > 0.008  # uniform within ±1 cm, reaching its edge
    assert not jitter_offset_m(3, 0, 0.0).any()
    env = BoatEnv(render_size=32)
    try:
        env.reset(3)
        boat, disk = env.boat_pos(), env.disk_pos()
        before = env.row()["dist_initial_cm"]
        env.jitter_object(a)
        assert np.allclose(env.boat_pos()[:2] - boat[:2], a) and env.boat_pos()[2] == pytest.approx(boat[2])
        assert np.array_equal(env.disk_pos(), disk)
        after = env.row()["dist_initial_cm"]  # the metrics start from the jittered pose
        want = np.linalg.norm(env.boat_pos()[:2] - disk[:2]) * 100
        assert after == pytest.approx(want, abs=0.01) and after != pytest.approx(before, abs=1e-3)
    finally:
        env.close()


def test_sim_predictions_are_written_for_every_seed_and_resume(tmp_path):
    plan = tmp_path / "real.md"
    plan.write_text(PLAN)
    freeze(plan, now="2026-12-07T12:00:00Z", commit="0" * 40)
    run_dir = tmp_path / "r"
    out = run_eval("--prereg", str(plan), "--arm", "oracle", "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr

    out = run_eval("--sim-predictions", str(run_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    got = read_predictions(run_dir, "oracle")
    assert not got.bad and sorted(got.by_seed) == [0, 1]
    for p in got.by_seed.values():
        assert (p.k, p.jitter_cm) == (2, 1.0) and 0 <= p.successes <= 2
        assert p.progress_mean is not None and 0.0 <= p.progress_mean <= 1.0
    for seed in (0, 1):  # both seeds are selected (trials: 2 of 2): their setups are there
        setup, why = read_setup(run_dir, seed)
        assert why is None and setup.env == "boat-on-disk" and setup.picture is not None  # the front view
        assert all(abs(v) < 60 for v in (*setup.object_cm, *setup.target_cm))
    assert "2 written" in out.stdout

    lines = (run_dir / "sim_predictions.jsonl").read_text().splitlines()
    again = run_eval("--sim-predictions", str(run_dir))  # resumes: nothing left to run, nothing written twice
    assert again.returncode == 0 and "0 written, 2 already there" in again.stdout
    assert (run_dir / "sim_predictions.jsonl").read_text().splitlines() == lines
    assert all(json.loads(x)["arm"] == "oracle" for x in lines)
    out = run_eval("--sim-predictions", str(run_dir), "--workers", "3")  # the run and its plan decide: said, not ignored
    assert out.returncode == 2 and "takes no other flag (got --workers)" in out.stderr


def test_a_run_without_a_registered_real_read_is_refused_in_one_line(tmp_path):
    plan = tmp_path / "plain.md"
    plan.write_text(PLAN.replace("  real: {trials: 2, alpha: 0.1, metric: success, selection_seed: 7, sim_k: 2, "
                                 "jitter_cm: 1.0}\n", "").replace("seeds: 0-1", "seeds: 0-0"))
    freeze(plan, now="2026-12-07T12:00:00Z", commit="0" * 40)
    run_dir = tmp_path / "r"
    assert run_eval("--prereg", str(plan), "--arm", "oracle", "--run-dir", str(run_dir)).returncode == 0
    out = run_eval("--sim-predictions", str(run_dir))
    assert out.returncode == 2 and "no real read is registered" in out.stderr and "Traceback" not in out.stderr
