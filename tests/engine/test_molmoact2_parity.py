"""Parity with lerobot beyond the easy case (fp32, batch 1, n_obs_steps 1, horizons equal).

A variant of the tiny checkpoint carries release-like geometry: n_obs_steps 2 (lerobot keeps
steps n_obs_steps-1 .. n_obs_steps-2+n_action_steps), a tag action_horizon (20) below the
config's max_action_horizon (30: the noise shape, the FAST horizon and the H*16 decode cap
follow the tag), and n_action_steps (15) below the horizon. Each predict is compared with
lerobot's own `predict_action` on the same observation: flow at batch 4 (every row against its
own single-observation call), flow in bf16, and the discrete AR loop token for token on the
tiny model's real logits (KV cache, positions), at batch 4.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from engine.policies.base import DEFAULT_TASK
from engine.policies.convmap.shim import PRESETS, rig_deg_to_sim_rad, sim_rad_to_rig_deg
from engine.policies.molmoact2.policy import JOINT_HIGH_RAD, JOINT_LOW_RAD, episode_generator
from engine.policies.molmoact2.tiny import NORM_TAG, synthetic_chunks
from tests.engine.molmoact2_fixtures import make_obs

pytest_plugins = ("tests.engine.molmoact2_fixtures",)

N_OBS, HORIZON, N_ACTION = 2, 20, 15


@pytest.fixture(scope="module")
def variant_dir(tiny_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("variant") / "ckpt"
    shutil.copytree(tiny_dir, out)
    config = json.loads((out / "config.json").read_text())
    config["n_obs_steps"] = N_OBS
    (out / "config.json").write_text(json.dumps(config))
    stats = json.loads((out / "norm_stats.json").read_text())
    stats["metadata_by_tag"][NORM_TAG].update(action_horizon=HORIZON, n_action_steps=N_ACTION)
    (out / "norm_stats.json").write_text(json.dumps(stats))
    return out


def _load(path, **kwargs):
    from engine.policies.molmoact2 import load_policy

    kwargs.setdefault("dtype", "fp32")
    return load_policy(str(path), device="cpu", **kwargs)


@pytest.fixture(scope="module")
def variant_flow(variant_dir):
    return _load(variant_dir, pathway="flow", decode="flow")


@pytest.fixture(scope="module")
def variant_reference(variant_dir):
    return _load(variant_dir, pathway="discrete", decode="reference")


def lerobot_predict(policy, obs, **kwargs) -> torch.Tensor:
    """lerobot's single-observation predict_action, unnormalised, model degrees (n_action_steps, 6)."""
    state = PRESETS["official"].to_model(sim_rad_to_rig_deg(obs.state_rad)).astype(np.float32)
    with torch.inference_mode():
        return policy.model.predict_action(
            processor=policy.processor,
            images=[obs.images["front"], obs.images["wrist"]],
            task=DEFAULT_TASK,
            state=state,
            norm_tag=NORM_TAG,
            enable_cuda_graph=False,
            return_dict=False,
            **kwargs,
        )[0]


def to_sim(model_deg: torch.Tensor) -> np.ndarray:
    sim = rig_deg_to_sim_rad(PRESETS["official"].to_rig(model_deg.float().numpy().astype(np.float64)))
    return np.clip(sim, JOINT_LOW_RAD, JOINT_HIGH_RAD)


def test_the_variant_geometry_is_what_lerobot_uses(variant_flow, variant_reference):
    d = variant_flow.describe()
    assert (d["n_obs_steps"], d["action_horizon"], d["chunk_horizon"]) == (N_OBS, HORIZON, N_ACTION)
    assert variant_flow.flow_noise(make_obs(0)).shape == (1, HORIZON, 32)  # lerobot: (B, tag horizon, 32)
    assert variant_reference.max_decode_steps == HORIZON * 16 and variant_reference.codec.horizon == HORIZON


def test_flow_at_batch_4_equals_lerobots_predict_action_per_row(variant_flow):
    observations = [make_obs(20 + i, i) for i in range(4)]
    chunks = variant_flow.predict_batch(observations)
    for obs, chunk in zip(observations, chunks):
        theirs = lerobot_predict(variant_flow, obs, inference_action_mode="continuous", num_steps=10,
                                 generator=episode_generator(obs.seed, obs.replan_index))
        assert theirs.shape == (N_ACTION, 6) and chunk.targets_rad.shape == (N_ACTION, 6)
        np.testing.assert_allclose(chunk.targets_rad, to_sim(theirs), atol=1e-4)


def test_flow_in_bf16_equals_lerobots_predict_action(tiny_cache):
    """bf16: the normalised chunk is lerobot's exactly; lerobot then unnormalises in bf16 (its chunk
    is rounded to bf16 in model degrees: 8 mantissa bits, ~0.5 deg at 150 deg), the project in
    float32. Rounding ours the way lerobot does gives lerobot's chunk bit for bit."""
    from engine.policies.molmoact2 import load_policy

    policy = load_policy("tiny", cache_dir=tiny_cache, pathway="flow", decode="flow", dtype="bf16", device="cpu")
    observations = [make_obs(40 + i, 1) for i in range(4)]
    alone = [policy.predict_batch([obs])[0] for obs in observations]
    batched = policy.predict_batch(observations)
    for obs, one, row in zip(observations, alone, batched):
        theirs = lerobot_predict(policy, obs, inference_action_mode="continuous", num_steps=10,
                                 generator=episode_generator(obs.seed, obs.replan_index))
        assert torch.equal(theirs.to(torch.bfloat16).float(), theirs.float())  # bf16 values, whatever the dtype
        normalised = torch.from_numpy(one.info["chunk_normalized"]).to(torch.bfloat16)
        rounded_like_lerobot = policy.stats.unnormalize_action(normalised, NORM_TAG)
        torch.testing.assert_close(torch.as_tensor(rounded_like_lerobot).float(), theirs.float(), atol=0, rtol=0)
        ours_deg = np.asarray(policy.stats.unnormalize_action(one.info["chunk_normalized"], NORM_TAG))
        np.testing.assert_allclose(ours_deg, theirs.float().numpy(), rtol=2**-8, atol=1e-3)
        # batch 4 pads the prompts: bf16 rounding inside the model differs with the row's padding.
        np.testing.assert_allclose(row.info["chunk_normalized"], one.info["chunk_normalized"], atol=0.05)


class _Captured(Exception):
    pass


def lerobot_tokens(policy, obs, end_token: int) -> list[int]:
    """lerobot's own discrete generation for `obs` (prompt, prefill, greedy loop over its KV cache),
    stopped at `end_token` instead of EOS, captured where it hands the tokens to its decoder."""
    model = policy.model
    captured: list[int] = []

    def capture(generated_token_ids, **_):
        captured.extend(int(t) for t in generated_token_ids[0].tolist())
        raise _Captured

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(model, "_require_eos_token_id", lambda: end_token)
        mp.setattr(model, "_decode_discrete_action_chunk", capture)
        with pytest.raises(_Captured):
            lerobot_predict(policy, obs, inference_action_mode="discrete", action_tokenizer=policy.codec.processor)
    return captured


def test_discrete_ar_loop_matches_lerobots_generation_token_for_token(variant_reference):
    policy = variant_reference
    observations = [make_obs(60 + i, i) for i in range(4)]
    chunks = policy.predict_batch(observations)
    for obs, chunk in zip(observations, chunks):
        ours = chunk.info["tokens"]
        assert len(ours) == policy.max_decode_steps and policy.token_ids.eos not in ours
        assert chunk.info["fallback_reason"] == "no_eos"
        # Stop lerobot's loop at the token whose first appearance in our stream is latest: the longest
        # prefix lerobot's own loop can return (the random model never emits EOS).
        firsts = {}
        for i, t in enumerate(ours):
            firsts.setdefault(t, i)
        stop_at = max(firsts.values())
        theirs = lerobot_tokens(policy, obs, ours[stop_at])
        assert stop_at >= 10 and theirs == ours[: stop_at + 1]


def test_without_eos_lerobot_raises_where_the_reference_falls_back(variant_reference):
    obs = make_obs(60)
    with pytest.raises(RuntimeError, match="did not emit end token"):
        lerobot_predict(variant_reference, obs, inference_action_mode="discrete",
                        action_tokenizer=variant_reference.codec.processor)


def test_a_legal_stream_decodes_and_slices_like_lerobot_with_n_obs_steps_2(variant_reference, monkeypatch):
    from tests.engine.test_molmoact2_discrete import scripted

    policy = variant_reference
    ids = policy.token_ids
    chunk = synthetic_chunks(1, seed=5, horizon=HORIZON)[0]
    script = [ids.start, *(ids.action0 + t for t in policy.codec.encode(chunk)), ids.end, ids.eos]
    obs = make_obs(70)
    scripted(policy, monkeypatch, [script])
    theirs = lerobot_predict(policy, obs, inference_action_mode="discrete", action_tokenizer=policy.codec.processor)
    scripted(policy, monkeypatch, [script])
    (ours,) = policy.predict_batch([obs])
    assert not ours.zero_fallback and ours.targets_rad.shape == (N_ACTION, 6)
    np.testing.assert_allclose(ours.targets_rad, to_sim(theirs), atol=1e-5)
    decoded = policy.codec.processor.decode([policy.codec.encode(chunk)], time_horizon=HORIZON, action_dim=6)[0]
    np.testing.assert_allclose(ours.info["chunk_normalized"], decoded[N_OBS - 1 : N_OBS - 1 + N_ACTION], atol=1e-6)
