"""Whole episodes of the tiny MolmoAct2 through `fontaine-eval`: the reference decode counts its
zero fallbacks in the rows, the grammar-masked decode has none, and flow runs."""

from __future__ import annotations

import json

import pytest

from tests.helpers import read_rows, run_eval

pytest_plugins = ("tests.engine.molmoact2_fixtures",)

pytestmark = pytest.mark.slow

COMMON = ("--dtype", "fp32", "--device", "cpu", "--video-draw", "none", "--seed", "0")


def _run(tmp_path, tiny_cache, *args):
    run_dir = tmp_path / "run"
    done = run_eval(*args, *COMMON, "--run-dir", str(run_dir), timeout=400, env={"FONTAINE_CACHE": str(tiny_cache)})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = read_rows(run_dir)
    assert rows and all(r["status"] == "ok" for r in rows), rows
    return rows, json.loads((run_dir / "manifest.json").read_text()), done.stdout


def test_grammar_masked_episodes_never_fall_back(tmp_path, tiny_cache):
    rows, manifest, out = _run(
        tmp_path, tiny_cache, "--molmoact2-discrete", "tiny", "--molmoact2-grammar-masked",
        "--num-seeds", "2", "--workers", "2", "--episode-seconds", "2",
    )
    assert all(r["predicts"] == 2 and r["zero_fallbacks"] == 0 and r["mask_violations"] > 0 for r in rows)
    assert "zero-fallbacks 0" in out
    resolved = manifest["policy_resolved"]
    assert resolved["decode"] == "grammar-masked" and len(resolved["weights_sha256"]) == 64


def test_reference_episode_counts_every_undecodable_emission(tmp_path, tiny_cache):
    rows, manifest, _ = _run(
        tmp_path, tiny_cache, "--molmoact2-discrete", "tiny", "--num-seeds", "1", "--episode-seconds", "1",
    )
    (row,) = rows
    assert row["predicts"] == 1 and row["zero_fallbacks"] == 1 and row["mask_violations"] == 0
    assert manifest["policy_resolved"]["decode"] == "reference"


def test_flow_episode_runs(tmp_path, tiny_cache):
    rows, manifest, _ = _run(tmp_path, tiny_cache, "--molmoact2", "tiny", "--num-seeds", "1", "--episode-seconds", "2")
    assert rows[0]["predicts"] == 2 and rows[0]["zero_fallbacks"] == 0
    assert len(rows[0]["first_action_delta_deg"]) == 6
    assert manifest["policy_resolved"]["flow_steps"] == 10
