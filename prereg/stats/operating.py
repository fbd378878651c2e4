"""Before spending: a registered comparison's operating characteristics (type-I error, power, expected
seeds against the batch test and the information floor), exact where the test allows it (test sprt:
prereg/stats/paired_sprt.py; the fixed-n tests) and by simulating paired arms otherwise (savi, step),
for the registered test and every test the plan could register instead; the batch test's power and
seeds (McNemar for success, the paired t test for progress). validate/freeze print
`comparison_advice(...).lines` and refuse a test that cannot reach the registered power."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from prereg.document.comparison_spec import PROGRESS_METRIC, SUCCESS_METRIC, ComparisonSpec
from prereg.stats import paired_optimal, paired_sprt
from prereg.stats.comparison import clipped, designed_test, progress_bound
from prereg.stats.comparison_engines import mcnemar_table, run_betting, run_discordant, run_fixed, run_step

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
        elif spec.test in ("sprt", "optimal"):
            code, when = paired_sprt.run(designed_test(spec, n), a, b)
        else:
            c1, t1 = (run_step(a, b, spec.alpha, n) if spec.test == "step" else run_discordant(a, b, spec.alpha))
            c2, t2 = run_betting(b.astype(float) - a, 1.0, spec.alpha, spec.minimum_effect, directions=False)
            first2 = (c2 > 0) & ((c1 == 0) | (t2 < t1))
            code, when = np.where(first2, c2, c1), np.where(first2, t2, t1)
    elif spec.test == "fixed":
        code, when = run_fixed(d, None, spec.alpha, spec.minimum_effect, n)
    else:
        code, when = run_betting(clipped(spec, d), progress_bound(spec), spec.alpha, spec.minimum_effect)
    return code, np.where(code > 0, when, n)


def mcnemar_power(n: int, b_only: float, a_only: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test at n seeds to say 'B better' (b_only > a_only)."""
    from scipy import stats

    pd = b_only + a_only
    if pd <= 0:
        return 0.0
    theta = b_only / pd
    D = np.arange(n + 1)
    crit = mcnemar_table(alpha, max(n, 1))[: n + 1]
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


@functools.lru_cache(maxsize=256)  # a report and every end post ask for the same plan's batch
def batch_seeds(power: float, *, b_only: float | None = None, a_only: float | None = None,
                delta: float | None = None, sd: float | None = None, alpha: float = 0.05,
                n_max: int = 5000) -> int | None:
    """The fewest seeds at which the fixed-n paired test (exact McNemar, or the paired t test) reaches `power`."""
    for n in range(2, n_max + 1):
        p = (mcnemar_power(n, b_only, a_only, alpha) if delta is None else t_power(n, delta, sd, alpha))
        if p >= power:
            return n
    return None


# ---------------------------------------------------------------- advice before spending (validate / freeze)

SIMS = 2000  # simulated sequences per case, for the tests computed by simulation (seeded)
SEED = 20260824
SUCCESS_TESTS = ("optimal", "sprt", "step", "savi", "fixed")  # what a success comparison could register, in this order
PROGRESS_TESTS = ("fixed", "savi")


@dataclass(frozen=True)
class Case:
    """A truth the tests are read at: both arms' success rates, or the mean paired delta and its SD."""

    kind: str  # "null" | "assumed" | "minimum"
    label: str
    pa: float | None = None
    pb: float | None = None
    delta: float | None = None
    sd: float | None = None

    @property
    def law(self) -> tuple[float, float]:
        """(P(B only), P(A only)) per seed, arms independent."""
        return pair_probs(self.pa, self.pb)


@dataclass(frozen=True)
class Reading:
    """One test at one case: P(B better), P(B worse), P(another stop: equivalent, futile), E[seeds]."""

    better: float
    worse: float
    other: float
    expected_seeds: float


@dataclass(frozen=True)
class TestAdvice:
    test: str
    how: str  # "exact" | "simulated" | "" (not computed)
    readings: dict  # case kind -> Reading
    power: float | None  # P(claims the design's direction) at the design
    max_seeds: int
    note: str = ""  # not computed: why; or what the test would need
    needs_seeds: int | None = None  # the max seeds from which it reaches the power (when known)


@dataclass
class Advice:
    lines: list[str]
    refusal: str | None  # the registered test cannot reach the registered power within max seeds: why, and who can


def _success_cases(spec: ComparisonSpec, power_plan) -> tuple[list[Case], Case | None, bool]:
    """(cases, the design case, whether the rates are the plan's): no difference at A's rate, the assumed
    rates, A's rate + minimum effect. Without assumed rates: A at 0.1, ILLUSTRATIVE, and no design."""
    rates = spec.assumed_rates
    if rates is None and power_plan is not None:
        r = power_plan.rates
        ra, rb = r.get(spec.arm_a, power_plan.default_rate), r.get(spec.arm_b, power_plan.default_rate)
        rates = (ra, rb) if ra is not None and rb is not None else None
    base = rates[0] if rates else 0.1
    cases = [Case("null", f"no difference {base:g} vs {base:g}", base, base)]
    if rates and rates[0] != rates[1]:
        cases.append(Case("assumed", f"assumed {rates[0]:g} -> {rates[1]:g}", rates[0], rates[1]))
    if base + spec.minimum_effect < 1:
        cases.append(Case("minimum", f"minimum effect {base:g} -> {base + spec.minimum_effect:g}", base,
                          base + spec.minimum_effect))
    design = next((c for c in cases if c.kind == "assumed"), None) or next((c for c in cases if c.kind == "minimum"), None)
    return cases, design, rates is not None


def _progress_cases(spec: ComparisonSpec, power_plan) -> tuple[list[Case], Case | None, float | None]:
    sd = spec.delta_sd_cm or (power_plan.delta_sd_cm if power_plan is not None else None)
    if sd is None:
        return [], None, None
    cases = [Case("null", "no difference", delta=0.0, sd=sd)]
    if spec.assumed_delta_cm:
        cases.append(Case("assumed", f"assumed {spec.assumed_delta_cm:+g} cm", delta=spec.assumed_delta_cm, sd=sd))
    cases.append(Case("minimum", f"minimum effect {spec.minimum_effect:+g} cm", delta=spec.minimum_effect, sd=sd))
    return cases, cases[1], sd


def floor_seeds_normal(effect: float, sd: float, alpha: float, power: float) -> float:
    """Wald's bound on E[seeds] for any paired test of the mean delta with this power at `effect` (normal
    deltas, SD known: the per-seed KL is effect^2 / (2 sd^2)) and type-I <= alpha/2 per direction."""
    kl = effect * effect / (2 * sd * sd)
    return math.inf if kl <= 0 else paired_sprt.kl_bern(power, alpha / 2) / kl


def _kl_per_seed(case: Case, design: Case, spec: ComparisonSpec) -> float:
    """The per-seed KL a test of this comparison gains at `case`: from an alternative to the nearest null,
    or from a null to the design."""
    if spec.metric == SUCCESS_METRIC:
        if case.kind == "null":
            b1, a1 = design.law
            return paired_sprt.seed_kl_null(case.law[0], max(b1, a1), min(b1, a1))
        bo, ao = case.law
        return paired_sprt.seed_kl_alternative(max(bo, ao), min(bo, ao))
    effect = design.delta if case.kind == "null" else case.delta
    return effect * effect / (2 * case.sd * case.sd)


def floor_seeds(case: Case, design: Case, spec: ComparisonSpec, claims: float, power: float) -> float:
    """Wald's bound on E[seeds] at `case` for ANY test with the error rates this one has: at an alternative,
    kl(claims || alpha/2) / KL (it claims the true direction with chance `claims`, a null at most alpha/2);
    at no difference, kl(1 - claims || 1 - power) / KL (it claims with chance `claims` there and `power` at
    the design). 0 when the test has no more power than a coin at level alpha/2."""
    kl = _kl_per_seed(case, design, spec)
    if kl <= 0:
        return math.inf
    if case.kind == "null":
        return paired_sprt.kl_bern(1 - claims, 1 - power) / kl if claims < power else 0.0
    return paired_sprt.kl_bern(claims, spec.alpha / 2) / kl if claims > spec.alpha / 2 else 0.0


def _simulate(spec: ComparisonSpec, n: int, case: Case, seed: int) -> Reading:
    rng = np.random.default_rng(seed)
    if spec.metric == SUCCESS_METRIC:
        a, b = simulate_success(rng, SIMS, n, case.pa, case.pb)
        code, seeds = run_sequences(spec, n, a=a, b=b)
    else:
        code, seeds = run_sequences(spec, n, d=simulate_deltas(rng, SIMS, n, case.delta, case.sd, spec.delta_bound_cm))
    return Reading(float(np.mean(code == 1)), float(np.mean(code == 2)), float(np.mean(code >= 3)), float(seeds.mean()))


def _exact_fixed(spec: ComparisonSpec, n: int, case: Case) -> Reading:
    """The batch test at n seeds, exactly: exact McNemar (binomial sums), or the paired t test (noncentral t)."""
    if spec.metric == SUCCESS_METRIC:
        bo, ao = case.law
        return Reading(mcnemar_power(n, bo, ao, spec.alpha), mcnemar_power(n, ao, bo, spec.alpha), 0.0, float(n))
    if not case.delta:
        return Reading(spec.alpha / 2, spec.alpha / 2, 0.0, float(n))  # exact for normal deltas
    from scipy import stats

    crit, nc = stats.t.ppf(1 - spec.alpha / 2, n - 1), case.delta / case.sd * math.sqrt(n)
    return Reading(float(stats.nct.sf(crit, n - 1, nc)), float(stats.nct.cdf(-crit, n - 1, nc)), 0.0, float(n))


def _advise(spec: ComparisonSpec, test: str, n: int, cases: list[Case], design: Case | None, registered: bool,
            example_clip: float | None) -> TestAdvice:
    """One test (the registered one, or an alternative) read at every case; its power at the design."""
    from prereg.stats import step as step_mod

    alt = replace(spec, test=test)
    if spec.metric == PROGRESS_METRIC and test == "savi" and alt.clip_cm is None:
        alt = replace(alt, clip_cm=example_clip)
    readings: dict = {}
    if test == "fixed":
        readings = {c.kind: _exact_fixed(alt, n, c) for c in cases}
        how = "exact"
    elif test in ("sprt", "optimal"):
        lo, hi = design.pa, design.pb
        make = paired_sprt.make_design if test == "sprt" else paired_optimal.make_walk_test
        try:
            d = make(min(lo, hi), max(lo, hi), spec.alpha, spec.power, n)
        except paired_sprt.Unreachable as exc:
            return TestAdvice(test, "", {}, exc.reached, n, f"reaches power {exc.reached:.3f} < {spec.power:g} within "
                              f"{n} seeds" + (f"; needs max_seeds >= {exc.needed}" if exc.needed else ""), exc.needed)
        for c in cases:
            o = paired_sprt.oc(d, *c.law)
            readings[c.kind] = Reading(o.better, o.worse, o.futile, o.expected_seeds)
        how = "exact"
    else:
        if test == "step" and not registered and not step_mod.policy_at_hand(n, spec.alpha / 2):
            return TestAdvice(test, "", {}, None, n, f"not computed here: STEP's {n}-seed policy is synthesised on first "
                              "use (a minute at 200 seeds); register test: step to see it")
        try:
            readings = {c.kind: _simulate(alt, n, c, SEED + i) for i, c in enumerate(cases)}
        except step_mod.StepUnavailable as exc:
            if registered:  # said as before, in one line, by the caller
                raise
            return TestAdvice(test, "", {}, None, n, str(exc))
        how = "simulated"
    power = None
    if design is not None and design.kind in readings:
        r = readings[design.kind]
        up = design.pb > design.pa if spec.metric == SUCCESS_METRIC else design.delta > 0
        power = r.better if up else r.worse
    label = test
    if test == "savi" and spec.metric == PROGRESS_METRIC:
        label = f"savi, clip {alt.clip_cm:g} cm" if spec.clip_cm is not None else f"savi, e.g. clip_cm {alt.clip_cm:g}"
    return TestAdvice(label, how, readings, power, n)


def _batch_at(spec: ComparisonSpec, design: Case) -> int | None:
    """The fixed-n batch test's seeds for the registered power at the design (exact McNemar, or the paired t test)."""
    if spec.metric == SUCCESS_METRIC:
        bo, ao = design.law
        return batch_seeds(spec.power, b_only=max(bo, ao), a_only=min(bo, ao), alpha=spec.alpha)
    return batch_seeds(spec.power, delta=abs(design.delta), sd=design.sd, alpha=spec.alpha)


def sized_batch_seeds(spec: ComparisonSpec, power_plan=None) -> int | None:
    """The seeds of the batch `validate` sized for the registered power at the plan's design (what it prints as
    'the batch ... needs N seeds'): the base a run's episodes saved are counted against. None without a
    design (no assumed rates or SD registered)."""
    if spec.metric == SUCCESS_METRIC:
        _cases, design, _real = _success_cases(spec, power_plan)
    else:
        _cases, design, _sd = _progress_cases(spec, power_plan)
    return _batch_at(spec, design) if design is not None else None


def comparison_advice(spec: ComparisonSpec, planned: int, power_plan=None) -> Advice:
    """validate/freeze's block for a registered comparison: for the registered test and each test the plan
    could register instead, the expected episodes at no difference, at the assumed effect and at the
    minimum effect, each against the batch (the fixed-n test sized for the registered power at the
    design) and against the information floor (Wald's bound), its power at the design, its type-I at
    no difference and its worst case (max seeds x 2); and the refusal when the registered test cannot
    reach the registered power within max seeds."""
    n = spec.seeds_cap(planned)
    head = f"comparison registered: {spec.describe()}, max {n} seeds per arm (2 episodes a seed)"
    if spec.metric == SUCCESS_METRIC:
        cases, design, real = _success_cases(spec, power_plan)
        order, example_clip = SUCCESS_TESTS, None
    else:
        cases, design, sd = _progress_cases(spec, power_plan)
        real = design is not None
        order = PROGRESS_TESTS
        example_clip = spec.clip_cm or (max(1.0, round(2.5 * sd * 2) / 2) if sd else None)
        if not cases:
            return Advice([head, "  not computed: no SD of the paired delta registered (comparison.delta_sd_cm, or "
                                 "reads.power.delta_sd_cm / pilot)"], None)
    out = [head]
    if spec.metric == SUCCESS_METRIC and not real:
        out.append("  no assumed rates (comparison.assumed_rates or reads.power.assumed_rates): the figures below are "
                   f"ILLUSTRATIVE, with A at {cases[0].pa:g}")
    batch = optimum = None
    if design is not None:
        batch = _batch_at(spec, design)
        if spec.metric == SUCCESS_METRIC:
            bo, ao = design.law
            kl = paired_sprt.seed_kl_alternative(max(bo, ao), min(bo, ao))
            what = f"{design.pa:g} -> {design.pb:g}"
            batch_test = "exact McNemar"
        else:
            kl = design.delta ** 2 / (2 * design.sd ** 2)
            what = f"{design.delta:+g} cm (SD {design.sd:g} cm)"
            batch_test = "paired t test"
        floor = floor_seeds(design, design, spec, spec.power, spec.power)
        out.append(f"  design {what} at power {spec.power:g}: the batch ({batch_test}, sized for it) needs "
                   + (f"{batch} seeds" if batch else "more than 5000 seeds")
                   + f"; the information floor (Wald's bound from the per-seed KL {kl:.4f}) is {floor:.1f} seeds"
                   + (f", {floor / batch:.2f} of the batch" if batch else ""))
        if spec.metric == SUCCESS_METRIC:
            optimum, line = _optimum_line(spec, design, n, floor, batch)
            out.append(line)
    tests = [spec.test] + [t for t in order if t != spec.test]
    advice = [_advise(spec, t, n, cases, design, t == spec.test, example_clip) for t in tests]
    out.append("  expected episodes (x the batch's seeds, x the floor for the test's own error rates"
               + (", at the design x the optimum" if optimum else "") + ") at: "
               + " | ".join(c.label for c in cases) + "; then power at the design, type-I at no difference, worst case")
    width = max(len(a.test) for a in advice) + 13
    for a in advice:
        mark = ">" if a.test.split(",")[0] == spec.test else " "
        name = f"{a.test} ({a.how})" if a.how else a.test
        if not a.readings:
            out.append(f"  {mark} {name:<{width}} {a.note}")
            continue
        cells = []
        for c in cases:
            r = a.readings[c.kind]
            ep = 2 * r.expected_seeds
            rel = f"{r.expected_seeds / batch:.2f}" if batch else "-"
            fl = 0.0
            if design is not None and a.power is not None:
                up = (c.pb >= c.pa) if spec.metric == SUCCESS_METRIC else (c.delta >= 0)
                fl = floor_seeds(c, design, spec, r.better if up else r.worse, a.power)
            opt = f", {r.expected_seeds / optimum:.2f}" if optimum and c is design else ""
            cells.append(f"{ep:6.1f} ({rel}, {r.expected_seeds / fl:.2f}{opt})" if 0 < fl < math.inf
                         else f"{ep:6.1f} ({rel}, -{opt})")
        null = a.readings["null"]
        power = "-" if a.power is None else f"{a.power:.3f}"
        out.append(f"  {mark} {name:<{width}} " + " | ".join(cells)
                   + f"; power {power}; type-I {null.better + null.worse:.4f}; worst {2 * a.max_seeds}")
    notes = []
    if spec.metric == SUCCESS_METRIC:
        notes.append("arms independent in every case; optimal and the sprt are exact at every correlation "
                     "(tests/prereg/test_paired_optimal.py, test_paired_sprt.py), same-seed correlation lowers the "
                     "others' type-I")
    else:
        notes.append(f"deltas normal, clipped at +/-{spec.delta_bound_cm:g} cm; savi tests the mean of the deltas "
                     "clipped to +/-its clip, not the mean (docs/prereg.md)")
    out.append("    " + "; ".join(notes))
    refusal = None
    if real and design is not None:
        mine = advice[0]
        if mine.power is not None and mine.power < spec.power:
            refusal = _refusal(spec, n, mine, advice[1:], design, batch)
    return Advice(out, refusal)


def _optimum_line(spec: ComparisonSpec, design: Case, n: int, floor: float, batch: int | None) -> tuple[float | None, str]:
    """(the optimum's E[seeds] or None, its line): the fewest expected seeds at the design of any test on the
    discordant walk at this alpha and power within n seeds (prereg/stats/paired_optimal.py, exact)."""
    lo, hi = sorted((design.pa, design.pb))
    what = (f"  the optimum (the fewest expected seeds at the design of any test that claims on the discordant seeds' "
            f"wins and losses as they come, alpha {spec.alpha:g}, power {spec.power:g}, max {n} seeds; exact DP): ")
    try:
        opt = paired_optimal.optimum(lo, hi, spec.alpha, spec.power, n).value
    except paired_sprt.Unreachable:
        return None, what + f"none reaches the power within {n} seeds (the batch claims at max seeds, which they do not)"
    return opt, (what + f"{opt:.1f} seeds" + (f", {opt / batch:.2f} of the batch" if batch else "")
                 + f", {opt / floor:.2f}x the floor")


def _refusal(spec: ComparisonSpec, n: int, mine: TestAdvice, others: list[TestAdvice], design: Case,
             batch: int | None) -> str:
    what = (f"{design.pa:g} -> {design.pb:g}" if spec.metric == SUCCESS_METRIC
            else f"{design.delta:+g} cm (SD {design.sd:g} cm)")
    reached = "" if mine.power is None else f" (it reaches {mine.power:.3f})"
    would = [f"test {a.test} does ({a.power:.3f})" for a in others if a.power is not None and a.power >= spec.power]
    if mine.needs_seeds:
        would.append(f"test {spec.test} with max_seeds >= {mine.needs_seeds}")
    if batch and not any(w.startswith("test fixed") for w in would):
        would.append(f"test fixed with max_seeds >= {batch}")
    return (f"test {spec.test} cannot reach power {spec.power:g} at {what} within max_seeds {n}{reached}; "
            + ("; ".join(would) if would else "no registered test does: plan more seeds"))
