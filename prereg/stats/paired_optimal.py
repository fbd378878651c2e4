"""The achievable optimum of a paired success comparison: the fewest expected seeds at the design that any
test on the discordant walk can have at the same error rates and truncation, by exact dynamic programming (pure).

The model is the sprt's (prereg/stats/paired_sprt.py): a seed is a B win (only B succeeds) with chance b, a
loss with chance a, concordant otherwise; at the design (independent arms at the registered rates p_lo <
p_hi) a seed is discordant with chance q = b + a, and a discordant seed is a win with chance theta = b / q.
A test on the discordant walk decides at each walk state (k discordant seeds, w of them wins) to claim B
better, B worse, stop claiming nothing, or go on; it ends undecided at n_max SEEDS. Its type-I at a no-
difference law (c, c) is the chance that a fair walk reaches a claim within Binomial(n_max, 2c) steps, which
grows with c, so the worst null has every seed discordant: a fair walk of n_max steps. At the design the
walk is independent of the clock (which seeds are discordant), so

- E[seeds] = sum over k of P(the walk goes on past step k) * (E[min(tau_{k+1}, n)] - E[min(tau_k, n)]),
  tau_k the seed of the k-th discordant one (`clock`): the cost is seeds, not discordant pairs;
- a claim at walk step k counts as power only if tau_k <= n_max: P(Binomial(n_max, q) >= k).

`optimum` minimises E[seeds] at the design (the same in both directions: mirror-symmetric, two-sided)
subject to type-I <= alpha at the worst null and P(B better) >= power at the design. Its Lagrangian
(multipliers l0 on the type-I, l1 on the power) is a Bayes problem over three hypotheses (the design, its
mirror, the fair walk with weight l0) solved backwards over walk states in O(n^2) (`_lagrangian`); the dual's
max over (l0, l1) is the optimum over all randomised walk tests (`Optimum.value`), a lower bound on every
walk test's E[seeds]. It is attained: the policy at the dual optimum, randomised on the few walk states where
two actions tie there (found by moving the multipliers a little) with chances solved so both constraints
hold, has exactly that E[seeds] (`Optimum.witness`, `Optimum.randomised`).

The optimum is a yardstick, not a test to run: a randomised test read reproducibly (a uniform per state
hashed from a frozen key) is one of a few deterministic tests once the key is fixed, and at 9% vs 1% some
of those have type-I 0.060 > alpha (`Optimum.realisations`). `make_walk_test` is `test: optimal`: the
cheapest of those realisations that holds alpha and the power exactly (`make_optimal`'s scan of the
Lagrangian's deterministic policies where none does), plus the sprt's futility stop calibrated to keep the
power (`WalkTest`), read by `paired_sprt.oc` and `paired_sprt.run` through `codes`.
Checked against simulation in tests/prereg/test_paired_optimal.py; scripts/optimum_figure.py tabulates it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prereg.stats.paired_sprt import BETTER, FUTILE, G_MIN, GRID, WORSE, Unreachable, design_theta

STOP, UP, DOWN, GO = 0, 1, 2, 3  # the DP's actions at a walk state (STOP: claim nothing)
OUT = np.array([FUTILE, BETTER, WORSE, 0], dtype=np.int8)  # the actions as the comparison codes read them
_ACTION_CODES = {STOP, UP, DOWN, GO}  # what a kept design's actions may hold
STEPS = (1e-3, 1e-2, 5e-2)  # how far (in log multipliers) the search moves to find the tied states
MAX_TIED = 12  # test optimal enumerates the optimum's realisations (2^pairs) up to this many tied pairs


def clock(n: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(dlt, reach): dlt[k] = E[min(tau_{k+1}, n)] - E[min(tau_k, n)], the expected seeds from the k-th to the
    (k+1)-th discordant seed within n seeds, and reach[k] = P(tau_k <= n), k = 0..n."""
    from scipy import stats

    t = np.arange(n)[:, None]
    k = np.arange(n + 2)[None, :]
    m = stats.binom.cdf(k - 1, t, q).sum(axis=0)  # E[min(tau_k, n)] = sum_t P(tau_k > t)
    reach = stats.binom.sf(np.arange(n + 1) - 1, n, q)
    return np.diff(m)[: n + 1], reach


def _lagrangian(theta: float, n: int, lam0: float, lam1: float, dlt, reach) -> tuple[float, list[np.ndarray]]:
    """Backward induction on the Lagrangian E[seeds] + lam0 type-I - lam1 power (design and mirror averaged):
    (its value at the start, with weights 1/2, 1/2, lam0; the action at every walk state).

    The posteriors of every step are computed at once (`_all_posteriors`), and the options of a step are
    written into one buffer: the search calls this some thousand times, and a step's dozen small numpy
    calls were most of validate's time (3x faster, the same bits: tests/prereg/test_paired_optimal.py)."""
    A, B, C = _all_posteriors(theta, n, lam0)
    o1 = C - lam1 * A * reach[: n + 1, None]
    o2 = C - lam1 * B * reach[: n + 1, None]
    r1 = A * theta + B * (1 - theta) + C / 2
    go = np.asarray(dlt[:n], dtype=float)[:, None] * (A[:n] + B[:n]) if n else None
    buf = np.zeros((4, n + 1))
    V = None
    acts: list[np.ndarray] = [np.empty(0, dtype=np.int8)] * (n + 1)
    for k in range(n, -1, -1):
        m = k + 1
        buf[1, :m] = o1[k, :m]
        buf[2, :m] = o2[k, :m]
        if k < n:
            r = r1[k, :m]
            buf[3, :m] = go[k, :m] + r * V[1:] + (1 - r) * V[:-1]
            stacked = buf[:, :m]
        else:
            stacked = buf[:3, :m]
        acts[k] = stacked.argmin(axis=0).astype(np.int8)
        V = stacked.min(axis=0)
    return float(V[0]) * (1 + lam0), acts


def _all_posteriors(theta: float, n: int, lam0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At walk step k (row k), per w (columns 0..k; the rest unused): the normalised weights of the design,
    its mirror and the fair walk (prior 1/2, 1/2, lam0), each path's probability under it (the same for
    every path to (k, w))."""
    la, lb = _walk_logs(theta, n)
    lc = (math.log(2 * lam0) - np.arange(n + 1) * math.log(2))[:, None]
    top = np.maximum(np.maximum(la, lb), lc)
    A, B, C = np.exp(la - top), np.exp(lb - top), np.exp(lc - top)
    s = A + B + C
    return A / s, B / s, C / s


@functools.lru_cache(maxsize=4)
def _walk_logs(theta: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The log-likelihoods of a step-k walk at w under the design and its mirror (row k, column w). A design's
    search asks for the same (theta, n) a thousand times; a few kept, as each holds two (n+1)^2 arrays."""
    k = np.arange(n + 1)[:, None]
    w = np.arange(n + 1)[None, :]
    la = w * math.log(theta) + (k - w) * math.log1p(-theta)
    lb = w * math.log1p(-theta) + (k - w) * math.log(theta)
    la.flags.writeable = lb.flags.writeable = False
    return la, lb


def _forward(theta: float, n: int, probs, dlt, reach) -> tuple[float, float, float]:
    """(power, type-I at the worst null, E[seeds] at the design) of a walk test that takes action x at walk
    state (k, w) with chance probs(k)[x][w] (a deterministic test: 0 or 1)."""
    pa, p0 = np.ones(1), np.ones(1)
    power = type1 = expected = 0.0
    for k in range(n + 1):
        stop, up, down, go = probs(k)
        power += float((pa * up).sum()) * reach[k]
        type1 += float((p0 * (up + down)).sum())
        if k == n:
            break
        pa, p0 = pa * go, p0 * go
        expected += float(pa.sum()) * dlt[k]
        na, n0 = np.zeros(k + 2), np.zeros(k + 2)
        na[1:] += pa * theta
        na[:-1] += pa * (1 - theta)
        n0[1:] += p0 / 2
        n0[:-1] += p0 / 2
        pa, p0 = na, n0
    return power, type1, expected


def _onehot(acts: list[np.ndarray]):
    return lambda k: np.eye(4)[acts[k]].T


@dataclass(frozen=True)
class Optimal:
    """The cheapest deterministic walk test found at a design (`actions`, read through `codes`), with the optimum."""

    p_lo: float
    p_hi: float
    alpha: float
    power: float
    n_max: int
    actions: tuple[bytes, ...]  # actions[k][w] of the shipped, deterministic test
    expected_seeds: float  # its E[seeds] at the design, exactly
    type1: float  # its type-I at the worst null (every seed discordant), exactly
    achieved_power: float  # its P(B better) at the design, exactly
    optimum: float  # the least E[seeds] at the design of any (randomised) walk test with these error rates

    @property
    def theta(self) -> float:
        return design_theta(self.p_lo, self.p_hi)

    @property
    def independent(self) -> tuple[float, float]:
        return self.p_hi * (1 - self.p_lo), self.p_lo * (1 - self.p_hi)

    @functools.cached_property
    def table(self) -> np.ndarray:
        out = np.full((self.n_max + 1, self.n_max + 1), GO, dtype=np.int8)
        for k, row in enumerate(self.actions):
            out[k, : k + 1] = np.frombuffer(row, dtype=np.int8)
        return out

    def codes(self, t, w, ls) -> np.ndarray:
        """The decision at seed t with w wins and ls losses (arrays broadcast; t is not read: a walk test):
        1 B better, 2 B worse, 4 stopped claiming nothing, 0 go on."""
        w, ls = np.broadcast_arrays(np.asarray(w), np.asarray(ls))
        k = np.minimum(w + ls, self.n_max)
        return OUT[self.table[k, np.minimum(w, k)]]

    def describe(self) -> str:
        first = next(((k, int(np.frombuffer(r, dtype=np.int8).tolist().index(UP))) for k, r in enumerate(self.actions)
                      if UP in np.frombuffer(r, dtype=np.int8)), None)
        where = f"B better first at {first[1]} wins of {first[0]} discordant seeds" if first else "no claim"
        return (f"optimal walk test at {self.p_lo:g} vs {self.p_hi:g} (P(B wins | discordant) {self.theta:.3f}), "
                f"{where}, E[seeds] {self.expected_seeds:.1f} at the design ({self.expected_seeds / self.optimum:.3f}x "
                f"the optimum {self.optimum:.1f}), truncated at {self.n_max} seeds")


X_MAX = 40.0  # log multipliers searched up to this (beyond, the dual only grows where no test is feasible)


def _dual(theta, n, x, alpha, power, dlt, reach) -> float:
    lam0, lam1 = math.exp(min(x[0], X_MAX)), math.exp(min(x[1], X_MAX))
    return _lagrangian(theta, n, lam0, lam1, dlt, reach)[0] - lam0 * alpha + lam1 * power


@dataclass(frozen=True)
class Optimum:
    """The least E[seeds] at the design of any (randomised) walk test with these error rates (the dual's max),
    the multipliers there, the Lagrangian policy there and the randomisation that attains it."""

    p_lo: float
    p_hi: float
    alpha: float
    power: float
    n_max: int
    value: float
    log_multipliers: tuple[float, float]
    actions: tuple[bytes, ...]
    randomised: tuple[tuple[int, int, int, float], ...]  # (k, w, other action, its chance)

    @property
    def theta(self) -> float:
        return design_theta(self.p_lo, self.p_hi)

    def witness(self) -> tuple[float, float, float]:
        """(power, type-I at the worst null, E[seeds]) of the randomised policy, exactly: E[seeds] is `value`."""
        bo, ao = self.p_hi * (1 - self.p_lo), self.p_lo * (1 - self.p_hi)
        dlt, reach = clock(self.n_max, bo + ao)
        eye = np.eye(4)

        def probs(k):
            P = eye[np.frombuffer(self.actions[k], dtype=np.int8)].T.copy()
            for kk, w, alt, rho in self.randomised:
                if kk == k:
                    P[:, w] = (1 - rho) * P[:, w] + rho * eye[alt]
            return P
        return _forward(self.theta, self.n_max, probs, dlt, reach)


    def realised(self):
        """Every deterministic test the witness can be once its uniforms are fixed (each mirrored pair of
        randomised states takes its other action or not): (chance, actions) each."""
        pairs = sorted({(k, min(w, k - w), rho) for k, w, _alt, rho in self.randomised})
        for taken in itertools.product((False, True), repeat=len(pairs)):
            acts = [np.frombuffer(a, dtype=np.int8).copy() for a in self.actions]
            chance = 1.0
            for (k, ww, rho), take in zip(pairs, taken):
                chance *= rho if take else 1 - rho
                for kk, w, alt, _rho in self.randomised:
                    if take and kk == k and min(w, k - w) == ww:
                        acts[k][w] = alt
            yield chance, acts

    def realisations(self) -> list[tuple[float, float, float, float]]:
        """(chance, power, type-I, E[seeds]) of each of `realised`, exactly."""
        bo, ao = self.p_hi * (1 - self.p_lo), self.p_lo * (1 - self.p_hi)
        dlt, reach = clock(self.n_max, bo + ao)
        return [(chance, *_forward(self.theta, self.n_max, _onehot(acts), dlt, reach)) for chance, acts in self.realised()]


def _law(p_lo: float, p_hi: float, n_max: int):
    if not 0 < p_lo < p_hi < 1:
        raise ValueError(f"the design needs two rates 0 < p_lo < p_hi < 1, got {p_lo}, {p_hi}")
    bo, ao = p_hi * (1 - p_lo), p_lo * (1 - p_hi)
    return bo / (bo + ao), *clock(n_max, bo + ao)


@functools.lru_cache(maxsize=32)
def optimum(p_lo: float, p_hi: float, alpha: float, power: float, n_max: int) -> Optimum:
    """The optimum at rates p_lo < p_hi, two-sided alpha, the registered power, n_max seeds (seconds at a
    few hundred seeds). Raises Unreachable when no walk test reaches the power within n_max seeds."""
    from scipy import optimize

    theta, dlt, reach = _law(p_lo, p_hi, n_max)

    def neg(x):
        return -_dual(theta, n_max, x, alpha, power, dlt, reach)

    start = min(((x0, x1) for x0 in np.linspace(0, 12, 5) for x1 in np.linspace(0, 12, 5)), key=neg)
    res = optimize.minimize(neg, start, method="Nelder-Mead", options={"xatol": 1e-5, "fatol": 1e-8, "maxiter": 2000})
    value, x = -float(res.fun), np.minimum(res.x, X_MAX)
    if not value <= n_max:  # a feasible test spends at most n_max seeds: a dual past it means there is none
        reached = max_power(p_lo, p_hi, alpha, n_max)
        raise Unreachable(f"no test on the discordant walk reaches power {power:g} at {p_lo:g} vs {p_hi:g} within "
                          f"{n_max} seeds at alpha {alpha:g} (the most: {reached:.3f})", reached, None)
    base = _lagrangian(theta, n_max, *np.exp(x), dlt, reach)[1]
    alts: dict[tuple[int, int], int] = {}
    for step in STEPS:
        for d0, d1 in ((step, 0), (-step, 0), (0, step), (0, -step), (step, step), (-step, -step)):
            other = _lagrangian(theta, n_max, math.exp(x[0] + d0), math.exp(x[1] + d1), dlt, reach)[1]
            for k in range(n_max + 1):
                for w in np.flatnonzero(other[k] != base[k]):
                    alts.setdefault((k, int(w)), int(other[k][w]))
        if len(alts) >= 2:
            break
    pairs = sorted({(k, min(w, k - w)) for k, w in alts})
    eye = np.eye(4)

    def evaluate(rho):
        def probs(k):
            P = eye[base[k]].T.copy()
            for i, (kk, ww) in enumerate(pairs):
                if kk == k:
                    for w in {ww, k - ww} & {w for kk2, w in alts if kk2 == k}:
                        P[:, w] = (1 - rho[i]) * eye[base[k][w]] + rho[i] * eye[alts[(k, w)]]
            return P
        return _forward(theta, n_max, probs, dlt, reach)

    witness: list = []
    if pairs:
        sol = optimize.minimize(lambda r: evaluate(r)[2], np.full(len(pairs), 0.5), method="SLSQP",
                                bounds=[(0, 1)] * len(pairs),
                                constraints=[{"type": "ineq", "fun": lambda r: evaluate(r)[0] - power},
                                             {"type": "ineq", "fun": lambda r: alpha - evaluate(r)[1]}],
                                options={"ftol": 1e-12, "maxiter": 200})
        rho = np.clip(sol.x, 0, 1)
        witness = [(k, w, alts[(k, w)], float(rho[i])) for i, (k, ww) in enumerate(pairs) for w in sorted({ww, k - ww})
                   if (k, w) in alts and rho[i] > 1e-12]
    return Optimum(p_lo, p_hi, alpha, power, n_max, value, (float(x[0]), float(x[1])),
                   tuple(a.astype(np.int8).tobytes() for a in base), tuple(witness))


def max_power(p_lo: float, p_hi: float, alpha: float, n_max: int) -> float:
    """The most power at the design any (randomised) walk test has at level alpha within n_max seeds: the
    dual of max power s.t. type-I <= alpha (the Lagrangian with no cost per seed), maximised over its multiplier."""
    from scipy import optimize

    theta, dlt, reach = _law(p_lo, p_hi, n_max)
    free = np.zeros_like(dlt)

    def dual(x: float) -> float:
        lam0 = math.exp(x)
        return _lagrangian(theta, n_max, lam0, 1.0, free, reach)[0] - lam0 * alpha

    res = optimize.minimize_scalar(lambda x: -dual(x), bounds=(-10.0, X_MAX), method="bounded",
                                   options={"xatol": 1e-8})
    return -float(dual(res.x))


@functools.lru_cache(maxsize=32)
def make_optimal(p_lo: float, p_hi: float, alpha: float, power: float, n_max: int) -> Optimal:
    """The cheapest deterministic walk test found at the design that holds alpha and the power exactly."""
    opt = optimum(p_lo, p_hi, alpha, power, n_max)
    theta, dlt, reach = _law(p_lo, p_hi, n_max)
    shipped = _deterministic(theta, n_max, opt.log_multipliers, alpha, power, dlt, reach)
    if shipped is None:
        raise Unreachable(f"no deterministic walk test found reaching power {power:g} at {p_lo:g} vs {p_hi:g} within "
                          f"{n_max} seeds at alpha {alpha:g}", 0.0, None)
    acts, pw, t1, ex = shipped
    return Optimal(p_lo, p_hi, alpha, power, n_max, tuple(a.astype(np.int8).tobytes() for a in acts), ex, t1, pw,
                   opt.value)


def _deterministic(theta, n, x, alpha, power, dlt, reach):
    """The cheapest deterministic Lagrangian policy that meets both constraints, scanning the power's
    multiplier around the dual optimum and bisecting the level's: (actions, power, type-I, E[seeds]) or None."""
    best = None
    for x1 in x[1] + np.linspace(-0.5, 2.0, 76):  # the feasible policies are lumpy in the multiplier: scan finely
        lo, hi = x[0] - 4, x[0] + 4
        for _ in range(22):
            mid = (lo + hi) / 2
            acts = _lagrangian(theta, n, math.exp(mid), math.exp(x1), dlt, reach)[1]
            if _forward(theta, n, _onehot(acts), dlt, reach)[1] <= alpha:
                hi = mid
            else:
                lo = mid
        acts = _lagrangian(theta, n, math.exp(hi), math.exp(x1), dlt, reach)[1]
        pw, t1, ex = _forward(theta, n, _onehot(acts), dlt, reach)
        if pw >= power and t1 <= alpha and (best is None or ex < best[3]):
            best = (acts, pw, t1, ex)
    return best


# ---------------------------------------------------------------- test: optimal (the optimum's boundary + the sprt's futility)


@dataclass(frozen=True)
class WalkTest:
    """`test: optimal`: a deterministic walk test read from the optimum (`walk`: the cheapest of the optimum's
    realisations, or the scan's test, at level alpha and the power), then the sprt's futility stop (on the
    seed count too: the discordant LLR plus kappa, both directions <= g) with g the largest on the grid
    that keeps the exact power at the design >= the registered power with independent AND nested arms.
    The futility stop claims nothing, so the level is the walk test's (exact, worst null)."""

    walk: Optimal
    futility: float  # g (-inf: none)

    @property
    def n_max(self) -> int:
        return self.walk.n_max

    @property
    def p_lo(self) -> float:
        return self.walk.p_lo

    @property
    def p_hi(self) -> float:
        return self.walk.p_hi

    @functools.cached_property
    def stats(self):
        """The sprt's design object, for its LLR and kappa (its boundary is not read)."""
        from prereg.stats.paired_sprt import Design

        w = self.walk
        return Design(w.p_lo, w.p_hi, w.alpha, w.power, w.n_max, (), math.nan, self.futility)

    def codes(self, t, w, ls) -> np.ndarray:
        """1 B better, 2 B worse, 4 stopped claiming nothing (the walk's stop, or futility), 0 go on."""
        out = self.walk.codes(t, w, ls)
        if self.futility > G_MIN:
            fu, fd = self.stats.futility_stats(t, w, ls)
            out = np.where((out == 0) & (fu <= self.futility) & (fd <= self.futility), FUTILE, out)
        return np.asarray(out, dtype=np.int8)

    def describe(self) -> str:
        fut = f"futility at LLR + kappa {self.futility:.3f}" if self.futility > G_MIN else "no futility stop"
        return f"{self.walk.describe()}; {fut}"


def _cheapest_realisation(opt: Optimum) -> Optimal | None:
    """The cheapest deterministic test among the optimum's realisations that holds alpha and the power exactly."""
    if len({(k, min(w, k - w)) for k, w, _alt, _rho in opt.randomised}) > MAX_TIED:
        return None  # too many to enumerate: the scan decides
    theta, dlt, reach = _law(opt.p_lo, opt.p_hi, opt.n_max)
    best = None
    for _chance, acts in opt.realised():
        pw, t1, ex = _forward(theta, opt.n_max, _onehot(acts), dlt, reach)
        if pw >= opt.power and t1 <= opt.alpha and (best is None or ex < best[3]):
            best = (acts, pw, t1, ex)
    if best is None:
        return None
    acts, pw, t1, ex = best
    return Optimal(opt.p_lo, opt.p_hi, opt.alpha, opt.power, opt.n_max, tuple(a.astype(np.int8).tobytes() for a in acts),
                   ex, t1, pw, opt.value)


_ANNOUNCE: list = []  # what to call, with one line, before a design is computed (not read back): `announcing`


@contextlib.contextmanager
def announcing(tell):
    """Within it, `tell(line)` is called before each design `make_walk_test` computes rather than reads back:
    a command's first validate of a new plan computes for seconds, and says so (fontaine-prereg validate)."""
    _ANNOUNCE.append(tell)
    try:
        yield
    finally:
        _ANNOUNCE.remove(tell)


@functools.lru_cache(maxsize=32)
def make_walk_test(p_lo: float, p_hi: float, alpha: float, power: float, n_max: int) -> WalkTest:
    """`test: optimal`'s design (seconds at a few hundred seeds; the scan's fallback, a minute), computed
    once per machine: kept in `$FONTAINE_CACHE/designs/` under the arguments and this code's own hash (a
    change to the DP computes afresh), so the driver's start, validate, freeze and the report of every run
    of a plan read it back (10 s at 40 seeds each before). Raises Unreachable when no walk test reaches
    the power within n_max seeds (never kept)."""
    args = (float(p_lo), float(p_hi), float(alpha), float(power), int(n_max))
    path = _design_path(args)
    got = _read_walk_test(path, args)
    if got is not None:
        return got
    for tell in _ANNOUNCE:
        tell(f"designing the optimal test for {p_lo:g} -> {p_hi:g} at power {power:g}, alpha {alpha:g}, "
             f"max {n_max} seeds (exact DP, seconds; once per machine, then kept in {path.parent})")
    test = _compute_walk_test(*args)
    _write_walk_test(path, args, test)
    return test


def _design_path(args: tuple) -> Path:
    from prereg.core.cache import cache_root

    code = hashlib.sha256(Path(__file__).read_bytes() + Path(sys.modules[Unreachable.__module__].__file__).read_bytes())
    key = hashlib.sha256(json.dumps([code.hexdigest(), *args]).encode()).hexdigest()[:32]
    return cache_root() / "designs" / f"optimal-{key}.json"


def _read_walk_test(path: Path, args: tuple) -> WalkTest | None:
    """The kept design of `args`, or None (none kept, unreadable, or not a design of these arguments)."""
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
        w = got["walk"]
        if got.get("args") != list(args) or len(w["actions"]) != args[4] + 1:
            return None
        actions = tuple(bytes.fromhex(a) for a in w["actions"])
        if any(len(a) != k + 1 or not set(a) <= _ACTION_CODES for k, a in enumerate(actions)):
            return None
        walk = Optimal(*args, actions, *(float(w[k]) for k in ("expected_seeds", "type1", "achieved_power", "optimum")))
        return WalkTest(walk, float(got["futility"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write_walk_test(path: Path, args: tuple, test: WalkTest) -> None:
    from prereg.core.safe_read import NotWritable
    from prereg.rundir.files import write_json_atomic

    w = test.walk
    record = {"args": list(args), "futility": test.futility,
              "walk": {"actions": [a.hex() for a in w.actions], "expected_seeds": w.expected_seeds, "type1": w.type1,
                       "achieved_power": w.achieved_power, "optimum": w.optimum}}
    try:  # atomic: another process reading it meanwhile sees the whole file or none
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, record)
    except (OSError, NotWritable):
        pass  # a cache that cannot be written costs the next process the computation, nothing else


def _compute_walk_test(p_lo: float, p_hi: float, alpha: float, power: float, n_max: int) -> WalkTest:
    from prereg.stats.paired_sprt import oc

    opt = optimum(p_lo, p_hi, alpha, power, n_max)
    walk = _cheapest_realisation(opt) or make_optimal(p_lo, p_hi, alpha, power, n_max)
    laws = ((p_hi * (1 - p_lo), p_lo * (1 - p_hi)), (p_hi - p_lo, 0.0))  # independent, nested

    def ok(g: float) -> bool:
        return all(oc(WalkTest(walk, g), b, a).better >= power for b, a in laws)

    if not ok(G_MIN):
        return WalkTest(walk, -math.inf)
    lo, hi = G_MIN, 0.0
    while hi - lo > GRID / 4:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return WalkTest(walk, round(math.floor(lo / GRID) * GRID, 6))
