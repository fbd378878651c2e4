"""FAST action tokens: round trip, token bytes, and the strict span check the grammar tests use.

(The reference decode, lerobot's semantics, is tested against lerobot itself in
test_reference_decode.py.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.policies.molmoact2 import fast
from engine.policies.molmoact2.fast import FastCodec, load_fast
from engine.policies.molmoact2.tiny import ACTION_DIM, CHUNK_HORIZON, synthetic_chunks

pytest_plugins = ("tests.engine.molmoact2_fixtures",)


@pytest.fixture(scope="module")
def codec(tiny_dir) -> FastCodec:
    return load_fast(tiny_dir / "action_tokenizer", horizon=CHUNK_HORIZON, action_dim=ACTION_DIM)


def test_round_trip_on_smooth_chunks(codec):
    errors = []
    for chunk in synthetic_chunks(50, seed=123):
        decoded, reason = codec.decode_bins(codec.encode(chunk))
        assert reason is None
        errors.append(np.abs(decoded - chunk).mean())
    assert np.mean(errors) < 0.05


def test_token_bytes_match_the_tokenizers_own_decode(codec):
    tokenizer = codec.processor.tokenizer
    for idx, raw in enumerate(codec.token_bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert tokenizer.decode([idx]) == text, idx


def test_codec_records_the_fitted_range(codec):
    assert codec.n_bpe == 256 and codec.n_chars == 180
    assert 0 < codec.max_code < 256 and codec.min_token < 0


def test_strict_check_names_every_malformed_span(codec):
    """`decode_bins` is stricter than lerobot on purpose: it is the grammar mask's validity oracle."""
    good = codec.encode(synthetic_chunks(1, seed=9)[0])
    assert codec.decode_bins(good)[1] is None
    assert codec.decode_bins([])[1] == fast.EMPTY_SPAN
    assert codec.decode_bins(good + [codec.n_bpe])[1] == fast.BEYOND_BPE_VOCAB
    assert codec.decode_bins(good[:-1])[1] == fast.WRONG_LENGTH
    # Crafted tokens: a lone UTF-8 continuation byte, and a valid character beyond the fitted range.
    crafted = dataclasses.replace(codec, token_bytes=codec.token_bytes + (b"\x80", chr(codec.max_code + 1).encode()))
    assert crafted.decode_bins(good + [codec.n_bpe])[1] == fast.INVALID_UTF8
    assert crafted.decode_bins(good[:-1] + [codec.n_bpe + 1])[1] == fast.OUT_OF_RANGE
