"""Wilson's score interval of a success proportion, written once (Newcombe 1998, method 3, no
continuity correction): the console's counts, the report's reads and the power calculations use it.

The same numbers as `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")` (a test holds the
two together to 1e-12), computed here in plain arithmetic because importing scipy.stats takes
seconds, which a console that opens a run must not spend. `wilson_bounds` takes numbers or numpy
arrays alike (the power calculations pass every outcome k = 0..n at once).
"""

from __future__ import annotations

from functools import lru_cache
from statistics import NormalDist


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of a confidence level (1.96 at 95%)."""
    return NormalDist().inv_cdf(0.5 + 0.5 * confidence)


def wilson_bounds(k, n, z: float):
    """(low, high) of the Wilson interval, unclipped: plain arithmetic on numbers or numpy arrays."""
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / denom
    return centre - half, centre + half


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The interval of k successes in n trials (None when there are no trials); exactly 0 at k = 0
    and 1 at k = n."""
    if n <= 0:
        return None
    return _wilson(k, n, confidence)


@lru_cache(maxsize=1024)
def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    lo, hi = wilson_bounds(k, n, z_of(confidence))
    return (0.0 if k == 0 else max(0.0, lo), 1.0 if k == n else min(1.0, hi))
