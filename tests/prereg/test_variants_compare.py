"""The pooled paired read of a comparison run over a crossed design (prereg/stats/variants_compare.py):
B - A per seed over the pooled variants, its MOVER interval's coverage simulated over crossed designs
whose variants and arms are correlated (the table in docs/prereg.md: scripts/variants_compare_coverage.py)."""

from __future__ import annotations

import numpy as np
import pytest

from prereg.stats.variants import pooled_interval, read_variants
from prereg.stats.variants_compare import (
    MOVER,
    PAIRED_T,
    PooledDifference,
    difference_coverage,
    difference_interval,
    paired_crossed_outcomes,
    pooled_difference,
)


def _rows(arm, wins):
    """wins {variant: seeds solved} over seeds 0-4."""
    return [{"arm": arm, "seed": s, "variant": v, "success": s in won, "status": "ok", "progress_final_cm": 0.0,
             "progress_cm": 0.0} for v, won in wins.items() for s in range(5)]


def test_the_pooled_difference_is_the_mean_of_the_seeds_differences_with_the_arms_intervals_combined():
    a = read_variants(_rows("a", {None: {0, 1}, "dim": {0}, "cam": set()}), range(5), ("base", "dim", "cam"), camera=("cam",))
    b = read_variants(_rows("b", {None: {0, 1, 2, 3}, "dim": {0, 1, 2}, "cam": {4}}), range(5), ("base", "dim", "cam"),
                      camera=("cam",))
    d = pooled_difference("a", a, "b", b)
    # seeds' shares over base and dim (cam apart): a 1, .5, 0, 0, 0; b 1, 1, 1, .5, 0
    assert d.pooled == ("base", "dim") and d.seeds == 5
    assert (d.rate_a, d.rate_b, d.mean) == pytest.approx((0.3, 0.7, 0.4))
    xa = np.array([[1, 1], [1, 0], [0, 0], [0, 0], [0, 0]], dtype=float)
    xb = np.array([[1, 1], [1, 1], [1, 1], [1, 0], [0, 0]], dtype=float)
    assert d.interval == pytest.approx(difference_interval(xa, xb)[1])
    lo, hi = d.interval
    (_, (la, ua)), (_, (lb, ub)) = pooled_interval(xa), pooled_interval(xb)
    assert lo < 0.4 < hi and hi - lo < (ub - lb) + (ua - la)  # positively correlated arms: narrower than adding widths
    assert PooledDifference.from_dict(d.__dict__ | {"interval": list(d.interval)}) == d
    assert "b - a +0.40 (95% CI" in d.sentence() and "descriptive, not the decision" in d.sentence()
    with pytest.raises(ValueError, match="the two arms of one run read the same variants"):
        pooled_difference("a", a, "b", read_variants(_rows("b", {None: {0}}), range(5), ("base", "dim", "cam")))


def test_no_shared_seed_reads_as_nothing_yet_and_identical_arms_are_not_a_point():
    a = read_variants(_rows("a", {None: {0}}), range(5), ("base",))
    empty = read_variants([], range(5), ("base",))
    assert pooled_difference("a", a, "b", empty).mean is None
    assert "no seed has rows of both arms" in pooled_difference("a", a, "b", empty).sentence()
    same = np.array([[1, 0], [0, 0], [1, 1], [0, 0]], dtype=float)
    d, (lo, hi) = difference_interval(same, same)
    assert d == 0.0 and lo < 0.0 < hi  # every seed's difference 0: still an interval, never a point
    assert difference_interval(same, same, method=PAIRED_T)[1] == (0.0, 0.0)  # the paired t's failure, tabled
    with pytest.raises(ValueError, match="is not one of"):
        difference_interval(same, same, method="z")


def test_the_simulated_arms_have_the_rates_and_correlations_asked_for():
    xa, xb = paired_crossed_outcomes(np.random.default_rng(0), (0.2, 0.6), (0.5, 0.5), 200, 0.6, 1.0, 50)
    assert xa.shape == xb.shape == (50, 200, 2)
    assert xa.mean(axis=(0, 1)) == pytest.approx([0.2, 0.6], abs=0.02)
    assert xb.mean(axis=(0, 1)) == pytest.approx([0.5, 0.5], abs=0.02)
    ya, yb = xa.mean(axis=2).ravel(), xb.mean(axis=2).ravel()
    assert np.corrcoef(ya, yb)[0, 1] > 0.2  # the arms share the seed's difficulty
    ya0, yb0 = (x.mean(axis=2).ravel() for x in paired_crossed_outcomes(np.random.default_rng(0), (0.5,), (0.5,),
                                                                          200, 0.6, 0.0, 50))
    assert abs(np.corrcoef(ya0, yb0)[0, 1]) < 0.05


@pytest.mark.parametrize("rates_a, rates_b, n, rho, rho_arms", [
    ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5), 20, 0.5, 0.5),
    ((0.2, 0.5, 0.8), (0.4, 0.6, 0.9), 30, 0.0, 0.0),
    ((0.9, 0.8, 0.95, 0.7, 0.85), (0.95, 0.9, 0.97, 0.8, 0.9), 50, 0.9, 0.5),
    ((0.02, 0.05, 0.03), (0.05, 0.1, 0.05), 20, 0.9, 1.0),  # rare successes, the seed decides for both arms
])
def test_the_pooled_paired_interval_covers_the_difference_at_about_its_level(rates_a, rates_b, n, rho, rho_arms):
    cover = difference_coverage(rates_a, rates_b, n, rho, rho_arms, sims=600, seed=1)
    assert 0.92 <= cover <= 0.995, cover  # 95% nominal; 600 simulated runs: MC s.e. ~0.009


def test_a_paired_t_interval_under_covers_where_the_one_stated_does_not():
    # rare successes on 20 seeds, both arms' variants decided by the seed: most seeds' differences are 0
    args = ((0.02, 0.05, 0.03), (0.05, 0.1, 0.05), 20, 0.9, 1.0)
    assert difference_coverage(*args, sims=600, seed=2, method=PAIRED_T) < 0.9 < difference_coverage(
        *args, sims=600, seed=2, method=MOVER)
