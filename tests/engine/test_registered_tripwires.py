"""A plan's registered tripwires (gates.tripwires), run by the real driver before the first episode.

Under the official map on this scene the coverage tripwire fails wrist_roll (the rig's 207 deg span
against the release's 106: about 54% uncovered under any offset): a plan that registers coverage
without the span-limited allowance must stop before spending anything, and the allowance lets it run.
The tiny MolmoAct2 carries the release's q01/q99 table, so it is judged exactly as the release is.
"""

from __future__ import annotations

import json

import pytest

from prereg import rundir as rd
from prereg.seal import freeze
from tests.helpers import read_status, run_eval

PLAN = """---
fontaine: fontaine-prereg/1
id: tw-e2e
title: registered tripwires end to end
created: 2026-12-01
arms:
  - name: tiny
    policy: molmoact2
    checkpoint: tiny
    revision: local
    decode: flow
    convmap: official
    dtype: fp32
    flow_steps: 2
protocol:
  seeds: [0]
  episode_seconds: 2
  workers: 1
  video_draw: none
reads:
  primary: successes
gates:
  gpu_hours: 0.25
  tripwires:
    coverage: {COVERAGE}
---

Plain words: the shim's coverage tripwire is registered; nothing runs if it fails.
"""


def frozen_plan(tmp_path, coverage: str):
    doc = tmp_path / "plan.md"
    doc.write_text(PLAN.replace("{COVERAGE}", coverage))
    freeze(doc)
    return doc


def wrist_roll(record: dict) -> dict:
    (arm,) = record["arms"]
    return next(j for j in arm["reports"]["coverage"]["joints"] if j["joint"] == "wrist_roll")


@pytest.mark.slow
def test_a_failing_registered_tripwire_stops_the_run_before_any_episode(tmp_path):
    doc = frozen_plan(tmp_path, "{max_uncovered: 0.3}")
    run_dir = tmp_path / "runs" / "tw-fail"
    out = run_eval("--prereg", str(doc), "--arm", "tiny", "--run-dir", str(run_dir))
    assert out.returncode == rd.EXIT_USAGE, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert "tripwire coverage: wrist_roll 54% uncovered" in out.stderr
    status = read_status(run_dir)
    assert status["state"] == rd.FAILED and status["done"] == 0
    assert status["reason"].startswith("tripwire coverage: wrist_roll 54% uncovered (span mismatch")
    assert status["tripwires"]["passed"] is False and "wrist_roll" in status["tripwires"]["table"]
    manifest = json.loads((run_dir / rd.MANIFEST).read_text())
    record = manifest[rd.TRIPWIRES_FIELD]
    assert record["passed"] is False and record["registered"]["coverage"]["span_limited"] == []
    roll = wrist_roll(record)
    assert roll["status"] == "fail" and roll["uncovered"] == pytest.approx(0.542, abs=0.005)
    assert "tripwire coverage: FAIL" in record["table"]
    assert record["arms"][0]["rig_table"]["count"] > 1000  # the scripted oracle's rollouts on this scene
    assert (run_dir / rd.ROWS).read_text() == ""  # no episode ran
    log = (run_dir / rd.LOG).read_text()
    assert "tripwire coverage: FAIL" in log and "tripwire coverage: wrist_roll 54% uncovered" in log
    # what the console and the notifier read
    snap = rd.read_snapshot(run_dir)
    passed, table = rd.tripwire_table(snap.status, snap.manifest)
    assert passed is False and "wrist_roll" in table
    assert rd.tripwire_table(None, manifest) == (False, record["table"])


@pytest.mark.slow
def test_the_span_limited_allowance_lets_it_launch(tmp_path):
    doc = frozen_plan(tmp_path, "{max_uncovered: 0.3, span_limited: [wrist_roll]}")
    run_dir = tmp_path / "runs" / "tw-pass"
    out = run_eval("--prereg", str(doc), "--arm", "tiny", "--run-dir", str(run_dir))
    assert out.returncode == rd.EXIT_DONE, out.stdout + out.stderr
    manifest = json.loads((run_dir / rd.MANIFEST).read_text())
    record = manifest[rd.TRIPWIRES_FIELD]
    assert record["passed"] is True
    roll = wrist_roll(record)
    assert roll["status"] == "warn" and "span-limited allowance" in roll["why"]
    assert manifest["gates"]["tripwires"]["coverage"]["span_limited"] == ["wrist_roll"]
    status = read_status(run_dir)
    assert status["state"] == rd.DONE and status["done"] == 1 and status["tripwires"]["passed"] is True
    assert "registered tripwires PASSED" in out.stdout and "registered tripwires PASSED" in (run_dir / rd.LOG).read_text()
