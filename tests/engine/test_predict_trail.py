"""The predict trail: every served observation is one flushed line of predicts.jsonl, and a
line's tokens, decoded by lerobot's own code, give its recorded normalised chunk. The trail of a
whole run (`--record-predicts` end to end) is held in tests/engine/test_molmoact2_episodes.py, on
the grammar-masked run that file launches anyway."""

from __future__ import annotations

import numpy as np
import torch

from engine.record.predict_trail import PREDICTS, PredictTrail
from prereg.rundir.predicts import read_predicts
from tests.engine.molmoact2_fixtures import make_obs

pytest_plugins = ("tests.engine.molmoact2_fixtures",)

FIELDS = {"seed", "replan", "tick", "pathway", "decode", "tokens", "chunk_normalized", "fallback",
          "decode_notes", "mask_interventions", "first_action_deg"}


def lerobot_chunk(policy, tokens: list[int]) -> np.ndarray | None:
    """lerobot's decode of an emission (None where lerobot raises: no EOS, or no action tokens)."""
    eos = policy.token_ids.eos
    if eos not in tokens:
        return None  # lerobot's generation loop raises before decoding
    with torch.inference_mode():
        try:
            out = policy.model._decode_discrete_action_chunk(
                torch.tensor([tokens]), action_tokenizer=policy.codec.processor,
                action_dim=policy.codec.action_dim, action_horizon=policy.codec.horizon)
        except RuntimeError:
            return None
    return policy.slice_chunk(out[0].numpy())


def check_line_against_lerobot(policy, line: dict) -> None:
    theirs = lerobot_chunk(policy, line["tokens"])
    ours = np.asarray(line["chunk_normalized"], dtype=np.float32)
    if theirs is None:
        assert line["fallback"] in ("no_eos", "empty_span") and not ours.any()
    else:
        np.testing.assert_array_equal(ours, theirs.astype(np.float32))


def test_each_served_observation_is_one_line(masked_policy, reference_policy, flow_policy, tmp_path):
    trail = PredictTrail.for_run(tmp_path)
    observations = [make_obs(1, 0), make_obs(2, 3)]
    for policy in (masked_policy, reference_policy, flow_policy):
        chunks = policy.predict_batch(observations)
        trail.record(observations, chunks)
        assert len((tmp_path / PREDICTS).read_text().splitlines()) == trail.lines  # flushed per batch
    trail.close()
    lines = read_predicts(tmp_path).lines
    assert len(lines) == 6 and all(set(line) == FIELDS for line in lines)
    masked, reference, flow = lines[0:2], lines[2:4], lines[4:6]
    assert [(t["seed"], t["replan"], t["tick"]) for t in masked] == [(1, 0, 0), (2, 3, 90)]
    for line in masked:
        assert (line["pathway"], line["decode"], line["fallback"]) == ("discrete", "grammar-masked", None)
        assert line["mask_interventions"] > 0 and line["tokens"][-1] == masked_policy.token_ids.eos
        check_line_against_lerobot(masked_policy, line)
    for line in reference:
        assert (line["pathway"], line["decode"]) == ("discrete", "reference")
        assert line["fallback"] == "no_eos" and len(line["tokens"]) == reference_policy.max_decode_steps
        check_line_against_lerobot(reference_policy, line)
    for line in flow:
        assert (line["pathway"], line["decode"], line["tokens"], line["fallback"]) == ("flow", "flow", None, None)
        assert np.asarray(line["chunk_normalized"]).shape == (30, 6)
    chunk = flow_policy.predict_batch([observations[0]])[0]
    from engine.policies.convmap.shim import sim_rad_to_rig_deg

    np.testing.assert_allclose(lines[4]["first_action_deg"], sim_rad_to_rig_deg(chunk.targets_rad[0]), atol=1e-4)
