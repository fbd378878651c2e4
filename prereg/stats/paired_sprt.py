"""`test: sprt`: the truncated discordant-pair SPRT, a paired success comparison near the information floor (pure).

Both arms run the same seeds, so a seed is one of: both succeed, both fail (concordant: they say
nothing about which arm is better), B alone succeeds (a B win) or A alone (a loss). With b and a
the chances of a B win and a loss on a seed, B's rate minus A's is exactly b - a, whatever the
correlation between the arms; "no difference" is b = a, and then every discordant seed is a fair
coin. After t seeds of the plan prefix with w wins and l losses the test reads:

- **B better** when w >= crit[l] (**B worse** when l >= crit[w], the mirror). The boundary is the
  likelihood ratio of Wald's SPRT on the discordant seeds, w log(2 theta) + l log(2 (1 - theta))
  >= h, where theta = P(B wins | discordant) at the design: the registered rates p_lo < p_hi with
  the arms independent, theta = p_hi (1 - p_lo) / (p_hi (1 - p_lo) + p_lo (1 - p_hi)). h is not
  Wald's log(2/alpha) (Ville's bound, which never binds exactly) but the smallest value on the
  lattice of reachable ratios at which the test's exact type-I is at most alpha for EVERY null:
  at any null the discordant seeds are a fair coin and the chance of crossing by seed n grows
  with their number, so the worst null has every seed discordant, and the exact type-I there is
  the fair walk's chance of crossing either boundary within n_max steps (`walk_type1`, dynamic
  programming). So alpha holds under independent, correlated or nested arms, at any rates,
  whenever the plan prefix is read, up to n_max (`max_seeds`): the truncation is part of the test.
- **Futility** (non-binding: the boundary above is calibrated without it, so stopping or going on
  after it changes no type-I): the run stops, claiming nothing, when for both directions
  LLR_dir + kappa_dir <= g, where LLR_dir is the discordant log-likelihood ratio above and
  kappa_up = min(0, log of the binomial likelihood ratio of "B wins a seed with chance delta" to
  "with the chance seen, w/t"), delta = p_hi - p_lo (kappa_down the same on the losses). A
  difference of delta needs b >= delta under ANY correlation (b - a = delta, a >= 0), so kappa
  measures how implausibly rare B's wins are for the design: it is what stops a comparison whose
  candidate did nothing at a rare success rate (1% vs 1%), where discordant seeds hardly come.
  g is the largest value (on a 1e-3 grid) at which the exact power at the design stays at or
  above the registered power BOTH with independent arms and with nested ones (the weaker arm
  fails on every seed the stronger fails on, the least discordant case of the design's rates).

Everything here is exact (dynamic programming over seeds x wins x losses, `oc`; outcomes rarer
than 1e-13 a step are left out of the sums) and checked against simulation in
tests/prereg/test_paired_sprt.py; `floor_seeds` gives Wald's bound on the expected seeds of any
test with the same error rates, from the per-seed Kullback-Leibler divergence (the information
floor); docs/prereg.md has the figures (scripts/comparison_figures.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from prereg.core.errors import UsageError

EPS = 1e-13  # the DP leaves out outcomes rarer than this at a seed (their mass is below 1e-10 over 1000 seeds)
GRID = 1e-3  # the futility threshold's grid
G_MIN = -60.0  # futility threshold below which there is none (the search's floor)
BETTER, WORSE, FUTILE = 1, 2, 4  # codes (0: go on); 3 is the equivalence code of the other tests


def design_theta(p_lo: float, p_hi: float) -> float:
    """P(the better arm wins | discordant) for independent arms at rates p_lo < p_hi."""
    b, a = p_hi * (1 - p_lo), p_lo * (1 - p_hi)
    return b / (a + b)


def kl_bern(x: float, y: float) -> float:
    """KL(Bernoulli(x) || Bernoulli(y))."""
    out = 0.0
    for p, q in ((x, y), (1 - x, 1 - y)):
        if p > 0:
            out += p * math.log(p / q)
    return out


# ---------------------------------------------------------------- the information floor (Wald's bound)


def _kl_decisions(p_right: float, p_wrong: float) -> float:
    """kl(p_right || p_wrong) of the test's binary decision: the least information it needs."""
    return kl_bern(p_right, p_wrong)


def seed_kl_alternative(b: float, a: float) -> float:
    """Per-seed KL from a pair law (b, a, 1 - a - b) to the nearest no-difference law (c, c, 1 - 2c):
    c = (a + b)/2, and the KL is (a + b) KL(Bern(theta) || Bern(1/2)), theta = b/(a + b)."""
    q = a + b
    return 0.0 if q <= 0 else q * kl_bern(b / q, 0.5)


def seed_kl_null(c: float, b1: float, a1: float) -> float:
    """Per-seed KL from the no-difference law (c, c, 1 - 2c) to the design (b1, a1, 1 - a1 - b1)."""
    out = 0.0
    for p, q in ((c, b1), (c, a1), (1 - 2 * c, 1 - a1 - b1)):
        if p > 0:
            out += p * math.log(p / q)
    return out


def floor_seeds(b: float, a: float, alpha: float, power: float) -> float:
    """Wald's lower bound on E[seeds] at the pair law (b, a) for ANY paired test (sequential or not)
    that claims this direction with chance >= power there and with chance <= alpha/2 at every null:
    kl(power || alpha/2) / (per-seed KL to the nearest null). inf when b <= a."""
    kl = seed_kl_alternative(b, a) if b > a else 0.0
    return math.inf if kl <= 0 else _kl_decisions(power, alpha / 2) / kl


def floor_seeds_null(c: float, b1: float, a1: float, alpha: float, power: float) -> float:
    """Wald's lower bound on E[seeds] at a no-difference law (c, c) for any test with power >= power at
    the design (b1, a1) and type-I <= alpha/2 per direction: kl(1 - alpha/2 || 1 - power) / KL(null || design)."""
    kl = seed_kl_null(c, b1, a1)
    return math.inf if kl <= 0 else _kl_decisions(1 - alpha / 2, 1 - power) / kl


# ---------------------------------------------------------------- the boundary: exact level by the fair walk


def walk_type1(crit: np.ndarray, steps: int) -> float:
    """The fair walk's chance of crossing either boundary within `steps` discordant seeds: the
    test's type-I at the worst null (every seed discordant), exactly."""
    crit = np.asarray(crit)
    alive = np.zeros(steps + 2)
    alive[0] = 1.0
    out = 0.0
    for k in range(1, steps + 1):
        nxt = np.zeros(steps + 2)
        nxt[1:k + 1] += 0.5 * alive[:k]
        nxt[:k] += 0.5 * alive[:k]
        w = np.arange(k + 1)
        stop = (w >= crit[k - w]) | ((k - w) >= crit[w])
        out += float(nxt[:k + 1][stop].sum())
        nxt[:k + 1][stop] = 0.0
        alive = nxt
    return out


def _crit_at(h: float, u: float, v: float, n: int) -> np.ndarray:
    """crit[l] = the fewest wins w with w u + l v >= h (n + 1: none within n seeds)."""
    ls = np.arange(n + 1)
    need = np.ceil((h - ls * v) / u - 1e-9).astype(np.int64)
    return np.clip(np.maximum(need, 1), 1, n + 1)


@functools.lru_cache(maxsize=64)
def calibrate(theta: float, n: int, alpha: float) -> tuple[tuple[int, ...], float]:
    """(crit, h): the smallest lattice threshold h at which walk_type1(crit, n) <= alpha."""
    u, v = math.log(2 * theta), math.log(2 * (1 - theta))
    w, ls = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    vals = (w * u + ls * v)[(w + ls <= n) & (w * u + ls * v > 0)]
    vals = np.unique(np.round(vals, 10))
    lo, hi = 0, len(vals) - 1
    if walk_type1(_crit_at(vals[hi], u, v, n), n) > alpha:  # only at tiny n: nothing can reject
        return tuple([n + 1] * (n + 1)), math.inf
    while lo < hi:
        mid = (lo + hi) // 2
        if walk_type1(_crit_at(vals[mid], u, v, n), n) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    return tuple(int(c) for c in _crit_at(vals[lo], u, v, n)), float(vals[lo])


# ---------------------------------------------------------------- the design


class Unreachable(UsageError, ValueError):
    """The registered power cannot be reached within n_max seeds (even with no futility stop): a plan to change."""

    def __init__(self, message: str, reached: float, needed: int | None):
        super().__init__(message)
        self.reached, self.needed = reached, needed


@dataclass(frozen=True)
class Boundary:
    """A test on the discordant walk alone: B better at w >= crit[l], B worse at l >= crit[w], truncated
    at n_max seeds (the SPRT without its futility stop; the discordant e-process of `test: savi`)."""

    crit: tuple[int, ...]  # crit[l], l = 0..n_max: the wins that claim "better" after l losses
    n_max: int

    def codes(self, t, w, ls) -> np.ndarray:
        """The decision at seed t with w wins and ls losses (arrays broadcast): 1 B better, 2 B worse, 0 go on."""
        crit = np.asarray(self.crit)
        w, ls = np.asarray(w), np.asarray(ls)
        up = w >= crit[np.minimum(ls, self.n_max)]
        down = ls >= crit[np.minimum(w, self.n_max)]
        return np.where(up, BETTER, np.where(down, WORSE, 0)).astype(np.int8)


@dataclass(frozen=True)
class Design:
    p_lo: float
    p_hi: float
    alpha: float
    power: float
    n_max: int
    crit: tuple[int, ...]  # crit[l], l = 0..n_max: the wins that claim "better" after l losses
    h: float  # the log-likelihood-ratio threshold crit was read from
    futility: float  # g (-inf: no futility stop)

    @property
    def theta(self) -> float:
        return design_theta(self.p_lo, self.p_hi)

    @property
    def delta(self) -> float:
        return self.p_hi - self.p_lo

    @property
    def independent(self) -> tuple[float, float]:
        """(b, a) at the design with independent arms."""
        return self.p_hi * (1 - self.p_lo), self.p_lo * (1 - self.p_hi)

    @property
    def nested(self) -> tuple[float, float]:
        """(b, a) at the design with nested arms (the least discordant law with these rates)."""
        return self.delta, 0.0

    def llr(self, w, ls):
        """The discordant log-likelihood ratio for 'B better' after w wins and ls losses (swap them for 'B worse')."""
        th = self.theta
        return w * math.log(2 * th) + ls * math.log(2 * (1 - th))

    def kappa(self, t, x):
        """min(0, log LR of 'a seed is a win with chance delta' against 'with chance x/t'), x wins in t seeds."""
        t = np.asarray(t, dtype=float)
        x = np.asarray(x, dtype=float)
        d = self.delta
        with np.errstate(divide="ignore", invalid="ignore"):
            r = x / t
            v = (np.where(x > 0, x * np.log(d / np.where(x > 0, r, 1.0)), 0.0)
                 + np.where(x < t, (t - x) * np.log((1 - d) / np.where(x < t, 1 - r, 1.0)), 0.0))
        return np.where(r < d, v, 0.0)

    def futility_stats(self, t, w, ls):
        """(up, down): LLR + kappa per direction; both <= futility stops the run."""
        return self.llr(w, ls) + self.kappa(t, w), self.llr(ls, w) + self.kappa(t, ls)

    @property
    def boundary(self) -> Boundary:
        """The test without its futility stop."""
        return Boundary(self.crit, self.n_max)

    def codes(self, t, w, ls) -> np.ndarray:
        """The decision at seed t with w wins and ls losses (arrays broadcast): 1 B better, 2 B worse,
        4 futile, 0 go on."""
        out = self.boundary.codes(t, w, ls)
        if self.futility > G_MIN:
            fu, fd = self.futility_stats(t, w, ls)
            out = np.where((out == 0) & (fu <= self.futility) & (fd <= self.futility), FUTILE, out)
        return out.astype(np.int8)

    def describe(self) -> str:
        return (f"design {self.p_lo:g} vs {self.p_hi:g} (P(B wins | discordant) {self.theta:.3f}), "
                f"B better at {self.crit[0]} wins with no loss (+{self.crit[1] - self.crit[0]} per loss), "
                f"futility at LLR {self.futility:.3f}, truncated at {self.n_max} seeds")


@dataclass(frozen=True)
class OC:
    """The exact operating characteristic at one pair law: chances of each outcome and E[seeds]."""

    better: float
    worse: float
    futile: float
    undecided: float
    expected_seeds: float


def _bounds(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Per seed t = 0..n, the range of Binomial(t, p) outside which less than EPS lies."""
    from scipy import stats

    t = np.arange(n + 1)
    if p <= 0:
        return np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    if p >= 1:
        return t, t
    lo = np.nan_to_num(stats.binom.ppf(EPS, t, p), nan=0.0)
    hi = np.nan_to_num(stats.binom.isf(EPS, t, p), nan=0.0)
    return np.maximum(lo - 1, 0).astype(np.int64), np.minimum(hi + 1, t).astype(np.int64)


def oc(d: Design | Boundary, b: float, a: float, n: int | None = None, futility: bool = True) -> OC:
    """Exact operating characteristic of the test when a seed is a B win with chance b and a loss
    with chance a (no difference: b = a), truncated at n seeds (default n_max): dynamic programming
    over (wins, losses) seed by seed, on the box where each count is likelier than EPS."""
    n = d.n_max if n is None else min(n, d.n_max)
    dd = d if futility or isinstance(d, Boundary) else d.boundary
    c = 1.0 - a - b
    wlo, whi = _bounds(n, b)
    llo, lhi = _bounds(n, a)
    w0 = l0 = 0
    alive = np.ones((1, 1))
    better = worse = futile = expected = 0.0
    for t in range(1, n + 1):
        expected += float(alive.sum())
        nw, nl = alive.shape
        nxt = np.zeros((nw + 1, nl + 1))
        nxt[:nw, :nl] += alive * c
        nxt[1:, :nl] += alive * b
        nxt[:nw, 1:] += alive * a
        # the box for seed t: rows w0..w0+nw, columns l0..l0+nl, cut to [wlo, whi] x [llo, lhi]
        r0, r1 = max(wlo[t] - w0, 0), min(whi[t] - w0, nw) + 1
        c0, c1 = max(llo[t] - l0, 0), min(lhi[t] - l0, nl) + 1
        nxt = nxt[r0:r1, c0:c1]
        w0, l0 = w0 + r0, l0 + c0
        ws = np.arange(w0, w0 + nxt.shape[0])[:, None]
        ls = np.arange(l0, l0 + nxt.shape[1])[None, :]
        code = dd.codes(t, ws, ls)
        better += float(nxt[code == BETTER].sum())
        worse += float(nxt[code == WORSE].sum())
        futile += float(nxt[code == FUTILE].sum())
        nxt[code != 0] = 0.0
        alive = nxt
    return OC(better, worse, futile, float(alive.sum()), expected)


def _power_ok(d: Design, target: float) -> bool:
    return all(oc(d, b, a).better >= target for b, a in (d.independent, d.nested))


@functools.lru_cache(maxsize=64)
def make_design(p_lo: float, p_hi: float, alpha: float, power: float, n_max: int) -> Design:
    """The design for rates p_lo < p_hi at two-sided alpha, the registered power and n_max seeds:
    the exact boundary (`calibrate`), then the largest futility threshold on the GRID that keeps the
    power at the design, independent and nested, at or above `power`. Raises Unreachable when even
    no futility stop leaves the power below it."""
    if not 0 < p_lo < p_hi < 1:
        raise ValueError(f"the design needs two rates 0 < p_lo < p_hi < 1, got {p_lo}, {p_hi}")
    crit, h = calibrate(design_theta(p_lo, p_hi), n_max, alpha)
    none = Design(p_lo, p_hi, alpha, power, n_max, crit, h, -math.inf)
    reached = min(oc(none.boundary, b, a).better for b, a in (none.independent, none.nested))
    if reached < power:
        needed = seeds_for_power(p_lo, p_hi, alpha, power, start=n_max)
        raise Unreachable(f"the discordant-pair SPRT reaches power {reached:.3f} < {power:g} at {p_lo:g} vs {p_hi:g} "
                          f"within {n_max} seeds" + (f"; it needs max_seeds >= {needed}" if needed else ""),
                          reached, needed)
    lo, hi = G_MIN, 0.0
    if _power_ok(Design(p_lo, p_hi, alpha, power, n_max, crit, h, lo), power):
        for _ in range(40):
            if hi - lo < GRID / 4:
                break
            mid = (lo + hi) / 2
            if _power_ok(Design(p_lo, p_hi, alpha, power, n_max, crit, h, mid), power):
                lo = mid
            else:
                hi = mid
        g = math.floor(lo / GRID) * GRID  # on the grid, at or below a threshold that keeps the power
        g = round(g, 6)
    else:
        g = -math.inf
    return Design(p_lo, p_hi, alpha, power, n_max, crit, h, g)


def seeds_for_power(p_lo: float, p_hi: float, alpha: float, power: float, start: int = 10,
                    limit: int = 5000) -> int | None:
    """The fewest max seeds from which the test (no futility) reaches `power` at the design,
    independent and nested (None: not by `limit`)."""

    def ok(n: int) -> bool:
        crit, h = calibrate(design_theta(p_lo, p_hi), n, alpha)
        d = Design(p_lo, p_hi, alpha, power, n, crit, h, -math.inf)
        return all(oc(d.boundary, b, a).better >= power for b, a in (d.independent, d.nested))

    hi = max(start, 2)
    while not ok(hi):
        if hi >= limit:
            return None
        hi = min(2 * hi, limit)
    lo = max(1, hi // 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------- on rows (vectorised over simulated sequences)


def run(d: Design | Boundary, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The test on success booleans a, b (S x n, seeds in plan order): (code, seed) per sequence,
    code 1 B better, 2 B worse, 4 futile, 0 none by min(n, n_max); seed 1-based (0 with none)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    n = min(a.shape[1], d.n_max)
    w = np.cumsum(b[:, :n] & ~a[:, :n], axis=1)
    ls = np.cumsum(a[:, :n] & ~b[:, :n], axis=1)
    t = np.arange(1, n + 1)[None, :]
    code = d.codes(t, w, ls)
    hit = code > 0
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    rows = np.arange(code.shape[0])
    out = np.where(first >= 0, code[rows, np.maximum(first, 0)], 0).astype(np.int8)
    return out, np.where(first >= 0, first + 1, 0)
