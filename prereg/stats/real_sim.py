"""Synthetic paired sim/real data for proving the real read's intervals (tests/prereg/test_real_math.py)
and drawing its figures (scripts/real_figures.py), in the spirit of SureSim's appendix: each seed has a
latent difficulty z ~ N(0, 1); the rig succeeds with probability p = Phi(a + b z) and the sim with
q = Phi(a_s + b (rho z + sqrt(1 - rho^2) e)), e ~ N(0, 1) independent; a seed's prediction f is the share
of K sim rollouts that succeed, its real outcome Y ~ Bernoulli(p). The real success rate, the target,
is E p = Phi(a / sqrt(1 + b^2)) exactly. `rho` sets how much the sim knows about the rig's seeds
(rho = 0: nothing), `a_s - a` how optimistic it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class World:
    a: float = 0.0  # the rig's intercept: Phi(a / sqrt(1 + b^2)) is the real success rate
    b: float = 1.5  # how much seeds differ
    a_sim: float = 0.0  # the sim's intercept (a_sim > a: an optimistic sim)
    rho: float = 0.8  # how much of the rig's difficulty the sim sees
    k: int = 20  # sim rollouts per seed

    @property
    def theta(self) -> float:
        return float(norm.cdf(self.a / math.sqrt(1 + self.b ** 2)))

    @property
    def sim_mean(self) -> float:
        return float(norm.cdf(self.a_sim / math.sqrt(1 + self.b ** 2)))

    def draw(self, rng: np.random.Generator, n_seeds: int) -> tuple[np.ndarray, np.ndarray]:
        """(f, Y) for `n_seeds` seeds: every seed's prediction and the outcome it would have on the rig."""
        z = rng.standard_normal(n_seeds)
        e = rng.standard_normal(n_seeds)
        p = norm.cdf(self.a + self.b * z)
        q = norm.cdf(self.a_sim + self.b * (self.rho * z + math.sqrt(1 - self.rho ** 2) * e))
        f = rng.binomial(self.k, q) / self.k
        y = (rng.uniform(size=n_seeds) < p).astype(float)
        return f, y


def paired_sample(world: World, rng: np.random.Generator, big_n: int, n: int):
    """One evaluation: N sim seeds with predictions, n of them drawn uniformly for real trials.
    Returns (f_all in reading order, mask of the selected, Y of the selected in that order)."""
    f, y = world.draw(rng, big_n)
    mask = np.zeros(big_n, dtype=bool)
    mask[rng.choice(big_n, n, replace=False)] = True
    return f, mask, y[mask]
