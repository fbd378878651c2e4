"""STEP (Snyder et al. 2025) as its authors' package computes it: the optimal policy for n_max seeds and
alpha, synthesised once and cached on disk (`step_policy`), and its exact operating characteristic
(`step_oc`). Without the `step` extra, `test: step` is refused with `StepUnavailable`."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import pickle
from pathlib import Path

import numpy as np

from prereg.core.errors import UsageError
from prereg.document.comparison_spec import STEP_PACKAGE

# ---------------------------------------------------------------- STEP's policy (the authors' package)


class StepUnavailable(UsageError, RuntimeError):
    """The STEP package is missing or its policy cannot be built."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fontaine" / "step-policies"


def _compressed_policy(n_max: int, alpha: float) -> list:
    """The package's compressed policy (list over t of lists over x of arrays): shipped, cached, or synthesised."""
    try:
        import sequentialized_barnard_tests as sbt
    except ImportError as exc:  # the optional extra `step` (its licence is CC-BY-NC-4.0: non-commercial)
        raise StepUnavailable(f"test: step needs its authors' package {STEP_PACKAGE} ({exc}): install the extra "
                              "with `pip install -e '.[step]'` (licence CC-BY-NC-4.0, non-commercial), or register "
                              "test: savi") from None
    shipped, cached = _policy_files(sbt, n_max, alpha)
    if shipped.is_file():
        with open(shipped, "rb") as fh:
            return pickle.load(fh)  # the package's own file, read as the package reads it
    if cached.is_file():
        try:
            with np.load(cached) as z:
                return _unflatten(z["values"], z["lengths"], n_max)
        except (OSError, ValueError, KeyError):
            pass
    from sequentialized_barnard_tests.scripts.synthesize_general_step_policy import run_step_policy_synthesis

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        # the package's own defaults (StepTest.load_existing_policy): 129 points, lambda 2.1, axis 1.4
        policy, _, _ = run_step_policy_synthesis(n_max, alpha, 129, 2.1, 1.4)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        values, lengths = _flatten(policy)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, values=values, lengths=lengths)
        os.replace(tmp, cached)
    except OSError:
        pass  # no cache: synthesised again next time
    return policy


def _policy_files(sbt, n_max: int, alpha: float) -> tuple[Path, Path]:
    """(the package's shipped policy file, our cache file) for n_max seeds at one-sided alpha."""
    return ((Path(sbt.__file__).parent / "policies"
             / f"n_max_{n_max}_alpha_{alpha}_shape_parameter_0.0_pnorm_False" / "policy_compressed.pkl"),
            _cache_dir() / f"n_max_{n_max}_alpha_{alpha!r}.npz")


def policy_at_hand(n_max: int, alpha_one_sided: float) -> bool:
    """Whether STEP's policy loads without being synthesised (the package ships it, or it is cached)."""
    try:
        import sequentialized_barnard_tests as sbt
    except ImportError:
        return False
    return any(f.is_file() for f in _policy_files(sbt, n_max, alpha_one_sided))


def _flatten(policy) -> tuple[np.ndarray, np.ndarray]:
    arrays = [np.asarray(a, dtype=float) for per_t in policy for a in per_t]
    return np.concatenate(arrays), np.array([len(a) for a in arrays])


def _unflatten(values, lengths, n_max: int) -> list:
    out, pos, i = [], 0, 0
    for t in range(n_max + 1):
        per_t = []
        for _ in range(t + 1):
            per_t.append(values[pos:pos + lengths[i]])
            pos += lengths[i]
            i += 1
        out.append(per_t)
    return out


class StepPolicy:
    """STEP's rejection policy for one direction (B better), at one-sided level `alpha`, read as the
    package's `StepTest.step` reads it: at episode t with counts (x, y), y > x, the array for
    min(x, y) = x gives c = its first entry; y <= c continues, y > c + L rejects (L = its length - 1),
    otherwise it rejects with probability array[y - c]. The mirror (x > y) reads the same array at y."""

    def __init__(self, n_max: int, alpha: float, compressed=None):
        policy = compressed if compressed is not None else _compressed_policy(n_max, alpha)
        self.n_max, self.alpha = n_max, alpha
        self.crit: list[np.ndarray] = []
        self.length: list[np.ndarray] = []
        self.probs: list[np.ndarray] = []
        for t in range(n_max + 1):
            per_t = policy[t]
            width = max(len(a) for a in per_t)
            crit = np.array([int(a[0]) for a in per_t])
            ln = np.array([len(a) - 1 for a in per_t])
            pr = np.zeros((t + 1, width))
            for s, a in enumerate(per_t):
                pr[s, 1:len(a)] = a[1:]
            self.crit.append(crit)
            self.length.append(ln)
            self.probs.append(pr)

    def reject(self, t: int, small: np.ndarray, big: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Whether state (small, big) at episode t (1-based) rejects, given uniforms u (same shape)."""
        c = self.crit[t][small]
        k = big - c
        ln = self.length[t][small]
        inside = (k >= 1) & (k <= ln)
        p = np.zeros(small.shape)
        if inside.any():
            p[inside] = self.probs[t][small[inside], k[inside]]
        return (k > ln) | (inside & (u <= p))

    def dense(self, t: int, randomized: bool = False) -> np.ndarray:
        """P(reject in the B-better direction) at episode t for every (x, y), x = A's successes, y = B's
        (randomized: the package's test; else only the states it rejects for sure)."""
        x, y = np.meshgrid(np.arange(t + 1), np.arange(t + 1), indexing="ij")
        small, big = np.minimum(x, y), np.maximum(x, y)
        c = self.crit[t][small]
        k = big - c
        ln = self.length[t][small]
        inside = (k >= 1) & (k <= ln)
        p = np.where(inside, self.probs[t][small, np.clip(k, 0, self.probs[t].shape[1] - 1)], 0.0)
        if not randomized:
            p = np.zeros_like(p)
        return np.where(y > x, np.where(k > ln, 1.0, p), 0.0)


def step_oc(n_max: int, alpha: float, pa: float, pb: float, n: int | None = None,
            randomized: bool = False) -> tuple[float, float, float]:
    """STEP's exact (P(B better), P(B worse), expected seeds) for independent arms with rates pa, pb,
    truncated at n seeds (default n_max): dynamic programming over (seed, A's successes, B's successes)."""
    pol = step_policy(n_max, alpha / 2)
    n = n_max if n is None else min(n, n_max)
    alive = np.zeros((1, 1))
    alive[0, 0] = 1.0
    better = worse = expected = 0.0
    for t in range(1, n + 1):
        expected += alive.sum()
        nxt = np.zeros((t + 1, t + 1))
        nxt[:-1, :-1] += alive * (1 - pa) * (1 - pb)
        nxt[1:, :-1] += alive * pa * (1 - pb)
        nxt[:-1, 1:] += alive * (1 - pa) * pb
        nxt[1:, 1:] += alive * pa * pb
        r = pol.dense(t, randomized)
        better += float((nxt * r).sum())
        worse += float((nxt * r.T).sum())
        alive = nxt * (1 - r - r.T)
    return better, worse, expected


@functools.lru_cache(maxsize=8)
def step_policy(n_max: int, alpha_one_sided: float) -> StepPolicy:
    """The policy for n_max seeds at one-sided level alpha (memoised; synthesised once and cached on disk)."""
    return StepPolicy(n_max, alpha_one_sided)
