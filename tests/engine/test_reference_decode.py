"""The reference decode is lerobot's, emission by emission.

Every drawn token stream (legal emissions mutated in every malformed way: no `<action_start>`,
no `<action_end>`, no EOS, non-action tokens inside the span, ids beyond the BPE vocabulary,
tokens whose bytes are invalid UTF-8 or out-of-range characters) is decoded twice: by the
project's `reference_decode` and by lerobot's own `_decode_discrete_action_chunk` on the tiny
checkpoint's model. The chunks must be equal, and the project must name a zero-fallback exactly
where lerobot raises or its FAST decoder falls back to zeros.

Two FAST tokenizers: the tiny checkpoint's (every coefficient one ASCII byte, so no token is
invalid UTF-8 or out of range) and a wide one (scale 100) whose alphabet tokens include lone
UTF-8 bytes and characters past the fitted range, so those classes are really drawn.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.policies.molmoact2 import fast
from engine.policies.molmoact2.fast import FastCodec, load_fast
from engine.policies.molmoact2.tiny import ACTION_DIM, synthetic_chunks
from tests.engine.molmoact2_fixtures import WIDE_HORIZON

pytest_plugins = ("tests.engine.molmoact2_fixtures",)

EXTRA_ACTION_IDS = 16  # action ids past the FAST BPE vocabulary (a release can have more action tokens)


class _FallbackWatch(logging.Handler):
    """Catches lerobot's FAST decoder's own fallback (it logs a warning and returns zeros)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.fallbacks = 0

    def emit(self, record):
        if "Error decoding tokens" in record.getMessage():
            self.fallbacks += 1


class Lerobot:
    """lerobot's decode of one emission with a given FAST tokenizer, on the tiny model.

    The model's action-token range is widened to the tokenizer's BPE vocabulary plus
    EXTRA_ACTION_IDS, so ids beyond the BPE vocabulary reach the FAST decoder, as they can on a
    release checkpoint (the decode uses only the config's ids, never the embeddings).
    """

    def __init__(self, policy, codecs: dict[str, FastCodec]):
        from lerobot.policies.molmoact2.molmoact2_hf_model import action_tokenizer

        self.policy, self.codecs = policy, codecs
        self.model = policy.model
        self.watch = _FallbackWatch()
        self.logger = logging.getLogger(action_tokenizer.__name__)
        self.n_action = max(c.n_bpe for c in codecs.values()) + EXTRA_ACTION_IDS

    def mapping(self) -> dict[int, int]:
        return dict(self.model._action_token_id_to_bin())

    def decode(self, codec: FastCodec, tokens: list[int]):
        """(chunk, None, fell_back) or (None, lerobot's error message, False)."""
        self.watch.fallbacks = 0
        self.logger.addHandler(self.watch)
        previous = self.logger.propagate
        self.logger.propagate = False  # the expected fallbacks would flood the test log
        try:
            with torch.inference_mode():
                out = self.model._decode_discrete_action_chunk(
                    torch.tensor([tokens]),
                    action_tokenizer=codec.processor,
                    action_dim=codec.action_dim,
                    action_horizon=codec.horizon,
                )
            return out[0].numpy(), None, self.watch.fallbacks > 0
        except RuntimeError as exc:
            return None, str(exc), False
        finally:
            self.logger.removeHandler(self.watch)
            self.logger.propagate = previous


@pytest.fixture(scope="module")
def lerobot(reference_policy, wide_fast_dir):
    codecs = {
        "tiny": reference_policy.codec,
        "wide": load_fast(wide_fast_dir, horizon=WIDE_HORIZON, action_dim=ACTION_DIM),
    }
    oracle = Lerobot(reference_policy, codecs)
    config = reference_policy.model.config
    original = config.num_action_tokens
    config.num_action_tokens = oracle.n_action
    try:
        yield oracle
    finally:
        config.num_action_tokens = original


def ours(lerobot: Lerobot, codec: FastCodec, tokens) -> fast.ReferenceDecode:
    ids = lerobot.policy.token_ids
    return fast.reference_decode(
        tokens, codec=codec, start_id=ids.start, end_id=ids.end, eos_id=ids.eos, token_id_to_bin=lerobot.mapping()
    )


def assert_same_as_lerobot(lerobot: Lerobot, codec: FastCodec, tokens) -> fast.ReferenceDecode:
    mine = ours(lerobot, codec, tokens)
    eos = lerobot.policy.token_ids.eos
    if eos not in tokens:
        # lerobot's generation loop raises before any decode: "did not emit end token".
        assert mine.fallback == fast.NO_EOS and not mine.chunk.any()
        return mine
    theirs, raised, fell_back = lerobot.decode(codec, tokens[: tokens.index(eos) + 1])
    if raised is not None:
        assert "no decodable action tokens" in raised
        assert mine.fallback == fast.EMPTY_SPAN and not mine.chunk.any()
        return mine
    np.testing.assert_array_equal(mine.chunk.astype(np.float32), theirs)
    assert fell_back == (mine.fallback is not None), (mine, fell_back)
    if mine.fallback is not None:
        assert mine.fallback == fast.WRONG_LENGTH or mine.fallback.startswith(fast.DECODE_ERROR)
        assert not mine.chunk.any()
    return mine


def legal(policy, codec: FastCodec, chunk) -> list[int]:
    ids = policy.token_ids
    return [ids.start, *(ids.action0 + t for t in codec.encode(chunk)), ids.end, ids.eos]


def _invalid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def special_bpe_ids(codec: FastCodec) -> tuple[list[int], list[list[int]]]:
    """(BPE ids whose bytes are invalid UTF-8, id sequences spelling one character past the fitted
    range: a single token, or a lone lead byte followed by a lone continuation byte)."""
    bad = [i for i, raw in enumerate(codec.token_bytes) if raw and _invalid_utf8(raw)]
    high = [
        [i]
        for i, raw in enumerate(codec.token_bytes)
        if raw and not _invalid_utf8(raw) and max(map(ord, raw.decode())) > codec.max_code
    ]
    single = {raw[0]: i for i, raw in enumerate(codec.token_bytes) if len(raw) == 1}
    lead = max((b for b in single if 0xC2 <= b <= 0xDF), default=None)
    cont = max((b for b in single if 0x80 <= b <= 0xBF), default=None)
    if lead is not None and cont is not None and ord(bytes((lead, cont)).decode()) > codec.max_code:
        high.append([single[lead], single[cont]])
    return bad, high


@st.composite
def streams(draw, lerobot: Lerobot, which: str):
    """A legal emission, then a few mutations drawn from every malformed class."""
    policy, codec = lerobot.policy, lerobot.codecs[which]
    ids = policy.token_ids
    vocab = int(policy.model.config.text_config.vocab_size)
    chunk = synthetic_chunks(1, seed=draw(st.integers(0, 10_000)), horizon=codec.horizon)[0]
    tokens = legal(policy, codec, chunk)
    bad, high = special_bpe_ids(codec)
    classes = [
        st.integers(ids.action0, ids.action0 + codec.n_bpe - 1),  # an action token
        st.integers(ids.action0 + codec.n_bpe, ids.action0 + lerobot.n_action - 1),  # beyond the BPE vocabulary
        st.integers(0, vocab + 63),  # anything the model can emit, and ids past its text vocabulary
        st.sampled_from([ids.start, ids.end, ids.eos]),
    ]
    if bad:
        classes.append(st.sampled_from([ids.action0 + b for b in bad]))
    any_token = st.one_of(classes)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "drop_start", "drop_end", "drop_eos", "swap", "high"]))
        if kind == "high" and high:  # a character past the fitted range, spelled by one or two tokens
            at = draw(st.integers(0, len(tokens)))
            tokens[at:at] = [ids.action0 + b for b in draw(st.sampled_from(high))]
        elif kind == "insert":
            tokens.insert(draw(st.integers(0, len(tokens))), draw(any_token))
        elif kind in ("delete", "replace", "swap") and tokens:
            at = draw(st.integers(0, len(tokens) - 1))
            if kind == "delete":
                del tokens[at]
            elif kind == "replace":
                tokens[at] = draw(any_token)
            else:
                other = draw(st.integers(0, len(tokens) - 1))
                tokens[at], tokens[other] = tokens[other], tokens[at]
        else:
            marker = {"drop_start": ids.start, "drop_end": ids.end, "drop_eos": ids.eos}.get(kind)
            tokens = [t for t in tokens if t != marker]
    return tokens


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(which=st.sampled_from(["tiny", "wide"]), data=st.data())
def test_reference_decode_is_lerobots_on_arbitrary_streams(lerobot, which, data):
    tokens = data.draw(streams(lerobot, which))
    mine = assert_same_as_lerobot(lerobot, lerobot.codecs[which], tokens)
    event(f"{which}: {mine.fallback or 'decoded'}")
    for note in mine.notes:
        event(f"note {note}")


@pytest.mark.parametrize("which", ["tiny", "wide"])
def test_every_malformed_class_decodes_as_lerobot_does(lerobot, which):
    policy, codec = lerobot.policy, lerobot.codecs[which]
    ids = policy.token_ids
    good = legal(policy, codec, synthetic_chunks(1, seed=8, horizon=codec.horizon)[0])
    body = good[1:-2]
    bad, high = special_bpe_ids(codec)
    cases = {
        "legal": (good, None, ()),
        "no_action_start": (good[1:], None, (fast.NO_START,)),
        "no_action_end": (good[:-2] + [ids.eos], None, (fast.NO_END,)),
        "non_action_token_in_span": (good[:3] + [ids.eos - 1] + good[3:], None, (fast.NON_ACTION_TOKEN,)),
        "junk_outside_markers": ([5, 6, *good[:-1], 7, ids.eos], None, ()),
        "no_eos": (good[:-1], fast.NO_EOS, ()),
        "empty_span": ([ids.start, ids.end, ids.eos], fast.EMPTY_SPAN, ()),
        "only_non_action_tokens": ([ids.start, 5, ids.end, ids.eos], fast.EMPTY_SPAN, (fast.NON_ACTION_TOKEN,)),
        "wrong_length": ([ids.start, *body[:-1], ids.end, ids.eos], fast.WRONG_LENGTH, ()),
        "id_beyond_bpe_vocab": (
            [ids.start, *body, ids.action0 + codec.n_bpe + 3, ids.end, ids.eos],
            None,
            (fast.BEYOND_BPE_VOCAB,),
        ),
    }
    if which == "wide":
        assert bad and high  # the wide tokenizer really has both kinds of token
        # A lone UTF-8 byte decodes to U+FFFD: lerobot counts it as a character (garbage or a wrong length).
        cases["invalid_utf8"] = ([ids.start, *body, ids.action0 + bad[0], ids.end, ids.eos], None, None)
        # A valid character past the fitted range: lerobot decodes it silently into a huge coefficient.
        spelled = [ids.action0 + b for b in high[0]]
        cases["code_point_out_of_range"] = ([ids.start, *body[:-1], *spelled, ids.end, ids.eos], None, None)
    seen = {}
    for name, (tokens, fallback, notes) in cases.items():
        mine = assert_same_as_lerobot(lerobot, codec, tokens)
        seen[name] = mine
        if notes is not None:
            assert mine.fallback == fallback, (name, mine.fallback)
            assert set(notes) <= set(mine.notes), (name, mine.notes)
    # lerobot executes these, so they are not zero-fallbacks (the old strict decode counted them).
    for name in ("no_action_start", "no_action_end", "non_action_token_in_span", "id_beyond_bpe_vocab"):
        assert seen[name].fallback is None and seen[name].chunk.any(), name
    if which == "wide":
        assert fast.INVALID_UTF8 in seen["invalid_utf8"].notes
        assert fast.OUT_OF_RANGE in seen["code_point_out_of_range"].notes
