"""The numbers of a real read, pure functions on arrays: real-only intervals (Wilson, Clopper-Pearson, a
betting interval), the prediction-powered intervals on the real mean (UniformPPI with a betting
interval, its two-stage variant, its normal-approximation twin), the rectifier interval on Y - f, and
across arms or checkpoints SimplerEnv's Pearson r and MMRV. prereg/stats/real_read.py assembles them
into the read of a run; docs/real.md says what each means, and tests/prereg/test_real_math.py holds
each to its coverage by simulation.

The betting interval is Waudby-Smith & Ramdas's (2023, JRSS-B) hedged capital process with their
predictable plug-in bets: for each candidate mean m, K_t(m) = theta * prod(1 + l+_i (x_i - m)) +
(1 - theta) * prod(1 - l-_i (x_i - m)) over x rescaled to [0, 1], a nonnegative martingale when m is the
mean; m is rejected once K_t(m) >= 1/alpha at any t (Ville's inequality: the set kept is a confidence
sequence, so it is also valid read at the last trial, or any earlier one). The kept set is found on a
grid, each edge then bisected to 1e-9 of the range.

UniformPPI (Zrnic & Candes 2024; SureSim, Badithela et al. 2025, their Alg. 2): of N sim seeds with
predictions f_i, n chosen uniformly get a real outcome Y_i (xi_i = 1), pi = n / N; Z_i = f_i + xi_i
(Y_i - f_i) / pi has mean theta, the real mean, and lies in [1 - 1/pi, 1/pi]: the betting interval on the
Z's (read in an order drawn independently of the selection) bounds theta. The two-stage variant
bounds the sim mean E f (over the N seeds) and the rectifier E(Y - f) (over the n pairs) at alpha/2
each and adds them. The normal twin is the classical PPI interval (Angelopoulos et al. 2023, lam = 1):
mean(f over N) + mean(Y - f over n) +/- z * sqrt(sd(f)^2 / N + sd(Y - f)^2 / n), sd with ddof 0.
"""

from __future__ import annotations

import math

import numpy as np

from prereg.core.wilson import wilson_interval, z_of

THETA = 0.5  # the hedge: half the capital bets the mean is above m, half below
BET_CAP = 0.75  # c (WSR offer 1/2 or 3/4): a bet never risks more than 3/4 of the capital; 3/4 narrows UniformPPI (docs/real.md)
GRID = 401


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float] | None:
    """The exact (Clopper-Pearson) interval of k successes in n at 1 - alpha; None when n = 0."""
    if n <= 0:
        return None
    from scipy.stats import beta

    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def wilson(k: int, n: int, alpha: float) -> tuple[float, float] | None:
    return wilson_interval(k, n, 1 - alpha)


def _bets(z: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bets l_i (before the cap at c/m), tuned for an interval read at n = len(z):
    sqrt(2 log(2/alpha) / (n sigma2_{i-1})), sigma2 the running variance (prior 1/4 as one observation)."""
    t = np.arange(1, len(z) + 1, dtype=float)
    mu = (0.5 + np.cumsum(z)) / (t + 1)
    sig2 = (0.25 + np.cumsum((z - mu) ** 2)) / (t + 1)
    prev = np.concatenate([[0.25], sig2[:-1]])
    return np.sqrt(2 * math.log(2 / alpha) / (len(z) * prev))


def _log_capital_max(z: np.ndarray, lam: np.ndarray, m: np.ndarray) -> np.ndarray:
    """max over t of log K_t(m), for each m of `m` (z in [0, 1])."""
    m = m[:, None]
    with np.errstate(divide="ignore"):
        lp = np.minimum(lam[None, :], np.where(m > 0, BET_CAP / np.maximum(m, 1e-300), np.inf))
        lm = np.minimum(lam[None, :], np.where(m < 1, BET_CAP / np.maximum(1 - m, 1e-300), np.inf))
    d = z[None, :] - m
    kp = np.cumsum(np.log1p(lp * d), axis=1)
    km = np.cumsum(np.log1p(-lm * d), axis=1)
    k = np.logaddexp(math.log(THETA) + kp, math.log(1 - THETA) + km)
    return k.max(axis=1)


def betting_interval(x, low: float, high: float, alpha: float) -> tuple[float, float] | None:
    """The hedged-capital betting interval (1 - alpha) of the mean of `x`, every value in [low, high],
    read in the order given; None for no data."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return None
    if high <= low or np.any(x < low - 1e-12) or np.any(x > high + 1e-12):
        raise ValueError(f"values must lie in [{low}, {high}]")
    z = np.clip((x - low) / (high - low), 0.0, 1.0)
    lam = _bets(z, alpha)
    bar = math.log(1 / alpha)

    def kept(m: np.ndarray) -> np.ndarray:
        return _log_capital_max(z, lam, m) < bar

    grid = np.linspace(0.0, 1.0, GRID)
    ok = kept(grid)
    if not ok.any():  # narrower than the grid: look around the sample mean
        centre = float(z.mean())
        grid = np.clip(np.linspace(centre - 2.0 / GRID, centre + 2.0 / GRID, GRID), 0.0, 1.0)
        ok = kept(grid)
        if not ok.any():
            return (low + (high - low) * centre,) * 2
    idx = np.flatnonzero(ok)

    def edge(inside: float, outside: float) -> float:
        for _ in range(60):
            if abs(inside - outside) < 1e-9:
                break
            mid = 0.5 * (inside + outside)
            if kept(np.array([mid]))[0]:
                inside = mid
            else:
                outside = mid
        return outside  # the rejected side: the interval errs wide

    lo = grid[idx[0]] if idx[0] == 0 or grid[idx[0]] == 0.0 else edge(grid[idx[0]], grid[idx[0] - 1])
    hi = grid[idx[-1]] if idx[-1] == len(grid) - 1 or grid[idx[-1]] == 1.0 else edge(grid[idx[-1]], grid[idx[-1] + 1])
    return low + (high - low) * float(lo), low + (high - low) * float(hi)


def ppi_betting(y, f_paired, f_all, labelled, alpha: float) -> tuple[float, float] | None:
    """UniformPPI with a betting interval (see the module): `f_all` the N predictions in reading
    order, `labelled` a boolean mask over them (the n seeds with a real trial), `y`/`f_paired` the n
    pairs in the order of the mask's True entries."""
    f_all = np.asarray(f_all, dtype=float)
    mask = np.asarray(labelled, dtype=bool)
    y, f_paired = np.asarray(y, dtype=float), np.asarray(f_paired, dtype=float)
    n, big_n = int(mask.sum()), len(f_all)
    if n == 0 or n != len(y):
        return None
    pi = n / big_n
    z = f_all.copy()
    z[mask] = f_paired + (y - f_paired) / pi
    lo, hi = betting_interval(z, 1 - 1 / pi, 1 / pi, alpha)
    return max(0.0, lo), min(1.0, hi)


def ppi_two_stage(y, f_paired, f_all, alpha: float) -> tuple[float, float] | None:
    """The sim mean over N and the rectifier over n, each a betting interval at alpha/2, added."""
    if len(y) == 0:
        return None
    sim = betting_interval(f_all, 0.0, 1.0, alpha / 2)
    rect = betting_interval(np.asarray(y, float) - np.asarray(f_paired, float), -1.0, 1.0, alpha / 2)
    return max(0.0, sim[0] + rect[0]), min(1.0, sim[1] + rect[1])


def ppi_normal(y, f_paired, f_all, alpha: float) -> tuple[float, float, float] | None:
    """(estimate, low, high) of the classical PPI interval at lam = 1 (the same numbers as ppi-python's
    `ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha, lam=1)` with Yhat_unlabeled = f over all N), unclipped."""
    y, fp, fa = (np.asarray(v, dtype=float) for v in (y, f_paired, f_all))
    if len(y) == 0 or len(fa) == 0:
        return None
    est = float(fa.mean() + (y - fp).mean())
    se = math.sqrt(fa.std() ** 2 / len(fa) + (y - fp).std() ** 2 / len(y))
    z = z_of(1 - alpha)
    return est, est - z * se, est + z * se


def rectifier(y, f_paired, alpha: float) -> tuple[float, float] | None:
    """The betting interval on the mean of Y - f over [-1, 1]: below 0 the sim is optimistic."""
    if len(y) == 0:
        return None
    return betting_interval(np.asarray(y, float) - np.asarray(f_paired, float), -1.0, 1.0, alpha)


OPTIMISTIC, PESSIMISTIC, CONSISTENT = "optimistic", "pessimistic", "consistent"


def rectifier_verdict(interval: tuple[float, float] | None) -> str | None:
    if interval is None:
        return None
    lo, hi = interval
    return OPTIMISTIC if hi < 0 else PESSIMISTIC if lo > 0 else CONSISTENT


def correlation(y, f) -> float | None:
    """Pearson's r of the paired Y and f; None when either does not vary."""
    y, f = np.asarray(y, float), np.asarray(f, float)
    if len(y) < 2 or y.std() == 0 or f.std() == 0:
        return None
    return float(np.corrcoef(y, f)[0, 1])


def sim_helps(y, f_paired, f_all) -> tuple[bool, float, float] | None:
    """(whether the PPI variance beats the real-only one, var(Y - f), var(Y)) on the data: the gain
    needs var(Y - f)/n + var(f)/N < var(Y)/n."""
    y, fp, fa = (np.asarray(v, dtype=float) for v in (y, f_paired, f_all))
    if len(y) < 2:
        return None
    vd, vy = float((y - fp).var(ddof=1)), float(y.var(ddof=1))
    return vd / len(y) + float(fa.var(ddof=1)) / len(fa) < vy / len(y), vd, vy


# ---------------------------------------------------------------- across arms or checkpoints (SimplerEnv)


def pearson_r(sim, real) -> float | None:
    """Pearson's r between sim and real success rates across checkpoints (SimplerEnv's first metric);
    None when either does not vary (SimplerEnv's code returns 1 when the two centred vectors are equal)."""
    s, r = np.asarray(sim, float), np.asarray(real, float)
    if s.shape != r.shape or len(s) < 2:
        raise ValueError("Pearson r needs two or more checkpoints, a sim and a real rate for each")
    sc, rc = s - s.mean(), r - r.mean()
    den = math.sqrt(float((sc ** 2).sum() * (rc ** 2).sum()))
    return None if den == 0 else float((sc * rc).sum() / den)


def mmrv(sim, real) -> float:
    """Mean Maximum Rank Violation (SimplerEnv, Li et al. 2024): for each checkpoint i, the largest real
    gap |R_i - R_j| over the checkpoints j whose order sim gets wrong ((S_i > S_j) != (R_i > R_j)), 0
    when none; averaged over i. 0 is a sim that ranks every checkpoint as the rig does."""
    s, r = np.asarray(sim, float), np.asarray(real, float)
    if s.shape != r.shape or len(s) < 2:
        raise ValueError("MMRV needs two or more checkpoints, a sim and a real rate for each")
    wrong = (s[:, None] > s[None, :]) != (r[:, None] > r[None, :])
    gaps = np.where(wrong, np.abs(r[:, None] - r[None, :]), 0.0)
    return float(gaps.max(axis=1).mean())
