"""Decisions on a crossed design's pooled read (issue 48, `protocol: read_variant: pooled`): the plan's
registered sequential test, or its registered comparison, reads the pooled rate (the unweighted mean of
the pooled variants' rates, prereg.stats.variants) instead of one variant's k/n.

The observation is the seed: seed i's share of pooled variants solved, S_i in [0, 1] (the variants of one
seed share its initial scene, so they are not independent; the seeds are). Both decisions read the plan
prefix of seeds that have a row on every pooled variant (order-free, as the one-variant tests), and both
bet with the registered comparison's own machinery (prereg.stats.comparison_engines: Waudby-Smith &
Ramdas's capital process with predictable plug-in bets), so reading after every seed keeps the error rates
(Ville's inequality), whatever the correlation between the variants:

- **one arm** (`gates: sequential: {p0, p1, alpha, beta}`): H1 (pooled rate >= p1) is accepted once the
  capital betting that the mean is above p0 reaches 1/alpha; H0 (<= p0) once the capital betting that it
  is below p1 reaches 1/beta. P(accept H1 | rate <= p0) <= alpha and P(accept H0 | rate >= p1) <= beta at
  any number of seeds read; none by the last planned seed is no decision (the frozen rules read as usual).
- **a comparison run** (`comparison: {metric: success, alpha, minimum_effect, ...}`, any `test`): per seed
  D_i = S_i(B) - S_i(A) in [-1, 1], read by `run_betting` exactly as test savi reads a progress delta:
  B better, B worse (two-sided alpha), equivalent within the minimum effect, or undecided at max seeds.

The driver calls `sequential_check` / `comparison_check` with the rows and the run's config (which also
route a one-variant read: the rows narrowed to the read variant). Type-I error, power and expected seeds
are simulated in tests/prereg/test_variants_pooled_decide.py and tabled in docs/prereg.md, beside the
base-alone tests at the same design, by scripts/variants_pooled_decide.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from prereg.document.comparison_spec import SUCCESS_METRIC, ComparisonSpec
from prereg.rundir.manifest import Manifest
from prereg.rundir.rows import BASE_VARIANT, POOLED_READ, rows_of_variant
from prereg.stats.comparison import BETTER, EQUIVALENT, UNDECIDED, WORSE, Decision
from prereg.stats.comparison_engines import _combine, _first, log_capital, plug_in_bets, run_betting
from prereg.stats.sequential import H0, H1, SequentialDecision, Sprt, check_rows
from prereg.stats.variants import read_variants

_OUTCOMES = {1: BETTER, 2: WORSE, 3: EQUIVALENT}


def reads_pooled(manifest: Manifest | None) -> bool:
    """Whether the run's plan decides on the pooled rate (a crossed design whose read_variant is `pooled`)."""
    return manifest is not None and bool(manifest.variants) and manifest.read_variant == POOLED_READ


def decision_subject(read_variant: str, variants=()) -> str:
    """What a plan's decision reads, as validate says it: a variant's name, or the pooled rate over `base` and
    the plan's `variants` (those beside base)."""
    if read_variant != POOLED_READ:
        return read_variant
    return (f"the pooled rate over {', '.join((BASE_VARIANT, *variants))} (each seed's share of them solved; a "
            "camera variant apart unless pool_cameras), its k/n counting base")


def decision_reads(read_variant: str, pooled: tuple[str, ...] = ()) -> str:
    """What a crossed design's reads read, in words (the report's note, validate's line): one variant's rows,
    or, for a pooled read, base's counts and the pooled rate's decision."""
    if read_variant != POOLED_READ:
        return f"every count, check and decision here reads the {read_variant} rows"
    over = f" ({', '.join(pooled)})" if pooled else ""
    return (f"every count, check and decision rule here reads the {BASE_VARIANT} rows (k/n of the scene as declared); "
            f"the registered sequential test and comparison decide on the pooled rate{over}: each seed's share of "
            "the pooled variants solved")


@dataclass(frozen=True)
class PooledRows:
    """What a decision on the pooled rate reads of one arm: its rows of every variant (read as the plan reads
    a success) and the run's manifest (its variants, camera variants, pool_cameras)."""

    manifest: Manifest
    rows: tuple[dict, ...]

    @classmethod
    def of(cls, manifest: Manifest | None, rows) -> "PooledRows | None":
        """The arm's pooled rows when the plan decides on the pooled rate, else None."""
        return cls(manifest, tuple(rows)) if reads_pooled(manifest) else None


def seed_shares(rows, planned_seeds, manifest: Manifest) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """(seeds, their shares of pooled variants solved, the pooled variants) over the plan prefix of seeds that
    have a row on every pooled variant (a seed's last row per variant; an error row is a non-success).
    `rows`: one arm's rows of every variant, read as the plan reads a success."""
    planned = list(planned_seeds)
    read = read_variants(rows, planned, manifest.variants, camera=manifest.camera_variants,
                         pool_cameras=manifest.pool_cameras)
    seeds = []
    for s in planned:
        if s not in read.per_seed:
            break
        seeds.append(s)
    m = len(read.pooled)
    return (np.array(seeds, dtype=int), np.array([read.per_seed[s] / m for s in seeds], dtype=float).reshape(len(seeds)),
            read.pooled)


# ---------------------------------------------------------------- one arm: the registered sequential test


def run_pooled_sequential(spec: Sprt, shares: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pooled sequential test on shares (S sequences x n seeds, each in [0, 1]): (code, 1-based time,
    log capital for H1, log capital for H0) per sequence; code 1 H1 accepted, 2 H0 accepted, 0 none (ties:
    H1 first, as the SPRT). Each side bets at its own level (plug-in bets of a one-sided test at alpha:
    the two-sided formula's log(2/(2 alpha)))."""
    x = np.clip(np.asarray(shares, dtype=float), 0.0, 1.0)
    up = log_capital(x, spec.p0, plug_in_bets(x, 2 * spec.alpha), True)  # bets the rate is above p0
    down = log_capital(x, spec.p1, plug_in_bets(x, 2 * spec.beta), False)  # bets it is below p1
    code, when = _combine(_first(up >= math.log(1 / spec.alpha)), _first(down >= math.log(1 / spec.beta)))
    return code, when, up, down


def _sequential_text(spec: Sprt, decision: str, at: int, planned: int, mean: float, log_e: float,
                     pooled: tuple[str, ...]) -> str:
    what = f"pooled rate >= {spec.p1:g}" if decision == H1 else f"pooled rate <= {spec.p0:g}"
    bar = 1 / spec.alpha if decision == H1 else 1 / spec.beta
    return (f"sequential test on the pooled rate (betting e-process over seeds' shares of {len(pooled)} pooled variants, "
            f"H0 p <= {spec.p0:g} vs H1 p >= {spec.p1:g}, alpha {spec.alpha:g}, beta {spec.beta:g}): {decision} accepted "
            f"({what}) at {at}/{planned} seeds, pooled rate so far {mean:.2f} (e-value {math.exp(log_e):.1f} >= {bar:g})")


def pooled_sequential_decision(spec, rows, manifest: Manifest, planned_seeds) -> SequentialDecision | None:
    """The registered test on the pooled rate (`spec`: a Sprt or gates.sequential's dict): the first seed of
    the plan prefix at which either side's capital reaches its bar, or None. `successes` is the
    successful (seed, variant) cells read; `llr` the deciding side's log e-value."""
    s = spec if isinstance(spec, Sprt) else Sprt.from_dict(spec)
    if s is None:
        return None
    planned = list(planned_seeds)
    _, shares, pooled = seed_shares(rows, planned, manifest)
    if shares.size == 0:
        return None
    code, when, up, down = run_pooled_sequential(s, shares[None, :])
    if int(code[0]) == 0:
        return None
    at, decision = int(when[0]), H1 if int(code[0]) == 1 else H0
    log_e = float((up if decision == H1 else down)[0, at - 1])
    mean = float(shares[:at].mean())
    cells = int(round(float(shares[:at].sum()) * len(pooled)))
    return SequentialDecision(decision, at, len(planned), cells, log_e,
                              _sequential_text(s, decision, at, len(planned), mean, log_e, pooled))


def sequential_check(spec: dict | None, rows: list[dict], config: Mapping, planned_seeds) -> dict | None:
    """For the driver, in place of prereg.stats.sequential.check_rows: the registered sequential test as the
    plan reads it (`config`: the run's config, RunConfig.as_dict()): the pooled rate when its read_variant is
    `pooled`, else the read variant's rows alone (every row in a run of the scene alone). `rows`: every
    row so far, read as the plan reads a success."""
    m = Manifest.of({"config": dict(config)})
    s = Sprt.from_dict(spec)
    if s is None:
        return None
    if not reads_pooled(m):
        return check_rows(spec, rows_of_variant(rows, m.counted_variant), planned_seeds)
    d = pooled_sequential_decision(s, rows, m, planned_seeds)
    return None if d is None else {**d.as_dict(), **s.as_dict(), "read": POOLED_READ}


# ---------------------------------------------------------------- a comparison run


def pooled_differences(spec: ComparisonSpec, rows, manifest: Manifest, planned_seeds
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """(seeds, A's shares, B's shares, the pooled variants) on the plan prefix both arms have a row for on
    every pooled variant, truncated at the registered max seeds."""
    planned = list(planned_seeds)
    cap = spec.seeds_cap(len(planned))
    sa_seeds, sa, pooled = seed_shares([r for r in rows if r.get("arm") == spec.arm_a], planned, manifest)
    sb_seeds, sb, _ = seed_shares([r for r in rows if r.get("arm") == spec.arm_b], planned, manifest)
    n = min(len(sa_seeds), len(sb_seeds), cap)
    return sa_seeds[:n], sa[:n], sb[:n], pooled


def pooled_comparison_decision(spec: ComparisonSpec, rows, manifest: Manifest, planned_seeds) -> Decision | None:
    """The registered comparison on the pooled rates (a success comparison): None while undecided before max
    seeds, else the Decision (`values` say the read was pooled, and the mean difference)."""
    if spec.metric != SUCCESS_METRIC:
        raise ValueError(f"read_variant: pooled reads success shares, but the comparison's metric is {spec.metric}: "
                         "a progress comparison reads one variant (set read_variant to a variant's name)")
    planned = list(planned_seeds)
    cap = spec.seeds_cap(len(planned))
    seeds, sa, sb, pooled = pooled_differences(spec, rows, manifest, planned)
    if seeds.size == 0:
        return None
    d = sb - sa
    code, when = run_betting(d[None, :], 1.0, spec.alpha, spec.minimum_effect)
    code, when = int(code[0]), int(when[0])
    if code == 0 and seeds.size < cap:
        return None
    at = when if code else int(seeds.size)
    outcome = _OUTCOMES.get(code, UNDECIDED)
    mean = float(d[:at].mean())
    verb = {BETTER: f"{spec.arm_b} better", WORSE: f"{spec.arm_b} worse",
            EQUIVALENT: f"equivalent within {spec.minimum_effect:g}", UNDECIDED: "undecided"}[outcome]
    text = (f"{verb} on the pooled rate at {at}/{cap} seeds: {spec.arm_b} - {spec.arm_a} {mean:+.2f} over "
            f"{len(pooled)} pooled variants (betting confidence sequence on each seed's difference of shares, "
            f"alpha {spec.alpha:g} two-sided)")
    return Decision(outcome, at, cap, text, spec, {"read": POOLED_READ, "pooled": list(pooled), "mean_difference": mean,
                                                   "rate_a": float(sa[:at].mean()), "rate_b": float(sb[:at].mean())})


def comparison_check(spec: ComparisonSpec, rows: list[dict], config: Mapping, planned_seeds) -> Decision | None:
    """For the driver, in place of prereg.stats.comparison.decide: the registered comparison as the plan reads
    it: the pooled rates when its read_variant is `pooled`, else the read variant's rows alone."""
    from prereg.stats.comparison import decide

    m = Manifest.of({"config": dict(config)})
    if reads_pooled(m):
        return pooled_comparison_decision(spec, rows, m, planned_seeds)
    a, b = spec.by_seed(rows_of_variant(rows, m.counted_variant), planned_seeds)
    return decide(spec, a, b, planned_seeds)


# ---------------------------------------------------------------- operating characteristics, simulated


def pooled_sequential_oc(spec: Sprt, rates, rho: float, n: int, sims: int = 2000, seed: int = 0):
    """The pooled test's operating characteristic over simulated crossed designs (prereg.stats.variants.
    crossed_outcomes: variant v succeeds with probability rates[v], a seed's variants correlated by `rho`),
    truncated at n seeds: an OC (prereg.stats.sequential) at the pooled rate mean(rates), its expected
    episodes counting seeds (each runs every variant)."""
    from prereg.stats.sequential import OC
    from prereg.stats.variants import crossed_outcomes

    shares = crossed_outcomes(np.random.default_rng(seed), rates, n, rho, sims).mean(axis=2)
    code, when, _, _ = run_pooled_sequential(spec, shares)
    return OC(float(np.mean(rates)), float(np.mean(code == 1)), float(np.mean(code == 2)), float(np.mean(code == 0)),
              float(np.where(code > 0, when, n).mean()))


def comparison_oc(alpha: float, effect: float, rates_a, rates_b, n: int, rho: float, rho_arms: float,
                  sims: int = 2000, seed: int = 0) -> dict[str, dict[str, float]]:
    """On the same simulated crossed comparison runs (prereg.stats.variants_compare.paired_crossed_outcomes),
    the pooled comparison's and the registered test savi's on the base variant alone (column 0: what a plan
    reading base decides on; savi is the anytime-valid test needing no assumed rates): for each, the share
    deciding B better, B worse, equivalent, none by n seeds, and the expected seeds read."""
    from prereg.stats.comparison_engines import run_discordant
    from prereg.stats.variants_compare import paired_crossed_outcomes

    xa, xb = paired_crossed_outcomes(np.random.default_rng(seed), rates_a, rates_b, n, rho, rho_arms, sims)
    a, b = xa[:, :, 0] > 0.5, xb[:, :, 0] > 0.5
    c1, t1 = run_discordant(a, b, alpha)
    c2, t2 = run_betting(b.astype(float) - a, 1.0, alpha, effect, directions=False)
    first = (t1 > 0) & ((t2 == 0) | (t1 <= t2))
    base = (np.where(first, c1, c2), np.where(first, t1, t2))
    pooled = run_betting(xb.mean(axis=2) - xa.mean(axis=2), 1.0, alpha, effect)
    out = {}
    for name, (code, when) in (("pooled", pooled), ("base (savi)", base)):
        out[name] = {"better": float(np.mean(code == 1)), "worse": float(np.mean(code == 2)),
                     "equivalent": float(np.mean(code == 3)), "undecided": float(np.mean(code == 0)),
                     "expected_seeds": float(np.where(code > 0, when, n).mean())}
    return out


__all__ = ["decision_subject", "decision_reads", "PooledRows", "reads_pooled", "seed_shares", "run_pooled_sequential",
           "pooled_sequential_decision", "sequential_check", "pooled_differences", "pooled_comparison_decision",
           "comparison_check", "pooled_sequential_oc", "comparison_oc"]
