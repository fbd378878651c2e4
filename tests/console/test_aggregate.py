"""Running aggregates match a direct count, and stay bounded."""

from console.aggregate import RECENT_ROWS, RunAggregate
from console.fixtures import make_row
from prereg.core.wilson import wilson_interval
from prereg.rundir.fold import Plan
from prereg.rundir.outcomes import ENGAGED, ERROR, KNOCK_AWAY, QUIET, SUCCESS, TOUCHED, row_outcome
from prereg.rundir.rows import BadLine


def fold(rows):
    agg = RunAggregate()
    for r in rows:
        agg.add(r)
    return agg


def test_counts_match_the_rows():
    rows = [make_row(s) for s in range(100)]
    v = fold(rows).snapshot()
    assert v.rows == v.ok_rows == 100
    assert v.successes == sum(r["success"] for r in rows) == 20
    assert v.knock_aways == sum(r["knock_away"] for r in rows) == 20
    assert v.engaged == sum(r["engaged"] for r in rows)
    # quiet: ok rows that are neither a success, a knock-away nor engaged (prereg.rundir.outcomes.classify)
    assert v.quiet == sum(row_outcome(r) == QUIET for r in rows) == sum(
        not (r["success"] or r["knock_away"] or r["engaged"]) for r in rows)
    assert v.zero_fallbacks == 10 and v.predicts == 3000
    assert abs(v.zero_fallback_rate - 10 / 3000) < 1e-12
    assert v.reset_strikes == 0 and v.errors == 0 and v.corrupt == 0
    assert v.tipped == 10


def test_wilson_interval_is_scipys():
    from scipy.stats import binomtest

    for n in (1, 2, 7, 20, 100, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            lo, hi = wilson_interval(k, n)
            assert abs(lo - ci.low) < 1e-12 and abs(hi - ci.high) < 1e-12, (k, n)


def test_wilson_interval_matches_scipy_and_known_value():
    lo, hi = wilson_interval(9, 100)
    assert abs(lo - 0.0481) < 5e-4 and abs(hi - 0.1621) < 5e-4
    assert wilson_interval(0, 0) is None
    lo0, hi0 = wilson_interval(0, 20)
    assert lo0 == 0.0 and 0.1 < hi0 < 0.2


def test_outcomes_and_precedence():
    assert row_outcome(make_row(0)) == SUCCESS
    assert row_outcome(make_row(1)) == KNOCK_AWAY
    assert row_outcome(make_row(3)) == ENGAGED
    assert row_outcome(make_row(4)) == QUIET
    assert row_outcome(make_row(0, status="error", error="boom")) == ERROR
    # knock_away derived from progress_final_cm when the flag is null
    assert row_outcome(make_row(4, knock_away=None, progress_final_cm=-1.0)) == KNOCK_AWAY


def test_error_rows_reset_strikes_and_duplicates():
    agg = fold([
        make_row(0), make_row(1, status="error", error="worker 1 crashed"),
        make_row(3, reset_strikes=2), make_row(2, reset_strikes=1), make_row(2),
    ])
    v = agg.snapshot()
    assert v.errors == 1 and v.ok_rows == 3 and v.rows == 4 and v.lines == 5
    assert v.error_messages == ("seed 1: worker 1 crashed",)
    # seed 2's first row is replaced by its last: its strike is the replaced row's, not counted
    assert v.reset_strikes == 2 and v.rows_with_reset_strikes == 1
    assert v.duplicate_seeds == 1
    assert v.seed_outcomes == {0: SUCCESS, 1: ERROR, 3: TOUCHED, 2: QUIET}


def test_a_comparison_run_counts_each_arm_and_sees_no_duplicate_seed():
    """A comparison run's seed k of each arm is two episodes, never a 'duplicate seed'."""
    agg = RunAggregate(Plan(tuple(range(5)), ("clumsy", "steady")))
    agg.add_many([make_row(s, arm=a) for s in range(5) for a in ("clumsy", "steady")] + [make_row(9, arm="steady")])
    v = agg.snapshot()
    assert v.comparison and v.duplicate_seeds == 0 and v.out_of_plan == 1 and v.rows == 10
    assert [(a.arm, a.episodes, a.counts.successes) for a in v.arms] == [("clumsy", 5, 1), ("steady", 5, 1)]
    assert v.arms[1].seed_outcomes[0] == SUCCESS


def test_histogram_mean_median_and_walls():
    rows = [make_row(s, progress_final_cm=pf, wall_s=w)
            for s, (pf, w) in enumerate([(-12.0, 10.0), (0.0, 20.0), (0.0, 30.0), (0.5, 40.0), (15.0, 50.0)])]
    v = fold(rows).snapshot()
    hist = dict(v.progress_final_hist)
    assert hist["< -10"] == 1 and hist[">= 10"] == 1 and hist["+0"] == 3
    assert sum(hist.values()) == 5
    assert v.progress_final_median == 0.0
    assert abs(v.progress_final_mean - 3.5 / 5) < 1e-9
    assert v.median_wall_s == 30.0
    assert fold(rows[:4]).median_wall_s() == 25.0
    assert v.arms[0].median_wall_s == 30.0


def test_null_fields_do_not_crash():
    row = {"seed": 3, "status": None}
    v = fold([row]).snapshot()
    assert v.rows == 1 and v.progress_final_median is None and v.zero_fallback_rate is None


def test_memory_stays_bounded():
    agg = RunAggregate()
    for s in range(20_000):
        agg.add(make_row(s % 100))
    assert len(agg.recent) == RECENT_ROWS
    tally = agg.fold.tally()
    assert len(tally.progress_final) <= 10 and len(tally.walls) <= 3
    assert len(tally.seeds) == 100 and tally.episodes == 100 and tally.duplicates == 19_900


def test_bad_lines_and_reset():
    agg = fold([make_row(0)])
    agg.add_bad(BadLine(2, "{x", "not JSON"))
    v = agg.snapshot()
    assert v.corrupt == 1 and v.recent_bad[0].line_no == 2
    before = agg.version
    agg.reset()
    assert agg.rows == 0 and agg.corrupt == 0 and agg.restarts == 1 and agg.version > before


def test_the_seed_grid_shows_carried_dropped_and_off_table_cells():
    from console.grid import GRID_LABEL_W, seed_grid_text
    from prereg.rundir.outcomes import CARRIED, DROPPED, OFF_TABLE, TOUCHED

    held = {"success": False, "knock_away": False, "progress_final_cm": 0.5, "grasped": True, "grasp_tick": 50,
            "lift_max_mm": 25.0, "touched": True, "off_table": False}
    rows = [
        make_row(10, **held, released=False, carried_cm=14.0),  # held to the end
        make_row(11, **held, released=True, carried_cm=0.3, tipped=False),  # let go where it was lifted
        make_row(12, success=False, knock_away=True, progress_final_cm=-40.0, off_table=True, boat_z_mm=-748.0,
                 touched=True, grasped=False),
        make_row(13, success=False, progress_cm=2.0, progress_final_cm=0.5, touched=True, grasped=False,
                 off_table=False),
        make_row(14, success=True, grasped=True, grasp_tick=80, released=True, carried_cm=9.0, tipped=False, touched=True,
                 off_table=False),  # carried, placed and let go: the success wins
    ]
    view = fold(rows).snapshot()
    assert view.seed_outcomes == {10: CARRIED, 11: DROPPED, 12: OFF_TABLE, 13: TOUCHED, 14: SUCCESS}

    text = seed_grid_text(view, [10, 11, 12, 13, 14], 60)

    def cell(i):  # the glyph and the style drawn for the i-th seed (one line: 6 label columns, 2 per cell)
        offset = GRID_LABEL_W + 2 * i
        styles = [str(s.style) for s in text.spans if s.start <= offset < s.end]
        return text.plain[offset], styles[-1]

    assert [cell(i) for i in range(5)] == [
        ("■", "bold cyan"),  # carried not placed
        ("■", "blue"),  # grasped then dropped
        ("▼", "bold red reverse"),  # off the table
        ("■", "yellow"),  # touched
        ("■", "bold green"),  # success
    ]


def test_unreachable_seeds_are_counted_apart_and_said():
    """Issue 45: a seed whose start the SO-101 cannot reach is not in k/n, and the counts panel says how many."""
    from rich.console import Console

    from console.render import counts_table

    agg = RunAggregate(Plan(tuple(range(4))))
    agg.add_many([make_row(0), make_row(1), make_row(9, reachable=False), make_row(2, reachable=False),
                  make_row(3, success=True, reachable=False)])
    v = agg.snapshot()
    assert (v.rows, v.successes, v.unreachable) == (2, 1, 2)  # seed 0 a success; seeds 2 and 3 apart; 9 not planned
    text = Console(width=120, record=True)
    text.print(counts_table(v))
    shown = text.export_text()
    assert "unreachable" in shown and "2 seeds out of the arm's reach: not in k/n" in shown
    assert RunAggregate().snapshot().unreachable == 0


def test_a_crossed_design_is_folded_per_variant_live_as_the_report_reads_it():
    """Issue 48: the counts stay the read variant's; beside them one fold per variant gives each variant's
    k/n and the pooled rate, the report's computation (read_variants) on the rows read so far."""
    from prereg.rundir.manifest import Manifest
    from prereg.stats.story import VariantStory
    from prereg.stats.variants import Crossed, read_variants
    from tests.crossed_run import ALL, CAMERA, VARIANTS, crossed_rows

    m = Manifest.from_dict({"run_id": "r", "arm": "a", "seeds": list(range(8)),
                            "config": {"variants": list(VARIANTS), "camera_variants": list(CAMERA)}})
    agg = RunAggregate(Plan.of(m), crossed=Crossed.of(m))
    rows = crossed_rows(range(6))
    for i in range(0, len(rows), 5):  # as a tail hands them over
        agg.add_many(rows[i:i + 5])
        seen = rows[:i + 5]
        (story,) = agg.snapshot().variants
        expect = read_variants(seen, range(8), ALL, camera=CAMERA)
        assert story == VariantStory.of("a", expect, "base")
    view = agg.snapshot()
    assert (view.rows, view.successes) == (6, 5)  # the counts: base's rows alone
    assert [(c.variant, c.successes, c.n) for c in view.variants[0].cells] == [
        ("base", 5, 6), ("dim", 3, 6), ("clutter", 2, 6), ("cam-left", 6, 6)]
    agg.reset()
    assert agg.snapshot().variants[0].cells[0].n == 0 and agg.crossed == Crossed.of(m)
    assert RunAggregate(Plan()).snapshot().variants == ()
