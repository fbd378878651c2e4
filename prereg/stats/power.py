"""Power before spending: what the planned seeds can detect, said before any GPU-hour is spent.

Pure (numpy and scipy; the only file read is a pilot run's rows.jsonl, through `prereg.rundir.rows`).
Every figure is at 80% power and a two-sided alpha of 0.05 (`POWER`, `ALPHA`):

- **Primary read** (one arm's success rate): the exact one-sample binomial test of
  `scipy.stats.binomtest(k, n, p0)` (two-sided: the p-value sums every outcome no likelier than the
  one seen). Its rejection region at n seeds is {k : p <= alpha}; the power at a true rate p1 is
  the binomial pmf summed over that region, exactly. The minimum detectable effect (MDE) is the
  smallest p1 above p0 on a 0.001 grid whose power reaches 80% (and the largest below p0, when
  one does): `rate_mde`.
- **Success-rate difference** of an arm against its comparator arm: the test is Newcombe's hybrid
  score interval (his method 10, from the two Wilson intervals) for the difference of two
  *independent* proportions, rejecting when it excludes 0. The same seeds run in both arms, so
  outcomes are paired; when they correlate positively (the usual case) treating the arms as
  independent overstates the variance, so the figures are conservative. The power is exact: the
  two binomial pmfs summed over the (k_arm, k_comparator) rejection grid: `difference_mde`.
- **Paired progress delta** (progress_final_cm, arm minus comparator, per seed): the one-sample
  t test on the n per-seed deltas, power from the noncentral t, the MDE solved exactly
  (`delta_mde`; about (t_{1-alpha/2,n-1} + t_{0.8,n-1})·SD/sqrt(n), `delta_mde_formula`). The SD is
  that of the per-seed paired delta: registered (`reads.power.delta_sd_cm`), or sqrt(2) times the
  SD of one arm's per-seed values in a pilot run (`reads.power.pilot`), which assumes the two
  arms uncorrelated per seed (conservative when they correlate positively).
- **Seeds needed** for the effect the plan names (`reads.power.minimum_effect`): the smallest n
  from which the power stays at or above 80% for every n up to the plan's seeds (at least twice
  the first crossing), `seeds_needed`. Discrete tests' power is a sawtooth in n: at p0 = 0.09 the
  exact test first reaches 80% against 0.24 at 37 seeds but falls to 0.72-0.79 at 38-40 and
  42-45, so it needs 46; the line names the first tooth and the dips.

`power_lines(doc)` gives the block `fontaine-prereg validate` and `freeze` print. See
docs/prereg.md ("Power before spending"), tests/prereg/test_power.py (every MDE against 10,000
simulated plans) and docs/power.png (scripts/power_figure.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from prereg.core.wilson import wilson_bounds, z_of

ALPHA = 0.05
POWER = 0.80
RATE_STEP = 0.001  # the grid the rate MDEs are read on
N_MAX = 5000  # seeds_needed says "more than N_MAX" beyond it
ILLUSTRATIVE_RATES = (0.1, 0.3, 0.5)  # shown, labelled illustrative, when the plan assumes no rates
_RERR = 1 + 1e-7  # scipy.stats.binomtest's tolerance for "no likelier than"
_TRIM = 1e-13  # outcomes rarer than this are left out of a power sum (its error is below 1e-10)

TEST_PRIMARY = "exact binomial test (scipy binomtest, two-sided)"
TEST_DIFFERENCE = ("Newcombe's hybrid score interval excluding 0, arms treated as independent: "
                   "conservative for the same seeds when outcomes correlate positively")
TEST_DELTA = "paired t test on the per-seed deltas"


# ---------------------------------------------------------------- the primary read: one arm's rate


def binom_pvalues(n: int, p0: float) -> np.ndarray:
    """The two-sided p-value of `scipy.stats.binomtest(k, n, p0)` for every k in 0..n, vectorised.

    scipy's rule: the outcomes on the other side of n·p0 whose pmf is at most pmf(k)·(1 + 1e-7),
    plus the tail beyond k on its own side (tests/prereg/test_power.py checks it against binomtest).
    """
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, p0)
    cdf = stats.binom.cdf(k, n, p0)  # P(K <= k)
    sf_incl = np.append(stats.binom.sf(k - 1, n, p0), 0.0)  # P(K >= k), with P(K >= n + 1) = 0
    mean = n * p0
    d = pmf * _RERR
    out = np.ones(n + 1)
    c = int(math.ceil(mean))  # the upper side: pmf is non-increasing from here
    f = int(math.floor(mean))  # the lower side: non-decreasing up to here
    lo = k < mean
    if lo.any():
        up = pmf[c:]
        first = c + np.searchsorted(-up, -d[lo], side="left")  # the first upper outcome with pmf <= d
        out[lo] = cdf[lo] + sf_incl[first]
    hi = k > mean
    if hi.any():
        low = pmf[: f + 1]
        count = np.searchsorted(low, d[hi], side="right")  # lower outcomes 0..count-1 have pmf <= d
        lower_tail = np.where(count > 0, cdf[np.maximum(count - 1, 0)], 0.0)
        out[hi] = lower_tail + sf_incl[k[hi]]
    return np.minimum(out, 1.0)


def binom_rejects(n: int, p0: float, alpha: float = ALPHA) -> np.ndarray:
    """The rejection region of the exact test of p = p0 at n: a boolean per k in 0..n."""
    return binom_pvalues(n, p0) <= alpha


def binom_power(n: int, p0: float, p1, alpha: float = ALPHA) -> np.ndarray:
    """Exact power of the test of p = p0 at n seeds when the true rate is p1 (a number or an array)."""
    reject = binom_rejects(n, p0, alpha).astype(float)
    p1 = np.atleast_1d(np.asarray(p1, dtype=float))
    pmf = stats.binom.pmf(np.arange(n + 1)[None, :], n, p1[:, None])
    return pmf @ reject


@dataclass(frozen=True)
class RateMde:
    """Where a test reaches 80% power, read on the RATE_STEP grid of the varied rate."""

    n: int
    p0: float  # the baseline: the assumed rate (primary) or the comparator's (difference)
    up: float | None  # the smallest rate above p0 reaching POWER; None: none below 1
    down: float | None  # the largest rate below p0 reaching POWER; None: none above 0
    power_up: float | None = None  # the exact power at `up`
    power_down: float | None = None


def _grid_mde(p0: float, power_of, step: float = RATE_STEP) -> tuple[float | None, float | None, float | None, float | None]:
    """(up, power at up, down, power at down): the first grid rate from p0 outward whose power reaches POWER."""
    out = []
    for sign in (1, -1):
        j = np.arange(1, int(round(1 / step)) + 1)
        rates = np.round(p0 + sign * j * step, 10)
        rates = rates[(rates > 0) & (rates < 1)]
        if not rates.size:
            out += [None, None]
            continue
        pw = power_of(rates)
        hit = np.flatnonzero(pw >= POWER)
        out += [float(rates[hit[0]]), float(pw[hit[0]])] if hit.size else [None, None]
    return out[0], out[1], out[2], out[3]


def rate_mde(n: int, p0: float, alpha: float = ALPHA, step: float = RATE_STEP) -> RateMde:
    """The primary read's MDE: the true rates the exact test of p = p0 at n seeds detects with 80% power."""
    reject = binom_rejects(n, p0, alpha).astype(float)
    k = np.arange(n + 1)

    def power_of(rates):
        return stats.binom.pmf(k[None, :], n, rates[:, None]) @ reject

    up, pu, down, pd = _grid_mde(p0, power_of, step)
    return RateMde(n, p0, up, down, pu, pd)


# ---------------------------------------------------------------- two arms: the success-rate difference


def wilson(k, n: int, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of every k at once (prereg.core.wilson, clipped to [0, 1])."""
    lo, hi = wilson_bounds(np.asarray(k, dtype=float), n, z_of(1 - alpha))
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def newcombe_interval(k1, n1: int, k2, n2: int, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval (1998, method 10) for p1 - p2 of two independent proportions."""
    p1 = np.asarray(k1, dtype=float) / n1
    p2 = np.asarray(k2, dtype=float) / n2
    l1, u1 = wilson(k1, n1, alpha)
    l2, u2 = wilson(k2, n2, alpha)
    d = p1 - p2
    return d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def newcombe_rejects(k1, n1: int, k2, n2: int, alpha: float = ALPHA) -> np.ndarray:
    """The difference test: the interval excludes 0 (arrays broadcast; `newcombe_interval`, squared to skip the roots)."""
    p1 = np.asarray(k1, dtype=float) / n1
    p2 = np.asarray(k2, dtype=float) / n2
    l1, u1 = wilson(k1, n1, alpha)
    l2, u2 = wilson(k2, n2, alpha)
    d = p1 - p2
    d2 = d * d
    return ((d > 0) & (d2 > (p1 - l1) ** 2 + (u2 - p2) ** 2)) | ((d < 0) & (d2 > (u1 - p1) ** 2 + (p2 - l2) ** 2))


def _support(n: int, p: float) -> np.ndarray:
    """The outcomes of Binomial(n, p) likelier than _TRIM (the rest do not move a power sum)."""
    lo, hi = stats.binom.ppf(_TRIM, n, p), stats.binom.isf(_TRIM, n, p)
    return np.arange(int(max(lo - 1, 0)), int(min(hi + 1, n)) + 1)


def difference_power(n: int, p0: float, p1, alpha: float = ALPHA) -> np.ndarray:
    """Exact power of the difference test, n seeds per arm, comparator rate p0, arm rate p1 (number or array)."""
    p1 = np.atleast_1d(np.asarray(p1, dtype=float))
    k2 = _support(n, p0)
    pmf2 = stats.binom.pmf(k2, n, p0)
    if p1.size == 1:
        k1 = _support(n, float(p1[0]))
    else:
        k1 = np.arange(n + 1)
    reject = newcombe_rejects(k1[:, None], n, k2[None, :], n, alpha).astype(float)
    per_k1 = reject @ pmf2  # P(reject | k1), over the comparator's outcomes
    return stats.binom.pmf(k1[None, :], n, p1[:, None]) @ per_k1


def difference_mde(n: int, p0: float, alpha: float = ALPHA, step: float = RATE_STEP) -> RateMde:
    """The arm rates (comparator at p0, n seeds each) the difference test detects with 80% power."""
    up, pu, down, pd = _grid_mde(p0, lambda rates: difference_power(n, p0, rates, alpha), step)
    return RateMde(n, p0, up, down, pu, pd)


# ---------------------------------------------------------------- two arms: the paired progress delta


def delta_power(effect: float, sd: float, n: int, alpha: float = ALPHA) -> float:
    """Exact power of the two-sided one-sample t test on n paired deltas (true mean `effect`, SD `sd`)."""
    if n < 2 or sd <= 0:
        return float("nan")
    df = n - 1
    tc = stats.t.ppf(1 - alpha / 2, df)
    nc = abs(effect) / sd * math.sqrt(n)
    near = float(stats.nct.sf(tc, df, nc))  # rejecting on the effect's side
    far = float(stats.nct.cdf(-tc, df, nc))  # on the other side: tiny once nc is a few units
    # scipy's nct can give NaN deep in a tail: there the far side is 0 and the near side 1
    far = 0.0 if math.isnan(far) else far
    if math.isnan(near):
        near = 1.0 if nc > tc + 10 else near
    return near + far


def delta_mde(sd: float, n: int, alpha: float = ALPHA) -> float | None:
    """The mean paired delta (cm) the t test detects with 80% power at n seeds (None: n < 2)."""
    if n < 2 or sd <= 0:
        return None
    hi = delta_mde_formula(sd, n, alpha)
    while delta_power(hi, sd, n, alpha) < POWER:  # the formula is near; widen until it brackets (nct is NaN far out)
        hi *= 1.5
    return float(optimize.brentq(lambda d: delta_power(d, sd, n, alpha) - POWER, 1e-12 * sd, hi, xtol=1e-10 * sd))


def delta_mde_formula(sd: float, n: int, alpha: float = ALPHA) -> float | None:
    """(t_{1-alpha/2, n-1} + t_{0.8, n-1})·SD/sqrt(n): the usual approximation of `delta_mde`."""
    if n < 2 or sd <= 0:
        return None
    return float((stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(POWER, n - 1)) * sd / math.sqrt(n))


# ---------------------------------------------------------------- seeds needed


def first_seeds(power_at, n_min: int = 2, n_max: int = N_MAX) -> int | None:
    """The smallest n in [n_min, n_max] with power_at(n) >= POWER (None: not by n_max): n is doubled and
    bisected to a crossing n_b, then every n from n_b - max(n_b / 4, 25) up is tried in order (with a
    quarter fewer seeds a test's power is near 0.68, below any tooth's reach; tests/prereg/test_power.py
    checks it against a scan from 1)."""
    hi = n_min
    while power_at(hi) < POWER:
        if hi >= n_max:
            return None
        hi = min(2 * hi, n_max)
    lo = max(n_min, hi // 2)
    while hi - lo > 1:  # power_at(hi) >= POWER
        mid = (lo + hi) // 2
        if power_at(mid) >= POWER:
            hi = mid
        else:
            lo = mid
    for n in range(max(n_min, hi - max(hi // 4, 25)), hi):
        if power_at(n) >= POWER:
            return n
    return hi


@dataclass(frozen=True)
class SeedsNeeded:
    """Seeds a test needs, without the sawtooth: discrete tests' power is not monotone in n (at p0 = 0.09
    the exact test's power at a true 0.24 is 0.82 at 37 seeds, 0.72 at 38, and below 0.8 again at 42-45),
    so `n` is the smallest n from which the power stays at or above POWER for every n up to `through`,
    and `first` the first n that reaches it (a tooth when the two differ, `dips` the n between below it)."""

    n: int | None  # None: not by N_MAX
    first: int | None
    through: int
    dips: tuple[int, ...] = ()

    def text(self, what: str = "") -> str:
        if self.n is None:
            return f"more than {N_MAX} seeds"
        out = f"{self.n} seeds{what}"
        if self.dips:
            out += (f" (80% power from {self.n} on, checked to {self.through}; {self.first} seeds reach it first but "
                    f"{_spans(self.dips)} fall below)")
        return out


def _spans(ns) -> str:
    """'38-40, 42-45' for [38, 39, 40, 42, 43, 44, 45]."""
    out, start, prev = [], None, None
    for n in ns:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(out)


def seeds_needed(power_at, n_min: int = 2, n_max: int = N_MAX, through: int | None = None,
                 monotone: bool = False) -> SeedsNeeded:
    """The smallest n from which power_at(n) >= POWER holds for every n up to `through` (the plan's max seeds;
    at least twice the first crossing, where the smooth power is near 0.98 and no tooth of these tests
    reaches back below 0.8: tests/prereg/test_power.py scans to four times it). `monotone`: the power
    rises with n (the t test), so the first crossing is the answer."""
    first = first_seeds(power_at, n_min, n_max)
    if first is None:
        return SeedsNeeded(None, None, n_max)
    top = min(n_max, max(through or 0, 2 * first))
    if monotone:
        return SeedsNeeded(first, first, top)
    below = [m for m in range(first + 1, top + 1) if power_at(m) < POWER]
    n = below[-1] + 1 if below else first
    return SeedsNeeded(n if n <= n_max else None, first, top, tuple(below))


def rate_seeds(p0: float, p1: float, alpha: float = ALPHA, through: int | None = None) -> SeedsNeeded:
    """Seeds the primary read needs to detect a true rate p1 against p0 with 80% power."""
    return seeds_needed(lambda n: float(binom_power(n, p0, p1, alpha)[0]), n_min=1, through=through)


def difference_seeds(p0: float, p1: float, alpha: float = ALPHA, through: int | None = None) -> SeedsNeeded:
    """Seeds per arm the difference test needs (comparator p0, arm p1)."""
    return seeds_needed(lambda n: float(difference_power(n, p0, p1, alpha)[0]), n_min=1, through=through)


def delta_seeds(effect: float, sd: float, alpha: float = ALPHA) -> SeedsNeeded:
    """Seeds the paired t test needs to detect a mean delta `effect` (cm) at SD `sd` (its power rises with n)."""
    return seeds_needed(lambda n: delta_power(effect, sd, n, alpha), n_min=2, monotone=True)


# ---------------------------------------------------------------- a pilot run's SD


@dataclass(frozen=True)
class PilotSd:
    sd: float | None  # the paired delta's SD (sqrt(2) x one arm's per-seed SD), cm
    n: int  # the seeds it was read from
    why: str = ""  # when sd is None: why not


def pilot_delta_sd(run_dir: str | Path) -> PilotSd:
    """sqrt(2) x the SD (ddof 1) of progress_final_cm over a pilot run's seeds (a seed's last row wins)."""
    from prereg import rundir
    from prereg.rundir.rows import number

    d = Path(run_dir)
    if not d.is_dir():
        return PilotSd(None, 0, f"pilot run {d}: no such directory")
    got = rundir.counted_rows(d)  # a crossed design's pilot: its read variant's rows, one a seed
    per_seed: dict[int, float | None] = {}
    for row in got.rows:
        per_seed[row["seed"]] = number(row.get("progress_final_cm"))
    values = [v for v in per_seed.values() if v is not None]
    if len(values) < 2:
        return PilotSd(None, len(values), f"pilot run {d}: {len(values)} seed(s) with a progress_final_cm in "
                       f"{rundir.ROWS} (2 needed)")
    return PilotSd(float(math.sqrt(2) * np.std(values, ddof=1)), len(values))


# ---------------------------------------------------------------- the block validate and freeze print


def _r(x: float) -> str:
    return f"{x:.3f}"


def _rate_text(m: RateMde, what: str) -> str:
    bits = []
    if m.up is not None:
        bits.append(f">= {_r(m.up)} (+{m.up - m.p0:.3f})")
    if m.down is not None:
        bits.append(f"<= {_r(m.down)} (-{m.p0 - m.down:.3f})")
    if not bits:
        return f"no rate reaches 80% power at {m.n} seeds"
    return f"{what} " + " or ".join(bits)


def power_lines(doc) -> list[str]:
    """The "power before spending" block of validate and freeze (never raises for a bad pilot: one line says why)."""
    arms, pairs, seen = [], [], set()
    for sm in doc.sections:
        if sm.protocol is None:
            continue
        for a in sm.arms:
            arms.append((a.name, sm))
            for c in doc.comparators_for(a.name):
                if (a.name, c.name) not in seen:
                    seen.add((a.name, c.name))
                    pairs.append((a.name, c, sm))
    if not arms:
        return []
    plan = None
    for sm in doc.sections:  # the newest section's reads.power (an amendment inherits its parent's)
        if sm.reads.power is not None:
            plan = sm.reads.power
    rates = plan.rates if plan is not None else {}
    default = plan.default_rate if plan is not None else None
    effect = plan.min_success_effect if plan is not None else None
    effect_cm = plan.min_progress_cm if plan is not None else None

    def rate_of(name: str) -> float | None:
        return rates.get(name, default)

    tests = f"  tests: success rate = {TEST_PRIMARY} of the assumed rate"
    if pairs:
        tests += (f"; success difference = {TEST_DIFFERENCE}; progress = {TEST_DELTA} "
                  "(progress_final_cm, arm minus comparator)")
    out = [f"power before spending (80% power, two-sided alpha {ALPHA:g}; exact power; docs/prereg.md):", tests]
    if not rates and default is None:
        out.append("  no assumed success rates registered (reads.power.assumed_rates): the rate figures below are "
                   f"ILLUSTRATIVE, at baseline rates {', '.join(f'{p:g}' for p in ILLUSTRATIVE_RATES)}")
    unassumed: dict[int, list[str]] = {}  # arms with no assumed rate, by planned seeds: one illustrative line each
    for name, sm in arms:
        if rate_of(name) is None:
            unassumed.setdefault(len(sm.protocol.seeds), []).append(name)
    for n, names in unassumed.items():
        ill = "; ".join(f"at {p:g} " + _rate_text(rate_mde(n, p), "detects") for p in ILLUSTRATIVE_RATES)
        out.append(f"  arm{'s' if len(names) > 1 else ''} {', '.join(names)} ({n} seeds{' each' if len(names) > 1 else ''}), "
                   f"no assumed rate, ILLUSTRATIVE: {ill}")
    for name, sm in arms:
        n = len(sm.protocol.seeds)
        p0 = rate_of(name)
        if p0 is None:
            continue
        line = f"  arm {name} ({n} seeds, assumed rate {p0:g}): " + _rate_text(rate_mde(n, p0), "detects a true rate")
        if effect is not None:
            line += f"; +{effect:g} needs " + (rate_seeds(p0, p0 + effect, through=n).text() if p0 + effect < 1
                                               else f"a rate above 1 (assumed {p0:g})")
        out.append(line)
    sd, sd_src = _delta_sd(plan, doc) if pairs else (None, "")
    for name, c, sm in pairs:
        n = len(sm.protocol.seeds)
        head = f"  {name} vs {c.name} ({n} seeds each)"
        if c.arm is None:
            out.append(f"{head}: success difference not computed (a run comparator has no planned rate)")
        elif rate_of(c.arm) is None:
            ill = "; ".join(f"from {p:g} " + _rate_text(difference_mde(n, p), "detects") for p in ILLUSTRATIVE_RATES)
            out.append(f"{head}, success difference (arms as independent: conservative), ILLUSTRATIVE: {ill}")
        else:
            p0 = rate_of(c.arm)
            line = (f"{head}, success difference (arms as independent: conservative) from {c.arm} at {p0:g}: "
                    + _rate_text(difference_mde(n, p0), f"detects {name} at"))
            p1 = rate_of(name)
            if p1 is not None and p1 != p0:
                line += f"; power at the assumed {p1:g} vs {p0:g}: {100 * float(difference_power(n, p0, p1)[0]):.0f}%"
            if effect is not None:
                line += f"; +{effect:g} needs " + (difference_seeds(p0, p0 + effect, through=n).text(" per arm")
                                                   if p0 + effect < 1 else f"a rate above 1 (comparator {p0:g})")
            out.append(line)
        if sd is None:
            out.append(f"{head}, paired progress delta: {sd_src}")
            continue
        mde = delta_mde(sd, n)
        line = f"{head}, paired progress delta (SD {sd:.2f} cm, {sd_src}): "
        line += "needs at least 2 seeds" if mde is None else f"detects a mean delta of {mde:.2f} cm either way"
        if effect_cm is not None:
            line += f"; {effect_cm:g} cm needs {delta_seeds(effect_cm, sd).text()}"
        out.append(line)
    return out


def _delta_sd(plan, doc) -> tuple[float | None, str]:
    """(SD of the paired delta, where it came from) or (None, why there is none)."""
    if plan is None or (plan.delta_sd_cm is None and plan.pilot is None):
        return None, ("not computed: no SD registered (reads.power.delta_sd_cm: the per-seed paired delta's SD in cm, "
                      "or reads.power.pilot: a pilot run directory)")
    if plan.delta_sd_cm is not None:
        return plan.delta_sd_cm, "registered"
    path = Path(plan.pilot)
    if not path.is_absolute():
        path = Path(doc.path).parent / path
    got = pilot_delta_sd(path)
    if got.sd is None:
        return None, f"not computed: {got.why}"
    if got.sd == 0:
        return None, f"not computed: pilot run {path}: every seed has the same progress_final_cm (SD 0)"
    return got.sd, f"sqrt(2) x one arm's per-seed SD over {got.n} seeds of the pilot {path}: arms taken as uncorrelated"
