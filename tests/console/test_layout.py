"""The main screen's layout at 80x24, 120x40, 160x48 and 200x60, started at the size and resized to it
(issue 49): every panel is reachable (on screen, or on a page `p`/1-5 brings forward) and whole (its
box inside the screen, above the footer, and as tall as its lines); the first paint already fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.widgets.main_screen import KeysFooter, MainScreen
from console.widgets.panels import LinePanel
from tests.console.conftest import make_app, make_row, make_run_dir, plain, wait_for

SIZES = [(80, 24), (120, 40), (160, 48), (200, 60)]
FROM = (160, 48)
COMPARISON_RUN = "demo-compare-clumsy-vs-steady-20260101-000000"
ONE_ARM_RUN = "flow-officialmap-a-20260101-000000"
PANELS = ("#counts", "#pace", "#grid", "#grid-legend", "#hist", "#recent")
PAGE_OF = {"#counts": "1", "#pace": "2", "#grid": "3", "#grid-legend": "3", "#recent": "4", "#hist": "5"}


def comparison_run(folder: Path) -> None:
    from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

    make_comparison_run(compare_doc(folder), folder / "runs" / COMPARISON_RUN,
                        comparison_rows([s < 4 for s in range(12)], [True] * 12))


def one_arm_run(folder: Path) -> None:
    make_run_dir(folder / "runs", ONE_ARM_RUN, arm="a", total=100, done=100,
                 rows=[make_row(s, arm="a") for s in range(100)])


def whole(screen: MainScreen, widget) -> str:
    """'' when `widget` is shown whole; else what is wrong, in words."""
    footer_top = screen.query_one(KeysFooter).region.y
    box = widget.region
    if not box.area:
        return f"{widget.id} has no room ({box})"
    if box.bottom > footer_top or box.right > screen.size.width:
        return f"{widget.id} at {box} runs past the screen (footer at y={footer_top}, width {screen.size.width})"
    node = widget.parent
    while node is not None and node is not screen:
        if not node.region.contains_region(box):
            return f"{widget.id} at {box} is cut by #{node.id or type(node).__name__} at {node.region}"
        node = node.parent
    if isinstance(widget, LinePanel) and widget.id != "recent":  # the latest rows show as many as fit
        lines = widget.height_at(widget.size.width)
        if lines > widget.size.height:
            return f"{widget.id} has {lines} lines in a box of {widget.size.height}"
    return ""


async def every_panel_whole(pilot, app, size) -> None:
    """Each panel whole, now (the wide layout) or on its page (a small or a too-short terminal)."""
    screen = app.screen
    await wait_for(pilot, lambda: screen.size == size and not app.detail.loading and plain(screen.query_one("#hist")),
                   what=f"the panels at {size}")
    for selector in PANELS:
        widget = screen.query_one(selector)
        if screen.compact:
            await pilot.press(PAGE_OF[selector])

        def shown_whole(w=widget) -> bool:
            return bool(w.display and w.region.area) and not whole(screen, w)

        def wrong(w=widget) -> str:
            return whole(screen, w) or f"display={w.display} region={w.region}"

        where = f"on page {PAGE_OF[selector]}" if screen.compact else "with every panel"
        await wait_for(pilot, shown_whole, what=f"{selector} whole {where} at {size}", state=wrong)


@pytest.mark.parametrize("resized", [False, True], ids=["started", "resized"])
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("which", ["comparison", "one-arm"])
async def test_every_panel_is_reachable_and_whole(tmp_path, monkeypatch, which, size, resized):
    monkeypatch.chdir(tmp_path)
    (comparison_run if which == "comparison" else one_arm_run)(tmp_path)
    app = make_app(Path("runs"))
    async with app.run_test(size=FROM if resized else size) as pilot:
        name = COMPARISON_RUN if which == "comparison" else ONE_ARM_RUN
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id == name)
        if resized:
            await every_panel_whole(pilot, app, FROM)
            await pilot.resize_terminal(*size)
        await every_panel_whole(pilot, app, size)


async def test_a_comparison_run_pages_its_panels_where_they_would_not_all_fit(tmp_path, monkeypatch):
    """At 120x40 a one-arm run shows every panel; a comparison run (a grid line and a histogram per
    arm) pages them rather than cut its histogram off, and the wide layout comes back at 200x60."""
    monkeypatch.chdir(tmp_path)
    comparison_run(tmp_path)
    one_arm_run(tmp_path)
    app = make_app(Path("runs"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and not app.detail.loading and len(app.runs) == 2)
        await show(pilot, app, ONE_ARM_RUN)
        await wait_for(pilot, lambda: not app.screen.compact, what="the one-arm run, every panel shown")
        await show(pilot, app, COMPARISON_RUN)
        await wait_for(pilot, lambda: app.screen.compact, what="the comparison run, paged")
        await pilot.resize_terminal(200, 60)
        await wait_for(pilot, lambda: not app.screen.compact, what="every panel shown at 200x60")


async def show(pilot, app, name: str) -> None:
    """Select run `name` in the runs list (up/down, as a user would) and wait for its panels."""
    if app.detail is None or app.detail.info.run_id != name:
        await pilot.press("end" if app.screen.query_one("#runs").cursor_row == 0 else "home")
    await wait_for(pilot, lambda: app.detail is not None and app.detail.info.run_id == name and not app.detail.loading
                   and plain(app.screen.query_one("#counts")), what=f"{name} shown")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_first_paint_fits_the_terminal(tmp_path, monkeypatch, size):
    """The first frame written is already laid out for the terminal (at 80x24 it was the wide layout,
    panels past the bottom and a scrollbar, until the first resize event or key)."""
    monkeypatch.chdir(tmp_path)
    one_arm_run(tmp_path)
    app = make_app(Path("runs"))
    first: list = []
    display = type(app)._display

    def record(self, screen, renderable):
        if isinstance(screen, MainScreen) and renderable is not None and not first:
            first.append((screen.compact, screen.show_vertical_scrollbar, screen.scrollable_content_region.width,
                          [whole(screen, screen.query_one(s)) for s in PANELS if screen.query_one(s).display]))
        return display(self, screen, renderable)

    monkeypatch.setattr(type(app), "_display", record)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: first, what="the first frame")
    compact, scrollbar, width, cut = first[0]
    assert compact == (size == (80, 24)) and not scrollbar and width == size[0]
    assert not any(cut), cut


async def test_a_resize_restyles_no_widget_but_the_footers_and_lays_the_grid_out_once(tmp_path, monkeypatch):
    """Keys after a resize (issue 49): paging the panels, on a resize or a page key, sets their own display
    styles (a class on the screen restyled every widget on it), and the seed grid is drawn for the width the screen's layout
    pass measures it at (laid out again in its own on_resize, it came out another number of lines
    and asked for a second pass)."""
    from console.widgets.panels import SeedGrid

    monkeypatch.chdir(tmp_path)
    one_arm_run(tmp_path)
    app = make_app(Path("runs"))
    async with app.run_test(size=(200, 60)) as pilot:
        await every_panel_whole(pilot, app, (200, 60))
        screen = app.screen
        footer = screen.query_one(KeysFooter)
        restyled, regrown = [], []
        update_nodes, show_strips = app.stylesheet.update_nodes, SeedGrid._show

        def record_restyle(nodes, animate=False):
            nodes = list(nodes)
            restyled.extend(n for n in nodes if n is not footer and footer not in n.ancestors)
            return update_nodes(nodes, animate=animate)

        def record_show(grid, strips, width):
            if len(strips) != len(grid._strips):  # its height changed after the layout measured it
                regrown.append((width, len(grid._strips), len(strips)))
            return show_strips(grid, strips, width)

        monkeypatch.setattr(app.stylesheet, "update_nodes", record_restyle)
        monkeypatch.setattr(SeedGrid, "_show", record_show)
        for size in ((160, 48), (80, 24), (200, 60)):  # every panel, paged, every panel again
            await pilot.resize_terminal(*size)
            await every_panel_whole(pilot, app, size)
            assert not restyled, f"{len(restyled)} widgets restyled at {size}: {restyled[:4]}"
            assert not regrown, f"the grid changed height after the layout at {size}: {regrown}"
            assert screen.compact == (size == (80, 24))
