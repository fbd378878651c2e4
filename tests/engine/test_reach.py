"""Reach (issue 45): a seed's start checked against the SO-101 (engine/sim/reach.py), and a held-out check
of the harness on every env the project lists or adapts: the scripted oracle succeeds on the reachable
seeds, and each row agrees with the env's own info, seed by seed. The seeds here (20-21) are past the
0-19 the oracle's tilted grasp was measured on (benchmarks/oracle_reach.py); few and short, so the whole
file stays near a minute."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.envs import get_env
from engine.envs.reach_share import count_reachable, reach_share, share_text
from engine.policies.scripted import ScriptedOracle
from engine.sim.reach import (
    GRASP_SITE_Z_M,
    MAX_TILT_DEG,
    REACH_TOLERANCE_M,
    grasp_rotation,
    grasp_yaws,
    kinematics,
    reach,
)
from engine.sim.scene import PAN_AXIS_XY
from engine.workers.episode import run_episode
from prereg.rundir.outcomes import episode_outcome
from prereg.rundir.rows import OK, row_problem
from tests.engine.nexus_fixture import write_nexus_env


def _at(radius: float, az: float = 0.3, z: float = GRASP_SITE_Z_M) -> np.ndarray:
    return np.array([PAN_AXIS_XY[0] + radius * math.cos(az), radius * math.sin(az), z])


def test_a_tilted_grasp_points_its_jaws_outward_and_stays_a_rotation():
    for tilt in (0.0, 0.4, 0.7):
        rot = grasp_rotation(0.2, tilt, 0.5)
        assert np.allclose(rot.T @ rot, np.eye(3), atol=1e-12) and math.isclose(np.linalg.det(rot), 1.0)
        approach = rot[:, 2]
        assert math.isclose(-approach[2], math.cos(tilt), abs_tol=1e-12)  # tilted from straight down by `tilt`
        outward = approach[:2] @ np.array([math.cos(0.5), math.sin(0.5)])
        assert math.isclose(outward, math.sin(tilt), abs_tol=1e-12)  # ... away from the pan axis


def test_the_arm_points_down_near_tilts_farther_and_cannot_reach_past_its_length():
    kin = kinematics()
    lo, hi = kin.ranges[:5, 0], kin.ranges[:5, 1]
    near = kin.pose(_at(0.20), grasp_yaws(0.0, True))
    assert near is not None and near.tilt == 0.0
    far = kin.pose(_at(0.33), grasp_yaws(0.0, True))
    assert far is not None and 0.0 < far.tilt <= math.radians(MAX_TILT_DEG)
    for pose in (near, far):
        assert np.all(pose.q >= lo - 1e-9) and np.all(pose.q <= hi + 1e-9)  # within the joint limits
        site, _ = kin.site_pose(np.append(pose.q, 0.0))
        assert np.linalg.norm(site - _at(0.20 if pose is near else 0.33)) < REACH_TOLERANCE_M
    assert kin.pose(_at(0.45), grasp_yaws(0.0, True)) is None  # past the arm's length: no solve at all
    assert kin.too_far(_at(0.45)) and not kin.too_far(_at(0.33))
    assert kin.pose(_at(0.20, z=-0.03), grasp_yaws(0.0, True)) is None  # under the table: the links would dip in


def test_a_start_is_reachable_only_when_both_the_object_and_the_target_are():
    quat = np.array([1.0, 0.0, 0.0, 0.0])
    start = {"plan": "place", "object_pos": _at(0.2, z=0.0), "object_quat": quat, "target_pos": _at(0.22, -0.3, 0.0),
             "disk_top_z": 0.0}
    assert reach(start).reachable and reach(start).why() == "reachable"
    gone = reach({**start, "target_pos": _at(0.5, -0.3, 0.0)})
    assert not gone.reachable and gone.grasp is not None and gone.place is None
    assert "the target (0.500 m)" in gone.why() and "the object" not in gone.why()
    moved = reach({**start, "object_pos": _at(0.5, z=0.0)}, pan_anchor=kinematics().pan_anchor + [0.3, 0.0, 0.0])
    assert moved.grasp is not None  # an arm mounted 0.3 m farther out reaches it


def _episode(env, oracle, seed: int, seconds: float) -> dict:
    row = run_episode(env, seed, seconds, oracle.predict, chunk_horizon=oracle.chunk_horizon, needs_images=False,
                      needs_privileged=True)
    return {**row, "status": OK}


HELD_OUT = (20, 21)


@pytest.fixture(scope="module")
def nexus_file(tmp_path_factory):
    return str(write_nexus_env(tmp_path_factory.mktemp("nexus") / "nexus"))


@pytest.mark.parametrize("name", ["boat-on-disk", "pick-lift", "gym:MuJoCoPickAndPlace-v1", "gym:MuJoCoPickLift-v1",
                                  "nexus-file"])
def test_held_out_the_oracle_succeeds_on_reachable_seeds_and_rows_agree_with_the_env(name, nexus_file):
    """Every env listed or adapted: on held-out seeds the oracle succeeds wherever the row says the start
    is reachable; success means released and at rest (the arm clear, the object on its support), the env's
    own success stands beside it and never disagrees with a success; the two grasps say what they say."""
    if name.startswith("gym:"):
        pytest.importorskip("so101_nexus_mujoco")
    env = get_env(nexus_file if name == "nexus-file" else name).create(render_size=32)
    oracle = ScriptedOracle()
    infos: list[dict] = []
    if name.startswith("gym:"):  # the env's own info, step by step, to hold the row to
        step = env.gym.step

        def recording(action):
            out = step(action)
            infos.append(out[4])
            return out

        env.gym.step = recording
    try:
        for seed in HELD_OUT:
            infos.clear()
            row = _episode(env, oracle, seed, 20.0)
            assert row_problem(row) is None and type(row["reachable"]) is bool, row
            if not row["reachable"]:
                continue
            assert row["success"], (name, seed, episode_outcome(row), row)
            assert row["env_success"] and row["env_success_tick"] <= row["success_tick"], row
            assert row["grasped_lifted"] and row["grasped_squeezed"], row
            lift = name in ("pick-lift", "gym:MuJoCoPickLift-v1")
            if lift:  # held high at the end
                assert not row["released"] and row["lift_max_mm"] >= 50.0, row
            else:  # placed: let go, at rest on the target's support
                assert row["released"] and abs(row["object_z_mm"]) < 3.0, row  # the floor's 0 mm, the boat's disk 2 mm
            if infos:
                said = [bool(i["success"]) for i in infos]
                assert any(said) == row["env_success"], (seed, row)
                grasped = [bool(i["is_grasped"]) for i in infos]
                assert any(grasped) == row["grasped_squeezed"], (seed, row)
                assert row["grasped_lifted"] <= row["grasped_squeezed"]  # a hold off the support is a squeeze
    finally:
        env.close()


def test_the_share_of_reachable_seeds_is_counted_once_and_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_CACHE", str(tmp_path))
    spec = get_env("pick-lift")
    assert count_reachable(spec, 3) == 3
    assert reach_share(spec, "0" * 64, 3) == (3, 3)
    kept = list((tmp_path / "reach").iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("0" * 64)
    monkeypatch.setattr("engine.envs.reach_share.count_reachable", lambda *a: pytest.fail("counted again"))
    assert reach_share(spec, "0" * 64, 3) == (3, 3)
    assert share_text(44, 50) == "reachable 44/50 seeds (88%)"
