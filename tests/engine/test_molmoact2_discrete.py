"""The discrete pathway on the tiny model: reference decode (zero fallbacks counted) and the
grammar-masked decode (every emission decodes; interventions counted; inert on legal streams)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from engine.policies.molmoact2 import fast
from engine.policies.molmoact2.tiny import synthetic_chunks
from tests.engine.molmoact2_fixtures import make_obs

pytest_plugins = ("tests.engine.molmoact2_fixtures",)


class ScriptedHead(nn.Module):
    """Replaces lm_head: each forward puts a large logit on the next scripted token of each row,
    so the greedy stream is whatever the test writes (then EOS forever)."""

    def __init__(self, scripts: list[list[int]], vocab: int, eos: int):
        super().__init__()
        self.scripts, self.vocab, self.eos, self.step = scripts, vocab, eos, 0

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = torch.randn(hidden.shape[0], hidden.shape[1], self.vocab, generator=torch.Generator().manual_seed(self.step))
        for row, script in enumerate(self.scripts):
            token = script[self.step] if self.step < len(script) else self.eos
            logits[row, -1, token] = 50.0
        self.step += 1
        return logits


def scripted(policy, monkeypatch, scripts):
    ids = policy.token_ids
    head = ScriptedHead(scripts, policy.model.vocab_size, ids.eos)
    monkeypatch.setattr(policy.model, "lm_head", head)
    return head


def legal_emission(policy, chunk) -> list[int]:
    ids = policy.token_ids
    return [ids.start, *(ids.action0 + t for t in policy.codec.encode(chunk)), ids.end, ids.eos]


def test_reference_decode_counts_zero_fallbacks_on_the_random_model(reference_policy):
    chunks = reference_policy.predict_batch([make_obs(0), make_obs(1)])
    zero = reference_policy._to_sim(np.zeros((1, 30, 6)))[0]
    for chunk in chunks:
        reason = chunk.info["fallback_reason"]
        assert chunk.zero_fallback and reason.split(":")[0] in fast.FALLBACK_REASONS
        assert chunk.mask_violations == 0 and chunk.info["decode_steps"] <= 480
        np.testing.assert_allclose(chunk.targets_rad, zero)  # the unnormalised normalised-zero action


def test_grammar_masked_decode_never_falls_back(masked_policy):
    chunks = masked_policy.predict_batch([make_obs(s) for s in range(3)])
    for chunk in chunks:
        assert not chunk.zero_fallback and chunk.info["fallback_reason"] is None
        assert chunk.mask_violations > 0  # random weights: the mask had to step in
        assert chunk.targets_rad.shape == (30, 6) and chunk.batch_size == 3
    alone = masked_policy.predict_batch([make_obs(1)])[0]
    np.testing.assert_allclose(alone.targets_rad, chunks[1].targets_rad, atol=1e-6)
    assert alone.mask_violations == chunks[1].mask_violations


def test_padded_prompts_decode_like_singles(masked_policy, monkeypatch):
    """Left padding with explicit position ids: each row's emission is the one it makes alone."""
    monkeypatch.setattr(masked_policy, "task", None)
    short, long = make_obs(3, task="pick"), make_obs(4, task="put the small red boat on the round disk")
    both = masked_policy.predict_batch([short, long])
    for obs, chunk in zip((short, long), both):
        (alone,) = masked_policy.predict_batch([obs])
        np.testing.assert_allclose(chunk.targets_rad, alone.targets_rad, atol=1e-6)
        assert chunk.mask_violations == alone.mask_violations


def test_a_legal_greedy_stream_decodes_the_same_under_both_decodes(reference_policy, masked_policy, monkeypatch):
    normalised = synthetic_chunks(2, seed=31)
    scripts = [legal_emission(reference_policy, c) for c in normalised]
    observations = [make_obs(4), make_obs(5)]
    scripted(reference_policy, monkeypatch, scripts)
    ref = reference_policy.predict_batch(observations)
    scripted(masked_policy, monkeypatch, scripts)
    masked = masked_policy.predict_batch(observations)
    for i, chunk in enumerate(normalised):
        assert not ref[i].zero_fallback and not masked[i].zero_fallback
        assert masked[i].mask_violations == 0
        assert ref[i].info["decode_steps"] == masked[i].info["decode_steps"] == len(scripts[i])
        np.testing.assert_array_equal(ref[i].targets_rad, masked[i].targets_rad)
        decoded, _ = reference_policy.codec.decode_bins(reference_policy.codec.encode(chunk))
        np.testing.assert_allclose(ref[i].targets_rad, reference_policy._to_sim(decoded[None])[0])


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda s, ids: [ids.start, ids.end, ids.eos], fast.EMPTY_SPAN),  # lerobot raises: no action tokens
        (lambda s, ids: s[:-1], fast.NO_EOS),  # lerobot raises: no end token within H*16 steps
        (lambda s, ids: s[:5] + s[6:], fast.WRONG_LENGTH),  # lerobot's FAST decode returns zeros
    ],
)
def test_reference_falls_back_where_lerobot_does_and_the_mask_repairs_it(
    reference_policy, masked_policy, monkeypatch, damage, reason
):
    ids = reference_policy.token_ids
    script = damage(legal_emission(reference_policy, synthetic_chunks(1, seed=8)[0]), ids)
    if reason == fast.NO_EOS:
        script = script + [ids.start] * (reference_policy.max_decode_steps + 5)  # never reaches EOS
    scripted(reference_policy, monkeypatch, [script])
    ref = reference_policy.predict_batch([make_obs(6)])[0]
    assert ref.zero_fallback and ref.info["fallback_reason"] == reason
    assert ref.info["tokens"] == script[: reference_policy.max_decode_steps]
    scripted(masked_policy, monkeypatch, [script])
    masked = masked_policy.predict_batch([make_obs(6)])[0]
    assert not masked.zero_fallback and masked.mask_violations > 0


@pytest.mark.parametrize(
    "damage, note",
    [
        (lambda s, ids: s[:-2] + [ids.eos], fast.NO_END),
        (lambda s, ids: s[:3] + [ids.eos + 1] + s[3:], fast.NON_ACTION_TOKEN),
        (lambda s, ids: s[1:], fast.NO_START),
    ],
)
def test_reference_executes_what_lerobot_decodes_through(reference_policy, monkeypatch, damage, note):
    """No start marker, no end marker, a stray non-action token: lerobot drops or ignores them and
    executes the chunk; the reference does the same (a note, not a zero-fallback)."""
    ids = reference_policy.token_ids
    chunk = synthetic_chunks(1, seed=8)[0]
    scripted(reference_policy, monkeypatch, [damage(legal_emission(reference_policy, chunk), ids)])
    ref = reference_policy.predict_batch([make_obs(6)])[0]
    assert not ref.zero_fallback and ref.info["fallback_reason"] is None
    assert note in ref.info["decode_notes"]
    decoded, _ = reference_policy.codec.decode_bins(reference_policy.codec.encode(chunk))
    np.testing.assert_allclose(ref.targets_rad, reference_policy._to_sim(decoded[None])[0])


def test_reference_decode_matches_lerobots_predict_action_on_a_legal_stream(reference_policy, monkeypatch):
    from engine.policies.convmap.shim import PRESETS, rig_deg_to_sim_rad, sim_rad_to_rig_deg
    from engine.policies.molmoact2.policy import JOINT_HIGH_RAD, JOINT_LOW_RAD

    obs = make_obs(12)
    script = legal_emission(reference_policy, synthetic_chunks(1, seed=44)[0])
    scripted(reference_policy, monkeypatch, [script])
    with torch.inference_mode():
        theirs = reference_policy.model.predict_action(
            processor=reference_policy.processor,
            images=[obs.images["front"], obs.images["wrist"]],
            task="put the boat on the disk",
            state=PRESETS["official"].to_model(sim_rad_to_rig_deg(obs.state_rad)).astype(np.float32),
            norm_tag="so100_so101_molmoact2",
            inference_action_mode="discrete",
            action_tokenizer=reference_policy.codec.processor,
            enable_cuda_graph=False,
            return_dict=False,
        )
    scripted(reference_policy, monkeypatch, [script])
    (ours,) = reference_policy.predict_batch([obs])
    expected = rig_deg_to_sim_rad(PRESETS["official"].to_rig(theirs[0].numpy().astype(np.float64)))
    np.testing.assert_allclose(ours.targets_rad, np.clip(expected, JOINT_LOW_RAD, JOINT_HIGH_RAD), atol=1e-5)


class RandomHead(nn.Module):
    """Arbitrary logits of a chosen style at every step (what an untrained or broken head emits)."""

    def __init__(self, vocab: int, seed: int, style: str, favour: list[int]):
        super().__init__()
        self.vocab, self.gen, self.style, self.favour = vocab, torch.Generator().manual_seed(seed), style, favour

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        shape = (hidden.shape[0], hidden.shape[1], self.vocab)
        if self.style == "cauchy":  # heavy tails: a few huge logits anywhere
            return torch.tan(torch.pi * (torch.rand(shape, generator=self.gen) - 0.5))
        logits = torch.randn(shape, generator=self.gen) * (30.0 if self.style == "wide" else 1.0)
        if self.style == "favour-markers":  # the scaffold's own tokens at the wrong moments
            logits[..., self.favour] += 40.0
        return logits


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), style=st.sampled_from(["normal", "wide", "cauchy", "favour-markers"]))
def test_policy_masked_decode_decodes_whatever_the_head_emits(masked_policy, seed, style):
    ids = masked_policy.token_ids
    head = RandomHead(masked_policy.model.vocab_size, seed, style, [ids.start, ids.end, ids.eos])
    original = masked_policy.model.lm_head
    masked_policy.model.lm_head = head
    try:
        chunks = masked_policy.predict_batch([make_obs(seed % 7), make_obs(seed % 5 + 10)])
    finally:
        masked_policy.model.lm_head = original
    for chunk in chunks:
        assert not chunk.zero_fallback and chunk.info["fallback_reason"] is None
        assert chunk.info["decode_steps"] <= masked_policy.codec.n_chars + 3
