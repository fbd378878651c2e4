"""The reads on hand-made rows with known answers; the intervals are scipy's own."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from prereg.document.model import Validity
from prereg.document.read import parse
from prereg.rundir.rows import read_rows
from prereg.stats.reads import (
    BOOTSTRAP_METHOD,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    HOLDS,
    NOT_HOLDS,
    UNDETERMINED,
    arm_reads,
    evaluate_rule,
    paired_bootstrap_ci,
    paired_reads,
)
from tests.prereg.conftest import make_row
from tests.prereg.test_prereg_document import GOOD


def scipy_ci(k, n, method):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method=method)
    return ci.low, ci.high


@pytest.mark.parametrize("k", [0, 9, 100])
def test_primary_intervals_equal_scipy(k):
    rows = [make_row(s, success=s < k) for s in range(100)]
    r = arm_reads("a", rows, planned_seeds=range(100))
    assert (r.successes, r.n) == (k, 100)
    # Wilson's is written once (prereg.core.wilson, plain arithmetic: the console draws it without scipy);
    # it is scipy's to the last bits of a double
    assert r.intervals["wilson"] == pytest.approx(scipy_ci(k, 100, "wilson"), abs=1e-12)
    assert r.intervals["clopper-pearson"] == pytest.approx(scipy_ci(k, 100, "exact"), abs=0)
    if k == 0:
        assert r.intervals["clopper-pearson"][0] == 0.0
    if k == 100:
        assert r.intervals["clopper-pearson"][1] == 1.0
    assert not r.stopped_early and r.primary_text() == f"{k} / 100"


def test_interval_choice():
    rows = [make_row(s) for s in range(5)]
    assert set(arm_reads("a", rows, interval="wilson").intervals) == {"wilson"}
    assert arm_reads("a", [], planned_seeds=[0, 1]).intervals == {}


def test_stopped_early_is_labelled():
    rows = [make_row(s, success=s == 3) for s in range(10)]
    r = arm_reads("a", rows, planned_seeds=range(100), run_state={"state": "stopped", "reason": "pace tripwire"})
    assert r.stopped_early and r.n == 10 and r.n_planned == 100
    assert r.primary_text() == "1 / 10 achieved (of 100 planned; stopped early: pace tripwire)"
    assert r.intervals["wilson"] == pytest.approx(scipy_ci(1, 10, "wilson"))
    assert len(r.missing_seeds) == 90


def test_secondary_split_matches_the_seeds_definitions():
    rows = [
        make_row(0, success=True, progress_cm=9.0, progress_final_cm=8.0),
        make_row(1, progress_cm=2.0, progress_final_cm=0.5),  # engaged
        make_row(2, progress_cm=0.2, progress_final_cm=-1.0),  # knock-away (at the threshold)
        make_row(3, progress_cm=3.0, progress_final_cm=-5.0),  # engaged AND knocked away
        make_row(4, progress_cm=0.0, progress_final_cm=0.0),  # quiet
        make_row(5, progress_cm=1.0, progress_final_cm=-0.99),  # quiet: 1.0 is not > 1, -0.99 not <= -1
    ]
    r = arm_reads("a", rows)
    assert r.engaged == 3 and r.knock_aways == 2 and r.quiet == 2
    assert r.knock_seeds == [2, 3] and r.success_seeds == [0]
    vals = [8.0, 0.5, -1.0, -5.0, 0.0, -0.99]
    assert r.progress_final_mean == pytest.approx(np.mean(vals))
    assert r.progress_final_median == pytest.approx(np.median(vals))


def test_validity_strikes_fallbacks_errors():
    rows = [make_row(s, predicts=30, zero_fallbacks=2 if s < 3 else 0) for s in range(10)]
    rows[4]["reset_strikes"] = 1
    rows[5].update(status="error", error="MuJoCo exploded", progress_final_cm=None, progress_cm=None)
    r = arm_reads("a", rows, validity=Validity(zero_fallback_rate_max=0.01))
    assert r.reset_strikes == 1 and r.reset_strike_episodes == [4]
    assert r.zero_fallbacks == 6 and r.predicts == 300 and r.zero_fallback_rate == pytest.approx(0.02)
    assert r.error_rows == 1 and r.error_seeds == [5]
    assert r.n == 10  # an errored episode is a row: it counts, as a non-success
    assert not r.valid
    assert {c.name for c in r.checks if not c.ok} == {"reset_strikes", "error_rows", "zero_fallback_rate"}
    clean = arm_reads("a", [make_row(s) for s in range(3)])
    assert clean.valid


def test_torn_and_bad_lines_are_set_aside(run_dir):
    rows = [make_row(s, success=s == 1) for s in range(4)]
    d = run_dir("r", rows, tail='not json\n{"seed": 9, "succ')
    got = read_rows(d / "rows.jsonl")
    assert len(got.rows) == 4 and len(got.bad) == 2 and got.bad[-1].torn
    r = arm_reads("a", got.rows, planned_seeds=range(4), bad_lines=[b.reason for b in got.bad])
    assert (r.successes, r.n) == (1, 4)
    assert any("could not be read" in n for n in r.notes)


def test_duplicate_and_unregistered_seeds():
    rows = [make_row(0), make_row(0, success=True), make_row(1), make_row(50, success=True)]
    r = arm_reads("a", rows, planned_seeds=[0, 1, 2])
    assert r.duplicate_seeds == [0] and r.extra_seeds == [50]
    assert r.successes == 1 and r.n == 2


def test_all_equal_deltas_give_a_defined_interval():
    a = arm_reads("a", [make_row(s, progress_final_cm=1.5) for s in range(20)])
    b = arm_reads("b", [make_row(s, progress_final_cm=0.5) for s in range(20)])
    p = paired_reads(a, b)
    assert p.delta_mean == pytest.approx(1.0)
    assert p.delta_ci == pytest.approx((1.0, 1.0))
    assert p.better == 20 and p.tied == 0 and p.worse == 0
    z = paired_reads(b, b)
    assert z.delta_ci == (0.0, 0.0) and z.tied == 20


def test_paired_bootstrap_equals_scipy():
    rng = np.random.default_rng(3)
    x = rng.normal(0.5, 1.0, 40)
    y = rng.normal(0.0, 1.0, 40)
    (lo, hi), method = paired_bootstrap_ci(x, y)
    ref = stats.bootstrap((x, y), lambda u, v, axis=-1: np.mean(u - v, axis=axis), paired=True, vectorized=True,
                          n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=0.95, method=BOOTSTRAP_METHOD,
                          rng=np.random.default_rng(BOOTSTRAP_SEED))
    assert (lo, hi) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=1e-12)
    assert BOOTSTRAP_METHOD in method
    assert paired_bootstrap_ci(x, y) == ((lo, hi), method)  # reproducible


def test_partial_seed_overlap_pairs_only_shared_seeds():
    a_rows = [make_row(s, progress_final_cm=float(s), success=s in (3, 7)) for s in range(0, 10)]
    b_rows = [make_row(s, progress_final_cm=float(s) - (1.0 if s % 2 else 0.0), success=s in (7, 12))
              for s in range(5, 15)]
    p = paired_reads(arm_reads("a", a_rows), arm_reads("b", b_rows))
    assert p.shared_seeds == 5  # seeds 5..9
    assert p.only_arm == [0, 1, 2, 3, 4] and p.only_comparator == [10, 11, 12, 13, 14]
    assert p.better == 3 and p.tied == 2 and p.worse == 0  # odd seeds 5, 7, 9 differ by +1
    assert p.delta_mean == pytest.approx(3 / 5)
    assert p.success_overlap == [7] and p.success_only_arm == [3] and p.success_only_comparator == [12]
    assert p.delta_ci[0] <= p.delta_mean <= p.delta_ci[1]
    assert all(math.isfinite(v) for v in p.delta_ci)


def test_no_shared_seeds():
    p = paired_reads(arm_reads("a", [make_row(0)]), arm_reads("b", [make_row(1)]))
    assert p.shared_seeds == 0 and p.delta_ci is None and p.delta_mean is None


def test_rules_verdicts():
    doc = parse(GOOD.replace("a.successes >= 1", "a.successes >= 1 and b.knock_aways < a.knock_aways"), "t.md")
    (rule,) = doc.rules()
    v = evaluate_rule(rule, {"a": {"successes": 1, "knock_aways": 3}, "b": {"knock_aways": 2}})
    assert v.verdict == HOLDS and "a.successes = 1 >= 1 (true)" in v.detail
    v = evaluate_rule(rule, {"a": {"successes": 0, "knock_aways": 3}, "b": {"knock_aways": 2}})
    assert v.verdict == NOT_HOLDS
    v = evaluate_rule(rule, {"a": {"successes": 1, "knock_aways": 3}})
    assert v.verdict == UNDETERMINED and "b.knock_aways" in v.label


def test_the_reads_the_lab_notes_made():
    """Worst knock-away and its seed, success ticks, tipped, spend, mask interventions per predict,
    and the mean boat-to-disk distance by second, all from rows (and the spend from status.json)."""
    rows = [
        make_row(0, progress_final_cm=-11.8, tipped=True, predicts=30, mean_batch=8.0, mask_violations=3,
                 wall_s=60.0, dist_by_second_cm=[10.0, 12.0, 21.8]),
        make_row(1, progress_final_cm=-2.0, predicts=10, mean_batch=4.0, wall_s=60.0,
                 dist_by_second_cm=[10.0, 11.0, 12.0]),
        make_row(2, success=True, success_tick=622, progress_final_cm=7.0, predicts=20, mean_batch=6.0,
                 wall_s=30.0, dist_by_second_cm=[10.0, 3.0]),  # ended on success: stops contributing
        make_row(3, success=True, success_tick=480, progress_final_cm=8.0, predicts=20, wall_s=30.0,
                 dist_by_second_cm=[8.0, 2.0]),
        make_row(4, success=True, success_tick=886, progress_final_cm=6.0, predicts=20, wall_s=30.0),
        make_row(5, status="error", error="boom", tipped=True, dist_by_second_cm=[99.0, 99.0, 99.0]),
    ]
    r = arm_reads("a", rows, run_state={"state": "done", "elapsed_s": 4146.0, "gpu_hours": 1.15})
    assert (r.worst_knock_cm, r.worst_knock_seed) == (-11.8, 0)
    assert r.success_tick_median == 622 and r.success_tick_range == (480, 886)
    assert r.tipped == 1  # the error row's tipped is not a read
    assert r.elapsed_s == 4146.0 and r.gpu_hours == 1.15 and r.wall_s_episodes == 210.0
    assert r.mean_batch == pytest.approx((8 * 30 + 4 * 10 + 6 * 20) / 60)  # weighted by predicts; null rows out
    assert r.predicts == 110 and r.mask_per_predict == pytest.approx(3 / 110)  # an error row's predicts were spent
    assert r.dist_by_second_mean == pytest.approx([9.5, 7.0, 16.9])  # error rows are not read
    assert r.dist_by_second_n == [4, 4, 2]
