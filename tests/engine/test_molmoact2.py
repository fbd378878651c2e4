"""MolmoAct2 loading and the flow pathway, on the tiny model built with lerobot's real classes."""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pytest
import torch

from engine.policies.base import DEFAULT_TASK, Policy
from engine.policies.convmap.shim import GRIPPER_RANGE_RAD, PRESETS, sim_rad_to_rig_deg
from engine.policies.molmoact2 import CheckpointError, load_policy
from engine.policies.molmoact2.checkpoint import check_servable
from engine.policies.molmoact2.policy import JOINT_HIGH_RAD, JOINT_LOW_RAD, episode_generator, integrate_flow
from engine.policies.molmoact2.tiny import CHUNK_HORIZON, STATE_Q01, STATE_Q99, TINY_MARKER, build_tiny
from tests.engine.molmoact2_fixtures import load, make_obs

pytest_plugins = ("tests.engine.molmoact2_fixtures",)


def test_tiny_builds_small_deterministic_and_is_reused(tiny_dir, tmp_path):
    info = json.loads((tiny_dir / TINY_MARKER).read_text())
    assert 200_000 < info["parameters"] < 700_000
    for name in ("config.json", "model.safetensors", "tokenizer.json", "processor_config.json", "norm_stats.json"):
        assert (tiny_dir / name).is_file(), name
    assert (tiny_dir / "action_tokenizer" / "tokenizer.json").is_file()
    started = time.perf_counter()
    assert build_tiny(tiny_dir) == tiny_dir
    assert time.perf_counter() - started < 0.5  # cached: no rebuild
    again = build_tiny(tmp_path / "again")
    for name in ("model.safetensors", "tokenizer.json", "action_tokenizer/tokenizer.json", "norm_stats.json"):
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes(), name


def test_tiny_command_line_prints_the_directory(tmp_path, capsys):
    from engine.policies.molmoact2.tiny import main

    assert main([str(tmp_path / "cli")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "cli")
    assert (tmp_path / "cli" / TINY_MARKER).is_file()


def test_policy_meets_the_protocol_and_describes_itself(flow_policy, tiny_dir):
    assert isinstance(flow_policy, Policy)
    assert flow_policy.serve_in_driver and flow_policy.needs_images and not flow_policy.needs_privileged
    assert flow_policy.chunk_horizon == CHUNK_HORIZON == 30
    d = flow_policy.describe()
    assert d["checkpoint"] == "tiny" and d["checkpoint_path"] == str(tiny_dir)
    assert len(d["weights_sha256"]) == 64
    assert (d["pathway"], d["decode"], d["dtype"], d["device"]) == ("flow", "flow", "fp32", "cpu")
    assert d["norm_tag"] == "so100_so101_molmoact2" and d["flow_steps"] == 10 and d["chunk_horizon"] == 30
    assert d["convmap"] == PRESETS["official"].as_dict()
    json.dumps(d)  # goes into manifest.json as is


def test_flow_chunks_are_sim_targets_inside_the_joint_ranges(flow_policy):
    chunks = flow_policy.predict_batch([make_obs(0), make_obs(1)])
    assert len(chunks) == 2
    for chunk in chunks:
        assert chunk.targets_rad.shape == (30, 6)
        assert np.all(chunk.targets_rad >= JOINT_LOW_RAD - 1e-9) and np.all(chunk.targets_rad <= JOINT_HIGH_RAD + 1e-9)
        assert chunk.batch_size == 2 and not chunk.zero_fallback and chunk.mask_violations == 0
        assert len(chunk.info["first_action_delta_deg"]) == 6
    assert not np.allclose(chunks[0].targets_rad, chunks[1].targets_rad)


def test_flow_sample_of_an_episode_does_not_depend_on_its_batch_mates(flow_policy):
    alone = flow_policy.predict_batch([make_obs(7, 3)])[0].targets_rad
    mates = flow_policy.predict_batch([make_obs(1), make_obs(7, 3), make_obs(2, 5), make_obs(9)])
    np.testing.assert_allclose(mates[1].targets_rad, alone, atol=1e-5)
    assert mates[1].batch_size == 4


def test_padded_prompts_of_different_lengths_batch_like_singles(flow_policy, monkeypatch):
    """Left padding with explicit position ids: a row's result is the one it gets alone."""
    monkeypatch.setattr(flow_policy, "task", None)  # let each observation carry its own task
    short = make_obs(3, task="pick the boat")
    long = make_obs(4, task="put the small red boat on the round disk near the edge of the table")
    both = flow_policy.predict_batch([short, long])
    np.testing.assert_allclose(both[0].targets_rad, flow_policy.predict_batch([short])[0].targets_rad, atol=1e-5)
    np.testing.assert_allclose(both[1].targets_rad, flow_policy.predict_batch([long])[0].targets_rad, atol=1e-5)


def test_flow_noise_is_per_episode_and_per_replan(flow_policy):
    a = flow_policy.predict_batch([make_obs(5, 0)])[0].targets_rad
    np.testing.assert_array_equal(a, flow_policy.predict_batch([make_obs(5, 0)])[0].targets_rad)
    obs_next_replan = make_obs(5, 0)
    obs_next_replan.replan_index = 1
    assert not np.allclose(a, flow_policy.predict_batch([obs_next_replan])[0].targets_rad)


def test_our_flow_integration_equals_lerobots_generate_actions(flow_policy):
    """integrate_flow exists only to take per-row noise; at batch 1 it must equal lerobot's."""
    obs = make_obs(11, 2)
    inputs = flow_policy._model_inputs([obs])
    backbone = flow_policy.model.model
    with torch.inference_mode():
        theirs = backbone.generate_actions_from_inputs(
            **{k: v for k, v in inputs.items() if k != "position_ids"},
            action_dim_is_pad=_pad_mask(6),
            num_steps=10,
            generator=episode_generator(11, 2),
        )
        out = backbone(**inputs, use_cache=True)
        ours = integrate_flow(
            backbone,
            input_ids=inputs["input_ids"],
            encoder_kv_states=backbone._extract_kv_states(out.past_key_values),
            encoder_attention_mask=backbone._get_encoder_attention_mask(inputs["input_ids"], inputs["attention_mask"]),
            noise=flow_policy.flow_noise(obs),
            steps=10,
            action_dim=6,
        )
    torch.testing.assert_close(ours, theirs)


def _pad_mask(action_dim: int) -> torch.Tensor:
    mask = torch.ones((1, 32), dtype=torch.bool)
    mask[:, :action_dim] = False
    return mask


def test_save_then_load_gives_identical_actions(flow_policy, tmp_path, tiny_dir):
    """The from_pretrained trap: transformers re-initialises loaded weights; the loader must not."""
    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import MolmoAct2ForConditionalGeneration

    saved = tmp_path / "ckpt"
    shutil.copytree(tiny_dir, saved)
    (saved / "model.safetensors").unlink()
    flow_policy.model.save_pretrained(str(saved))
    reloaded = load_policy(str(saved), pathway="flow", decode="flow", dtype="fp32", device="cpu")
    obs = [make_obs(21), make_obs(22)]
    for a, b in zip(flow_policy.predict_batch(obs), reloaded.predict_batch(obs)):
        np.testing.assert_array_equal(a.targets_rad, b.targets_rad)
    assert reloaded.describe()["weights_sha256"] == flow_policy.describe()["weights_sha256"]

    naive = MolmoAct2ForConditionalGeneration.from_pretrained(str(saved), dtype=torch.float32)
    ours = dict(reloaded.model.named_parameters())
    assert any(not torch.equal(p, ours[n]) for n, p in naive.named_parameters()), "the trap is gone: simplify the loader"


def test_state_goes_through_rig_degrees_the_shim_and_q01_q99(flow_policy):
    state = np.array([0.1, -0.2, 0.3, 0.0, 0.5, 0.2])
    rig = sim_rad_to_rig_deg(state)
    model_deg = np.array([1, -1, 1, 1, 1, 1]) * rig + np.array([0, 90, 90, 0, 0, 0])
    q01, q99 = np.array(STATE_Q01), np.array(STATE_Q99)
    expected = np.clip(2 * (model_deg - q01) / (q99 - q01) - 1, -1, 1)
    np.testing.assert_allclose(flow_policy.normalise_state(state), expected, atol=1e-5)
    assert rig[5] == pytest.approx((0.2 - GRIPPER_RANGE_RAD[0]) / (GRIPPER_RANGE_RAD[1] - GRIPPER_RANGE_RAD[0]) * 100)


def test_actions_come_back_through_the_shim_and_are_clamped(flow_policy):
    normalised = np.zeros((1, 2, 6))
    normalised[0, 1] = [1, 1, 1, 1, 1, 1]
    sim = flow_policy._to_sim(normalised)
    q01, q99 = np.array(STATE_Q01), np.array(STATE_Q99)
    mid_model = (q01 + q99) / 2
    rig = np.array([1, -1, 1, 1, 1, 1]) * (mid_model - np.array([0, 90, 90, 0, 0, 0]))
    expected = np.deg2rad(rig)
    expected[5] = GRIPPER_RANGE_RAD[0] + rig[5] / 100 * (GRIPPER_RANGE_RAD[1] - GRIPPER_RANGE_RAD[0])
    np.testing.assert_allclose(sim[0, 0], np.clip(expected, JOINT_LOW_RAD, JOINT_HIGH_RAD), atol=1e-6)
    assert np.all(sim <= JOINT_HIGH_RAD) and np.all(sim >= JOINT_LOW_RAD)


# ---------------------------------------------------------------- errors before any episode


def test_missing_checkpoint_names_what_was_searched(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never reach the real hub from a test
    with pytest.raises(CheckpointError) as err:
        load_policy("allenai/MolmoAct2-SO100_101", pathway="flow", decode="flow")
    msg = str(err.value)
    assert "allenai/MolmoAct2-SO100_101" in msg and str(tmp_path / "home" / "hub") in msg and "HF_HUB_OFFLINE" in msg
    with pytest.raises(CheckpointError, match="not found"):
        load_policy(str(tmp_path / "nowhere"), pathway="flow", decode="flow")
    a_file = tmp_path / "model.safetensors"
    a_file.write_bytes(b"")
    with pytest.raises(CheckpointError, match="is a file, not a checkpoint directory"):
        load_policy(str(a_file), pathway="flow", decode="flow")


def test_hugging_face_id_resolves_from_the_local_cache_offline(tmp_path, monkeypatch, tiny_dir):
    hub = tmp_path / "hub"
    snapshot = hub / "models--someone--tiny-molmoact2" / "snapshots" / ("a" * 40)
    shutil.copytree(tiny_dir, snapshot)
    (hub / "models--someone--tiny-molmoact2" / "refs").mkdir()
    (hub / "models--someone--tiny-molmoact2" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    policy = load_policy("someone/tiny-molmoact2", pathway="flow", decode="flow", dtype="fp32", device="cpu")
    d = policy.describe()
    assert d["checkpoint_source"] == "hub" and d["revision"] == "a" * 40 and d["pin"] == "a" * 40


def test_missing_norm_stats_and_unknown_tag_are_clear(tmp_path, tiny_dir):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_dir, ckpt)
    with pytest.raises(CheckpointError, match="tags present: so100_so101_molmoact2"):
        load_policy(str(ckpt), pathway="flow", decode="flow", norm_tag="aloha")
    (ckpt / "norm_stats.json").unlink()
    with pytest.raises(CheckpointError, match="norm_stats.json is missing"):
        load_policy(str(ckpt), pathway="flow", decode="flow")


def test_unservable_configs_are_refused_up_front(tmp_path, tiny_dir):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_dir, ckpt)
    stats = json.loads((ckpt / "norm_stats.json").read_text())
    stats["metadata_by_tag"]["so100_so101_molmoact2"]["action_horizon"] = 64
    (ckpt / "norm_stats.json").write_text(json.dumps(stats))
    (ckpt / "model.safetensors").unlink()  # refused on its config, before any weight is read
    with pytest.raises(CheckpointError, match="exceeds max_action_horizon 30"):
        load_policy(str(ckpt), pathway="flow", decode="flow", dtype="fp32", device="cpu")
    stats["metadata_by_tag"]["so100_so101_molmoact2"]["action_horizon"] = 30
    (ckpt / "norm_stats.json").write_text(json.dumps(stats))
    with pytest.raises(CheckpointError, match="no \\*.safetensors weights"):
        load_policy(str(ckpt), pathway="flow", decode="flow", dtype="fp32", device="cpu")

    class Config:
        max_action_dim = 32
        state_format = "discrete"
        num_state_tokens = 256
        state_token_start_id = 5
        max_action_horizon = 30
        add_action_expert = False
        action_mode = "discrete"
        action_start_token_id = action_end_token_id = action_token_start_id = None
        eos_token_id = 0
        num_action_tokens = 0

    with pytest.raises(CheckpointError, match="no flow action expert"):
        check_servable(Config, pathway="flow", state_dim=6, action_dim=6, horizon=30)
    with pytest.raises(CheckpointError, match="action_start_token_id is not set"):
        check_servable(Config, pathway="discrete", state_dim=6, action_dim=6, horizon=30)


def test_bad_arguments_are_checkpoint_errors():
    with pytest.raises(CheckpointError, match="reference or grammar-masked"):
        load_policy("tiny", pathway="discrete", decode="flow")
    with pytest.raises(CheckpointError, match="bf16 or fp32"):
        load_policy("tiny", pathway="flow", decode="flow", dtype="fp16")


def test_task_text_defaults_to_the_boat_task(flow_policy):
    assert flow_policy.task == DEFAULT_TASK


def test_bf16_predicts_stay_finite_and_in_range(tiny_cache):
    for pathway, decode in (("flow", "flow"), ("discrete", "grammar-masked")):
        policy = load(tiny_cache, pathway=pathway, decode=decode, dtype="bf16")
        (chunk,) = policy.predict_batch([make_obs(2)])
        assert np.isfinite(chunk.targets_rad).all() and not chunk.zero_fallback
        assert np.all(chunk.targets_rad >= JOINT_LOW_RAD - 1e-9) and np.all(chunk.targets_rad <= JOINT_HIGH_RAD + 1e-9)
        assert policy.describe()["dtype"] == "bf16"
        assert policy.model.lm_head.weight.dtype == torch.bfloat16
        assert policy.model.model.transformer.rotary_emb.inv_freq.dtype == torch.float32  # RoPE stays exact


def test_flow_predict_matches_lerobots_own_single_observation_path(flow_policy):
    """Prompt, state tokens, images, noise and unnormalisation as lerobot's predict_action does them."""
    from engine.policies.convmap.shim import rig_deg_to_sim_rad

    obs = make_obs(13, 4)
    state_model_deg = PRESETS["official"].to_model(sim_rad_to_rig_deg(obs.state_rad))
    with torch.inference_mode():
        theirs = flow_policy.model.predict_action(
            processor=flow_policy.processor,
            images=[obs.images["front"], obs.images["wrist"]],
            task=DEFAULT_TASK,
            state=state_model_deg.astype(np.float32),
            norm_tag="so100_so101_molmoact2",
            inference_action_mode="continuous",
            num_steps=10,
            generator=episode_generator(13, 4),
            return_dict=False,
        )
    expected = np.clip(
        rig_deg_to_sim_rad(PRESETS["official"].to_rig(theirs[0].numpy().astype(np.float64))), JOINT_LOW_RAD, JOINT_HIGH_RAD
    )
    (ours,) = flow_policy.predict_batch([obs])
    np.testing.assert_allclose(ours.targets_rad, expected, atol=1e-5)
