"""A comparison run on the main screen (issue 31, part 2): each arm counted apart and side by side, the
latest rows with an arm column, the seed grid with a line per arm, and no false "duplicate seeds"
(seed k of each arm is two episodes). It read "successes 31/39" pooled, warned of 19 duplicate rows,
and drew one cell per seed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from console.widgets.panels import RecentRows, SeedGrid
from console.widgets.runs_table import RunsTable
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run, row
from tests.console.conftest import make_app, plain, wait_for

A_WINS = [s < 4 for s in range(12)]  # clumsy 4/12, steady 12/12: decided "steady better" at 12/60
B_WINS = [True] * 12
RUN = "demo-compare-clumsy-vs-steady-20260101-000000"


def comparison_run(tmp_path: Path, extra: list[dict] = ()) -> Path:
    doc = compare_doc(tmp_path)
    return make_comparison_run(doc, tmp_path / "runs" / RUN, comparison_rows(A_WINS, B_WINS) + list(extra))


async def opened(pilot, app):
    await wait_for(pilot, lambda: app.detail is not None and not app.detail.loading
                   and "clumsy" in plain(app.screen.query_one("#counts")), what="the comparison run's panels")


def test_the_main_screen_counts_each_arm_apart_side_by_side(tmp_path):
    comparison_run(tmp_path, extra=[row("steady", 3, True)])  # a copied line of steady's seed 3

    async def go():
        app = make_app(tmp_path / "runs")
        async with app.run_test(size=(160, 50)) as pilot:
            await opened(pilot, app)
            counts = plain(app.screen.query_one("#counts")).splitlines()
            head = next(line for line in counts if "clumsy" in line)
            assert head.index("clumsy") < head.index("steady")  # A's column, then B's
            succ = next(line for line in counts if line.lstrip().startswith("successes"))
            assert succ.split()[1:] == ["4/12", "33%", "12/12", "100%"]  # each over its own 12 episodes, never 16/24 pooled
            assert not any("duplicate" in line for line in counts)  # seed k of each arm is two episodes
            repeated = next(line for line in counts if line.lstrip().startswith("repeated seeds"))
            assert repeated.split()[2] == "1"  # the copied line, counted once and said
            view = app.detail.view
            assert [(a.arm, a.episodes, a.counts.successes) for a in view.arms] == [("clumsy", 12, 4), ("steady", 12, 12)]
            # the runs list: each arm's successes, side by side
            table = app.screen.query_one(RunsTable)
            assert str(table.get_row_at(0)[4]) == "4/12 12/12"
            assert str(table.get_row_at(0)[3]) == "24/120"

    asyncio.run(go())


def test_the_latest_rows_name_their_arm_and_the_grid_has_a_line_per_arm(tmp_path):
    comparison_run(tmp_path)

    async def go():
        app = make_app(tmp_path / "runs")
        async with app.run_test(size=(160, 50)) as pilot:
            await opened(pilot, app)
            await wait_for(pilot, lambda: "arm" in plain(app.screen.query_one(RecentRows)).split("\n")[0])
            recent = plain(app.screen.query_one(RecentRows)).split("\n")
            assert recent[0].split()[:3] == ["arm", "seed", "outcome"]
            assert recent[-1].split()[:3] == ["steady", "11", "success"] and recent[-2].split()[:2] == ["clumsy", "11"]
            grid = app.screen.query_one(SeedGrid)
            lines = plain(grid).split("\n")
            assert lines[0].split()[:2] == ["clumsy", "0"] and lines[1].split()[:2] == ["steady", "0"]
            # seed k of both arms in one column: clumsy fails from seed 4 on, steady succeeds throughout
            await pilot.press("g")
            await wait_for(pilot, lambda: grid.has_focus)
            assert grid.selected_key == ("clumsy", 0)
            await pilot.press("down")
            assert grid.selected_key == ("steady", 0)
            for _ in range(4):
                await pilot.press("right")
            assert grid.selected_key == ("steady", 4)
            await pilot.press("enter")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "SeedScreen")
            assert (app.screen.seed, app.screen.arm) == (4, "steady")
            await wait_for(pilot, lambda: app.screen.row is not None, what="the seed's row")
            assert app.screen.row["arm"] == "steady" and app.screen.row["seed"] == 4

    asyncio.run(go())


def test_at_80_columns_the_runs_list_keeps_a_comparison_runs_arms_whole(tmp_path):
    """The succ column is sized for each arm's share of the run's total (60/60 60/60 of 120 episodes):
    sized for 120/120 per arm, its spare columns clipped the arm to 'clumsy…-steady' at 80x24."""
    comparison_run(tmp_path)

    async def go():
        app = make_app(tmp_path / "runs")
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_for(pilot, lambda: table.row_count == 1 and str(table.get_row_at(0)[4]) == "4/12 12/12",
                           what="the comparison run's row")
            await wait_for(pilot, lambda: table.size.width == 78)
            assert str(table.get_row_at(0)[2]) == "clumsy-vs-steady"
            widths = [c.get_render_width(table) for c in table.columns.values()]
            assert sum(widths) <= table.scrollable_content_region.width  # and nothing pushed off the screen

    asyncio.run(go())


def test_the_arms_intervals_stand_apart_in_the_counts_panel(tmp_path):
    """Each arm's rate and interval as one cell, right-aligned one column apart, read '33% CI95 [14, 61]% 100%
    CI95 [76, 100]%' at every size: which interval is whose, and where one ends, took a second look. Now the
    rate is beside its count, the interval on its own line, the arms three columns apart; the panel is no
    wider (it wrapped an interval at 120x40, where the counts panel has half the screen)."""
    comparison_run(tmp_path)

    async def go():
        app = make_app(tmp_path / "runs")
        async with app.run_test(size=(80, 24)) as pilot:
            await opened(pilot, app)
            counts = plain(app.screen.query_one("#counts")).splitlines()
            line = next(line for line in counts if "CI95" in line)
            assert line.split() == ["CI95", "%", "[14,", "61]", "[76,", "100]"]
            assert line.index("[76") - line.index("61]") - len("61]") >= 3  # the arms stand apart
            await wait_for(pilot, lambda: app.screen.query_one("#counts").region.width == 80)
            assert max(len(line.rstrip()) for line in counts) <= 80 - 4  # inside the panel's border and padding

    asyncio.run(go())


def test_at_80x24_the_cut_header_ends_in_an_ellipsis(tmp_path):
    """In a small terminal the header has three lines: the comparison's decision, a stop reason of ~230
    characters, was cut after 'at 12/60 seeds:' with no sign of more (and the 'missing:' line below it)."""
    comparison_run(tmp_path)

    async def go():
        app = make_app(tmp_path / "runs")
        async with app.run_test(size=(80, 24)) as pilot:
            await opened(pilot, app)
            header = app.screen.query_one("#run-header")
            await wait_for(pilot, lambda: plain(header).endswith("…"), what="the cut header",
                           state=lambda: plain(header))
            lines = plain(header).split("\n")
            assert len(lines) == 3 and all(len(line) <= 78 for line in lines)
            assert lines[2].startswith("stopped: decided: (comparison) steady better than clumsy")
            await wait_for(pilot, lambda: header.region.height == 3, what="the header laid out at its three lines",
                           state=lambda: header.region)  # the text is set a refresh before the layout follows
            await pilot.resize_terminal(160, 50)  # room for it all: whole again
            await wait_for(pilot, lambda: "missing: pid.json" in plain(header) and "…" not in plain(header))

    asyncio.run(go())
