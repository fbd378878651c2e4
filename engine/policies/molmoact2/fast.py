"""FAST action tokens: what an emission decodes to under lerobot's semantics, and why not.

The reference decode is lerobot's, emission by emission (`reference_decode`): its loop stops at
the first end-of-sequence token; its `_extract_discrete_token_bins` takes the tokens after the
first `<action_start>` (or from the beginning when there is none) up to the next `<action_end>`
(or the end of the emission when there is none) and silently drops every id that is not an
action token; its FAST `UniversalActionProcessor.decode` concatenates the BPE tokens' bytes,
decodes them lossily as UTF-8 (U+FFFD for an invalid sequence; the tokenizers library drops
ids beyond the BPE vocabulary), maps each character to a DCT coefficient (`ord + min_token`,
no range check) and inverts the DCT, returning an all-zero chunk when the character count is
not H*D. So a zero-fallback is recorded exactly where lerobot gives one:

- `no_eos`: no end-of-sequence token within H*16 steps (lerobot raises RuntimeError);
- `empty_span`: no action token left in the span (lerobot raises RuntimeError);
- `wrong_length` / `decode_error:...`: the FAST decode failed and lerobot's decoder returned
  its own zero chunk.

Everything else lerobot executes, garbage included; such emissions are not fallbacks but carry
`notes` (no start or end marker, non-action tokens dropped, ids beyond the BPE vocabulary,
invalid UTF-8, an out-of-range coefficient), so a trail can show what was executed and why.
`FastCodec.decode_bins` keeps the strict check (every way a span can be malformed) that the
grammar mask's tests use as their validity oracle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Zero-fallback reasons: where lerobot raises or its FAST decode returns its own zero chunk.
NO_EOS = "no_eos"  # no end-of-sequence token within H*16 steps (lerobot: RuntimeError)
EMPTY_SPAN = "empty_span"  # no action token between the markers (lerobot: RuntimeError)
WRONG_LENGTH = "wrong_length"  # the span decodes to a character count other than H*D (lerobot: zeros)
DECODE_ERROR = "decode_error"  # the BPE decode itself raised (lerobot: zeros); suffixed with the type
FALLBACK_REASONS = (NO_EOS, EMPTY_SPAN, WRONG_LENGTH, DECODE_ERROR)

# Notes on emissions lerobot decodes anyway (and, for the strict `decode_bins`, failure reasons).
NO_START = "no_action_start"
NO_END = "no_action_end"
NON_ACTION_TOKEN = "non_action_token_in_span"
BEYOND_BPE_VOCAB = "id_beyond_bpe_vocab"
INVALID_UTF8 = "invalid_utf8"
OUT_OF_RANGE = "code_point_out_of_range"


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


@dataclass(frozen=True)
class ReferenceDecode:
    """What lerobot's decode makes of one emission."""

    chunk: np.ndarray  # (horizon, action_dim) normalised; zeros on a fallback (what lerobot executes)
    fallback: str | None  # None, or why lerobot raised / fell back to zeros
    bins: list[int] = field(default_factory=list)  # the BPE ids lerobot's span extraction kept
    notes: tuple[str, ...] = ()  # anomalies lerobot decoded through (see the module docstring)


def reference_decode(
    generated: Sequence[int],
    *,
    codec: FastCodec,
    start_id: int,
    end_id: int,
    eos_id: int,
    token_id_to_bin: Mapping[int, int],
) -> ReferenceDecode:
    """lerobot's discrete decode of a greedy emission, with its fallbacks named.

    `generated` is the emission as the decode loop produced it (it stops at the first EOS; a
    stream without one hit the step cap). Span extraction is lerobot's own
    `_extract_discrete_token_bins`, the chunk lerobot's own `UniversalActionProcessor.decode`.
    """
    from lerobot.policies.molmoact2.modeling_molmoact2 import _extract_discrete_token_bins

    zeros = np.zeros((codec.horizon, codec.action_dim))
    generated = [int(t) for t in generated]
    if eos_id not in generated:
        return ReferenceDecode(zeros, NO_EOS)
    generated = generated[: generated.index(eos_id) + 1]  # lerobot's loop stops at the first EOS
    bins = _extract_discrete_token_bins(generated, int(start_id), int(end_id), dict(token_id_to_bin))
    notes = _span_notes(generated, start_id, end_id, token_id_to_bin, codec, bins)
    if not bins:
        return ReferenceDecode(zeros, EMPTY_SPAN, [], notes)
    try:
        text = codec.processor.bpe_tokenizer.decode(bins)
    except Exception as exc:  # noqa: BLE001 - lerobot's decoder catches everything and returns zeros
        return ReferenceDecode(zeros, f"{DECODE_ERROR}:{type(exc).__name__}", bins, notes)
    if "\ufffd" in text:
        notes += (INVALID_UTF8,)
    if any(ord(ch) > codec.max_code for ch in text if ch != "\ufffd"):
        notes += (OUT_OF_RANGE,)
    if len(text) != codec.n_chars:
        return ReferenceDecode(zeros, WRONG_LENGTH, bins, notes)
    decoded = codec.processor.decode([bins], time_horizon=codec.horizon, action_dim=codec.action_dim)
    return ReferenceDecode(np.asarray(decoded[0], dtype=np.float64), None, bins, notes)


def _span_notes(generated, start_id, end_id, token_id_to_bin, codec: FastCodec, bins) -> tuple[str, ...]:
    notes = []
    if start_id not in generated:
        notes.append(NO_START)
        span = generated
    else:
        first = generated.index(start_id)
        try:
            span = generated[first + 1 : generated.index(end_id, first + 1)]
        except ValueError:
            notes.append(NO_END)
            span = generated[first + 1 :]
    eos_dropped = span[-1:] == generated[-1:] and generated[-1] not in token_id_to_bin
    kept = sum(1 for t in span if t in token_id_to_bin)
    if len(span) - kept - int(eos_dropped) > 0:
        notes.append(NON_ACTION_TOKEN)
    if any(b >= codec.n_bpe for b in bins):
        notes.append(BEYOND_BPE_VOCAB)
    return tuple(notes)
