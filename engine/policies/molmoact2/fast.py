"""FAST action tokens: what an emission decodes to, and, when it does not, why.

lerobot's `UniversalActionProcessor.decode` concatenates the BPE tokens' bytes, decodes them
lossily as UTF-8, maps each character to a DCT coefficient (`ord + min_token`) and inverts the
DCT; any exception becomes an all-zero chunk with only a logged warning, and there is no range
check. A chunk that decodes to garbage (replacement characters or out-of-range characters
whose count happens to be right) would then be executed silently. The reference decode here
checks every way an emission can fail first, names the reason, and only hands clean spans to
lerobot's decoder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Reasons an emission does not decode (counted as zero-fallback chunks).
NO_EOS = "no_eos"  # no end-of-sequence token within H*16 steps
NO_START = "no_action_start"
NO_END = "no_action_end"
EMPTY_SPAN = "empty_span"
NON_ACTION_TOKEN = "non_action_token_in_span"
BEYOND_BPE_VOCAB = "id_beyond_bpe_vocab"
INVALID_UTF8 = "invalid_utf8"
OUT_OF_RANGE = "code_point_out_of_range"
WRONG_LENGTH = "wrong_length"


@dataclass(frozen=True)
class FastCodec:
    """A FAST tokenizer plus the facts a strict decode and the grammar mask need."""

    processor: object  # lerobot UniversalActionProcessor
    token_bytes: tuple[bytes, ...]  # the bytes each BPE id stands for, index = BPE id
    min_token: int
    max_code: int  # highest character code a chunk can use (max_token - min_token)
    horizon: int
    action_dim: int
    scale: float

    @property
    def n_chars(self) -> int:
        return self.horizon * self.action_dim

    @property
    def n_bpe(self) -> int:
        return len(self.token_bytes)

    def encode(self, normalised_chunk: np.ndarray) -> list[int]:
        """BPE ids of a (horizon, action_dim) normalised chunk (what a trained model emits)."""
        return [int(t) for t in self.processor(np.asarray(normalised_chunk, dtype=np.float64)[None])[0]]

    def decode_bins(self, bins: Sequence[int]) -> tuple[np.ndarray | None, str | None]:
        """(normalised (horizon, action_dim) chunk, None) or (None, reason it does not decode)."""
        if not bins:
            return None, EMPTY_SPAN
        if any(b < 0 or b >= self.n_bpe for b in bins):
            return None, BEYOND_BPE_VOCAB
        raw = b"".join(self.token_bytes[b] for b in bins)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, INVALID_UTF8
        if any(ord(ch) > self.max_code for ch in text):
            return None, OUT_OF_RANGE
        if len(text) != self.n_chars:
            return None, WRONG_LENGTH
        decoded = self.processor.decode([list(bins)], time_horizon=self.horizon, action_dim=self.action_dim)
        return np.asarray(decoded[0], dtype=np.float64), None


def load_fast(directory: Path, *, horizon: int, action_dim: int) -> FastCodec:
    from lerobot.policies.molmoact2.molmoact2_hf_model.action_tokenizer import UniversalActionProcessor

    processor = UniversalActionProcessor.from_pretrained_local(str(directory))
    config_path = Path(directory) / "processor_config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    min_token = int(processor.min_token)
    if config.get("max_token") is not None:
        max_code = int(config["max_token"]) - min_token
    else:  # the release records min_token only; fit guarantees max - min <= vocab_size
        max_code = int(processor.vocab_size)
    return FastCodec(
        processor=processor,
        token_bytes=tuple(bpe_token_bytes(processor.tokenizer)),
        min_token=min_token,
        max_code=max_code,
        horizon=int(horizon),
        action_dim=int(action_dim),
        scale=float(processor.scale),
    )


def bpe_token_bytes(tokenizer) -> list[bytes]:
    """Bytes of each id of a byte-level BPE, as its decoder produces them.

    The byte-level decoder maps each character back to the byte it stands for; a token holding
    any character outside that table (FAST's fit adds raw `chr(0..R)` alphabet tokens) is
    emitted as its own UTF-8 bytes instead.
    """
    char_to_byte = {ch: b for b, ch in enumerate(byte_level_alphabet())}
    vocab = tokenizer.get_vocab()
    out: list[bytes] = [b""] * (max(vocab.values()) + 1)
    for token, idx in vocab.items():
        if all(ch in char_to_byte for ch in token):
            out[idx] = bytes(char_to_byte[ch] for ch in token)
        else:
            out[idx] = token.encode("utf-8")
    return out


def byte_level_alphabet() -> list[str]:
    """The 256 printable stand-ins byte-level BPE uses for bytes, in byte order (GPT-2's table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def extract_action_bins(
    generated: Sequence[int],
    *,
    start_id: int,
    end_id: int,
    eos_id: int,
    action_token_start: int,
    num_action_tokens: int,
) -> tuple[list[int] | None, str | None]:
    """Reference span extraction: the tokens between the first `<action_start>` and the next
    `<action_end>`, in an emission that reached EOS. Junk before the start or after the end is
    ignored (as lerobot does); anything but action tokens inside the span is malformed."""
    generated = list(generated)
    if eos_id not in generated:
        return None, NO_EOS
    generated = generated[: generated.index(eos_id)]
    if start_id not in generated:
        return None, NO_START
    start = generated.index(start_id)
    try:
        end = generated.index(end_id, start + 1)
    except ValueError:
        return None, NO_END
    span = generated[start + 1 : end]
    if not span:
        return None, EMPTY_SPAN
    if any(not (action_token_start <= t < action_token_start + num_action_tokens) for t in span):
        return None, NON_ACTION_TOKEN
    return [t - action_token_start for t in span], None
