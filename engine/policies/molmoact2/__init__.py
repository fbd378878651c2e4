"""MolmoAct2 as an engine policy: `load_policy(checkpoint, ...)` -> a batched `Policy`.

The model code is lerobot's (`lerobot.policies.molmoact2.molmoact2_hf_model`); this package
finds and checks the checkpoint offline, loads its weights exactly, builds batched inputs from
the sim's observations, and decodes both pathways (flow; discrete with the reference or the
grammar-masked decode). `tiny` builds a small random model for tests and demos.
"""

from __future__ import annotations

import os

# lerobot's warnings are silenced by the engine.policies package, imported before this module
from engine.policies.base import DEFAULT_TASK
from engine.policies.convmap.shim import PRESETS, ConvMap
from engine.policies.molmoact2.checkpoint import CheckpointError
from prereg.core.vocabulary import DECODES as VOCAB_DECODES
from prereg.core.vocabulary import DTYPES as VOCAB_DTYPES
from prereg.core.vocabulary import PATHWAYS as VOCAB_PATHWAYS
from prereg.core.vocabulary import decode_problem

PATHWAYS = ("flow", "discrete")
# the pre-registration's vocabulary by policy name, here by pathway (prereg/core/vocabulary.py: one list)
DECODES = {"flow": VOCAB_DECODES["molmoact2"], "discrete": VOCAB_DECODES["molmoact2-discrete"]}
DTYPES = VOCAB_DTYPES

__all__ = ["CheckpointError", "load_policy", "PATHWAYS", "DECODES", "DTYPES"]


def load_policy(
    checkpoint: str,
    *,
    pathway: str = "flow",
    decode: str = "flow",
    dtype: str = "bf16",
    device: str | None = None,
    convmap: ConvMap = PRESETS["official"],
    norm_tag: str = "so100_so101_molmoact2",
    flow_steps: int = 10,
    task: str = DEFAULT_TASK,
    cache_dir: str | os.PathLike | None = None,
    revision: str | None = None,
    pinned: bool = False,
    fast_revision: str | None = None,
):
    """Resolve, check and load a checkpoint; every failure a person can fix is a CheckpointError.

    `checkpoint`: a local directory, a Hugging Face id (downloaded into the Hugging Face cache at
    `revision`, default main, unless cached; HF_HUB_OFFLINE / HF_ENDPOINT / HF_TOKEN honoured), or
    `tiny`. With `pinned`, `revision` is a pre-registration's pin (a commit, sha256:<weights> for
    a local directory, `local` for tiny) and a checkpoint that loads as anything else is refused.
    `device` None means CUDA when available, else CPU. `task` is the
    instruction the model reads (the pre-registration's); with `task=None` each observation's
    own `task` is used. `cache_dir` holds the tiny model (default `$FONTAINE_CACHE` or
    `~/.cache/fontaine`).
    """
    if pathway not in PATHWAYS:
        raise CheckpointError(f"unknown pathway {pathway!r}; choose one of {', '.join(PATHWAYS)}")
    problem = decode_problem(next(p for p, way in VOCAB_PATHWAYS.items() if way == pathway), decode)
    if problem is not None:
        raise CheckpointError(problem)
    if dtype not in DTYPES:
        raise CheckpointError(f"unknown dtype {dtype!r}; choose bf16 or fp32")
    if int(flow_steps) < 1:
        raise CheckpointError(f"flow_steps must be >= 1, got {flow_steps}")

    import torch

    from engine.policies.molmoact2 import checkpoint as ckptmod
    from engine.policies.molmoact2.fast import load_fast
    from engine.policies.molmoact2.policy import MolmoAct2Policy

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise CheckpointError(f"device {device!r} asked for, but CUDA is not available here; use --device cpu")
    if device == "cpu":
        _limit_cpu_threads(torch)
    resolved = ckptmod.resolve_checkpoint(checkpoint, cache_dir=cache_dir, revision=ckptmod.hub_revision(revision))
    payload, metadata = ckptmod.read_norm_metadata(resolved.path, norm_tag)

    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import _RobotStats

    try:
        stats = _RobotStats(payload)
    except ValueError as exc:
        raise CheckpointError(f"the norm stats of {resolved.path} are not usable: {exc}") from None
    state_dim = stats.get_state_dim(norm_tag) or 0
    action_dim = stats.get_action_dim(norm_tag) or 0
    config = ckptmod.load_config(resolved.path)
    horizon = stats.get_action_horizon(norm_tag) or int(config.max_action_horizon)
    ckptmod.check_servable(config, pathway=pathway, state_dim=state_dim, action_dim=action_dim, horizon=horizon)
    chunk_horizon = min(stats.get_n_action_steps(norm_tag) or horizon, horizon)
    n_obs_steps = int(getattr(config, "n_obs_steps", 1) or 1)
    if n_obs_steps - 1 + chunk_horizon > horizon:
        raise CheckpointError(
            f"n_obs_steps {n_obs_steps} with n_action_steps {chunk_horizon} reaches past the action horizon "
            f"{horizon} (lerobot keeps steps n_obs_steps-1 .. n_obs_steps-2+n_action_steps and would raise)"
        )
    fingerprint = ckptmod.weights_fingerprint(resolved)
    pin = ckptmod.checkpoint_pin(resolved, fingerprint)
    tiny_ok = resolved.source == "tiny" and revision in (None, "local", "tiny")
    if pinned and revision != pin and not tiny_ok:
        raise CheckpointError(
            f"refused: the pre-registration pins {checkpoint} at revision {revision!r}, but what loaded is {pin} "
            "(pin that, by amendment, or restore the checkpoint the plan named)"
        )
    processor = ckptmod.load_processor(resolved.path)
    codec = None
    fast_tokenizer = None  # the manifest's record of which FAST tokenizer decoded (discrete pathway only)
    if pathway == "discrete":
        fast_dir, fast_tokenizer = ckptmod.fast_tokenizer_dir(resolved.path, pin=fast_revision)
        codec = load_fast(fast_dir, horizon=horizon, action_dim=action_dim)
        if codec.n_bpe > int(config.num_action_tokens):
            raise CheckpointError(
                f"the FAST tokenizer has {codec.n_bpe} tokens but the model only {config.num_action_tokens} action tokens"
            )
    model = ckptmod.load_model(
        resolved.path, config, dtype=torch.bfloat16 if dtype == "bf16" else torch.float32, device=device
    )

    description = {
        "policy": "molmoact2" if pathway == "flow" else "molmoact2-discrete",
        "checkpoint": resolved.requested,
        "checkpoint_path": str(resolved.path),
        "checkpoint_source": resolved.source,
        "revision": resolved.revision,
        "pin": pin,
        **fingerprint,
        "pathway": pathway,
        "decode": decode,
        "dtype": dtype,
        "device": str(device),
        "norm_tag": norm_tag,
        "setup_type": metadata.get("setup_type"),
        "control_mode": metadata.get("control_mode"),
        "convmap": convmap.as_dict(),
        "flow_steps": int(flow_steps) if pathway == "flow" else None,
        "chunk_horizon": chunk_horizon,
        "n_obs_steps": n_obs_steps,
        "action_horizon": horizon,
        "task": task,
        "parameters": int(model.num_parameters()),
        "max_decode_steps": horizon * 16 if pathway == "discrete" else None,
        "torch_threads": torch.get_num_threads() if device == "cpu" else None,
    }
    if codec is not None:
        description["fast"] = {"bpe_vocab": codec.n_bpe, "min_token": codec.min_token, "max_code": codec.max_code,
                               **fast_tokenizer}  # where it came from: the hub repo and its pinned commit, or
        # the checkpoint's own (with the sha256 of its tokenizer.json)
    policy = MolmoAct2Policy(
        model=model,
        processor=processor,
        robot_stats=stats,
        norm_tag=norm_tag,
        metadata=metadata,
        pathway=pathway,
        decode=decode,
        convmap=convmap,
        flow_steps=flow_steps,
        task=task,
        chunk_horizon=chunk_horizon,
        action_dim=action_dim,
        codec=codec,
        description=description,
        action_horizon=horizon,
    )
    if policy.grammar is not None and not policy.grammar.satisfiable:
        raise CheckpointError("the grammar mask admits no complete emission for this FAST tokenizer and horizon")
    return policy


def _limit_cpu_threads(torch) -> None:
    """On the CPU the driver shares its cores with the sim workers; torch's intra-op threads
    then spin against them (a 480-step reference decode measured 52 s with 2 threads under
    contention, 2 s with 1). One thread unless FONTAINE_TORCH_THREADS says otherwise."""
    threads = os.environ.get("FONTAINE_TORCH_THREADS", "1")
    try:
        count = int(threads)
    except ValueError:
        raise CheckpointError(f"FONTAINE_TORCH_THREADS must be a positive integer, got {threads!r}") from None
    if count < 1:
        raise CheckpointError(f"FONTAINE_TORCH_THREADS must be a positive integer, got {threads!r}")
    torch.set_num_threads(count)
