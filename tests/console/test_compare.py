"""The compare view: arms side by side and paired per-seed deltas, live."""

import json

from console.aggregate import RunAggregate
from console.compare import ArmLine, paired
from console.widgets.compare_screen import CompareScreen
from tests.console.conftest import make_app, make_row, make_run_dir, wait_for

PREREG = {"id": "flow-vs-discrete", "sha256": "abc", "path": "x.md"}


def line(arm, outcomes):
    agg = RunAggregate()
    agg.add_many([make_row(s, success=ok, progress_final_cm=5.0 if ok else 0.0) for s, ok in outcomes.items()])
    return ArmLine(arm, f"r-{arm}", "done", len(outcomes), len(outcomes), agg.snapshot())


def test_paired_counts_and_delta_on_shared_seeds_only():
    a = line("a", {0: True, 1: True, 2: False, 3: False, 4: True})
    b = line("b", {0: True, 1: False, 2: True, 3: True, 9: True})
    p = paired(a, b)
    assert (p.shared, p.both, p.reference_only, p.other_only, p.neither) == (4, 1, 1, 2, 0)
    assert p.delta == 0.25
    lo, hi = p.ci
    assert lo < 0.25 < hi


async def test_compare_view_shows_each_arm_and_follows_new_rows(runs_dir):
    make_run_dir(runs_dir, "fvd-a-20260101-000000", arm="a", total=10, done=10, prereg=PREREG)
    b = make_run_dir(runs_dir, "fvd-b-20260101-010000", arm="b", total=10, done=4, state="running", prereg=PREREG,
                     rows=[make_row(s, arm="b", success=True) for s in range(4)])
    make_run_dir(runs_dir, "other-a-20260101-020000", arm="a", total=5, done=5,
                 prereg={"id": "another", "sha256": "x", "path": "y.md"})
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: len(app.runs) == 3 and app.detail is not None)
        app._select(b)
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == b.name)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        arms = screen.query_one("#arms")
        await wait_for(pilot, lambda: arms.row_count == 2, what="two arms")
        assert str(arms.get_cell("b", "successes")).startswith("4/4")
        paired_table = screen.query_one("#paired")
        await wait_for(pilot, lambda: paired_table.row_count == 1)
        assert str(paired_table.get_cell("b", "shared seeds")) == "4"
        with open(b / "rows.jsonl", "a") as f:  # live: a new row of b shows without leaving the view
            f.write(json.dumps(make_row(4, arm="b", success=True)) + "\n")
        await wait_for(pilot, lambda: str(arms.get_cell("b", "successes")).startswith("5/5"), what="the new row")
        await wait_for(pilot, lambda: str(paired_table.get_cell("b", "shared seeds")) == "5")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))
