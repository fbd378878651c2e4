"""Shared fixtures for the MolmoAct2 tests: one tiny model per session, policies loaded from it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.policies.base import Observation


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    """Two cores are shared by several people; one torch thread each keeps timings honest."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory):
    """A cache dir holding the tiny model, as `load_policy("tiny", cache_dir=...)` expects."""
    from engine.policies.molmoact2.tiny import build_tiny

    root = tmp_path_factory.mktemp("fontaine-cache")
    build_tiny(root / "molmoact2-tiny")
    return root


@pytest.fixture(scope="session")
def tiny_dir(tiny_cache):
    return tiny_cache / "molmoact2-tiny"


def load(tiny_cache, **kwargs):
    from engine.policies.molmoact2 import load_policy

    kwargs.setdefault("dtype", "fp32")
    kwargs.setdefault("device", "cpu")
    return load_policy("tiny", cache_dir=tiny_cache, **kwargs)


@pytest.fixture(scope="session")
def flow_policy(tiny_cache):
    return load(tiny_cache, pathway="flow", decode="flow")


@pytest.fixture(scope="session")
def reference_policy(tiny_cache):
    return load(tiny_cache, pathway="discrete", decode="reference")


@pytest.fixture(scope="session")
def masked_policy(tiny_cache):
    return load(tiny_cache, pathway="discrete", decode="grammar-masked")


def make_obs(seed: int, replan_index: int = 0, *, state_rad=None, task: str | None = None, size: int = 96) -> Observation:
    """A replan observation with deterministic camera images and a state inside the joint ranges."""
    rng = np.random.default_rng(1000 + seed)
    state = np.asarray(state_rad if state_rad is not None else rng.uniform(-0.5, 0.5, size=6))
    images = {cam: rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8) for cam in ("front", "wrist")}
    obs = Observation(seed=seed, tick=30 * replan_index, replan_index=replan_index, state_rad=state, images=images)
    if task is not None:
        obs.task = task
    return obs


WIDE_SCALE = 100
WIDE_HORIZON = 10  # a shorter horizon keeps the wide tokenizer's tables and property runs quick


def wide_training_chunks():
    from engine.policies.molmoact2.tiny import synthetic_chunks

    return synthetic_chunks(200, seed=77, horizon=WIDE_HORIZON)


@pytest.fixture(scope="session")
def wide_fast_dir(tmp_path_factory):
    """A FAST tokenizer with a wide coefficient range (scale 100: characters up to ~1100, two UTF-8
    bytes, token boundaries inside characters, alphabet tokens that are lone UTF-8 bytes)."""
    import json

    from lerobot.policies.molmoact2.molmoact2_hf_model.action_tokenizer import UniversalActionProcessor
    from scipy.fft import dct

    from engine.policies.molmoact2.tiny import ACTION_DIM

    chunks = wide_training_chunks()
    processor = UniversalActionProcessor.fit(
        chunks, scale=WIDE_SCALE, vocab_size=2048, time_horizon=WIDE_HORIZON, action_dim=ACTION_DIM
    )
    coeffs = np.around(np.concatenate([dct(c, axis=0, norm="ortho").ravel() for c in chunks]) * WIDE_SCALE)
    out = tmp_path_factory.mktemp("wide-fast")
    processor.tokenizer.save_pretrained(str(out))
    config = {"scale": WIDE_SCALE, "vocab_size": 2048, "min_token": int(processor.min_token), "max_token": int(coeffs.max())}
    (out / "processor_config.json").write_text(json.dumps(config))
    return out
