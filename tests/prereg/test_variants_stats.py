"""The reads of a crossed design over registered visual variants (issue 48): per variant, pooled as the
unweighted mean with an interval whose coverage is simulated here, camera variants apart, the worst
variant, and per seed how many variants succeed."""

from __future__ import annotations

import numpy as np
import pytest

from prereg.core.wilson import wilson_interval
from prereg.rundir.rows import BASE_VARIANT
from prereg.stats.variants import pooled_coverage, pooled_interval, read_variants, variant_of


def _row(seed, variant, success, status="ok"):
    return {"seed": seed, "variant": variant, "success": success, "status": status, "progress_final_cm": 0.0,
            "progress_cm": 0.0}


# seeds 0-3; base succeeds on 0,1,2; dim on 0,1; clutter on 0; cam (a camera variant) on all four
WINS = {None: {0, 1, 2}, "dim": {0, 1}, "clutter": {0}, "cam": {0, 1, 2, 3}}
ROWS = [_row(s, v, s in won) for v, won in WINS.items() for s in range(4)]
VARIANTS = (BASE_VARIANT, "dim", "clutter", "cam")


def test_per_variant_reads_pooled_mean_worst_and_per_seed_counts():
    read = read_variants(ROWS, range(4), VARIANTS, camera=("cam",))
    assert [(v.variant, v.successes, v.n) for v in read.per_variant] == [
        ("base", 3, 4), ("dim", 2, 4), ("clutter", 1, 4), ("cam", 4, 4)]
    assert read.per_variant[1].interval == wilson_interval(2, 4)
    assert read.apart == ("cam",) and read.pooled == ("base", "dim", "clutter")
    assert read.pooled_rate == pytest.approx((3 / 4 + 2 / 4 + 1 / 4) / 3)  # the unweighted mean of the rates
    assert read.worst == "clutter"
    assert read.per_seed == {0: 3, 1: 2, 2: 1, 3: 0} and read.successes_histogram() == [1, 1, 1, 1]
    pooled = read_variants(ROWS, range(4), VARIANTS, camera=("cam",), pool_cameras=True)
    assert pooled.apart == () and pooled.pooled_rate == pytest.approx((3 + 2 + 1 + 4) / 16)
    text = "\n".join(read.lines())
    assert "cam: 4/4" in text and "camera variant, read apart" in text and "worst variant: clutter" in text
    assert "pooled (base, dim, clutter; unweighted mean over 4 seeds): 0.50" in text


def test_the_last_row_of_a_seed_counts_and_an_error_row_is_no_success():
    rows = [_row(0, "dim", False), _row(0, "dim", True), _row(1, "dim", True, status="error")]
    (read,) = read_variants(rows, [0, 1], ["dim"]).per_variant
    assert (read.successes, read.n) == (1, 2)
    assert variant_of({"variant": None}) == BASE_VARIANT


def test_the_pooled_rate_averages_the_variants_not_the_episodes():
    # only seeds every pooled variant has count: seed 3 of clutter is missing
    rows = [r for r in ROWS if not (r["variant"] == "clutter" and r["seed"] == 3)]
    read = read_variants(rows, range(4), VARIANTS, camera=("cam",))
    assert read.pooled_seeds == 3 and read.pooled_rate == pytest.approx((3 + 2 + 1) / 9)


def test_the_pooled_interval_at_the_extremes_and_between():
    assert pooled_interval(np.ones((5, 3)))[1][1] == 1.0 and pooled_interval(np.zeros((5, 3)))[1][0] == 0.0
    x = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1]], dtype=float)
    p, (lo, hi) = pooled_interval(x)
    assert p == pytest.approx(0.5) and 0.0 < lo < 0.5 < hi < 1.0
    # variants that copy each other carry the information of one variant: the interval of n seeds
    copies = np.repeat(np.array([[1], [0], [1], [0], [1], [1]], dtype=float), 3, axis=1)
    assert pooled_interval(copies)[1] == pytest.approx(wilson_interval(4, 6))
    assert pooled_interval(np.zeros((0, 3))) is None


@pytest.mark.parametrize("rates, n, rho", [((0.5, 0.5, 0.5), 30, 0.5), ((0.2, 0.5, 0.8), 30, 0.0),
                                           ((0.9, 0.8, 0.95, 0.7, 0.85), 50, 0.9)])
def test_the_pooled_interval_covers_the_pooled_rate_at_about_its_level(rates, n, rho):
    cover = pooled_coverage(rates, n, rho, sims=600, seed=1)
    assert 0.92 <= cover <= 0.995, cover  # 95% nominal; 600 simulated designs: MC s.e. ~0.009


def _folded(rows, planned, variants, batch=7):
    """One RowsFold per variant (prereg.rundir.fold.Plan.of(manifest, variant=v)), fed the same rows in batches."""
    from prereg.rundir.fold import Plan, RowsFold

    folds = {v: RowsFold(Plan(tuple(planned), variant=v)) for v in variants}
    for i in range(0, len(rows), batch):
        for f in folds.values():
            f.add_many(rows[i:i + batch])
    return {v: f.tally() for v, f in folds.items()}


@pytest.mark.parametrize("pool_cameras", [False, True])
def test_the_live_read_from_per_variant_folds_is_the_reports_read(pool_cameras):
    """The console and the notifier read a crossed design live from one fold per variant (read_tallies); the
    report reads the whole file (read_variants): on the same rows, in any order and batches, with repeated
    seeds (the last row counts), error rows, a seed outside the plan and a seed missing on one variant, the
    two reads are the same, field by field."""
    from prereg.stats.variants import read_tallies

    rng = np.random.default_rng(4)
    rows = [_row(s, v, bool(rng.random() < p)) for v, p in (("dim", .6), (None, .8), ("clutter", .3), ("cam", .9))
            for s in range(12)]
    rows += [_row(3, "dim", True), _row(5, None, False, status="error"), _row(40, "clutter", True)]
    rows = [r for r in rows if not (r["variant"] == "clutter" and r["seed"] == 7)]
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    planned = list(range(12))
    report = read_variants(rows, planned, VARIANTS, camera=("cam",), pool_cameras=pool_cameras)
    live = read_tallies(_folded(rows, planned, VARIANTS), planned, VARIANTS, camera=("cam",), pool_cameras=pool_cameras)
    assert live == report
    assert live.pooled_seeds == 11 and live.per_variant[0].n == 12  # seed 7 lacks clutter: out of the pooled seeds


def test_a_crossed_design_as_the_manifest_states_it():
    from prereg.rundir.manifest import Manifest
    from prereg.stats.variants import Crossed

    m = Manifest.from_dict({"run_id": "r", "arm": "a", "seeds": [0, 1],
                            "config": {"variants": ["dim", "cam"], "camera_variants": ["cam"], "read_variant": "dim"}})
    assert Crossed.of(m) == Crossed(("base", "dim", "cam"), "dim", ("cam",), False, "a")
    assert Crossed.of(Manifest.from_dict({"run_id": "r", "seeds": [0]})) is None and Crossed.of(None) is None
