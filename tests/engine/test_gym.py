"""Gymnasium both ways (issue 34): a registered Gymnasium MuJoCo env (so101-nexus's) runs through
Fontaine's driver with an adapter, its readings and grasp fields from its own model and data and its
own success beside Fontaine's; and Fontaine's envs are Gymnasium envs in lerobot's convention, passed
by gymnasium's own env checker and stepped by lerobot's env factory and a lerobot policy."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest

from engine.cli.main import main
from engine.envs import EnvError, env_record, env_sha256, get_env, gym_adapter
from engine.policies.convmap.shim import sim_rad_to_rig_deg
from engine.policies.scripted import ScriptedOracle
from engine.workers.episode import run_episode
from prereg.rundir.outcomes import SUCCESS, episode_outcome

pytest.importorskip("so101_nexus_mujoco")

PLACE, LIFT = "gym:MuJoCoPickAndPlace-v1", "gym:MuJoCoPickLift-v1"


def oracle_episode(env, seed: int, seconds: float = 12.0) -> dict:
    oracle = ScriptedOracle()
    return run_episode(env, seed, seconds, lambda obs: oracle.predict_batch([obs])[0], chunk_horizon=oracle.chunk_horizon,
                       needs_images=False, needs_privileged=True)


# --------------------------------------------------------------------------- a Gymnasium env in Fontaine


def test_fontaine_eval_runs_the_nexus_pick_and_place_env_through_its_driver(tmp_path):
    run = tmp_path / "run"
    assert main(["--policy", "scripted", "--env", PLACE, "--seeds", "0,3", "--episode-seconds", "12", "--workers", "2",
                 "--video-draw", "seeds:3", "--run-dir", str(run)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["env"] == {"name": PLACE, "sha256": env_sha256(PLACE), "gym": "MuJoCoPickAndPlace-v1",
                               "adapter": "engine/envs/gym_adapters/nexus-pick-and-place.yaml"}
    rows = {r["seed"]: r for r in map(json.loads, (run / "rows.jsonl").read_text().splitlines())}
    assert set(rows) == {0, 3} and (run / "videos" / "rollout_seed003.mp4").stat().st_size > 1000
    for row in rows.values():
        assert row["status"] == "ok" and row["schema"] == 4 and row["success"] and row["grasped_lifted"], row
        # the env agrees, as soon as or before Fontaine's place (the cube on the target, then let go and at rest)
        assert row["env_success"] is True and row["env_success_tick"] <= row["success_tick"]
        assert episode_outcome(row) == SUCCESS and row["lift_max_mm"] > 30 and row["carried_cm"] > 3


def test_the_readings_are_the_envs_own_model_and_data_at_its_own_control_period():
    spec = get_env(PLACE)
    env = spec.create(render_size=32)
    try:
        u = env.gym.unwrapped
        assert env.model is u.model and env.data is u.data and np.isclose(env._dt, 0.02)
        env.reset(5)
        assert env.data.time < 0.2  # the env's own reset (it settles a few frames)
        t0, steps0 = env.data.time, env._steps
        for _ in range(30):  # one second of ticks ...
            env.step_tick(env.state_rad())
        assert env._steps - steps0 == 50 and np.isclose(env.data.time - t0, 1.0)  # ... is 50 of its 20 ms steps
        cube = u.data.qpos[u._cube_qpos_addr:u._cube_qpos_addr + 3]
        assert np.allclose(env.object_pos(), cube) and abs(env.reading().pos[2] - (cube[2] - u.cube_half_size)) < 1e-9
        assert np.allclose(env.target(), u.data.xpos[u._target_body_id])
        images = env.policy_images()
        assert set(images) == {"front", "wrist"} and images["front"].shape == (32, 32, 3) and images["front"].std() > 5
    finally:
        env.close()


def test_the_nexus_pick_lift_env_reads_grasp_and_lift_and_its_own_success():
    env = get_env(LIFT).create(render_size=16)
    try:
        row = oracle_episode(env, 3)
    finally:
        env.close()
    assert row["success"] and row["env_success"] and row["grasped_lifted"] and row["lift_max_mm"] >= 50.0, row
    assert row["dist_initial_cm"] == 5.0  # 3-D, to the point 5 cm above where the cube started


def test_the_adapter_is_hashed_with_the_env_and_a_wrong_one_is_refused_in_one_line_each(tmp_path):
    shipped = gym_adapter.ADAPTERS / "nexus-pick-and-place.yaml"
    mine = tmp_path / "adapter.yaml"
    mine.write_text(shipped.read_text())
    assert env_sha256(str(mine)) != env_sha256(PLACE)  # labelled by where it sits: its own, not Fontaine's
    assert env_record(str(mine))["file"] == str(mine) and env_record(str(mine))["name"] == "nexus-pick-and-place"
    changed = tmp_path / "changed.yaml"
    changed.write_text(shipped.read_text().replace("radius_m: 0.025", "radius_m: 0.03"))
    assert env_sha256(str(changed)) != env_sha256(str(mine))
    kw = tmp_path / "kwargs.yaml"
    kw.write_text(shipped.read_text().replace("name: nexus-pick-and-place",
                                              "name: nexus-pick-and-place\nkwargs: {robot_init_qpos_noise: 0.0}"))
    assert env_sha256(str(kw)) not in (env_sha256(str(mine)), env_sha256(str(changed)))
    bad = tmp_path / "bad.yaml"
    bad.write_text(shipped.read_text().replace("object: cube", "object: block").replace("wrist: wrist_cam",
                                                                                        "wrist: hand_cam"))
    run = tmp_path / "run"
    assert main(["--policy", "scripted", "--env", str(bad), "--run-dir", str(run)]) == 2
    assert not run.exists()
    with pytest.raises(EnvError) as info:
        get_env(str(bad))
    lines = str(info.value).splitlines()[1:]
    assert any("object: body 'block' is not in MuJoCoPickAndPlace-v1's model (bodies: " in ln and "cube" in ln for ln in lines)
    assert any("cameras.wrist: camera 'hand_cam' is not in" in ln and "wrist_cam" in ln for ln in lines)
    with pytest.raises(EnvError, match="ships no adapter for 'MuJoCoReach-v1'"):
        get_env("gym:MuJoCoReach-v1")


def test_a_plan_may_name_a_gym_env_and_pin_it():
    from prereg.document.check_arms import ENV_GYM_RE

    assert ENV_GYM_RE.fullmatch(PLACE) and not ENV_GYM_RE.fullmatch("gym:")


# --------------------------------------------------------------------------- Fontaine's envs in Gymnasium


def test_gymnasium_make_gives_fontaines_env_and_gymnasiums_checker_passes_it():
    from gymnasium.utils.env_checker import check_env

    import engine.gym  # noqa: F401 - registers fontaine/...

    env = gymnasium.make("fontaine/boat-on-disk-v0", image_size=32)
    try:
        assert env.spec.max_episode_steps == 900 and env.unwrapped.task_description == "put the boat on the disk"
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()
    lift = gymnasium.make("engine.gym:fontaine/pick-lift-v0", image_size=16)  # no import needed first
    lift.close()


def test_the_spaces_are_lerobots_and_an_episode_is_the_native_one():
    """Rig units in and out; the same actions give the same row as Fontaine's own episode loop."""
    import engine.gym

    env = gymnasium.make("fontaine/boat-on-disk-v0", image_size=16)
    sim = get_env("boat-on-disk").create(render_size=16)
    try:
        obs, info = env.reset(seed=4)
        assert set(obs) == {"pixels", "agent_pos"} and set(obs["pixels"]) == {"front", "wrist"}
        assert obs["agent_pos"].dtype == np.float32 and info["seed"] == 4
        oracle, native = ScriptedOracle(), []

        def predict(o):
            chunk = oracle.predict_batch([o])[0]
            native.extend(np.asarray(chunk.targets_rad).reshape(-1, 6))
            return chunk

        row = run_episode(sim, 4, 12.0, predict, chunk_horizon=oracle.chunk_horizon, needs_images=False,
                          needs_privileged=True)
        assert row["success"]
        ticks = 0
        for target in native[:row["ticks"]]:
            obs, reward, terminated, truncated, info = env.step(sim_rad_to_rig_deg(target))
            ticks += 1
            assert np.allclose(obs["agent_pos"], sim_rad_to_rig_deg(env.unwrapped.sim.state_rad()), atol=1e-3)
            if terminated:
                break
        assert terminated and reward == 1.0 and info["is_success"] and ticks == row["ticks"]
        gym_row = info["row"]
        assert {k: gym_row[k] for k in ("success_tick", "grasp_tick", "carried_cm", "dist_final_cm")} == \
               {k: row[k] for k in ("success_tick", "grasp_tick", "carried_cm", "dist_final_cm")}
        assert engine.gym.gym_id("boat-on-disk") == "fontaine/boat-on-disk-v0"
    finally:
        env.close()
        sim.close()


def test_any_env_through_fontaine_env_v0(tmp_path):
    import engine.gym  # noqa: F401
    from tests.engine.env_file_fixture import write_env

    env = gymnasium.make("fontaine/env-v0", env=str(write_env(tmp_path / "lab")), image_size=16, units="sim")
    try:
        obs, _ = env.reset(seed=0)
        assert env.unwrapped.task_description == "put the block on the pad"
        obs, *_ = env.step(obs["agent_pos"])
        assert np.allclose(obs["agent_pos"], env.unwrapped.sim.state_rad(), atol=1e-6)
    finally:
        env.close()


def test_lerobots_env_factory_and_a_lerobot_policy_step_it(tmp_path):
    """lerobot-eval's loop with lerobot's own pieces: its env factory (a SyncVectorEnv of
    fontaine/boat-on-disk-v0 through the `fontaine` EnvConfig), preprocess_observation, the env's task,
    a tiny ACT checkpoint's processors and select_action, to truncation and lerobot's autoreset."""
    torch = pytest.importorskip("torch")
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.factory import make_env
    from lerobot.envs.utils import check_env_attributes_and_types, preprocess_observation
    from lerobot.policies.factory import make_policy, make_pre_post_processors

    from engine.gym.lerobot import FontaineEnvConfig
    from tests.engine.lerobot_fixtures import build_checkpoint

    ckpt = build_checkpoint(tmp_path / "act", "act", image=(3, 32, 32))
    cfg = FontaineEnvConfig(image_size=32, episode_length=12)
    vec = make_env(cfg, n_envs=1)["fontaine"][0]
    try:
        check_env_attributes_and_types(vec)
        obs, _ = vec.reset(seed=[3])
        policy_cfg = PreTrainedConfig.from_pretrained(ckpt)
        policy_cfg.pretrained_path, policy_cfg.device = ckpt, "cpu"
        policy = make_policy(cfg=policy_cfg, env_cfg=cfg)
        pre, post = make_pre_post_processors(policy_cfg=policy_cfg, pretrained_path=ckpt)
        for _ in range(cfg.episode_length):
            batch = preprocess_observation(obs)
            assert set(batch) == {"observation.images.front", "observation.images.wrist", "observation.state"}
            batch["task"] = list(vec.call("task_description"))
            with torch.inference_mode():
                action = post(policy.select_action(pre(batch)))
            obs, reward, terminated, truncated, info = vec.step(action.numpy())
            if truncated.any() or terminated.any():
                break
        assert truncated.all() and not info["final_info"]["is_success"].any()
    finally:
        vec.close()


def test_the_adapter_docs_envs_md_shows_is_the_one_fontaine_ships(tmp_path):
    import re

    from tests.helpers import REPO

    text = (REPO / "docs" / "envs.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("gym: MuJoCoPickAndPlace-v1"))
    (tmp_path / "adapter.yaml").write_text(block)
    shown, shipped = get_env(str(tmp_path / "adapter.yaml")), get_env(PLACE)
    for key in ("name", "object_body", "target_body", "cameras", "success", "grasp", "episode_seconds"):
        assert getattr(shown, key) == getattr(shipped, key), key
