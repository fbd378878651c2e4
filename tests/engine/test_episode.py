"""The single-episode runner: budget in seconds, replans from chunk lengths, the row it returns."""

from __future__ import annotations

import numpy as np
import pytest

from engine.policies.base import Chunk, Observation
from engine.sim.env import BoatEnv
from engine.sim.render import RenderUnavailable
from engine.workers.episode import run_episode
from prereg.rundir.rows import ROW_FIELDS

DRIVER_FIELDS = {"schema", "run_id", "arm", "worker", "video", "note", "status", "error"}  # note: "video not written: <why>"
GYM_FIELDS = {"env_success", "env_success_tick"}  # the env's own success: every env's since schema 4
VARIANT_FIELDS = {"variant"}  # a registered visual variant's name (issue 48): null on the scene as declared


@pytest.fixture(scope="module")
def env():
    e = BoatEnv()
    yield e
    e.close()


class Hold:
    """Holds the current state (plus an optional offset) for `length` ticks; records what it saw."""

    def __init__(self, length: int, offset=None, **chunk_fields):
        self.length = length
        self.offset = np.zeros(6) if offset is None else np.asarray(offset, dtype=float)
        self.chunk_fields = chunk_fields
        self.seen: list[Observation] = []

    def __call__(self, obs: Observation) -> Chunk:
        self.seen.append(obs)
        return Chunk(np.tile(obs.state_rad + self.offset, (self.length, 1)), **self.chunk_fields)


def run(env, predict, seconds=1.0, horizon=5, **kw):
    kw.setdefault("needs_images", False)
    kw.setdefault("needs_privileged", False)
    return run_episode(env, 4, seconds, predict, chunk_horizon=horizon, **kw)


def test_row_fields_belong_to_the_schema_and_with_the_driver_cover_it(env):
    row = run(env, Hold(5))
    assert set(row) <= set(ROW_FIELDS)
    assert set(row) | DRIVER_FIELDS | GYM_FIELDS | VARIANT_FIELDS == set(ROW_FIELDS)
    assert not set(row) & DRIVER_FIELDS - {"schema"}
    assert row["seed"] == 4 and row["episode_seconds"] == 1.0 and row["reset_strikes"] == 0
    assert row["started_at"].endswith("Z") and row["finished_at"] >= row["started_at"]
    assert row["success"] is False and row["success_tick"] is None and row["wall_s"] > 0


def test_a_policy_that_holds_still_never_grasps(env):
    row = run(env, Hold(5), seconds=2.0)
    assert (row["grasped_lifted"], row["grasp_tick"], row["lift_max_mm"], row["carried_cm"], row["released"]) == (
        False, None, 0.0, 0.0, False)


def test_budget_is_seconds_and_replans_follow_the_chunk_length(env):
    full = run(env, Hold(5), seconds=1.0, horizon=5)
    short = run(env, Hold(2), seconds=1.0, horizon=5)
    assert full["ticks"] == short["ticks"] == 30
    assert full["predicts"] == 6 and short["predicts"] == 15
    assert run(env, Hold(7), seconds=0.5, horizon=7)["predicts"] == 3  # the last chunk is cut by the budget


def test_observations_carry_seed_tick_and_replan_index(env):
    policy = Hold(4)
    run(env, policy, seconds=0.5, horizon=4, needs_privileged=True)
    assert [o.tick for o in policy.seen] == [0, 4, 8, 12]
    assert [o.replan_index for o in policy.seen] == [0, 1, 2, 3]
    assert all(o.seed == 4 and o.images is None for o in policy.seen)
    assert set(policy.seen[0].privileged) >= {"boat_pos", "boat_quat", "disk_pos"}


def test_counts_of_fallbacks_mask_violations_and_batch(env):
    row = run(env, Hold(10, zero_fallback=True, mask_violations=2, batch_size=3), seconds=1.0, horizon=10)
    assert row["predicts"] == 3 and row["zero_fallbacks"] == 3
    assert row["mask_violations"] == 6 and row["mean_batch"] == 3.0


def test_first_action_delta_is_per_joint_in_rig_degrees(env):
    row = run(env, Hold(5, offset=[0.1, 0, 0, 0, 0, 0]), seconds=0.5, horizon=5)
    delta = row["first_action_delta_deg"]
    assert len(delta) == 6
    assert delta[0] == pytest.approx(np.rad2deg(0.1), abs=1e-3)
    assert max(delta[1:]) < 1e-6


def test_an_empty_chunk_is_an_error_not_a_stall(env):
    with pytest.raises(ValueError, match="empty chunk"):
        run(env, Hold(0))


def test_images_for_policies_that_need_them_and_video_frames_at_10_fps(env):
    policy, frames = Hold(15), []
    try:
        run(env, policy, seconds=1.0, horizon=15, needs_images=True, frame_sink=frames.append)
    except RenderUnavailable as exc:
        pytest.skip(f"no offscreen GL on this machine: {exc}")
    assert len(policy.seen) == 2
    for obs in policy.seen:
        assert set(obs.images) == {"front", "wrist"}
        assert all(img.shape == (224, 224, 3) and img.dtype == np.uint8 for img in obs.images.values())
    assert len(frames) == 11  # tick 0, then every third tick of 30


def test_video_frames_show_front_and_wrist_side_by_side_at_the_video_size(env):
    frames = []
    try:
        run(env, Hold(15), seconds=0.5, horizon=15, frame_sink=frames.append, video_size=64)
    except RenderUnavailable as exc:
        pytest.skip(f"no offscreen GL on this machine: {exc}")
    assert frames and all(f.shape == (64, 128, 3) and f.dtype == np.uint8 for f in frames)
    front, wrist = frames[0][:, :64], frames[0][:, 64:]
    assert not np.array_equal(front, wrist)  # two cameras, not one twice
    assert env.film().shape == (224, 448, 3)  # default: the policy's render size
