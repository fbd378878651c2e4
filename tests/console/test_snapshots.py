"""SVG snapshots of the main screens at 120x40, from deterministic run directories and a fixed clock.

Update with: .venv/bin/python -m pytest tests/console/test_snapshots.py --snapshot-update
"""

import os
from pathlib import Path

import psutil
import pytest
from textual.widgets import Select

from console.widgets.dialogs import ConfirmScreen, HelpScreen, LaunchScreen
from tests.console.conftest import make_app, make_row, make_run_dir, plain, screen_text, until_steady, wait_for

SIZE = (120, 40)


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Paths on screen are shown relative to the working directory: make them the same every run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    return tmp_path


def finished_runs(runs):
    make_run_dir(runs, "flow-officialmap-a-20260101-000000", arm="a", total=100, done=100, elapsed_s=3084.0,
                 gpu_hours=0.86, prereg={"id": "flow-officialmap", "sha256": "0f3c9a7e1b2d4c5f", "path": "x.md"},
                 rows=[make_row(s, arm="a") for s in range(99)] + [make_row(99, status="error", error="worker 3 crashed")],
                 extra_lines=["{torn json"])
    make_run_dir(runs, "flow-officialmap-b-20260101-010000", arm="b", total=100, done=37, state="running",
                 pid={"pid": 4_000_000, "pgid": 4_000_000, "create_time": 1.0})  # a pid that cannot exist: died


def live_tripped_run(runs):
    """A live run (its pid is this test process, create time matched) whose pace tripwire tripped."""
    me = psutil.Process()
    make_run_dir(runs, "discrete-ar-100-discrete-20260101-020000", arm="discrete", total=100, done=20,
                 state="running", elapsed_s=1800.0, gpu_hours=0.9,
                 gates={"gpu_hours": 1.0, "pace_limit_hours": 1.5, "pace_after_episodes": 10},
                 prereg={"id": "discrete-ar-100", "sha256": "9a8b7c6d5e4f", "path": "y.md"},
                 pid={"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time()},
                 rows=[make_row(s, arm="discrete", reset_strikes=1 if s == 7 else 0) for s in range(20)])


async def until_drawn(pilot, app, run_name=None):
    def ready():
        d = app.detail
        if d is None or (run_name and d.info.run_id != run_name) or d.loading:
            return False
        if any(r.loading for r in app.runs) or app.screen.query_one("#runs").row_count != len(app.runs):
            return False
        return bool(plain(app.screen.query_one("#counts")))

    def state():
        d = app.detail
        return (d and d.info.run_id, d and d.loading, [(r.run_id, r.loading) for r in app.runs],
                app.screen, app.selected)

    await wait_for(pilot, ready, what="the selected run's panels", state=state)
    await until_still(pilot, app)


async def until_still(pilot, app, timeout: float = 10.0):
    """Until two renders 0.1 s apart are the same picture: a DataTable rebuilt for a new size
    repaints its rows over the next idles, later on a loaded machine than a fixed pause allows."""
    await until_steady(pilot, lambda: screen_text(app), timeout=timeout, what="the screen")


def test_main_screen_finished_and_died_runs(snap_compare, here):
    finished_runs(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await wait_for(pilot, lambda: len(app.runs) == 2)
        app._select(Path("runs/flow-officialmap-a-20260101-000000").resolve())
        await until_drawn(pilot, app, "flow-officialmap-a-20260101-000000")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_main_screen_died_run(snap_compare, here):
    finished_runs(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, "flow-officialmap-b-20260101-010000")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_main_screen_live_run_with_tripped_pace_gate(snap_compare, here):
    live_tripped_run(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await wait_for(pilot, lambda: app.screen.query_one("#banner").display)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_stop_confirmation(snap_compare, here):
    live_tripped_run(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_launch_dialog(snap_compare, here):
    prereg_dir = here / "preregs"
    prereg_dir.mkdir()
    src = Path(__file__).resolve().parents[2] / "prereg" / "examples" / "demo.md"
    (prereg_dir / "demo.md").write_text(src.read_text())
    app = make_app(Path("runs"), Path("preregs"))

    async def run_before(pilot):
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        app.screen.query_one("#prereg", Select).value = "preregs/demo.md"
        await wait_for(pilot, lambda: app.screen.query_one("#arm", Select).value == "scripted")
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, here):
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


# -- every screen at 80x24, 120x40 and 200x60 (issue 16.5) --------------------------------

SIZES = [(80, 24), (120, 40), (200, 60)]
ids = [f"{w}x{h}" for w, h in SIZES]


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_main_screen_sizes(snap_compare, here, size):
    finished_runs(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, "flow-officialmap-b-20260101-010000")

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_live_run_sizes(snap_compare, here, size):
    live_tripped_run(Path("runs"))
    finished_runs(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, "discrete-ar-100-discrete-20260101-020000")
        await wait_for(pilot, lambda: app.screen.query_one("#banner").display)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_seed_drill_down_sizes(snap_compare, here, size):
    from console.widgets.seed_screen import SeedScreen
    from tests.console.test_seed_view import predicts_line, write_video

    rows = [make_row(s, video="videos/rollout_seed003.mp4" if s == 3 else None) for s in range(10)]
    d = make_run_dir(Path("runs"), "film-scripted-20260101-000000", total=10, done=10, rows=rows)
    write_video(d / "videos" / "rollout_seed003.mp4", size=(320, 120))
    (d / "predicts.jsonl").write_text("".join(__import__("json").dumps(predicts_line(3, r)) + "\n" for r in range(3)))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await pilot.press("g", "right", "right", "right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.frames_shown >= 1)
        await pilot.press("right", "right", "right")
        await wait_for(pilot, lambda: app.screen.index == 3)
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_results_with_the_chart_inline_sizes(snap_compare, here, size, monkeypatch):
    from PIL import Image, ImageDraw

    from console.widgets import dialogs
    from console.widgets.dialogs import ResultsScreen

    d = make_run_dir(Path("runs"), "demo-tiny-engine-scripted-20260101-000000", total=6, done=6,
                     prereg={"id": "demo-tiny-engine", "sha256": "x", "path": "preregs/demo.md"})

    def fake_report(prereg_file, arm_runs):  # a fixed chart and fixed words: the dialog is what is checked
        img = Image.new("RGB", (400, 200), (250, 250, 250))
        draw = ImageDraw.Draw(img)
        for i, h in enumerate((60, 120, 90, 170, 30, 140)):
            draw.rectangle((20 + 60 * i, 190 - h, 60 + 60 * i, 190), fill=(40, 110, 200) if i % 2 else (220, 90, 40))
        img.save(d / "chart.png")
        return 0, "successes 2/6 (33.3%), Wilson 95% [9.7, 70.0]%\nknock-aways 1/6"

    monkeypatch.setattr(dialogs, "run_report", fake_report)
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await wait_for(pilot, lambda: app.screen.query_one("#results-chart").display)
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_compare_view_sizes(snap_compare, here, size):
    from console.widgets.compare_screen import CompareScreen
    from tests.console.test_compare import registered_runs

    flow = [make_row(s, arm="flow", progress_final_cm=0.5 * (s % 4)) for s in range(10)]
    disc = [make_row(s, arm="discrete", success=s % 3 == 0, progress_final_cm=1.0 + 0.25 * (s % 5)) for s in range(6)]
    registered_runs(Path("runs"), Path("."), flow_rows=flow, discrete_rows=disc, discrete_state="stopped")
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None
                       and len(app.screen.view.paired) == 1)
        # and the decision rules: a refresh that read the runs before the watcher knew the registration's
        # document draws the pairs without them, and the next one (a second later, more under load) adds them
        await wait_for(pilot, lambda: "provisional at 6/10" in plain(app.screen.query_one("#verdicts")),
                       what="the decision rules", state=lambda: plain(app.screen.query_one("#verdicts")))
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


# -- a resize, not only a start at the size (issue 27): from 160x48 to each size ---------------

RESIZES = [(80, 24), (200, 60)]
resize_ids = [f"160x48-to-{w}x{h}" for w, h in RESIZES]


def columns_settled(table) -> bool:
    """The rebuilt columns are as wide as their cells (DataTable sizes new rows' columns on idle)."""
    run = next(c for c in table.columns.values() if c.key.value == "run")
    cells = [len(str(table.get_row_at(i)[0])) for i in range(table.row_count)]
    return bool(cells) and run.get_render_width(table) == max(cells) + 2 * table.cell_padding


@pytest.mark.parametrize("size", RESIZES, ids=resize_ids)
def test_main_screen_resized(snap_compare, here, size):
    finished_runs(Path("runs"))
    make_run_dir(Path("runs"), "demo-tiny-grammar-masked-20260101-030000-a1b2c3d4", arm="tiny-grammar-masked",
                 total=6, done=6, rows=[make_row(s, arm="tiny-grammar-masked") for s in range(6)])
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await pilot.resize_terminal(*size)
        table = app.screen.query_one("#runs")
        await wait_for(pilot, lambda: table.size.width == size[0] - 2 and columns_settled(table)
                       and table.virtual_size.width <= table.scrollable_content_region.width)
        await until_drawn(pilot, app)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


@pytest.mark.parametrize("size", RESIZES, ids=resize_ids)
def test_seed_drill_down_resized(snap_compare, here, size):
    from console.widgets.seed_screen import SeedScreen
    from tests.console.test_seed_view import write_video

    rows = [make_row(s, video="videos/rollout_seed003.mp4" if s == 3 else None) for s in range(10)]
    d = make_run_dir(Path("runs"), "film-scripted-20260101-000000", total=10, done=10, rows=rows)
    write_video(d / "videos" / "rollout_seed003.mp4", size=(320, 160))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await pilot.press("g", "right", "right", "right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.frames_shown >= 1)
        await pilot.resize_terminal(*size)
        thumb = app.screen.query_one("#thumb-first")
        await wait_for(pilot, lambda: app.screen.size.width == size[0]
                       and abs(thumb.region.width / (2 * max(1, thumb.region.height)) - 2.0) < 0.25)
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_a_failing_snapshot_says_which_screen_rows_differ():
    """What CI prints on a mismatch (its HTML report stays on the CI machine): the rows, in words."""
    from tests.console.conftest import snapshot_difference

    shots = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    wide = (shots / "test_main_screen_resized[160x48-to-200x60].svg").read_text()
    other = (shots / "test_main_screen_died_run.svg").read_text()
    assert snapshot_difference(wide, wide) == ""
    said = snapshot_difference(wide, other, limit=2)
    assert said.count("differs in its") == 2 and "... and " in said and "more rows" in said
    first = said.split("\n")
    assert first[0] == "screen row at y=2 differs in its text:" and "╭─ runs ─" in first[1] and "╭─ runs ─" in first[2]


def test_main_screen_comparison_run(snap_compare, here):
    """A comparison run: each arm's counts side by side, a grid line per arm, the rows' arms."""
    from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

    doc = compare_doc(here)
    make_comparison_run(doc, Path("runs") / "demo-compare-clumsy-vs-steady-20260101-000000",
                        comparison_rows([s < 4 for s in range(12)], [True] * 12))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, "demo-compare-clumsy-vs-steady-20260101-000000")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


# -- issue 38: a comparison run, the compare view and the launch dialog at 80x24, 120x40 and 200x60,
# started at the size and resized to it from 160x48 (the one-arm main screen's 120x40 resize too) ----

FROM = (160, 48)
EDGES = [(80, 24), (200, 60)]  # 120x40, started, is the snapshot above each section's
edge_ids = [f"{w}x{h}" for w, h in EDGES]
resize_all_ids = [f"160x48-to-{w}x{h}" for w, h in SIZES]
COMPARISON_RUN = "demo-compare-clumsy-vs-steady-20260101-000000"


def comparison_run(here):
    from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

    make_comparison_run(compare_doc(here), Path("runs") / COMPARISON_RUN,
                        comparison_rows([s < 4 for s in range(12)], [True] * 12))


async def resized_main(pilot, app, size):
    """Resize, then wait until the runs list is rebuilt for the new width and the panels redrawn."""
    await pilot.resize_terminal(*size)
    table = app.screen.query_one("#runs")
    await wait_for(pilot, lambda: table.size.width == size[0] - 2 and columns_settled(table)
                   and table.virtual_size.width <= table.scrollable_content_region.width,
                   what=f"the runs list at {size}")
    await until_drawn(pilot, app)


@pytest.mark.parametrize("size", [(120, 40)], ids=["160x48-to-120x40"])
def test_main_screen_resized_to_the_middle_size(snap_compare, here, size):
    finished_runs(Path("runs"))
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app)
        await resized_main(pilot, app, size)

    assert snap_compare(app, terminal_size=FROM, run_before=run_before)


@pytest.mark.parametrize(("start", "size"), [(s, None) for s in EDGES] + [(FROM, s) for s in SIZES],
                         ids=edge_ids + resize_all_ids)
def test_main_screen_comparison_run_at_sizes(snap_compare, here, start, size):
    """Started at the size, or (size given) started at 160x48 and resized to it."""
    comparison_run(here)
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, COMPARISON_RUN)
        if size:
            await resized_main(pilot, app, size)

    assert snap_compare(app, terminal_size=start, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=resize_all_ids)
def test_compare_view_of_a_comparison_run_resized(snap_compare, here, size):
    from console.widgets.compare_screen import CompareScreen

    comparison_run(here)
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, COMPARISON_RUN)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None
                       and len(app.screen.view.arms) == 2 and bool(plain(app.screen.query_one("#band"))),
                       what="the comparison's band", timeout=60)  # the first read took over 10 s with two busy loops
        await pilot.resize_terminal(*size)
        await wait_for(pilot, lambda: app.screen.size == size, what=f"the compare view at {size}")
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=FROM, run_before=run_before)


def launch_dialog_app(here):
    (here / "preregs").mkdir()
    src = Path(__file__).resolve().parents[2] / "prereg" / "examples" / "demo.md"
    (here / "preregs" / "demo.md").write_text(src.read_text())
    return make_app(Path("runs"), Path("preregs"))


async def document_chosen(pilot, app):
    await pilot.press("l")
    await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
    app.screen.query_one("#prereg", Select).value = "preregs/demo.md"
    await wait_for(pilot, lambda: app.screen.query_one("#arm", Select).value == "scripted"
                   and app.screen.query_one("#launch-settings").display)


@pytest.mark.parametrize("size", EDGES, ids=edge_ids)
def test_launch_dialog_sizes(snap_compare, here, size):
    app = launch_dialog_app(here)

    async def run_before(pilot):
        await document_chosen(pilot, app)
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=resize_all_ids)
def test_launch_dialog_resized(snap_compare, here, size):
    app = launch_dialog_app(here)

    async def run_before(pilot):
        await document_chosen(pilot, app)
        await pilot.resize_terminal(*size)
        await wait_for(pilot, lambda: app.screen.size == size, what=f"the dialog at {size}")
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=FROM, run_before=run_before)


# -- issue 49: a comparison run's pages where its panels do not all fit: the seeds and the histogram,
# each whole (the histogram was cut off at 120x40; at 80x24 its page showed clumsy's bars only) ------

PAGED = [((80, 24), None), ((120, 40), None), (FROM, (80, 24)), (FROM, (120, 40))]


@pytest.mark.parametrize("page", ["3", "5"], ids=["seeds", "histogram"])
@pytest.mark.parametrize(("start", "size"), PAGED, ids=["80x24", "120x40", "160x48-to-80x24", "160x48-to-120x40"])
def test_comparison_run_pages(snap_compare, here, start, size, page):
    comparison_run(here)
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, COMPARISON_RUN)
        if size:
            await resized_main(pilot, app, size)
        await pilot.press(page)
        shown = "#grid" if page == "3" else "#hist"
        await wait_for(pilot, lambda: app.screen.compact and app.screen.query_one(shown).display,
                       what=f"page {page} at {size or start}")
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=start, run_before=run_before)


def test_main_screen_crossed_design(snap_compare, here):
    """Issue 48: a crossed design's counts, a column per variant (k/n; base decides, the camera variant apart)
    and the pooled rate with its interval."""
    from tests.crossed_run import make_crossed_run

    make_crossed_run(Path("runs"), "crossed-a-20260101-000000", total=40, done=24)
    app = make_app(Path("runs"))

    async def run_before(pilot):
        await until_drawn(pilot, app, "crossed-a-20260101-000000")
        await wait_for(pilot, lambda: "pooled" in plain(app.screen.query_one("#variants")))
        await until_still(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
