"""Before spending: a registered comparison's operating characteristics (type-I error, power, expected
seeds against the batch test) by simulating paired arms, and the batch test's power and seeds
(McNemar for success, the paired t test for progress). validate/freeze print `operating_lines`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prereg.document.comparison_spec import PROGRESS_METRIC, SUCCESS_METRIC, ComparisonSpec
from prereg.stats.comparison import _mcnemar_table, run_betting, run_discordant, run_fixed, run_step

# ---------------------------------------------------------------- before spending: simulated operating characteristics


def pair_probs(pa: float, pb: float, rho: float = 0.0) -> tuple[float, float]:
    """(P(B only), P(A only)) per seed for rates pa, pb when, with probability rho, B's outcome copies
    A's latent draw (a shared seed difficulty) and is independent otherwise."""
    b_only = (1 - rho) * pb * (1 - pa) + rho * max(0.0, pb - pa)
    a_only = (1 - rho) * pa * (1 - pb) + rho * max(0.0, pa - pb)
    return b_only, a_only


def simulate_success(rng, sims: int, n: int, pa: float, pb: float, rho: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    u = rng.random((sims, n))
    v = np.where(rng.random((sims, n)) < rho, u, rng.random((sims, n)))
    return u < pa, v < pb


def simulate_deltas(rng, sims: int, n: int, delta: float, sd: float, bound: float) -> np.ndarray:
    return np.clip(rng.normal(delta, sd, (sims, n)), -bound, bound)


def run_sequences(spec: ComparisonSpec, n: int, a=None, b=None, d=None) -> tuple[np.ndarray, np.ndarray]:
    """The registered test on simulated sequences (S x n): (code, seeds read) per sequence."""
    if spec.metric == SUCCESS_METRIC:
        if spec.test == "fixed":
            code, when = run_fixed(a, b, spec.alpha, spec.minimum_effect, n)
        else:
            c1, t1 = (run_step(a, b, spec.alpha, n) if spec.test == "step" else run_discordant(a, b, spec.alpha))
            c2, t2 = run_betting(b.astype(float) - a, 1.0, spec.alpha, spec.minimum_effect, directions=False)
            first2 = (c2 > 0) & ((c1 == 0) | (t2 < t1))
            code, when = np.where(first2, c2, c1), np.where(first2, t2, t1)
    elif spec.test == "fixed":
        code, when = run_fixed(d, None, spec.alpha, spec.minimum_effect, n)
    else:
        code, when = run_betting(d, spec.delta_bound_cm, spec.alpha, spec.minimum_effect)
    return code, np.where(code > 0, when, n)


def mcnemar_power(n: int, b_only: float, a_only: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test at n seeds to say 'B better' (b_only > a_only)."""
    from scipy import stats

    pd = b_only + a_only
    if pd <= 0:
        return 0.0
    theta = b_only / pd
    D = np.arange(n + 1)
    crit = _mcnemar_table(alpha, max(n, 1))[: n + 1]
    # B better: the losses l = D - w <= crit[D] (and w > l)
    p_rej = np.where(crit >= 0, stats.binom.cdf(crit, D, 1 - theta), 0.0)
    return float((stats.binom.pmf(D, n, pd) * p_rej).sum())


def t_power(n: int, delta: float, sd: float, alpha: float) -> float:
    from scipy import stats

    if n < 2:
        return 0.0
    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = delta / sd * math.sqrt(n)
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def batch_seeds(power: float, *, b_only: float | None = None, a_only: float | None = None,
                delta: float | None = None, sd: float | None = None, alpha: float = 0.05,
                n_max: int = 5000) -> int | None:
    """The fewest seeds at which the fixed-n paired test (exact McNemar, or the paired t test) reaches `power`."""
    for n in range(2, n_max + 1):
        p = (mcnemar_power(n, b_only, a_only, alpha) if delta is None else t_power(n, delta, sd, alpha))
        if p >= power:
            return n
    return None


@dataclass(frozen=True)
class Operating:
    label: str
    better: float
    worse: float
    equivalent: float
    undecided: float
    expected_seeds: float
    batch_power: float  # the fixed-n paired test's at max_seeds
    batch_seeds: int | None  # the fixed-n paired test's seeds for the sequential test's power ("B better")


def operating(spec: ComparisonSpec, n: int, *, pa=None, pb=None, rho=0.0, delta=None, sd=None,
              sims: int = 2000, seed: int = 20260824, label: str = "") -> Operating:
    rng = np.random.default_rng(seed)
    if spec.metric == SUCCESS_METRIC:
        a, b = simulate_success(rng, sims, n, pa, pb, rho)
        code, seeds = run_sequences(spec, n, a=a, b=b)
        bo, ao = pair_probs(pa, pb, rho)
        bp = mcnemar_power(n, bo, ao, spec.alpha)
        kw = {"b_only": bo, "a_only": ao}
    else:
        d = simulate_deltas(rng, sims, n, delta, sd, spec.delta_bound_cm)
        code, seeds = run_sequences(spec, n, d=d)
        bp = t_power(n, delta, sd, spec.alpha)
        kw = {"delta": delta, "sd": sd}
    better = float(np.mean(code == 1))
    need = None
    if better > 0.05 and (spec.metric == PROGRESS_METRIC or kw["b_only"] > kw["a_only"]):
        need = batch_seeds(better, alpha=spec.alpha, n_max=max(5000, 4 * n), **kw)
    return Operating(label, better, float(np.mean(code == 2)), float(np.mean(code == 3)),
                     float(np.mean(code == 0)), float(seeds.mean()), bp, need)


def operating_lines(spec: ComparisonSpec, planned: int, sims: int = 2000, power_plan=None) -> list[str]:
    """validate/freeze's block: the registered test's simulated type-I, power and expected episodes at the
    plan's assumed effects, next to the fixed-n paired test's."""
    n = spec.seeds_cap(planned)
    cases = []
    if spec.metric == SUCCESS_METRIC:
        rates = spec.assumed_rates
        if rates is None and power_plan is not None:
            r = power_plan.rates
            ra = r.get(spec.arm_a, power_plan.default_rate)
            rb = r.get(spec.arm_b, power_plan.default_rate)
            rates = (ra, rb) if ra is not None and rb is not None else None
        base = rates[0] if rates else 0.1
        cases.append((f"no difference ({base:g} vs {base:g})", {"pa": base, "pb": base}))
        if rates and rates[0] != rates[1]:
            cases.append((f"assumed {rates[0]:g} -> {rates[1]:g}", {"pa": rates[0], "pb": rates[1]}))
        hi = min(0.999, base + spec.minimum_effect)
        cases.append((f"minimum effect {base:g} -> {hi:g}", {"pa": base, "pb": hi}))
    else:
        sd = spec.delta_sd_cm or (power_plan.delta_sd_cm if power_plan is not None else None) or 3.0
        cases.append((f"no difference (SD {sd:g} cm)", {"delta": 0.0, "sd": sd}))
        if spec.assumed_delta_cm:
            cases.append((f"assumed {spec.assumed_delta_cm:+g} cm", {"delta": spec.assumed_delta_cm, "sd": sd}))
        cases.append((f"minimum effect {spec.minimum_effect:+g} cm", {"delta": spec.minimum_effect, "sd": sd}))
    out = [f"comparison registered: {spec.describe()}, max {n} seeds per arm "
           f"(simulated, {sims} sequences each, seeded; two arms = 2 episodes per seed):",
           "    case                          B better  B worse  equiv.  undecided  E[episodes]  "
           "| batch at max: power  batch episodes for the same power"]
    for label, kw in cases:
        o = operating(spec, n, sims=sims, label=label, **kw)
        need = "-" if o.batch_seeds is None else f"{2 * o.batch_seeds}"
        out.append(f"    {label:<29} {o.better:>8.3f} {o.worse:>8.3f} {o.equivalent:>7.3f} {o.undecided:>10.3f} "
                   f"{2 * o.expected_seeds:>12.1f}  | {o.batch_power:>19.3f}  {need:>32}")
    if spec.metric == SUCCESS_METRIC:
        out.append("    'no difference' rows: B better + B worse is the type-I error (at most alpha "
                   f"{spec.alpha:g}); arms simulated independent (same-seed correlation lowers both type-I and batch n)")
    else:
        out.append(f"    deltas simulated normal, clipped to +/-{spec.delta_bound_cm:g} cm; the batch is the paired t test "
                   "(its power exact, noncentral t)")
    return out
