"""A tiny ACT checkpoint, saved to a temporary folder, run end to end by a detached `fontaine-eval --lerobot`.

Every `fontaine-eval --lerobot` driver imports lerobot (about 10 s of CPU), and so does each worker of a
`step`-served checkpoint: the ACT checkpoint is built once for the module, and the two chunk-served runs
(two workers, launched detached; one worker) are each launched once, for every test that reads them."""

from __future__ import annotations

import json

import pytest

from tests.helpers import launch_detached, read_rows, read_status, run_eval, run_eval_here, wait_until

pytest.importorskip("lerobot")
pytestmark = pytest.mark.slow

# two seeds, one second each (30 ticks, 6 replans of n_action_steps=5): what both module runs share
RUN = ("--seed", "0", "--num-seeds", "2", "--episode-seconds", "1", "--render-size", "48", "--video-draw", "none",
       "--device", "cpu")


@pytest.fixture(scope="module")
def two_workers(act_ckpt, tmp_path_factory):
    """(run directory, exit code) of a detached `fontaine-eval --lerobot` with two workers, one episode each."""
    run_dir = tmp_path_factory.mktemp("w2") / "run"
    proc = launch_detached(run_dir, "--lerobot", str(act_ckpt), *RUN, "--workers", "2")
    try:
        code = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    return run_dir, code


@pytest.fixture(scope="module")
def one_worker(act_ckpt, tmp_path_factory):
    """(run directory, the finished process) of the same run with one worker, both episodes in turn."""
    run_dir = tmp_path_factory.mktemp("w1") / "run"
    return run_dir, run_eval("--lerobot", str(act_ckpt), *RUN, "--workers", "1", "--run-dir", str(run_dir), timeout=240)


def test_a_detached_run_of_a_lerobot_checkpoint(two_workers):
    run_dir, code = two_workers
    assert code == 0, (run_dir / "driver.log").read_text()
    wait_until(lambda: read_status(run_dir).get("state") == "done", timeout=10, what="state done")
    rows = read_rows(run_dir)
    assert sorted(r["seed"] for r in rows) == [0, 1] and all(r["status"] == "ok" for r in rows)
    assert all(r["predicts"] == 6 for r in rows)  # 30 ticks over chunks of n_action_steps=5: replans follow from it
    resolved = json.loads((run_dir / "manifest.json").read_text())["policy_resolved"]
    assert resolved["policy"] == "lerobot" and resolved["policy_type"] == "act" and resolved["serving"] == "chunk"
    assert len(resolved["config_sha256"]) == 64 and resolved["convmap"]["name"] == "identity"


def test_the_rows_do_not_depend_on_the_number_of_workers(one_worker, two_workers):
    """ACT served in the driver, invariant (the default): one worker and two give the same rows, bit for
    bit, but for the fields that say when and where an episode ran; the manifest says so. (The run with
    two workers is the detached run above: its two episodes run side by side, the one worker's in turn.)"""
    from tests.helpers import stable

    one_dir, out = one_worker
    assert out.returncode == 0, out.stdout + out.stderr
    two_dir, code = two_workers
    assert code == 0, (two_dir / "driver.log").read_text()
    rows = {}
    for workers, run_dir in ((1, one_dir), (2, two_dir)):
        # mean_batch records how many observations waited together (timing), not what the episode did
        rows[workers] = sorted(({k: v for k, v in stable(r).items() if k != "mean_batch"} for r in read_rows(run_dir)),
                               key=lambda r: r["seed"])
        resolved = json.loads((run_dir / "manifest.json").read_text())["policy_resolved"]
        assert resolved["rows"] == "invariant" and resolved["batching"] == "per observation (batch 1)"
    assert len(rows[1]) == 2 and all(r["status"] == "ok" for r in rows[1])
    assert [r["first_action_delta_deg"] for r in rows[1]] == [r["first_action_delta_deg"] for r in rows[2]]
    assert rows[1] == rows[2]


def test_a_checkpoint_the_scene_cannot_feed_is_refused_with_nothing_written(tmp_path):
    from tests.engine.lerobot_fixtures import build_checkpoint

    ckpt = build_checkpoint(tmp_path / "top", "act", cameras=("top",))
    run_dir = tmp_path / "run"
    done = run_eval("--lerobot", str(ckpt), "--num-seeds", "1", "--episode-seconds", "1", "--run-dir", str(run_dir))
    assert done.returncode == 2 and not run_dir.exists()
    (line,) = done.stderr.strip().splitlines()
    assert "observation.images.top" in line and "--lerobot-map" in line


def test_a_stateful_policy_runs_select_action_every_tick_in_its_worker(tmp_path):
    """ACT with temporal ensembling is served in each worker: one predict per tick, and the manifest
    still records its type, config hash and pin (read in the driver without its weights)."""
    from tests.engine.lerobot_fixtures import build_checkpoint

    ckpt = build_checkpoint(tmp_path / "act-te", "act", n_action_steps=1, temporal_ensemble_coeff=0.01)
    run_dir = tmp_path / "run"
    # the driver in this process, which built the checkpoint with lerobot already (a launch imported it again)
    done = run_eval_here("--lerobot", str(ckpt), "--seed", "3", "--num-seeds", "1", "--episode-seconds", "0.5",
                         "--render-size", "48", "--video-draw", "none", "--device", "cpu", "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = read_rows(run_dir)
    assert row["status"] == "ok" and row["predicts"] == 15 and row["mean_batch"] == 1.0
    resolved = json.loads((run_dir / "manifest.json").read_text())["policy_resolved"]
    assert resolved["serving"] == "step" and resolved["served"].startswith("in each worker")
    assert resolved["policy_type"] == "act" and len(resolved["config_sha256"]) == 64 and resolved["pin"].startswith("sha256:")


def test_the_shims_tripwires_through_fontaine_eval(act_ckpt, tmp_path, capsys):
    """`--lerobot CKPT --convmap-tripwires --convmap-seam-stats RIG` reads the rig table (it does not
    write one, as a reference policy's run would) and judges the checkpoint's saved state range.
    fontaine-eval's main runs in this process: the tripwires load the policy and render the reset pose
    here and exit before any run starts, and this process has lerobot imported already (a subprocess
    paid about 10 s of CPU to import it again)."""
    from engine.cli.main import main
    from engine.policies.base import JOINT_NAMES
    from engine.policies.convmap.fit import SEAM_STATS_FORMAT, save_seam_stats

    seam = tmp_path / "rig.json"
    rig = {"format": SEAM_STATS_FORMAT, "joints": {j: {"q01": -30.0, "q99": 30.0} for j in JOINT_NAMES}}
    save_seam_stats(rig, seam)
    written = seam.read_text()
    code = main(["--lerobot", str(act_ckpt), "--seeds", "0", "--render-size", "48", "--device", "cpu",
                 "--convmap-seam-stats", str(seam), "--convmap-tripwires", "--convmap-anchor-deg", "360",
                 "--run-dir", str(tmp_path / "trip")])
    out = capsys.readouterr()
    assert code in (0, 1), out.out + out.err  # passed or failed: judged, never refused
    assert "coverage" in out.out and "convmap tripwires" in out.out, out.out + out.err
    assert seam.read_text() == written  # read, not rewritten
    report = json.loads((tmp_path / "trip" / "convmap_tripwires.json").read_text())
    assert set(report["tripwires"]) == {"coverage", "first_action"}


PLAN = """---
fontaine: fontaine-prereg/1
id: act-plan
title: a tiny ACT, registered
created: 2026-12-01
arms:
  - name: act
    policy: lerobot
    checkpoint: {ckpt}
    revision: {pin}
protocol:
  seeds: [0]
  episode_seconds: 1
  workers: 1
  video_draw: none
reads:
  primary: successes
gates:
  gpu_hours: 0.5
decision_rules:
  - if: act.successes >= 1
    then: go
---

A tiny random ACT never succeeds; the plan proves the path.
"""


def test_a_registered_lerobot_arm_launches_and_reports_valid(act_ckpt, tmp_path):
    import shutil
    import subprocess
    import sys

    from engine.policies.lerobot_policy import probe
    from tests.helpers import REPO

    ckpt = shutil.copytree(act_ckpt, tmp_path / "act")  # its own copy: the test changes the weights below
    doc = tmp_path / "plan.md"
    doc.write_text(PLAN.format(ckpt=ckpt, pin=probe(str(ckpt)).pin))
    frozen = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "freeze", str(doc)], cwd=REPO, capture_output=True,
                            text=True)
    assert frozen.returncode == 0, frozen.stdout + frozen.stderr
    run_dir = tmp_path / "runs" / "act"
    out = run_eval_here("--prereg", str(doc), "--arm", "act", "--render-size", "48", "--device", "cpu",
                        "--run-dir", str(run_dir))  # in this process; the refused relaunch below is its own
    assert out.returncode == 0, out.stdout + out.stderr
    (row,) = read_rows(run_dir)
    assert row["status"] == "ok" and row["arm"] == "act"
    rep = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "report", str(doc), "--run", f"act={run_dir}"],
                         cwd=REPO, capture_output=True, text=True)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "validity  VALID" in rep.stdout
    (ckpt / "model.safetensors").write_bytes((ckpt / "model.safetensors").read_bytes() + b" ")  # other weights
    refused = run_eval("--prereg", str(doc), "--arm", "act", "--device", "cpu", "--run-dir", str(tmp_path / "r2"))
    assert refused.returncode == 2 and "refused: the pre-registration pins" in refused.stderr
    assert not (tmp_path / "r2").exists()  # refused before anything is written
