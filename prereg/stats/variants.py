"""The reads of a crossed design over registered visual variants (issue 48): every seed run on the
scene as declared (`base`) and on each variant.

- **per variant**: k/n over the planned seeds' last rows of that variant (prereg.rundir.latest_rows,
  the one denominator; an error row is a row, never a success) with its Wilson interval;
- **pooled**: the unweighted mean of the pooled variants' rates (SimplerEnv's visual variant
  aggregation), over the seeds every pooled variant has a row for, with an interval that respects
  the crossed design: each seed's share of pooled variants that succeed is one observation (the
  variants of a seed are correlated: the same initial scene), and the Wilson interval is taken at the
  effective number of seeds that share's variance implies (`pooled_interval`, a design-effect Wilson
  interval; its coverage is simulated in tests/prereg/test_variants_stats.py and tabled in docs/prereg.md
  by scripts/variants_coverage.py);
- **camera variants** (a camera moved) are read apart, not pooled, unless the plan pools them: they
  measure sensitivity to the camera, not the scene's look;
- **the worst variant** (the lowest rate; ties: the first in the plan's order);
- **per seed**: how many of the pooled variants succeed (0..m seeds), a seed all variants miss or all solve.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from prereg.core.wilson import wilson_bounds, wilson_interval, z_of
from prereg.rundir.fold import Plan
from prereg.rundir.outcomes import SUCCESS as _SUCCESS
from prereg.rundir.outcomes import classify
from prereg.rundir.rows import latest_rows, pooled_variants, variant_of


@dataclass(frozen=True)
class VariantRead:
    variant: str
    successes: int
    n: int
    interval: tuple[float, float] | None
    camera: bool = False  # a camera-pose variant (read apart unless pooled)

    @property
    def rate(self) -> float | None:
        return self.successes / self.n if self.n else None


@dataclass(frozen=True)
class VariantsRead:
    per_variant: tuple[VariantRead, ...]
    pooled: tuple[str, ...]  # the variants the pooled rate averages
    apart: tuple[str, ...]  # camera variants read apart
    pooled_rate: float | None
    pooled_interval: tuple[float, float] | None
    pooled_seeds: int  # seeds with a row on every pooled variant
    worst: str | None
    per_seed: dict  # seed -> how many pooled variants succeeded on it

    def successes_histogram(self) -> list[int]:
        """Seeds by how many pooled variants succeeded on them: index j = seeds with j successes."""
        out = [0] * (len(self.pooled) + 1)
        for k in self.per_seed.values():
            out[k] += 1
        return out

    def lines(self) -> list[str]:
        """The read in words, one line each (results.md)."""
        out = []
        for v in self.per_variant:
            ci = f" (95% CI {v.interval[0]:.2f}-{v.interval[1]:.2f})" if v.interval else ""
            tag = " — camera variant, read apart" if v.variant in self.apart else ""
            out.append(f"{v.variant}: {v.successes}/{v.n}{ci}{tag}")
        if self.pooled_rate is not None:
            lo, hi = self.pooled_interval
            out.append(f"pooled ({', '.join(self.pooled)}; unweighted mean over {self.pooled_seeds} seeds): "
                       f"{self.pooled_rate:.2f} (95% CI {lo:.2f}-{hi:.2f})")
        if self.worst is not None:
            out.append(f"worst variant: {self.worst}")
        if self.per_seed:
            hist = self.successes_histogram()
            out.append("seeds by variants succeeding: " + ", ".join(f"{j}/{len(self.pooled)}: {c}"
                                                                     for j, c in enumerate(hist)))
        return out


@dataclass(frozen=True)
class Crossed:
    """A run's crossed design as its manifest states it (prereg.rundir.manifest.Manifest.variants and the
    rest): what a live read of it needs beside the rows."""

    variants: tuple[str, ...]  # `base` first
    read_variant: str  # the one the decision reads
    camera: tuple[str, ...] = ()
    pool_cameras: bool = False
    arm: str = ""  # a one-arm run's arm (a comparison's arms are the fold's keys)

    @classmethod
    def of(cls, manifest) -> "Crossed | None":
        """None for a run of the scene alone (or no readable manifest)."""
        if manifest is None or not manifest.variants:
            return None
        return cls(tuple(manifest.variants), manifest.read_variant, tuple(manifest.camera_variants),
                   manifest.pool_cameras, manifest.arm or "")

    def read_tallies(self, tallies, planned_seeds) -> VariantsRead:
        """`read_tallies` under this design."""
        return read_tallies(tallies, planned_seeds, self.variants, camera=self.camera, pool_cameras=self.pool_cameras)

    def plans(self, plan: Plan) -> dict:
        """variant -> the plan of its fold (`plan`, the run's, counting that variant's rows)."""
        return {v: replace(plan, variant=v) for v in self.variants}



def feed_variants(folds: dict, rows, skip=None) -> None:
    """A crossed design's rows into each variant's fold (but `skip`, fed already): each fold gets its own
    variant's rows (one pass to sort them), not every row to filter again."""
    mine: dict = {v: [] for v in folds}
    for r in rows:
        got = mine.get(variant_of(r))
        if got is not None:
            got.append(r)
    for v, fold in folds.items():
        if fold is not skip and mine[v]:
            fold.add_many(mine[v])


def pooled_interval(outcomes: np.ndarray, confidence: float = 0.95) -> tuple[float, tuple[float, float]] | None:
    """(the unweighted mean of the columns' success rates, its interval) for an n seeds x m variants 0/1
    matrix. Each seed's mean over the variants is one observation; their sample variance gives the
    variance of the mean, and the Wilson interval is taken at the effective sample size
    p(1 - p) / var, bounded by n (every variant a copy of the first) and n*m (independent). With no
    spread among the seeds' means (all 0 or all 1) the variance is not informative and n*m is used."""
    x = np.asarray(outcomes, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        return None
    n, m = x.shape
    p = float(x.mean())
    y = x.mean(axis=1)
    var = float(y.var(ddof=1)) / n if n > 1 else 0.0
    n_eff = float(n * m) if var <= 0.0 or p in (0.0, 1.0) else min(float(n * m), max(float(n), p * (1 - p) / var))
    lo, hi = wilson_bounds(p * n_eff, n_eff, z_of(confidence))
    return p, (0.0 if p == 0.0 else max(0.0, float(lo)), 1.0 if p == 1.0 else min(1.0, float(hi)))


def read_variants(rows, planned_seeds, variants, *, camera=(), pool_cameras: bool = False) -> VariantsRead:
    """The crossed design's reads. `variants`: every variant in the plan's order (`base` first);
    `camera`: those that move a camera; `pool_cameras`: the plan pools them too."""
    planned = list(planned_seeds)
    by_variant: dict[str, list] = {v: [] for v in variants}
    for r in rows:
        v = variant_of(r)
        if v in by_variant:
            by_variant[v].append(r)
    latest = {v: latest_rows(rs, planned).by_seed for v, rs in by_variant.items()}
    won = {v: {s: classify(r)[0] == _SUCCESS for s, r in latest[v].items()} for v in variants}
    return read_won(won, planned, variants, camera=camera, pool_cameras=pool_cameras)


def read_tallies(tallies, planned_seeds, variants, *, camera=(), pool_cameras: bool = False) -> VariantsRead:
    """The same reads from one arm's folds, one per variant (`tallies`: variant -> the
    prereg.rundir.fold.ArmTally of a `RowsFold(Plan.of(manifest, variant=v))`): what the console and the
    notifier show live as rows arrive, computed as the report's (`read_won`). `planned_seeds` None (a run
    without a readable plan): the seeds any variant has, in the order they came."""
    won = {v: (tallies[v].won_by_seed() if v in tallies else {}) for v in variants}  # outcome_of(s) == SUCCESS
    planned = list(planned_seeds) if planned_seeds is not None else list(dict.fromkeys(
        s for v in variants for s in won[v]))
    return read_won(won, planned, variants, camera=camera, pool_cameras=pool_cameras)


def read_won(won: dict, planned, variants, *, camera=(), pool_cameras: bool = False) -> VariantsRead:
    """The reads from each variant's counted seeds (`won`: variant -> {seed: succeeded}, the last row of each
    planned seed): the one computation behind `read_variants` (whole rows) and `read_tallies` (live folds)."""
    reads = tuple(VariantRead(v, sum(won[v].values()), len(won[v]), wilson_interval(sum(won[v].values()), len(won[v])),
                              camera=v in camera) for v in variants)
    pooled = pooled_variants(variants, camera, pool_cameras)
    apart = tuple(v for v in variants if v not in pooled)
    common = set.intersection(*(set(won[v]) for v in pooled)) if pooled else set()
    seeds = [s for s in planned if s in common]
    matrix = np.zeros((len(seeds), len(pooled)))
    for j, v in enumerate(pooled):  # column by column: a 25k-seed run's live read in milliseconds
        matrix[:, j] = np.fromiter((won[v][s] for s in seeds), dtype=bool, count=len(seeds))
    got = pooled_interval(matrix) if seeds and pooled else None
    rated = [r for r in reads if r.n]
    worst = min(rated, key=lambda r: r.rate).variant if rated else None  # min keeps the first of a tie
    return VariantsRead(per_variant=reads, pooled=pooled, apart=apart,
                        pooled_rate=got[0] if got else None, pooled_interval=got[1] if got else None,
                        pooled_seeds=len(seeds), worst=worst,
                        per_seed=dict(zip(seeds, matrix.sum(axis=1).astype(int).tolist())))


def crossed_outcomes(rng: np.random.Generator, rates, n: int, rho: float, sims: int) -> np.ndarray:
    """`sims` crossed designs (sims x n seeds x m variants, 0/1) whose variant v succeeds with marginal
    probability rates[v], the variants of one seed correlated through a shared seed difficulty
    (a Gaussian copula with correlation `rho`: rho 0, independent; rho 1, the seed decides)."""
    from statistics import NormalDist

    cut = np.array([NormalDist().inv_cdf(min(max(p, 1e-12), 1 - 1e-12)) for p in rates])
    seed = rng.standard_normal((sims, n, 1))
    noise = rng.standard_normal((sims, n, len(rates)))
    return (np.sqrt(rho) * seed + np.sqrt(1 - rho) * noise < cut).astype(float)


def pooled_coverage(rates, n: int, rho: float, sims: int = 2000, seed: int = 0) -> float:
    """The share of simulated crossed designs whose pooled interval holds the true pooled rate (the mean of
    `rates`): the coverage docs/prereg.md tables (scripts/variants_coverage.py)."""
    rng = np.random.default_rng(seed)
    truth = float(np.mean(rates))
    hits = 0
    for x in crossed_outcomes(rng, rates, n, rho, sims):
        lo, hi = pooled_interval(x)[1]
        hits += lo <= truth <= hi
    return hits / sims
