"""Whole episodes of the tiny MolmoAct2 through `fontaine-eval`: the reference decode counts its
zero fallbacks in the rows, the grammar-masked decode has none (and its predict trail, recorded
end to end, is what lerobot decodes), and flow runs.

The three runs are real runs (driver, workers, rows, manifest), each through fontaine-eval's own
`main`, one after the other in this test's own process (tests.helpers.run_evals_here): a process that
imports torch/transformers/lerobot pays ~10 s of CPU for it before anything runs, three launches paid it
three times, one launch for the three once more than this process, which has paid it already (29 -> 22
s of CPU for this file). Each test reads its own run (its exit code, stdout, rows and manifest)."""

from __future__ import annotations

import json

import pytest

from prereg.rundir.predicts import read_predicts
from tests.helpers import read_rows, run_evals_here

pytest_plugins = ("tests.engine.molmoact2_fixtures",)

pytestmark = pytest.mark.slow

COMMON = ("--dtype", "fp32", "--device", "cpu", "--video-draw", "none", "--seed", "0")
RUNS = {
    # 2 seeds on 2 workers (their batches share the driver's trail), 2 s: 2 replans a seed
    "masked": ("--molmoact2-discrete", "tiny", "--molmoact2-grammar-masked", "--num-seeds", "2", "--workers", "2",
               "--episode-seconds", "2", "--record-predicts"),
    "reference": ("--molmoact2-discrete", "tiny", "--num-seeds", "1", "--episode-seconds", "1"),
    "flow": ("--molmoact2", "tiny", "--num-seeds", "1", "--episode-seconds", "2"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_cache):
    """{name: (exit code, run dir, its stdout)} of the three runs of RUNS."""
    root = tmp_path_factory.mktemp("episodes")
    argvs = {name: [*args, *COMMON, "--run-dir", str(root / name)] for name, args in RUNS.items()}
    done, stderr = run_evals_here(argvs, env={"FONTAINE_CACHE": str(tiny_cache)})
    return {name: (code, root / name, stdout, stderr) for name, (code, stdout) in done.items()}


def _run(runs, name):
    code, run_dir, stdout, stderr = runs[name]
    assert code == 0, stdout + stderr
    rows = read_rows(run_dir)
    assert rows and all(r["status"] == "ok" for r in rows), rows
    return rows, json.loads((run_dir / "manifest.json").read_text()), stdout


def test_grammar_masked_episodes_never_fall_back(runs):
    rows, manifest, out = _run(runs, "masked")
    assert all(r["predicts"] == 2 and r["zero_fallbacks"] == 0 and r["mask_violations"] > 0 for r in rows)
    assert "zero-fallbacks 0" in out
    resolved = manifest["policy_resolved"]
    assert resolved["decode"] == "grammar-masked" and len(resolved["weights_sha256"]) == 64


def test_record_predicts_end_to_end(runs, masked_policy):
    """The issue's acceptance command, on the grammar-masked arm (the random tiny model's reference
    emissions never reach EOS, so every reference line is a no_eos zero chunk)."""
    from tests.engine.test_predict_trail import check_line_against_lerobot  # here: after the plugin is registered

    rows, _, _ = _run(runs, "masked")
    lines = read_predicts(runs["masked"][1]).lines
    assert len(lines) == sum(r["predicts"] for r in rows) > 0
    assert sorted({t["seed"] for t in lines}) == [0, 1]
    for seed in (0, 1):
        replans = [t["replan"] for t in lines if t["seed"] == seed]
        assert replans == list(range(len(replans))) and len(replans) == 2
    for line in lines:
        check_line_against_lerobot(masked_policy, line)


def test_reference_episode_counts_every_undecodable_emission(runs):
    rows, manifest, _ = _run(runs, "reference")
    (row,) = rows
    assert row["predicts"] == 1 and row["zero_fallbacks"] == 1 and row["mask_violations"] == 0
    assert manifest["policy_resolved"]["decode"] == "reference"


def test_flow_episode_runs(runs):
    rows, manifest, _ = _run(runs, "flow")
    assert rows[0]["predicts"] == 2 and rows[0]["zero_fallbacks"] == 0
    assert len(rows[0]["first_action_delta_deg"]) == 6
    assert manifest["policy_resolved"]["flow_steps"] == 10
