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
from prereg.core.errors import EXIT_DONE, EXIT_USAGE
from prereg.document.seal import freeze
from prereg.rundir.manifest import tripwire_table
from tests.helpers import read_status, run_eval, run_eval_here

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
    assert out.returncode == EXIT_USAGE, out.stdout + out.stderr
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
    # "pre-GPU": judged before the model loaded, so none was (the manifest never says what it resolved to)
    assert record["before_load"] == "coverage, before the policy loaded" and manifest["policy_resolved"] is None
    log = (run_dir / rd.LOG).read_text()
    assert "tripwire coverage: FAIL" in log and "tripwire coverage: wrist_roll 54% uncovered" in log
    # what the console and the notifier read
    snap = rd.read_snapshot(run_dir)
    passed, table = tripwire_table(snap.status, snap.manifest)
    assert passed is False and "wrist_roll" in table
    assert tripwire_table(None, manifest) == (False, record["table"])


@pytest.mark.slow
def test_the_span_limited_allowance_lets_it_launch(tmp_path):
    doc = frozen_plan(tmp_path, "{max_uncovered: 0.3, span_limited: [wrist_roll]}")
    run_dir = tmp_path / "runs" / "tw-pass"
    # in this process, which has loaded the tiny model's code already (a launch paid ~10 s of imports again)
    out = run_eval_here("--prereg", str(doc), "--arm", "tiny", "--run-dir", str(run_dir))
    assert out.returncode == EXIT_DONE, out.stdout + out.stderr
    manifest = json.loads((run_dir / rd.MANIFEST).read_text())
    record = manifest[rd.TRIPWIRES_FIELD]
    assert record["passed"] is True
    roll = wrist_roll(record)
    assert roll["status"] == "warn" and "span-limited allowance" in roll["why"]
    assert manifest["gates"]["tripwires"]["coverage"]["span_limited"] == ["wrist_roll"]
    status = read_status(run_dir)
    assert status["state"] == rd.DONE and status["done"] == 1 and status["tripwires"]["passed"] is True
    assert "registered tripwires PASSED" in out.stdout and "registered tripwires PASSED" in (run_dir / rd.LOG).read_text()
    # coverage judged before the load too, on the same rig table: the oracle's rollouts ran once
    assert "registered tripwire coverage PASSED before the policy loaded" in out.stdout
    assert out.stdout.count("the rig table from the scripted oracle") == 1 and "before_load" not in record


def test_a_policy_without_the_shim_is_recorded_as_not_applicable():
    from engine.policies.factory import PolicySpec
    from engine.record.config import RunConfig
    from engine.run.tripwires import run_registered
    from prereg.document.model import CoverageTripwire, Tripwires
    from prereg.rundir.status import GateSpec

    cfg = RunConfig(run_id="r", arm="oracle", policy=PolicySpec(kind="scripted"), seeds=[0],
                    gates=GateSpec(tripwires=Tripwires(coverage=CoverageTripwire()).as_dict()))
    lines = []
    record = run_registered(cfg, {None: None}, log=lines.append)
    assert record["passed"] is True and record["failed"] == []
    assert record["arms"] == [{"arm": "oracle", "policy": "scripted", "applies": False,
                               "note": "not applicable: policy scripted has no joint-convention shim"}]
    assert any("not applicable" in line for line in lines)
    assert run_registered(RunConfig(run_id="r", arm="a", policy=PolicySpec(), seeds=[0]), {}) is None


def test_before_the_load_coverage_alone_is_judged_and_a_checkpoint_it_cannot_read_yet_waits(tmp_path):
    """check_at_start(before_load=True): coverage only (first_action needs the model, and the record says it
    did not run); a checkpoint whose norm_stats cannot be read before the load is judged after it, not refused
    here (the load says what is wrong with it in its own words)."""
    from engine.policies.factory import PolicySpec
    from engine.record.config import RunConfig
    from engine.run.tripwires import TripwireFailed, check_at_start
    from prereg.document.model import CoverageTripwire, FirstActionTripwire, Tripwires
    from prereg.rundir.status import GateSpec

    both = Tripwires(coverage=CoverageTripwire(max_uncovered=0.3), first_action=FirstActionTripwire())
    missing = PolicySpec(kind="molmoact2", checkpoint=str(tmp_path / "no-such-checkpoint"))
    cfg = RunConfig(run_id="r", arm="m", policy=missing, seeds=[0], gates=GateSpec(tripwires=both.as_dict()))
    lines, rigs = [], {}
    assert check_at_start(cfg, tmp_path, resume=False, policies={}, descriptions=None, log=lines.append,
                          before_load=True, rig_cache=rigs) == (None, False)
    assert any("not judged before the policy loads" in line and "no-such-checkpoint" in line for line in lines), lines

    tiny = PolicySpec(kind="molmoact2", checkpoint="tiny", convmap="official")
    cfg = RunConfig(run_id="r", arm="m", policy=tiny, seeds=[0], gates=GateSpec(tripwires=both.as_dict()))
    with pytest.raises(TripwireFailed) as failed:
        check_at_start(cfg, tmp_path, resume=False, policies={}, descriptions=None, log=lines.append,
                       before_load=True, rig_cache=rigs)
    record = failed.value.record
    assert record["before_load"] == "coverage, before the policy loaded; first_action not run (it needs the loaded policy)"
    assert set(record["registered"]) == {"coverage", "first_action"}  # the plan as registered
    assert set(record["arms"][0]["reports"]) == {"coverage"}
    assert list(rigs) == [(both.coverage.rig_seeds, both.coverage.rig_episode_seconds)]  # kept for the check after the load


def test_the_cli_switch_names_joints_and_needs_the_instrument(tmp_path):
    from engine.cli.convmap import ConvmapUsageError, parse_span_limited

    assert parse_span_limited(None) == [] and parse_span_limited("wrist_roll, wrist_flex") == ["wrist_roll", "wrist_flex"]
    for bad in ("wrist", "wrist_roll,wrist_roll", ","):
        with pytest.raises(ConvmapUsageError, match="--convmap-span-limited"):
            parse_span_limited(bad)
    out = run_eval("--molmoact2", "tiny", "--convmap-span-limited", "wrist_roll", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == EXIT_USAGE and "--convmap-tripwires" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_instrument_judges_wrist_roll_with_and_without_the_switch(tmp_path, capsys):
    """The standalone instrument (`--convmap-tripwires` judges and exits: no run, no driver) through
    fontaine-eval's own `main`, in this process: as three processes it paid the torch/lerobot imports
    each time (~10 s of CPU a launch) for the same code (fontaine-eval as a process, its exit codes and
    one-line refusals: test_convmap_cli.py's seam-stats and usage launches, and the test above)."""
    from engine.cli.main import main

    seam = tmp_path / "seam.json"
    assert main(["--policy", "scripted", "--seeds", "0-5", "--convmap-seam-stats", str(seam)]) == 0, capsys.readouterr()
    verdicts = {}
    for name, extra in (("strict", ()), ("allowed", ("--convmap-span-limited", "wrist_roll"))):
        run_dir = tmp_path / name
        code = main(["--molmoact2", "tiny", "--dtype", "fp32", "--convmap", "official", "--convmap-seam-stats",
                     str(seam), "--convmap-tripwires", *extra, "--seeds", "0", "--run-dir", str(run_dir)])
        assert code == 1, capsys.readouterr()  # the random tiny model fails first action either way
        coverage = json.loads((run_dir / "convmap_tripwires.json").read_text())["tripwires"]["coverage"]
        roll = next(j for j in coverage["joints"] if j["joint"] == "wrist_roll")
        verdicts[name] = (coverage["passed"], roll["status"], round(roll["uncovered"], 3))
    assert verdicts == {"strict": (False, "fail", 0.542), "allowed": (True, "warn", 0.542)}
