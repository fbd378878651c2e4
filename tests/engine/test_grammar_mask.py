"""The grammar mask: for any logits the masked stream decodes; on a legal stream it is inert.

Two FAST tokenizers: the tiny model's (narrow coefficient range, every character one byte) and
a wide one (scale 100: characters up to ~1100, two UTF-8 bytes, token boundaries inside
characters, and alphabet tokens whose bytes are lone UTF-8 lead or continuation bytes).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.policies.molmoact2.fast import load_fast
from engine.policies.molmoact2.grammar import GrammarMask
from engine.policies.molmoact2.tiny import ACTION_DIM, CHUNK_HORIZON, synthetic_chunks
from tests.engine.molmoact2_fixtures import WIDE_HORIZON, wide_training_chunks

pytest_plugins = ("tests.engine.molmoact2_fixtures",)


@pytest.fixture(scope="module")
def narrow(tiny_dir):
    codec = load_fast(tiny_dir / "action_tokenizer", horizon=CHUNK_HORIZON, action_dim=ACTION_DIM)
    return codec, GrammarMask(codec)


@pytest.fixture(scope="module")
def wide(wide_fast_dir):
    codec = load_fast(wide_fast_dir, horizon=WIDE_HORIZON, action_dim=ACTION_DIM)
    assert codec.max_code > 255  # really wide: multi-byte characters
    return codec, GrammarMask(codec)


def training_chunks():
    return wide_training_chunks()


def masked_greedy(mask: GrammarMask, logits_for_step) -> tuple[list[int], int]:
    """The policy's scaffold body at the pure level: masked argmax until the budget is met."""
    state, tokens, violations = mask.start(), [], 0
    for step in range(16 * mask.n_chars):
        if mask.complete(state):
            return tokens, violations
        logits = logits_for_step(step)
        allowed = mask.allowed_tokens(state)
        assert allowed.any(), f"dead end at {state}"
        token = int(np.argmax(np.where(allowed, logits, -np.inf)))
        violations += int(token != int(np.argmax(logits)))
        state = mask.advance(state, token)
        tokens.append(token)
    raise AssertionError("budget never met")


LOGIT_STYLES = ("normal", "heavy", "spiky", "flat", "adversarial")


def random_logits(rng: np.random.Generator, style: str, mask: GrammarMask, n: int) -> np.ndarray:
    if style == "normal":
        return rng.normal(size=n)
    if style == "heavy":
        return rng.standard_cauchy(size=n)
    if style == "spiky":
        logits = np.full(n, -5.0)
        logits[rng.integers(0, n, size=3)] = rng.uniform(5, 50, size=3)
        return logits
    if style == "flat":
        return np.zeros(n)
    # adversarial: the highest logits on tokens that are invalid from the root (lone UTF-8 bytes)
    logits = rng.normal(size=n)
    logits[~mask.valid[0]] += 100.0
    return logits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), style=st.sampled_from(LOGIT_STYLES), which=st.sampled_from(["narrow", "wide"]))
def test_masked_stream_decodes_for_arbitrary_logits(narrow, wide, seed, style, which):
    codec, mask = narrow if which == "narrow" else wide
    rng = np.random.default_rng(seed)
    tokens, _ = masked_greedy(mask, lambda step: random_logits(rng, style, mask, codec.n_bpe))
    chunk, reason = codec.decode_bins(tokens)
    assert reason is None and chunk.shape == (codec.horizon, ACTION_DIM)
    text = codec.processor.bpe_tokenizer.decode(tokens)  # lerobot's own lossy path agrees
    assert len(text) == codec.n_chars and max(map(ord, text)) <= codec.max_code and "\ufffd" not in text


@pytest.mark.parametrize("which", ["narrow", "wide"])
def test_mask_changes_nothing_on_a_legal_greedy_stream(narrow, wide, which):
    codec, mask = narrow if which == "narrow" else wide
    chunks = synthetic_chunks(40, seed=5, horizon=codec.horizon) if which == "narrow" else training_chunks()[:40]
    legal = [t for t in (codec.encode(c) for c in chunks) if codec.decode_bins(t)[1] is None]
    assert len(legal) >= 30
    for tokens in legal:
        forced = [np.eye(codec.n_bpe)[t] * 10.0 for t in tokens]
        chosen, violations = masked_greedy(mask, lambda step, f=forced: f[step])
        assert chosen == tokens and violations == 0


def test_wide_tokenizer_needs_the_utf8_state(wide):
    """Tokens ending mid-character exist, and the naive byte-count mask would admit lone bytes."""
    codec, mask = wide
    assert mask.n_nodes > 1
    assert not mask.valid[0].all()  # some alphabet tokens are lone UTF-8 bytes: never valid from the root
    assert (mask.valid & (mask.next != 0)).any()  # some tokens leave a character pending


def test_table_is_small_and_quick(narrow):
    codec, mask = narrow
    assert mask.allowed.shape == (codec.n_chars + 1, mask.n_nodes, codec.n_bpe)
    assert mask.allowed.nbytes < 16 * 2**20
    assert mask.satisfiable
