"""Tiny randomly initialised lerobot checkpoints, built with lerobot's own API on the CPU (no download)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGE = (3, 48, 48)
CAMERAS = ("front", "wrist")


def build_checkpoint(out: Path, kind: str = "act", *, cameras=CAMERAS, image=IMAGE, state_dim: int = 6,
                     action_dim: int = 6, seed: int = 0, **overrides) -> Path:
    """Save a tiny `kind` policy (act | diffusion) with its pre/post-processors to `out`; returns `out`.

    Normalisation stats are made up but plausible for the SO-101 in degrees; the weights are
    lerobot's own random init under `seed` (ResNet18 backbone without pretrained weights)."""
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import get_policy_class, make_policy_config, make_pre_post_processors

    inputs = {f"observation.images.{c}": PolicyFeature(FeatureType.VISUAL, tuple(image)) for c in cameras}
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (state_dim,))
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (action_dim,))}
    if kind == "act":
        settings = dict(chunk_size=10, n_action_steps=5, dim_model=32, n_heads=2, dim_feedforward=64,
                        n_encoder_layers=1, n_decoder_layers=1, latent_dim=8, n_vae_encoder_layers=1,
                        pretrained_backbone_weights=None)
    elif kind == "diffusion":
        settings = dict(n_obs_steps=2, horizon=8, n_action_steps=4, down_dims=(16, 32), kernel_size=3,
                        n_groups=4, diffusion_step_embed_dim=16, num_train_timesteps=10, num_inference_steps=3,
                        crop_shape=None, pretrained_backbone_weights=None, use_group_norm=True,
                        spatial_softmax_num_keypoints=8)
    else:
        raise ValueError(kind)
    settings.update(overrides)
    cfg = make_policy_config(kind, input_features=inputs, output_features=outputs, device="cpu", **settings)
    torch.manual_seed(seed)
    policy = get_policy_class(kind)(cfg)
    gen = torch.Generator().manual_seed(seed + 1)
    stats = {
        "observation.state": {"mean": torch.randn(state_dim, generator=gen) * 20,
                              "std": torch.rand(state_dim, generator=gen) * 30 + 10,
                              "min": torch.full((state_dim,), -150.0), "max": torch.full((state_dim,), 150.0)},
        "action": {"mean": torch.randn(action_dim, generator=gen) * 20,
                   "std": torch.rand(action_dim, generator=gen) * 30 + 10,
                   "min": torch.full((action_dim,), -150.0), "max": torch.full((action_dim,), 150.0)},
    }
    for c in cameras:
        stats[f"observation.images.{c}"] = {"mean": torch.full((3, 1, 1), 0.45), "std": torch.full((3, 1, 1), 0.25),
                                            "min": torch.zeros((3, 1, 1)), "max": torch.ones((3, 1, 1))}
    pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(out)
    pre.save_pretrained(out)
    post.save_pretrained(out)
    return out


class LerobotLoop:
    """lerobot-eval's per-tick loop with lerobot's own pieces: the reference the adapter is held to
    (tests/engine/test_lerobot_policy.py) and timed against (benchmarks/bench_lerobot.py)."""

    def __init__(self, path, convmap=None):
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        from engine.policies.convmap.shim import PRESETS

        cfg = PreTrainedConfig.from_pretrained(str(path))
        cfg.device = "cpu"
        self.policy = get_policy_class(cfg.type).from_pretrained(str(path), config=cfg)
        self.policy.eval()
        self.pre, self.post = make_pre_post_processors(cfg, pretrained_path=str(path),
                                                       preprocessor_overrides={"device_processor": {"device": "cpu"}})
        self.convmap = PRESETS["identity"] if convmap is None else convmap

    def reset(self):
        self.policy.reset()

    def select(self, observations) -> np.ndarray:
        """The actions lerobot's select_action gives for one observation per batch row, as float64."""
        import torch
        from lerobot.envs.utils import preprocess_observation

        from engine.policies.convmap.shim import sim_rad_to_rig_deg

        raw = {"pixels": {c: np.stack([o.images[c] for o in observations]) for c in ("front", "wrist")},
               "agent_pos": np.stack([self.convmap.to_model(sim_rad_to_rig_deg(o.state_rad)) for o in observations])}
        batch = preprocess_observation(raw)
        batch["task"] = [o.task for o in observations]
        with torch.inference_mode():
            return self.post(self.policy.select_action(self.pre(batch))).numpy().astype(np.float64)
