"""The grammar mask: action tokens allowed so that every emission decodes to H*D valid codes.

Counting characters is not enough: a byte-level BPE token can end in the middle of a
multi-byte UTF-8 character, a byte sequence can be invalid UTF-8 (which decodes to U+FFFD and
silently shifts or corrupts the chunk), and a valid character can lie outside the coefficient
range the tokenizer was fitted on. So the decode state is (characters completed `c`, node `s`
in a trie of partial UTF-8 encodings of the allowed code points 0..R). For each (node, token)
we precompute whether the token's bytes keep the stream valid, how many characters it
completes, and the node it leaves; a backward pass marks the states from which exactly
(H*D characters, no partial character) is still reachable. A token is allowed at (c, s) when
it is valid there and its successor state is reachable. The table is (H*D+1, S, V) booleans.

Decoding then runs a scaffold: `<action_start>` first, masked action tokens until the budget
is met, then `<action_end>` and EOS, so every emission decodes by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.policies.molmoact2.fast import FastCodec


class GrammarMask:
    """Precomputed transition and allowed-token tables for one FAST tokenizer and budget."""

    def __init__(self, codec: FastCodec):
        self.n_chars = codec.n_chars
        self.n_tokens = codec.n_bpe
        nodes, complete = _utf8_trie(codec.max_code)
        self.n_nodes = len(nodes)
        index = {prefix: i for i, prefix in enumerate(nodes)}
        valid = np.zeros((self.n_nodes, self.n_tokens), dtype=bool)
        delta = np.zeros((self.n_nodes, self.n_tokens), dtype=np.int64)
        nxt = np.zeros((self.n_nodes, self.n_tokens), dtype=np.int64)
        for s, prefix in enumerate(nodes):
            for t, token in enumerate(codec.token_bytes):
                step = _run_bytes(prefix, token, complete, index)
                if step is not None:
                    valid[s, t] = True
                    delta[s, t], nxt[s, t] = step
        self.valid, self.delta, self.next = valid, delta, nxt
        self.reachable = self._backward(nodes)
        self.allowed = self._allowed_table()

    def _backward(self, nodes: list[bytes]) -> np.ndarray:
        """reachable[c, s]: the exact budget can still be met from (c, s)."""
        n = self.n_chars
        reach = np.zeros((n + 1, self.n_nodes), dtype=bool)
        reach[n, 0] = True
        deepest_first = sorted(range(self.n_nodes), key=lambda s: -len(nodes[s]))  # delta 0 goes deeper
        for c in range(n, -1, -1):
            for s in deepest_first:
                if c == n and s == 0:
                    continue
                target = c + self.delta[s]
                ok = self.valid[s] & (target <= n)
                if ok.any():
                    reach[c, s] = bool(reach[target[ok], self.next[s][ok]].any())
        return reach

    def _allowed_table(self) -> np.ndarray:
        n = self.n_chars
        allowed = np.zeros((n + 1, self.n_nodes, self.n_tokens), dtype=bool)
        for c in range(n + 1):
            target = c + self.delta
            ok = self.valid & (target <= n)
            allowed[c] = ok & self.reachable[np.minimum(target, n), self.next]
        return allowed

    @property
    def satisfiable(self) -> bool:
        return bool(self.reachable[0, 0])

    def start(self) -> "GrammarState":
        return GrammarState(0, 0)

    def allowed_tokens(self, state: "GrammarState") -> np.ndarray:
        """Boolean mask over BPE ids allowed in `state` (all False once the budget is met)."""
        return self.allowed[state.chars, state.node]

    def advance(self, state: "GrammarState", token: int) -> "GrammarState":
        if not self.allowed[state.chars, state.node, token]:
            raise ValueError(f"token {token} is not allowed in {state}")
        return GrammarState(
            int(state.chars + self.delta[state.node, token]), int(self.next[state.node, token])
        )

    def complete(self, state: "GrammarState") -> bool:
        return state.chars == self.n_chars and state.node == 0


@dataclass(frozen=True)
class GrammarState:
    chars: int  # characters (DCT coefficients) completed
    node: int  # trie node of the pending partial UTF-8 character; 0 = none pending


def _utf8_trie(max_code: int) -> tuple[list[bytes], set[bytes]]:
    """Nodes = proper prefixes of the UTF-8 encodings of code points 0..max_code (root first)."""
    complete: set[bytes] = set()
    prefixes: set[bytes] = set()
    for code in range(max_code + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # surrogates have no UTF-8 encoding
        enc = chr(code).encode("utf-8")
        complete.add(enc)
        prefixes.update(enc[:k] for k in range(1, len(enc)))
    return [b"", *sorted(prefixes, key=lambda p: (len(p), p))], complete


def _run_bytes(prefix: bytes, token: bytes, complete: set[bytes], index: dict[bytes, int]):
    """(characters completed, next node) after feeding `token` from `prefix`, or None if invalid."""
    if not token:
        return None
    pending, done = prefix, 0
    for byte in token:
        pending += bytes((byte,))
        if pending in complete:
            done += 1
            pending = b""
        elif pending not in index:
            return None
    return done, index[pending]
