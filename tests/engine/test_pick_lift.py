"""pick-lift, the second built-in env: a different task on the same arm (lift a cube 5 cm and
hold it 1 s), its own success predicate and row fields, and its own scripted oracle."""

from __future__ import annotations

import json

import pytest

from engine.envs import get_env, list_lines
from engine.envs.pick_lift import HOLD_TICKS, LIFT_HEIGHT_M
from engine.policies.hold import HoldPolicy
from engine.policies.scripted import ScriptedOracle
from engine.workers.episode import run_episode
from prereg.rundir.outcomes import QUIET, SUCCESS, episode_outcome
from prereg.rundir.rows import complete_row, row_problem

ORACLE_SEEDS = range(40)  # measured: 100/100 on seeds 0-99 (engine/envs/pick_lift.py)


@pytest.fixture(scope="module")
def env():
    e = get_env("pick-lift").create(render_size=32)
    yield e
    e.close()


@pytest.fixture(scope="module")
def oracle():
    return ScriptedOracle()


def _episode(env, policy, seed, seconds=12.0):
    row = run_episode(env, seed, seconds, lambda obs: policy.predict_batch([obs])[0], chunk_horizon=policy.chunk_horizon,
                      needs_images=False, needs_privileged=policy.needs_privileged)
    return complete_row({**row, "status": "ok"})


def test_it_is_registered_declared_and_whole(env):
    spec = get_env("pick-lift")
    assert any(line.startswith("pick-lift\t") for line in list_lines())
    assert spec.success.tolerances == {"lift_height_m": LIFT_HEIGHT_M} and spec.success.hold_ticks == HOLD_TICKS
    assert spec.problems(env.model) == []
    assert spec.sha256() != get_env("boat-on-disk").sha256()


def test_the_oracle_lifts_and_holds_the_cube(env, oracle):
    for seed in (0, 1):
        row = _episode(env, oracle, seed)
        assert row_problem(row) is None and row["success"] and episode_outcome(row) == SUCCESS
        assert row["grasped_lifted"] and row["lift_final_mm"] >= LIFT_HEIGHT_M * 1000 and row["hold_high_ticks"] == HOLD_TICKS
        assert row["progress_cm"] >= LIFT_HEIGHT_M * 100 - 0.5  # 3-D distance to the point above the spawn


def test_a_policy_that_holds_still_is_quiet(env):
    row = _episode(env, HoldPolicy(), 3, seconds=2.0)
    assert row["success"] is False and row["lift_final_mm"] == pytest.approx(0.0, abs=0.5)
    assert episode_outcome(row) == QUIET and row["touched"] is False and row["off_table"] is False


@pytest.mark.slow
def test_the_oracle_succeeds_on_at_least_95_percent_of_40_seeds(env, oracle):
    wins = sum(_episode(env, oracle, s)["success"] for s in ORACLE_SEEDS)
    assert wins >= 0.95 * len(ORACLE_SEEDS), f"{wins}/{len(ORACLE_SEEDS)}"


def test_fontaine_eval_runs_it_and_records_it(tmp_path):
    from engine.cli.main import main
    from engine.envs import env_sha256

    run_dir = tmp_path / "r"
    assert main(["--policy", "scripted", "--env", "pick-lift", "--num-seeds", "1", "--episode-seconds", "8",
                 "--video-draw", "none", "--run-dir", str(run_dir)]) == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env"] == {"name": "pick-lift", "sha256": env_sha256("pick-lift")}
    row = json.loads((run_dir / "rows.jsonl").read_text().splitlines()[0])
    assert row["success"] is True and "lift_final_mm" in row and "hold_high_ticks" in row
