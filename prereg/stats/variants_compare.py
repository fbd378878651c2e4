"""A comparison run over a crossed design (issue 48): the pooled paired read, a descriptive read beside
the registered comparison (which reads the plan's read variant, never this).

Per seed both arms ran on every pooled variant: the seed's difference is (share of pooled variants B
solved) - (share A solved), B - A as the comparison run's own pairing reads it. The read is their mean,
the difference of the two arms' pooled rates over the seeds both arms have a row for on every pooled
variant, with a 95% interval that respects both pairings, the variants of a seed (the same initial
scene) and the two arms of a seed (the same seed):

- each arm's pooled rate has its design-effect Wilson interval (prereg.stats.variants.pooled_interval);
- the difference's interval combines them by MOVER (Newcombe's method 10 for paired proportions, Zou &
  Donner's square-and-add), the two arms' correlation being that of the seeds' shares:
  L = d - sqrt((pB - lB)^2 - 2 r (pB - lB)(uA - pA) + (uA - pA)^2),
  U = d + sqrt((uB - pB)^2 - 2 r (uB - pB)(pA - lA) + (pA - lA)^2).

Its coverage over simulated crossed designs whose variants and arms are correlated through a shared
seed difficulty (`paired_crossed_outcomes`) is tested in tests/prereg/test_variants_compare.py and
tabled in docs/prereg.md by scripts/variants_compare_coverage.py, beside a paired t interval's on the
same designs (which collapses to a point when every seed's difference is the same: rare successes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prereg.core.words import plural
from prereg.stats.variants import VariantsRead, pooled_interval

MOVER = "mover"  # the interval the report states
PAIRED_T = "paired-t"  # tabled beside it, never stated
METHODS = (MOVER, PAIRED_T)


@dataclass(frozen=True)
class PooledDifference:
    """The pooled paired read of a comparison run's two arms: B - A per seed, over the pooled variants."""

    arm_a: str
    arm_b: str
    pooled: tuple[str, ...]  # the variants averaged (camera variants apart unless the plan pools them)
    seeds: int  # seeds both arms have a row for on every pooled variant
    rate_a: float | None = None
    rate_b: float | None = None
    mean: float | None = None  # rate_b - rate_a: the mean of the seeds' differences
    interval: tuple[float, float] | None = None  # 95%, MOVER over the design-effect Wilson intervals

    def sentence(self) -> str:
        """'pooled paired read (descriptive): steady - clumsy +0.25 (95% CI 0.08 to 0.41) over 3 variants, 20 seeds'."""
        head = f"pooled paired read (descriptive, not the decision): {self.arm_b} - {self.arm_a}"
        if self.mean is None or self.interval is None:
            return f"{head}: no seed has rows of both arms on every pooled variant yet"
        lo, hi = self.interval
        return (f"{head} {self.mean:+.2f} (95% CI {lo:+.2f} to {hi:+.2f}; {self.arm_b} {self.rate_b:.2f}, "
                f"{self.arm_a} {self.rate_a:.2f}) over {plural(len(self.pooled), 'variant')}, "
                f"{plural(self.seeds, 'seed')}")

    @classmethod
    def from_dict(cls, d: dict) -> "PooledDifference":
        ci = d.get("interval")

        def num(key):
            return float(d[key]) if d.get(key) is not None else None

        return cls(str(d["arm_a"]), str(d["arm_b"]), tuple(map(str, d.get("pooled") or ())), int(d.get("seeds") or 0),
                   num("rate_a"), num("rate_b"), num("mean"),
                   (float(ci[0]), float(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    """The seeds' shares' correlation between the arms; 0 when either has no spread (nothing to borrow)."""
    if len(a) < 2 or a.std() == 0.0 or b.std() == 0.0:
        return 0.0
    return float(np.clip(np.corrcoef(a, b)[0, 1], -1.0, 1.0))


def difference_interval(xa, xb, confidence: float = 0.95, method: str = MOVER
                        ) -> tuple[float, tuple[float, float]] | None:
    """(mean B - A, its interval) for two n seeds x m variants 0/1 matrices of the same seeds and variants
    (row i: seed i). `method`: MOVER (the report's) or PAIRED_T (a t interval on the seeds' differences)."""
    a, b = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    if a.ndim != 2 or a.shape != b.shape or a.shape[0] == 0 or a.shape[1] == 0:
        return None
    if method not in METHODS:
        raise ValueError(f"difference_interval: method {method!r} is not one of {', '.join(METHODS)}")
    ya, yb = a.mean(axis=1), b.mean(axis=1)
    d = float(yb.mean() - ya.mean())
    if method == PAIRED_T:
        from scipy.stats import t

        n = len(ya)
        half = float(t.ppf(0.5 + confidence / 2, n - 1) * (yb - ya).std(ddof=1) / math.sqrt(n)) if n > 1 else 2.0
        return d, (max(-1.0, d - half), min(1.0, d + half))
    pa, (la, ua) = pooled_interval(a, confidence)
    pb, (lb, ub) = pooled_interval(b, confidence)
    r = _corr(ya, yb)
    lo = d - math.sqrt(max(0.0, (pb - lb) ** 2 - 2 * r * (pb - lb) * (ua - pa) + (ua - pa) ** 2))
    hi = d + math.sqrt(max(0.0, (ub - pb) ** 2 - 2 * r * (ub - pb) * (pa - la) + (pa - la) ** 2))
    return d, (max(-1.0, lo), min(1.0, hi))


def _matrix(read: VariantsRead, seeds: list[int]) -> np.ndarray:
    """The seeds' rows of successes over the pooled variants, as many ones as the seed's count: every read
    of the matrix (its mean, its rows' means) is a read of those counts."""
    m = len(read.pooled)
    return np.array([[1.0] * read.per_seed[s] + [0.0] * (m - read.per_seed[s]) for s in seeds]).reshape(len(seeds), m)


def pooled_difference(arm_a: str, read_a: VariantsRead, arm_b: str, read_b: VariantsRead) -> PooledDifference:
    """The pooled paired read of two arms' variant reads (prereg.stats.variants.read_variants of the same
    run, the same plan): the seeds both have a row for on every pooled variant, B - A."""
    if read_a.pooled != read_b.pooled:
        raise ValueError(f"pooled_difference: {arm_a} pools {', '.join(read_a.pooled)} but {arm_b} pools "
                         f"{', '.join(read_b.pooled)}: the two arms of one run read the same variants")
    seeds = [s for s in read_a.per_seed if s in read_b.per_seed]
    got = difference_interval(_matrix(read_a, seeds), _matrix(read_b, seeds)) if seeds and read_a.pooled else None
    if got is None:
        return PooledDifference(arm_a, arm_b, read_a.pooled, 0)
    m = len(read_a.pooled)
    rate_a = sum(read_a.per_seed[s] for s in seeds) / (m * len(seeds))
    rate_b = sum(read_b.per_seed[s] for s in seeds) / (m * len(seeds))
    return PooledDifference(arm_a, arm_b, read_a.pooled, len(seeds), rate_a, rate_b, got[0], got[1])


# ---------------------------------------------------------------- its coverage, simulated


def paired_crossed_outcomes(rng: np.random.Generator, rates_a, rates_b, n: int, rho: float, rho_arms: float,
                            sims: int) -> tuple[np.ndarray, np.ndarray]:
    """`sims` crossed comparison runs (two sims x n x m 0/1 arrays, A's and B's): variant v of arm A succeeds
    with probability rates_a[v] (B: rates_b[v]); one seed's variants share the seed's difficulty (a Gaussian
    copula, correlation `rho` within an arm, as prereg.stats.variants.crossed_outcomes) and the two arms share
    a part `rho_arms` of it (0: the arms' difficulties independent; 1: the seed is as hard for both)."""
    from statistics import NormalDist

    def cuts(rates):
        return np.array([NormalDist().inv_cdf(min(max(p, 1e-12), 1 - 1e-12)) for p in rates])

    m = len(rates_a)
    if len(rates_b) != m:
        raise ValueError(f"paired_crossed_outcomes: {m} rates for A, {len(rates_b)} for B (one per variant each)")
    shared = rng.standard_normal((sims, n, 1))
    own = rng.standard_normal((2, sims, n, 1))
    noise = rng.standard_normal((2, sims, n, m))
    seed = math.sqrt(rho_arms) * shared + math.sqrt(1 - rho_arms) * own
    latent = math.sqrt(rho) * seed + math.sqrt(1 - rho) * noise
    return (latent[0] < cuts(rates_a)).astype(float), (latent[1] < cuts(rates_b)).astype(float)


def difference_coverage(rates_a, rates_b, n: int, rho: float, rho_arms: float, sims: int = 2000, seed: int = 0,
                        method: str = MOVER) -> float:
    """The share of simulated crossed comparison runs whose interval holds the true difference of the
    pooled rates (mean(rates_b) - mean(rates_a)): what docs/prereg.md tables."""
    rng = np.random.default_rng(seed)
    truth = float(np.mean(rates_b) - np.mean(rates_a))
    xa, xb = paired_crossed_outcomes(rng, rates_a, rates_b, n, rho, rho_arms, sims)
    hits = 0
    for a, b in zip(xa, xb):
        lo, hi = difference_interval(a, b, method=method)[1]
        hits += lo - 1e-12 <= truth <= hi + 1e-12
    return hits / sims


__all__ = ["PooledDifference", "difference_interval", "pooled_difference", "paired_crossed_outcomes",
           "difference_coverage", "MOVER", "PAIRED_T", "METHODS"]
