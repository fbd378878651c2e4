"""The denominator, once: the incremental fold (prereg/rundir/fold.py) counts what `latest_rows` counts,
whatever the order of the rows and the batches they arrive in: the last row of each planned seed,
per arm, duplicates and out-of-plan rows counted apart, never twice."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from console.fixtures import make_row
from prereg.rundir.fold import ONE_ARM, Plan, RowsFold, fold_rows
from prereg.rundir.outcomes import ERROR, classify, count_rows
from prereg.rundir.rows import latest_rows, number

ARMS = ("clumsy", "steady")
COUNTS = ("rows", "ok", "errors", "successes", "knock_aways", "engaged", "quiet", "tipped", "reset_strikes",
          "rows_with_reset_strikes", "predicts", "zero_fallbacks", "mask_violations")


def _counts(c) -> dict:
    return {**{k: getattr(c, k) for k in COUNTS}, "by_outcome": dict(c.by_outcome)}


rows_strategy = st.lists(
    st.builds(
        lambda seed, arm, error, strikes: make_row(seed, arm=arm, reset_strikes=strikes,
                                                   **({"status": "error", "error": "boom"} if error else {})),
        st.integers(0, 12), st.sampled_from(ARMS + ("other",)), st.booleans(), st.integers(0, 2)),
    max_size=60)


def _batches(rows: list, cuts: list[int]) -> list[list]:
    out, start = [], 0
    for cut in sorted(c % (len(rows) + 1) for c in cuts):
        out.append(rows[start:cut])
        start = max(start, cut)
    out.append(rows[start:])
    return out


@settings(max_examples=150, deadline=None)
@given(rows_strategy, st.lists(st.integers(0, 100), max_size=6), st.booleans())
def test_the_fold_counts_the_last_row_of_each_planned_seed_per_arm_whatever_the_batches(rows, cuts, comparison):
    seeds = tuple(range(10))  # 10, 11 and 12 are out of the plan
    plan = Plan(seeds, ARMS if comparison else None)
    fold = RowsFold(plan)
    for batch in _batches(rows, cuts):
        fold.add_many(batch)
    groups = {a: [r for r in rows if r["arm"] == a] for a in ARMS} if comparison else {ONE_ARM: rows}
    assert fold.lines == len(rows)
    for key, arm_rows in groups.items():
        latest = latest_rows(arm_rows, seeds)
        tally = fold.tally(key)
        assert _counts(tally.counts) == _counts(count_rows(latest.by_seed.values()))
        assert tally.duplicates == len(latest.duplicates)
        assert tally.out_of_plan == sum(1 for r in arm_rows if r["seed"] not in seeds)
        ok = [r for r in latest.by_seed.values() if classify(r)[0] != ERROR]
        assert tally.progress_final == Counter(round(number(r["progress_final_cm"]), 2) for r in ok)
        assert tally.walls == Counter(round(r["wall_s"], 1) for r in ok)
        assert list(tally.seeds) == list(latest.by_seed)  # first-row order, as the grid draws them
    if comparison:
        assert fold.foreign == sum(1 for r in rows if r["arm"] not in ARMS)
    assert fold.episodes == sum(fold.tally(k).episodes for k in groups)
    assert fold.episodes <= plan.episodes


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.lists(st.integers(0, 100), max_size=4))
def test_milestones_are_the_figures_when_the_counted_episodes_first_reached_them(rows, cuts):
    plan = Plan(tuple(range(10)), ARMS)
    fold = RowsFold(plan, every=3)
    for batch in _batches(rows, cuts):
        fold.add_many(batch)
    one_by_one = RowsFold(plan)
    expected = {}
    for row in rows:
        before = one_by_one.episodes
        one_by_one.add_many([row])
        if one_by_one.episodes > before and one_by_one.episodes % 3 == 0:
            expected[one_by_one.episodes] = tuple(
                (k, t.episodes, t.counts.successes, t.counts.knock_aways, t.counts.engaged)
                for k, t in one_by_one.arms.items())
    assert fold.milestones == expected


def test_a_copied_line_counts_once_and_is_said_as_a_duplicate():
    """'succ 9/9' on 8 seeds, '9/8 episodes' posted: a line written twice counted twice."""
    rows = [make_row(s) for s in range(8)] + [make_row(0)]
    fold = fold_rows(rows, Plan(tuple(range(8))))
    tally = fold.tally()
    assert tally.episodes == 8 and tally.duplicates == 1 and fold.lines == 9
    assert tally.counts.successes == 1  # seed 0 (a success), once


def test_a_resumed_seed_counts_its_last_row():
    rows = [make_row(3, status="error", error="worker died"), make_row(3)]
    tally = fold_rows(rows, Plan((3,))).tally()
    assert (tally.counts.errors, tally.counts.ok, tally.duplicates) == (0, 1, 1)
    assert tally.outcome_of(3) == "touched"


def test_a_comparison_run_counts_each_arm_apart_and_no_seed_is_a_duplicate():
    rows = [make_row(s, arm=a) for s in range(5) for a in ARMS]
    fold = fold_rows(rows, Plan(tuple(range(5)), ARMS))
    assert [fold.tally(a).episodes for a in ARMS] == [5, 5] and fold.duplicates == 0
    assert fold.total().rows == 10
