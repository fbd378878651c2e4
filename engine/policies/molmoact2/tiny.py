"""A tiny random MolmoAct2, built locally, so tests and demos run the real code path in seconds.

No weights or tokenizers can be downloaded here, so everything the release ships is rebuilt in
miniature and saved in the release's layout (a directory the same loader reads):

- `config.json` + `model.safetensors`: lerobot's MolmoAct2ForConditionalGeneration with a
  2-layer, 64-wide text model, a 3-layer, 32-wide ViT on 112-px images and a 2-layer action
  expert (about half a million parameters), random weights from a seed;
- `tokenizer.json`: a byte-level Qwen2 tokenizer (merges fitted on the robot prompt) plus the
  special tokens the processor and the prompt need (image tokens, chat markers, state,
  setup/control, action);
- `processor_config.json`: the image processor (one 112-px resized crop per image);
- `action_tokenizer/`: a FAST tokenizer (lerobot's UniversalActionProcessor) fitted on synthetic
  smooth normalised chunks, BPE vocabulary 256, horizon 30, 6 joints;
- `norm_stats.json`: tag `so100_so101_molmoact2`, q01/q99 stats in the checkpoint's degrees.

Command line: `python -m engine.policies.molmoact2.tiny [PATH]` builds (or reuses) the model and
prints its directory; without PATH it uses the cache (`$FONTAINE_CACHE/molmoact2-tiny`, default
`~/.cache/fontaine/molmoact2-tiny`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

TINY_FORMAT = 2  # bump when the layout or the recipe changes: cached copies are then rebuilt
TINY_MARKER = "fontaine_tiny.json"
NORM_TAG = "so100_so101_molmoact2"
CHUNK_HORIZON = 30
ACTION_DIM = 6
FAST_VOCAB = 256
NUM_STATE_TOKENS = 256
SETUP_TYPE = "single so100/so101 robotic arm in molmoact2"
CONTROL_MODE = "absolute joint pose"
IMAGE_PX = 112

# The release's reported SO-100/101 state stats (model degrees, joint order of JOINT_NAMES).
STATE_Q01 = (-41.91, 43.67, 38.39, 5.71, -63.45, 0.94)
STATE_Q99 = (48.29, 185.26, 173.14, 91.78, 42.94, 44.14)


@dataclass(frozen=True)
class ModelDims:
    """The sizes of a random MolmoAct2; the defaults are the tiny model's."""

    text_hidden: int = 64
    text_layers: int = 2
    text_heads: int = 4
    text_kv_heads: int = 2
    vit_hidden: int = 32
    vit_layers: int = 3
    vit_heads: int = 2
    expert_hidden: int = 32
    expert_heads: int = 2
    image_px: int = IMAGE_PX


TINY = ModelDims()


def default_cache_dir() -> Path:
    from prereg.core.cache import cache_root

    return cache_root() / "molmoact2-tiny"


def token_config(ids: dict[str, int], *, eos: int, pad: int) -> dict:
    """MolmoAct2Config's token ids and action/state layout for a text tokenizer built by
    `_build_text_tokenizer` (its special tokens `ids`): the tiny model's and the release-shaped
    benchmark's (benchmarks/bench_release_cost.py) one wiring."""
    return dict(
        image_start_token_id=ids["<im_start>"],
        low_res_image_start_token_id=ids["<low_res_im_start>"],
        image_end_token_id=ids["<im_end>"],
        image_low_res_id=ids["<im_low>"],
        image_patch_id=ids["<im_patch>"],
        image_col_id=ids["<im_col>"],
        frame_start_token_id=ids["<frame_start>"],
        frame_end_token_id=ids["<frame_end>"],
        max_action_dim=32,
        max_action_horizon=CHUNK_HORIZON,
        n_obs_steps=1,
        action_mode="both",
        action_output_token_id=ids["<action_output>"],
        action_start_token_id=ids["<action_start>"],
        action_end_token_id=ids["<action_end>"],
        action_token_start_id=ids["<action_0>"],
        num_action_tokens=FAST_VOCAB,
        state_start_token_id=ids["<state_start>"],
        state_end_token_id=ids["<state_end>"],
        state_token_start_id=ids["<state_0>"],
        num_state_tokens=NUM_STATE_TOKENS,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=eos,
    )


def build_tiny(path: str | os.PathLike | None = None, *, seed: int = 0, dims: ModelDims = TINY) -> Path:
    """Build the tiny model at `path` (or reuse the one there) and return the directory.

    The build happens in a sibling temporary directory renamed into place, so concurrent callers
    never see a half-written model. `dims` builds a larger random model the same way (the GPU
    benchmark uses it).
    """
    target = Path(path) if path is not None else default_cache_dir()
    if _is_current(target, seed, dims):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _build_into(staging, seed, dims)
        if target.exists():
            if _is_current(target, seed, dims):
                return target
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.rename(staging, target)
        except OSError:
            if not _is_current(target, seed, dims):  # another builder won with a different recipe
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _is_current(path: Path, seed: int, dims: ModelDims) -> bool:
    marker = path / TINY_MARKER
    if not marker.is_file():
        return False
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return info.get("format") == TINY_FORMAT and info.get("seed") == seed and info.get("dims") == asdict(dims)


def _build_into(out: Path, seed: int, dims: ModelDims) -> None:
    import torch
    from lerobot.policies.molmoact2.molmoact2_hf_model.configuration_molmoact2 import (
        MolmoAct2ActionExpertConfig,
        MolmoAct2AdapterConfig,
        MolmoAct2Config,
        MolmoAct2TextConfig,
        MolmoAct2VitConfig,
    )
    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import (
        MolmoAct2ForConditionalGeneration,
    )

    fast = _fit_fast_tokenizer(seed)
    fast_dir = out / "action_tokenizer"
    fast_dir.mkdir(parents=True)
    fast.tokenizer.save_pretrained(str(fast_dir))
    (fast_dir / "processor_config.json").write_text(json.dumps(fast.fontaine_config, indent=2))

    tokenizer, ids = _build_text_tokenizer()
    tokenizer.save_pretrained(str(out))
    vocab_size = _round_up(len(tokenizer), 64)

    text = MolmoAct2TextConfig(
        hidden_size=dims.text_hidden,
        num_attention_heads=dims.text_heads,
        num_key_value_heads=dims.text_kv_heads,
        head_dim=dims.text_hidden // dims.text_heads,
        vocab_size=vocab_size,
        additional_vocab_size=64,
        num_hidden_layers=dims.text_layers,
        intermediate_size=2 * dims.text_hidden,
        max_position_embeddings=2048,
        rope_theta=10000.0,
    )
    vit = MolmoAct2VitConfig(
        hidden_size=dims.vit_hidden,
        intermediate_size=2 * dims.vit_hidden,
        num_hidden_layers=dims.vit_layers,
        num_attention_heads=dims.vit_heads,
        num_key_value_heads=dims.vit_heads,
        head_dim=dims.vit_hidden // dims.vit_heads,
        image_default_input_size=(dims.image_px, dims.image_px),
        image_patch_size=14,
        image_num_pos=(dims.image_px // 14) ** 2,
    )
    adapter = MolmoAct2AdapterConfig(
        vit_layers=(-1, -3),
        hidden_size=dims.vit_hidden,
        num_attention_heads=dims.vit_heads,
        num_key_value_heads=dims.vit_heads,
        head_dim=dims.vit_hidden // dims.vit_heads,
        intermediate_size=2 * dims.vit_hidden,
        text_hidden_size=dims.text_hidden,
    )
    expert = MolmoAct2ActionExpertConfig(
        hidden_size=dims.expert_hidden,
        num_layers=dims.text_layers,
        num_heads=dims.expert_heads,
        ffn_multiple_of=32,
        timestep_embed_dim=32,
    )
    config = MolmoAct2Config(vit_config=vit, adapter_config=adapter, text_config=text, action_expert_config=expert,
                             **token_config(ids, eos=tokenizer.eos_token_id, pad=tokenizer.pad_token_id))
    torch.manual_seed(seed)
    model = MolmoAct2ForConditionalGeneration(config)
    _randomise(model, seed)
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(str(out))
    finally:
        if bars:
            hf_logging.enable_progress_bar()

    (out / "processor_config.json").write_text(json.dumps(_processor_config(dims.image_px), indent=2))
    (out / "norm_stats.json").write_text(json.dumps(_norm_stats(), indent=2))
    (out / TINY_MARKER).write_text(
        json.dumps(
            {"format": TINY_FORMAT, "seed": seed, "dims": asdict(dims), "parameters": model.num_parameters()}, indent=2
        )
    )


def _randomise(model, seed: int) -> None:
    """Give every parameter a small random value from the seed.

    The release initialisation zeroes the action expert's output layers, which would make a
    random flow policy return its input noise whatever it sees; a tiny model should react to
    its observation so that tests can tell inputs apart.
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if param.ndim == 1 and ("norm" in name or name.endswith("ln_f.weight")):
                param.fill_(1.0)
            else:
                std = min(0.1, param.shape[-1] ** -0.5)  # stays tame for wider benchmark models
                param.copy_(torch.randn(param.shape, generator=gen) * std)


def _fit_fast_tokenizer(seed: int):
    """FAST on synthetic smooth normalised chunks: low-frequency sinusoids around an offset."""
    from lerobot.policies.molmoact2.molmoact2_hf_model.action_tokenizer import UniversalActionProcessor

    chunks = synthetic_chunks(400, seed=seed)
    fast = UniversalActionProcessor.fit(
        chunks, scale=10, vocab_size=FAST_VOCAB, time_horizon=CHUNK_HORIZON, action_dim=ACTION_DIM
    )
    from scipy.fft import dct

    coeffs = np.around(np.concatenate([dct(c, axis=0, norm="ortho").ravel() for c in chunks]) * 10)
    fast.fontaine_config = {
        "scale": 10,
        "vocab_size": FAST_VOCAB,
        "min_token": int(fast.min_token),
        "max_token": int(coeffs.max()),
        "time_horizon": CHUNK_HORIZON,
        "action_dim": ACTION_DIM,
    }
    return fast


def synthetic_chunks(n: int, *, seed: int = 0, horizon: int = CHUNK_HORIZON) -> list[np.ndarray]:
    """Smooth (horizon, 6) chunks in the normalised range [-1, 1], as joint-pose chunks look."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, horizon)[:, None]
    out = []
    for _ in range(n):
        offset = rng.uniform(-0.7, 0.7, size=(1, ACTION_DIM))
        amp = rng.uniform(0.0, 0.25, size=(1, ACTION_DIM))
        freq = rng.uniform(0.2, 1.5, size=(1, ACTION_DIM))
        phase = rng.uniform(0, 2 * np.pi, size=(1, ACTION_DIM))
        out.append(np.clip(offset + amp * np.sin(2 * np.pi * freq * t + phase), -1.0, 1.0))
    return out


def _build_text_tokenizer():
    """A byte-level Qwen2 tokenizer with the special tokens MolmoAct2's processor and prompt use.

    Its merges are fitted on the robot prompt itself, so a prompt is ~80 text tokens rather
    than ~300 bytes: the tiny model's predicts stay cheap.
    """
    from lerobot.policies.molmoact2.molmoact2_hf_model.processing_molmoact2 import IMAGE_TOKENS
    from tokenizers import AddedToken
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    vocab, merges = _prompt_bpe()
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges)
    specials = [
        *IMAGE_TOKENS,
        "<|image|>",
        "<|video|>",
        "<|im_start|>",
        "<|im_end|>",
        "<setup_start>",
        "<setup_end>",
        "<control_start>",
        "<control_end>",
        "<state_start>",
        "<state_end>",
        *(f"<state_{k}>" for k in range(NUM_STATE_TOKENS)),
        "<action_output>",
        "<action_start>",
        "<action_end>",
        *(f"<action_{k}>" for k in range(FAST_VOCAB)),
    ]
    tokenizer.add_tokens([AddedToken(tok, special=True, normalized=False) for tok in specials])
    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in specials}
    starts = ids["<action_0>"], ids["<state_0>"]
    for prefix, start, count in (("<action_", starts[0], FAST_VOCAB), ("<state_", starts[1], NUM_STATE_TOKENS)):
        assert [ids[f"{prefix}{k}>"] for k in range(count)] == list(range(start, start + count))
    return tokenizer, ids


def _prompt_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Byte-level BPE (Qwen2's pre-tokenizer) fitted on the robot prompt for a few tasks."""
    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import _build_robot_text
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    from engine.policies.base import DEFAULT_TASK

    corpus = [
        _build_robot_text(
            task=task,
            style="robot_action",
            discrete_state_string="",
            setup_type=SETUP_TYPE,
            control_mode=CONTROL_MODE,
            add_setup_tokens=False,
            add_control_tokens=False,
            num_images=2,
        )
        for task in (DEFAULT_TASK, "pick up the boat", "move the arm to the disk")
    ]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer)
    model = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return dict(model["vocab"]), merges


def _processor_config(image_px: int) -> dict:
    return {
        "image_processor": {
            "size": {"height": image_px, "width": image_px},
            "max_crops": 1,
            "crop_mode": "resize",
            "patch_size": 14,
            "pooling_size": [2, 2],
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
        },
        "video_processor": {},
        "image_use_col_tokens": True,
        "use_single_crop_col_tokens": None,
        "use_single_crop_start_token": True,
        "video_use_col_tokens": False,
        "use_frame_special_tokens": True,
    }


def _norm_stats() -> dict:
    """State and action stats under one tag; actions are absolute joint poses in the same frame."""
    q01 = list(STATE_Q01)
    q99 = list(STATE_Q99)
    stats = {"q01": q01, "q99": q99, "min": [v - 5.0 for v in q01], "max": [v + 5.0 for v in q99]}
    return {
        "norm_mode": "q01_q99",
        "metadata_by_tag": {
            NORM_TAG: {
                "action_stats": dict(stats),
                "state_stats": dict(stats),
                "action_horizon": CHUNK_HORIZON,
                "n_action_steps": CHUNK_HORIZON,
                "setup_type": SETUP_TYPE,
                "control_mode": CONTROL_MODE,
            }
        },
    }


def _round_up(value: int, multiple: int) -> int:
    return (value + multiple - 1) // multiple * multiple


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print("usage: python -m engine.policies.molmoact2.tiny [PATH]", file=sys.stderr)
        return 2
    print(build_tiny(args[0] if args else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
