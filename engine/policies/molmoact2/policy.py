"""MolmoAct2 served in the driver: a batch of observations in, one model call, chunks out.

Units at the seam are the simulator's (radians). Inside: state radians -> rig degrees
(`sim_rad_to_rig_deg`) -> model degrees (the convmap shim) -> q01/q99 normalisation under the
norm tag -> discrete state tokens in the prompt; actions come back normalised, are
unnormalised, cut to the 6 joints, mapped model -> rig degrees -> sim radians and clamped to
the sim's joint ranges.

Batching: the prompts are left-padded to one length (explicit position ids keep every row at
the positions it would have alone), run as one forward, then
- flow: one batched Euler integration of the action expert; the initial noise of each row
  comes from its own generator seeded by (episode seed, replan index), so an episode's sample
  does not depend on its batch-mates;
- discrete: one batched greedy loop over a shared KV cache, each row with its own stopping
  point and, for the grammar-masked decode, its own mask state.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from engine.policies.base import JOINT_NAMES, Chunk, Observation
from engine.policies.convmap.shim import ConvMap, first_action_delta_deg, rig_deg_to_sim_rad, sim_rad_to_rig_deg
from engine.policies.molmoact2 import fast as fastmod
from engine.policies.molmoact2.fast import FastCodec
from engine.policies.molmoact2.grammar import GrammarMask

logger = logging.getLogger(__name__)

CAMERAS = ("front", "wrist")  # the order the model was trained on: main (front/top) first

# The sim's joint ranges (radians), JOINT_NAMES order; targets are clamped into them.
JOINT_LOW_RAD = np.array([-1.9199, -1.7453, -1.69, -1.6581, -2.7438, -0.1745])
JOINT_HIGH_RAD = np.array([1.9199, 1.7453, 1.69, 1.6581, 2.8412, 1.7453])


@dataclass(frozen=True)
class TokenIds:
    start: int  # <action_start>
    end: int  # <action_end>
    eos: int
    action0: int  # id of <action_0>
    num_action: int


class MolmoAct2Policy:
    """A loaded MolmoAct2 checkpoint behind the engine's Policy protocol (see `load_policy`)."""

    needs_images = True
    needs_privileged = False
    serve_in_driver = True

    def __init__(
        self,
        *,
        model,
        processor,
        robot_stats,
        norm_tag: str,
        metadata: dict[str, Any],
        pathway: str,
        decode: str,
        convmap: ConvMap,
        flow_steps: int,
        task: str,
        chunk_horizon: int,
        action_dim: int,
        codec: FastCodec | None,
        description: dict[str, Any],
        action_horizon: int | None = None,
    ):
        self.model = model
        self.processor = processor
        self.stats = robot_stats
        self.norm_tag = norm_tag
        self.metadata = metadata
        self.pathway = pathway
        self.decode = decode
        self.convmap = convmap
        self.flow_steps = int(flow_steps)
        self.task = task
        self.chunk_horizon = int(chunk_horizon)
        self.action_dim = int(action_dim)
        self.codec = codec
        self.grammar = GrammarMask(codec) if decode == "grammar-masked" else None
        self.name = "molmoact2" if pathway == "flow" else f"molmoact2-discrete-{decode}"
        self.device = next(model.parameters()).device
        cfg = model.config
        self.token_ids = (
            TokenIds(
                start=int(cfg.action_start_token_id),
                end=int(cfg.action_end_token_id),
                eos=int(model._require_eos_token_id()),
                action0=int(cfg.action_token_start_id),
                num_action=int(cfg.num_action_tokens),
            )
            if pathway == "discrete"
            else None
        )
        # lerobot generates the tag's whole action_horizon (the noise, the FAST decode, the H*16
        # step cap), then keeps n_action_steps of it starting at n_obs_steps - 1.
        self.action_horizon = int(action_horizon or chunk_horizon)
        self.chunk_start = int(getattr(cfg, "n_obs_steps", 1) or 1) - 1
        self.max_decode_steps = self.action_horizon * 16
        self.token_id_to_bin = dict(model._action_token_id_to_bin()) if pathway == "discrete" else {}
        self._description = description

    # ------------------------------------------------------------------ protocol

    def describe(self) -> dict[str, Any]:
        return dict(self._description)

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        if not observations:
            return []
        started = time.perf_counter()
        with torch.inference_mode():
            inputs = self._model_inputs(observations)
            if self.pathway == "flow":
                normalised, per_row = self._predict_flow(observations, inputs), None
            else:
                normalised, per_row = self._predict_discrete(inputs)
        targets = self._to_sim(normalised)
        wall = time.perf_counter() - started
        chunks = []
        for i, obs in enumerate(observations):
            info: dict[str, Any] = {
                "predict_wall_s": wall,
                "first_action_delta_deg": first_action_delta_deg(obs.state_rad, targets[i]),
                "pathway": self.pathway,
                "decode": self.decode,
                "chunk_normalized": normalised[i].astype(np.float32),  # model convention, before unnormalising
            }
            zero, violations = False, 0
            if per_row is not None:
                zero = per_row[i]["fallback_reason"] is not None
                violations = per_row[i]["violations"]
                info.update(per_row[i])
            chunks.append(
                Chunk(
                    targets_rad=targets[i],
                    zero_fallback=zero,
                    mask_violations=violations,
                    batch_size=len(observations),
                    info=info,
                )
            )
        return chunks

    # ------------------------------------------------------------------ inputs

    def _model_inputs(self, observations: list[Observation]) -> dict[str, torch.Tensor]:
        """One padded batch: prompt text with discrete state tokens, both cameras per row."""
        from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import (
            _build_discrete_state_string,
            _build_robot_text,
            _normalize_question_text,
        )

        cfg = self.model.config
        texts, images = [], []
        for obs in observations:
            normalised_state = self.normalise_state(obs.state_rad)
            texts.append(
                _build_robot_text(
                    task=_normalize_question_text(self.task or obs.task),
                    style="robot_action",
                    discrete_state_string=_build_discrete_state_string(normalised_state, int(cfg.num_state_tokens)),
                    setup_type=str(self.metadata.get("setup_type") or ""),
                    control_mode=str(self.metadata.get("control_mode") or ""),
                    add_setup_tokens=bool(cfg.add_setup_tokens),
                    add_control_tokens=bool(cfg.add_control_tokens),
                    num_images=len(CAMERAS),
                )
            )
            images.extend(_camera_images(obs))
        batch = self.processor(text=texts, images=images, return_tensors="pt", padding=True)
        inputs = {k: v.to(self.device) for k, v in batch.items() if torch.is_tensor(v)}
        mask = inputs["attention_mask"]
        inputs["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        return inputs

    def normalise_state(self, state_rad: np.ndarray) -> np.ndarray:
        model_deg = self.convmap.to_model(sim_rad_to_rig_deg(np.asarray(state_rad, dtype=np.float64)))
        return np.asarray(self.stats.normalize_state(model_deg.astype(np.float32), self.norm_tag), dtype=np.float32)

    # ------------------------------------------------------------------ flow

    def _predict_flow(self, observations: list[Observation], inputs: dict[str, torch.Tensor]) -> np.ndarray:
        backbone = self.model.model
        out = backbone(**inputs, use_cache=True)  # the backbone alone: no (B, L, vocab) logits
        kv = backbone._extract_kv_states(out.past_key_values)
        encoder_mask = backbone._get_encoder_attention_mask(inputs["input_ids"], inputs["attention_mask"])
        noise = torch.cat([self.flow_noise(obs) for obs in observations]).to(self.device)
        trajectory = integrate_flow(
            backbone,
            input_ids=inputs["input_ids"],
            encoder_kv_states=kv,
            encoder_attention_mask=encoder_mask,
            noise=noise,
            steps=self.flow_steps,
            action_dim=self.action_dim,
        )
        return self.slice_chunk(trajectory[:, :, : self.action_dim].float().cpu().numpy())

    def flow_noise(self, obs: Observation) -> torch.Tensor:
        """(1, H, 32) Gaussian noise from this episode's own stream at this replan; H is the tag's
        action_horizon, the shape lerobot's `generate_actions_from_inputs` draws."""
        cfg = self.model.config
        gen = episode_generator(obs.seed, obs.replan_index)
        dtype = self.model.model.action_expert.action_embed.weight.dtype
        return torch.randn((1, self.action_horizon, int(cfg.max_action_dim)), generator=gen, dtype=dtype)

    # ------------------------------------------------------------------ discrete

    def _predict_discrete(self, inputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, list[dict[str, Any]]]:
        ids = self.token_ids
        forced = self.grammar is not None
        rows = [_DecodeRow(self.grammar.start() if forced else None) for _ in range(inputs["input_ids"].shape[0])]
        vocab_slice = slice(ids.action0, ids.action0 + self.codec.n_bpe)

        out = self.model(**inputs, use_cache=True, logits_to_keep=1)
        cache, mask, positions = out.past_key_values, inputs["attention_mask"], inputs["position_ids"][:, -1:]
        logits = out.logits[:, -1, :]
        for _ in range(self.max_decode_steps):
            greedy = logits.argmax(-1).tolist()
            chosen = []
            for i, row in enumerate(rows):
                if row.done:
                    chosen.append(ids.eos)
                    continue
                token = self._masked_choice(row, logits[i, vocab_slice]) if forced else greedy[i]
                row.violations += int(token != greedy[i])
                row.tokens.append(token)
                row.done = token == ids.eos
                chosen.append(token)
            if all(row.done for row in rows):
                break
            step = torch.tensor(chosen, device=self.device).unsqueeze(1)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            positions = positions + 1
            out = self.model(
                input_ids=step,
                attention_mask=mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            cache, logits = out.past_key_values, out.logits[:, -1, :]

        normalised = np.zeros((len(rows), self.chunk_horizon, self.action_dim))
        per_row = []
        for i, row in enumerate(rows):
            decoded = self.decode_emission(row.tokens)
            normalised[i] = self.slice_chunk(decoded.chunk)
            per_row.append(
                {
                    "fallback_reason": decoded.fallback,
                    "decode_notes": list(decoded.notes),
                    "violations": row.violations,
                    "decode_steps": len(row.tokens),
                    "tokens": list(row.tokens),
                }
            )
        return normalised, per_row

    def slice_chunk(self, actions: np.ndarray) -> np.ndarray:
        """lerobot's `_slice_action_chunk`: the executed steps start at n_obs_steps - 1."""
        return actions[..., self.chunk_start : self.chunk_start + self.chunk_horizon, :]

    def _masked_choice(self, row: "_DecodeRow", action_logits: torch.Tensor) -> int:
        """The scaffold: <action_start>, masked action tokens up to the budget, <action_end>, EOS."""
        ids, grammar = self.token_ids, self.grammar
        if not row.tokens:
            return ids.start
        if row.tokens[-1] == ids.end:
            return ids.eos
        if grammar.complete(row.state):
            return ids.end
        allowed = torch.from_numpy(grammar.allowed_tokens(row.state)).to(action_logits.device)
        masked = action_logits.float().masked_fill(~allowed, float("-inf"))
        bpe_id = int(masked.argmax())
        row.state = grammar.advance(row.state, bpe_id)
        return ids.action0 + bpe_id

    def decode_emission(self, tokens: list[int]) -> fastmod.ReferenceDecode:
        """lerobot's decode of one emission (see `fast.reference_decode`): the normalised chunk it
        executes, the zero-fallback reason where it raises or its FAST decode returns zeros, and
        notes on anomalies it decodes through."""
        ids = self.token_ids
        return fastmod.reference_decode(
            tokens,
            codec=self.codec,
            start_id=ids.start,
            end_id=ids.end,
            eos_id=ids.eos,
            token_id_to_bin=self.token_id_to_bin,
        )

    # ------------------------------------------------------------------ actions out

    def _to_sim(self, normalised: np.ndarray) -> np.ndarray:
        """(B, H, action_dim) normalised -> (B, H, 6) sim radians, clamped to the joint ranges.

        A zero-fallback row arrives as normalised zeros, so its "zero action" is the
        unnormalised zero: the middle of the q01..q99 box in model degrees for every joint,
        mapped through the shim like any action (the seeds' reference does the same, since
        lerobot's FAST decode returns zeros and the usual unnormalisation follows).
        """
        model_deg = np.asarray(self.stats.unnormalize_action(normalised.astype(np.float32), self.norm_tag))
        model_deg = model_deg[..., : len(JOINT_NAMES)].astype(np.float64)
        sim = rig_deg_to_sim_rad(self.convmap.to_rig(model_deg))
        return np.clip(sim, JOINT_LOW_RAD, JOINT_HIGH_RAD)


@dataclass
class _DecodeRow:
    """One row of a batched greedy decode: its emission so far and, when masked, its grammar state."""

    state: Any
    done: bool = False
    violations: int = 0
    tokens: list[int] = field(default_factory=list)


def episode_generator(seed: int, replan_index: int) -> torch.Generator:
    """A CPU generator private to (episode seed, replan): the same draw whatever the batch."""
    mixed = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(replan_index) & 0xFFFFFFFF, 0x4D41]).generate_state(
        2, np.uint32
    )
    return torch.Generator().manual_seed(int(mixed[0]) << 32 | int(mixed[1]))


def integrate_flow(
    backbone,
    *,
    input_ids: torch.Tensor,
    encoder_kv_states,
    encoder_attention_mask: torch.Tensor,
    noise: torch.Tensor,
    steps: int,
    action_dim: int,
) -> torch.Tensor:
    """Euler-integrate the action expert from given noise (B, H_max, 32).

    The same steps as lerobot's `MolmoAct2Model.generate_actions_from_inputs` after its VLM
    forward (depth gate, padded-dimension masking, context, modulation cache, flow loop); it
    exists only because that method draws the noise for the whole batch from one generator.
    A test holds the two equal at batch 1.
    """
    from lerobot.policies.molmoact2.molmoact2_hf_model.inference import _ActionFlowInputs

    expert = backbone._require_action_expert()
    gate, depth_mask = backbone._depth_gate_from_condition(
        input_ids=input_ids, encoder_attention_mask=encoder_attention_mask, layer_kv_states=encoder_kv_states
    )
    encoder_kv_states = backbone._apply_depth_gate_to_layer_kv_states(encoder_kv_states, depth_mask, gate)
    batch, horizon, width = noise.shape
    device = noise.device
    dim_is_pad = None
    if action_dim < width:
        dim_is_pad = torch.ones((batch, width), dtype=torch.bool, device=device)
        dim_is_pad[:, :action_dim] = False
    trajectory = backbone._mask_action_dim_tensor(
        noise.to(expert.action_embed.weight.dtype),
        action_dim_is_pad=dim_is_pad,
        enabled=backbone.config.mask_action_dim_padding,
    )
    context = expert.prepare_context(
        encoder_kv_states=encoder_kv_states,
        encoder_attention_mask=encoder_attention_mask,
        state_embeddings=None,
        batch_size=batch,
        seq_len=horizon,
        device=device,
        dtype=trajectory.dtype,
    )
    timesteps = [torch.full((batch,), i / steps, device=device, dtype=torch.float32) for i in range(steps)]
    modulations = expert.get_or_prepare_modulation_cache(
        timesteps, cache_key=(steps, batch, device, trajectory.dtype)
    )
    flow_inputs = _ActionFlowInputs(
        trajectory=trajectory, context=context, modulations=modulations, action_dim_is_pad=dim_is_pad
    )
    graphs = backbone.action_cuda_graph_manager
    if graphs is not None and graphs.can_use_action_flow(flow_inputs):
        return graphs.run_action_flow(flow_inputs, steps, backbone._run_action_flow_loop)
    return backbone._run_action_flow_loop(flow_inputs, steps)


def _camera_images(obs: Observation) -> list[np.ndarray]:
    if not obs.images or any(cam not in obs.images for cam in CAMERAS):
        have = sorted(obs.images or {})
        raise ValueError(f"MolmoAct2 needs camera images {CAMERAS}; observation (seed {obs.seed}) has {have}")
    out = []
    for cam in CAMERAS:
        img = np.asarray(obs.images[cam])
        if img.ndim != 3 or img.shape[-1] != 3 or img.dtype != np.uint8:
            raise ValueError(f"camera {cam!r} image must be HxWx3 uint8, got {img.shape} {img.dtype}")
        out.append(img)
    return out
