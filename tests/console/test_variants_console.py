"""A crossed design in the console (issue 48): a column per variant in the counts (k/n, the read variant
marked `decides`, the camera variant `apart`) and the pooled rate with its interval, live as rows arrive
and the report's story once the run has a results.json; the layout still fits at 80x24."""

from __future__ import annotations

import json
from pathlib import Path

from console.render_variants import variants_table
from prereg.stats.story import VariantStory
from prereg.stats.variants import read_variants
from tests.console.conftest import make_app, plain, wait_for
from tests.console.test_layout import every_panel_whole
from tests.crossed_run import ALL, CAMERA, crossed_rows, make_crossed_run, write_report_story

RUN = "crossed-a-20260101-000000"


def words(text: str) -> str:
    return " ".join(text.split())


def counts_text(app) -> str:
    """The counts panel and the variants panel under it (a crossed design's)."""
    return words(plain(app.screen.query_one("#counts")) + "\n" + plain(app.screen.query_one("#variants")))


async def test_the_counts_show_each_variant_and_the_pooled_rate_live_then_the_reports(runs_dir):
    d = make_crossed_run(runs_dir, RUN, total=8, done=4, state="running")
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "variants base dim clutter cam-left" in counts_text(app),
                       what="the variants block", state=lambda: counts_text(app))
        text = counts_text(app)
        assert "decides apart" in text and "successes 3/4 83" not in text
        assert "successes 3/4 2/4 1/4 4/4" in text  # base, dim, clutter, cam-left: k/n each
        first = VariantStory.of("a", read_variants(crossed_rows(range(4)), range(8), ALL, camera=CAMERA), "base")
        assert words(first.pooled_words()) in text and "worst clutter" in text
        with open(d / "rows.jsonl", "a") as f:  # two more seeds, every variant: the read moves as they arrive
            f.writelines(json.dumps(r) + "\n" for r in crossed_rows(range(4, 6)))
        after = VariantStory.of("a", read_variants(crossed_rows(range(6)), range(8), ALL, camera=CAMERA), "base")
        await wait_for(pilot, lambda: words(after.pooled_words()) in counts_text(app), what="the live pooled rate",
                       state=lambda: counts_text(app))
        assert "successes 5/6 3/6 2/6 6/6" in counts_text(app) and "variants (report)" not in counts_text(app)
        # reported: the report's story is shown, one story (here one that differs from the live read: 4 seeds)
        story = write_report_story(d, crossed_rows(range(4)), range(8))
        await wait_for(pilot, lambda: "variants (report)" in counts_text(app), what="the report's variants",
                       state=lambda: counts_text(app))
        text = counts_text(app)
        assert "successes 3/4 2/4 1/4 4/4" in text and words(story.variants[0].pooled_words()) in text


def test_a_comparisons_variants_are_a_row_per_arm_and_a_pooled_line_each():
    a = VariantStory.of("steady", read_variants(crossed_rows(range(4)), range(4), ALL, camera=CAMERA), "dim")
    b = VariantStory.of("clumsy", read_variants(crossed_rows(range(4), win=lambda v, s: s == 0), range(4), ALL,
                                                camera=CAMERA), "dim")
    text = words(plain_of(variants_table((a, b))))
    assert "steady 3/4 2/4 1/4 4/4" in text and "clumsy 1/4 1/4 1/4 1/4" in text
    assert "decides" in text and "steady: pooled 0.50" in text and "clumsy: pooled 0.25" in text


def plain_of(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


async def every_panel_whole_crossed(pilot, app, size) -> None:
    """Each panel whole (tests/console/test_layout.py's), and the variants panel too: under the counts, or
    on page 6 of a small terminal."""
    from tests.console.test_layout import whole

    await every_panel_whole(pilot, app, size)
    screen = app.screen
    widget = screen.query_one("#variants")
    if screen.compact:
        await pilot.press("6")
    await wait_for(pilot, lambda: bool(widget.display and widget.region.area) and not whole(screen, widget),
                   what=f"#variants whole at {size}", state=lambda: whole(screen, widget) or f"{widget.region}")


async def test_a_crossed_run_fits_80x24_120x40_and_200x60(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_crossed_run(Path("runs").resolve(), RUN, total=40, done=40)
    app = make_app(Path("runs"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and "variants" in plain(app.screen.query_one("#variants")))
        await every_panel_whole_crossed(pilot, app, (80, 24))
        assert "6 variants" in plain(app.screen.query_one("#pages"))
        await pilot.resize_terminal(120, 40)
        await every_panel_whole_crossed(pilot, app, (120, 40))
        assert not app.screen.compact  # every panel on one screen, the variants under the counts
        await pilot.resize_terminal(200, 60)
        await every_panel_whole_crossed(pilot, app, (200, 60))


async def test_a_crossed_seed_lists_its_episode_per_variant_and_n_plays_the_next_variants_video(runs_dir):
    from console.widgets.seed_screen import SeedScreen
    from prereg.rundir.files import video_relpath
    from tests.console.test_seed_view import write_video

    d = make_crossed_run(runs_dir, RUN, total=4, done=4, rows=crossed_rows(range(4), filmed=(2,)))
    frames = {"base": 12, "dim": 8, "clutter": 6}  # each variant's video told apart by its length; cam-left not written
    for v, n in frames.items():
        write_video(d / video_relpath(2, None, None if v == "base" else v), frames=n)
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 4)
        await pilot.press("g")
        grid = app.screen.query_one("#grid")
        await wait_for(pilot, lambda: grid.has_focus)
        await pilot.press("right", "right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen), what="the seed screen")
        screen = app.screen

        def shown(n: int) -> bool:
            return screen.frames is not None and len(screen.frames.images) == n and screen.frames_shown >= 1

        await wait_for(pilot, lambda: shown(12), what="base's video (the variant the plan reads)")
        listed = words(plain(screen.query_one("#variant-list")))
        assert "base (decides) success · dim success · clutter quiet · cam-left success" in listed  # seed 2
        assert "seed 2 · base" in plain(screen.query_one("#seed-title"))
        footer_keys = {k for k, b in screen.active_bindings.items() if b.binding.show}  # n shows for a crossed seed
        assert "n" in footer_keys
        await pilot.press("n")
        await wait_for(pilot, lambda: shown(8), what="dim's video")
        assert screen.variant == "dim" and "seed 2 · dim" in plain(screen.query_one("#seed-title"))
        await pilot.press("n", "n")  # clutter, then cam-left: its episode, never filmed
        await wait_for(pilot, lambda: screen.variant == "cam-left" and "No video" in plain(screen.query_one("#video-note")),
                       what="cam-left's missing video", state=lambda: plain(screen.query_one("#video-note")))
        assert not screen.query_one("#player-row").display
        await pilot.press("n")  # round to base again
        await wait_for(pilot, lambda: screen.variant == "base" and shown(12), what="base again")


async def test_a_seed_of_one_scene_has_no_variant_key(runs_dir):
    from console.widgets.seed_screen import SeedScreen
    from tests.console.conftest import make_row, make_run_dir

    make_run_dir(runs_dir, "plain-20260101-000000", total=3, done=3, rows=[make_row(s) for s in range(3)])
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.view.rows == 3)
        await pilot.press("g")
        await wait_for(pilot, lambda: app.screen.query_one("#grid").has_focus)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SeedScreen) and app.screen.row is not None)
        screen = app.screen
        assert "n" not in {k for k, b in screen.active_bindings.items() if b.binding.show}
        assert not screen.query_one("#variant-list").display and "variant" not in plain(screen.query_one("#seed-title"))


async def test_a_crossed_comparison_run_shows_a_row_per_arm_and_fits_80x24(tmp_path, monkeypatch):
    """Both arms crossed: the variants block has a line per arm and a pooled line each, and every panel is
    whole (paged) at 80x24."""
    from tests.comparison_run import compare_doc, make_comparison_run
    from tests.crossed_run import VARIANTS

    monkeypatch.chdir(tmp_path)
    rows = [r for s in range(12) for arm in ("clumsy", "steady")
            for r in crossed_rows([s], arm=arm, win=(lambda v, s: s < 4) if arm == "clumsy" else wins_all)]
    config = {"variants": list(VARIANTS), "camera_variants": list(CAMERA), "read_variant": "base"}
    make_comparison_run(compare_doc(tmp_path), tmp_path / "runs" / "crossed-compare-20260101-000000", rows,
                        manifest_over={"config": config})
    app = make_app(Path("runs"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and "pooled" in counts_text(app),
                       state=lambda: app.detail and counts_text(app))
        text = counts_text(app)
        assert "clumsy 4/12 4/12 4/12 4/12" in text and "steady 12/12 12/12 12/12 12/12" in text
        assert "clumsy: pooled 0.33" in text and "steady: pooled 1.00" in text
        await every_panel_whole_crossed(pilot, app, (80, 24))


def wins_all(variant: str, seed: int) -> bool:
    return True
