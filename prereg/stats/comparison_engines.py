"""The comparison tests' vectorised engines (pure): each runs S sequences of n seeds at once and returns, per
sequence, the first crossing (code 1 B better, 2 B worse, 3 equivalent, 0 none) and its 1-based time: STEP
(`run_step`), the discordant-seed e-process (`run_discordant`), the betting confidence sequence of
Waudby-Smith & Ramdas (`run_betting`, `betting_cs`, `betting_cs_path`) and the batch tests, exact McNemar or
the paired t test (`run_fixed`). prereg/stats/comparison.py decides one run with them (its docstring says
what each test claims); prereg/stats/operating.py simulates their operating characteristics."""

from __future__ import annotations

import functools
import math

import numpy as np

from prereg.stats.step import step_policy

BET_C = 0.5  # WSR's truncation of the bets: lambda <= c / m (c = 1/2, their default)


def _first(mask: np.ndarray) -> np.ndarray:
    """Index of the first True per row, or -1."""
    hit = mask.any(axis=1)
    return np.where(hit, mask.argmax(axis=1), -1)


def run_step(a: np.ndarray, b: np.ndarray, alpha: float, n_max: int, u: np.ndarray | None = None):
    """STEP on successes a, b (S x n bool): (code, time) per sequence: 1 B better, 2 B worse, 0 none; time 1-based.

    Without `u`: the deterministic test (only the states the policy rejects for sure). With u (S x n
    uniforms): the package's randomised test, state for state (what the tests compare with it)."""
    pol = step_policy(n_max, alpha / 2)
    S, n = a.shape
    u = np.ones((S, n)) if u is None else np.broadcast_to(u, (S, n))  # u = 1 never beats p < 1
    ca, cb = np.cumsum(a, axis=1, dtype=np.int64), np.cumsum(b, axis=1, dtype=np.int64)
    code = np.zeros(S, dtype=np.int8)
    when = np.zeros(S, dtype=np.int64)
    for t in range(1, min(n, n_max) + 1):
        live = code == 0
        if not live.any():
            break
        x, y = ca[live, t - 1], cb[live, t - 1]
        small, big = np.minimum(x, y), np.maximum(x, y)
        rej = (x != y) & pol.reject(t, small, big, u[live, t - 1])
        idx = np.flatnonzero(live)[rej]
        code[idx] = np.where(y[rej] > x[rej], 1, 2)
        when[idx] = t
    return code, when


def discordant_log_e(wins: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """log e-value for 'B wins more than half the discordant seeds': the likelihood ratio against a
    fair coin, mixed over a uniform prior on P(B wins | discordant) in (1/2, 1).
    e = 2^(w+l+1) * B(w+1, l+1) * P(Beta(w+1, l+1) > 1/2)."""
    from scipy.special import betaincc, betaln

    w, lo = np.asarray(wins, dtype=float), np.asarray(losses, dtype=float)
    tail = betaincc(w + 1, lo + 1, 0.5)
    with np.errstate(divide="ignore"):
        return (w + lo + 1) * math.log(2) + betaln(w + 1, lo + 1) + np.log(tail)


@functools.lru_cache(maxsize=8)
def _log_e_table(n: int) -> np.ndarray:
    w, lo = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    return discordant_log_e(w, lo)


def run_discordant(a: np.ndarray, b: np.ndarray, alpha: float):
    """The paired discordant-seed e-process on successes a, b (S x n bool): (code, time) as run_step."""
    w = np.cumsum(b & ~a, axis=1)
    lo = np.cumsum(a & ~b, axis=1)
    table = _log_e_table(a.shape[1])
    up, down = table[w, lo], table[lo, w]
    thr = math.log(2 / alpha)
    t_up, t_down = _first(up >= thr), _first(down >= thr)
    return _combine(t_up, t_down)


def _combine(t_better: np.ndarray, t_worse: np.ndarray, t_equiv: np.ndarray | None = None):
    """(code, 1-based time) of the first of the three crossings (ties: a direction first)."""
    big = np.iinfo(np.int64).max
    tb = np.where(t_better >= 0, t_better, big)
    tw = np.where(t_worse >= 0, t_worse, big)
    te = np.full_like(tb, big) if t_equiv is None else np.where(t_equiv >= 0, t_equiv, big)
    first = np.minimum(np.minimum(tb, tw), te)
    code = np.where(first == big, 0, np.where(first == tb, 1, np.where(first == tw, 2, 3))).astype(np.int8)
    return code, np.where(first == big, 0, first + 1)


def plug_in_bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """WSR's predictable plug-in bets lambda_t (before truncation), x in [0, 1], S x n."""
    S, n = x.shape
    t = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(x, axis=1)) / (t + 1)
    var = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1)
    var_prev = np.concatenate([np.full((S, 1), 0.25), var[:, :-1]], axis=1)
    return np.sqrt(2 * math.log(2 / alpha) / (var_prev * t * np.log1p(t)))


def log_capital(x: np.ndarray, m: float, lam: np.ndarray, up: bool) -> np.ndarray:
    """log K+_t(m) (up) or log K-_t(m): the capital of betting that the mean is above (below) m."""
    if up:
        return np.cumsum(np.log1p(np.minimum(lam, BET_C / m) * (x - m)), axis=1)
    return np.cumsum(np.log1p(-np.minimum(lam, BET_C / (1 - m)) * (x - m)), axis=1)


def run_betting(d: np.ndarray, bound: float, alpha: float, effect: float | None, directions: bool = True):
    """The betting confidence sequence's decisions on deltas d (S x n) in [-bound, bound]:
    (code, time): B better (rejects mean <= 0), worse (>= 0), equivalent (rejects both |mean| >= effect)."""
    x = (np.asarray(d, dtype=float) + bound) / (2 * bound)
    lam = plug_in_bets(x, alpha)
    thr = math.log(2 / alpha)
    S = x.shape[0]
    none = np.full(S, -1)
    if directions:
        t_b = _first(log_capital(x, 0.5, lam, True) >= thr)
        t_w = _first(log_capital(x, 0.5, lam, False) >= thr)
    else:
        t_b = t_w = none
    t_e = none
    if effect is not None and effect < bound:
        lo_m, hi_m = (bound - effect) / (2 * bound), (bound + effect) / (2 * bound)
        t1 = _first(log_capital(x, hi_m, lam, False) >= thr)  # mean >= +effect rejected
        t2 = _first(log_capital(x, lo_m, lam, True) >= thr)  # mean <= -effect rejected
        t_e = np.where((t1 >= 0) & (t2 >= 0), np.maximum(t1, t2), -1)
    return _combine(t_b, t_w, t_e)


def betting_cs(d, bound: float, alpha: float, grid: int = 801) -> tuple[float, float]:
    """The (1 - alpha) confidence sequence for the mean of d after all of it (running intersection), in d's units."""
    if len(d) == 0:
        return -bound, bound
    lo, hi = betting_cs_path(d, bound, alpha, grid)
    return float(lo[-1]), float(hi[-1])


def betting_cs_path(d, bound: float, alpha: float, grid: int = 801) -> tuple[np.ndarray, np.ndarray]:
    """The same confidence sequence after each prefix d[:1], d[:2], ...: (lo, hi), one per prefix (NaN
    where it is empty). A mean m on the grid is out from the first prefix at which either capital
    reaches 2/alpha, and stays out (the running intersection), so the band only narrows."""
    x = ((np.asarray(d, dtype=float) + bound) / (2 * bound))[None, :]
    n = x.shape[1]
    if n == 0:
        return np.empty(0), np.empty(0)
    lam = plug_in_bets(x, alpha)
    ms = np.linspace(0.0, 1.0, grid)[1:-1]
    thr = math.log(2 / alpha)
    first = np.full(ms.size, n)  # 0-based prefix index at which m is rejected (n: never)
    for i, m in enumerate(ms):
        hit = (log_capital(x, m, lam, True) >= thr) | (log_capital(x, m, lam, False) >= thr)
        t = int(_first(hit)[0])
        if t >= 0:
            first[i] = t
    kept = first[:, None] > np.arange(n)[None, :]  # grid x prefixes
    alive = kept.any(axis=0)
    step = 1.0 / (grid - 1)
    lo = np.maximum(0.0, ms[kept.argmax(axis=0)] - step)
    hi = np.minimum(1.0, ms[ms.size - 1 - kept[::-1].argmax(axis=0)] + step)
    lo = np.where(alive, lo * 2 * bound - bound, np.nan)
    hi = np.where(alive, hi * 2 * bound - bound, np.nan)
    return lo, hi


def run_fixed(a_or_d: np.ndarray, b: np.ndarray | None, alpha: float, effect: float | None, n: int):
    """The batch test at exactly n seeds: (code, time) (time = n when decided). Success when b is given."""
    from scipy import stats

    S = a_or_d.shape[0]
    code = np.zeros(S, dtype=np.int8)
    if a_or_d.shape[1] < n:
        return code, np.zeros(S, dtype=np.int64)
    if b is not None:
        a, bb = a_or_d[:, :n], b[:, :n]
        w, lo = (bb & ~a).sum(axis=1), (a & ~bb).sum(axis=1)
        rej = mcnemar_rejects(w, lo, alpha)
        code[rej & (w > lo)] = 1
        code[rej & (w < lo)] = 2
        d = bb.astype(float) - a.astype(float)
    else:
        d = a_or_d[:, :n].astype(float)
        mean, sd = d.mean(axis=1), d.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            tstat = mean / (sd / math.sqrt(n))
        rej = np.abs(np.nan_to_num(tstat, nan=0.0, posinf=1e9, neginf=-1e9)) >= stats.t.ppf(1 - alpha / 2, n - 1)
        rej |= (sd == 0) & (mean != 0)
        code[rej & (mean > 0)] = 1
        code[rej & (mean < 0)] = 2
    if effect is not None:
        mean, sd = d.mean(axis=1), d.std(axis=1, ddof=1)
        half = stats.t.ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
        eq = (code == 0) & (mean - half > -effect) & (mean + half < effect)
        code[eq] = 3
    return code, np.where(code > 0, n, 0)


@functools.lru_cache(maxsize=64)
def mcnemar_table(alpha: float, dmax: int) -> np.ndarray:
    """For D discordant seeds, the largest min(w, l) the exact two-sided binomial test rejects at (-1: none)."""
    from scipy import stats

    out = np.full(dmax + 1, -1)
    for D in range(1, dmax + 1):
        k = np.arange(D // 2 + 1)
        p = np.minimum(1.0, 2 * stats.binom.cdf(k, D, 0.5))
        ok = k[p <= alpha * (1 + 1e-9)]
        out[D] = ok.max() if ok.size else -1
    return out


def mcnemar_rejects(w, lo, alpha: float) -> np.ndarray:
    w, lo = np.asarray(w), np.asarray(lo)
    D = w + lo
    table = mcnemar_table(alpha, int(max(1, D.max(initial=1))))
    return np.minimum(w, lo) <= table[D]
