"""LinePanel: an update repaints only the lines that changed, lays out only when its height
changes, and shows what it was given (checked on the screen's own rendered lines)."""

from rich.table import Table
from rich.text import Text
from textual.app import App
from textual.containers import Vertical

from console.render import recent_rows_text
from console.widgets.panels import LinePanel, RecentRows
from tests.console.conftest import make_row, wait_for


class PanelApp(App):
    CSS = "#auto { border: round white; padding: 0 1; } #fixed { height: 6; }"

    def compose(self):
        with Vertical():
            yield LinePanel("title", id="auto")
            yield LinePanel(id="fixed")


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def spy_refreshes(panel):
    calls = []
    original = panel.refresh

    def refresh(*regions, **kw):
        calls.append((regions, kw.get("layout", False)))
        return original(*regions, **kw)

    panel.refresh = refresh
    return calls


async def test_a_changed_line_is_the_only_one_repainted_and_nothing_is_laid_out():
    app = PanelApp()
    async with app.run_test(size=(40, 12)) as pilot:
        panel = app.query_one("#auto", LinePanel)
        panel.update(Text("alpha 1\nbeta 2\ngamma 3"))
        await wait_for(pilot, lambda: any("gamma 3" in line for line in screen_lines(app)), what="the first content")
        calls = spy_refreshes(panel)
        panel.update(Text("alpha 1\nbeta 22\ngamma 3"))
        assert len(calls) == 1
        regions, layout = calls[0]
        assert not layout and [(r.y, r.height) for r in regions] == [(1, 1)]  # line 2 only, in content coordinates
        await wait_for(pilot, lambda: any("beta 22" in line for line in screen_lines(app)), what="the changed line")
        assert any("alpha 1" in line for line in screen_lines(app)) and any("gamma 3" in line for line in screen_lines(app))

        calls.clear()
        panel.update(Text("alpha 1\nbeta 22\ngamma 3"))
        assert calls == []  # the same content: nothing to repaint

        panel.update(Text("alpha 1\nbeta 22\ngamma 3\ndelta 4"))  # one more line: the height changes
        assert calls[-1][1] is True
        await wait_for(pilot, lambda: any("delta 4" in line for line in screen_lines(app)), what="the new line")
        assert panel.size.height == 4


async def test_a_height_set_in_css_is_never_laid_out_and_tables_render_as_lines():
    app = PanelApp()
    async with app.run_test(size=(40, 12)) as pilot:
        panel = app.query_one("#fixed", LinePanel)
        calls = spy_refreshes(panel)
        table = Table.grid(padding=(0, 1))
        table.add_column()
        table.add_column(justify="right")
        table.add_row("successes", "3/10")
        table.add_row("knock-aways", "1")
        panel.update(table)
        panel.update("plain [not markup]")
        assert all(layout is False for _, layout in calls)
        await wait_for(pilot, lambda: any("plain [not markup]" in line for line in screen_lines(app)),
                       what="plain text shown as given")
        panel.update(table)
        await wait_for(pilot, lambda: any("knock-aways    1" in line for line in screen_lines(app)),
                       what="the table's second row, right-aligned")


async def test_text_wraps_at_the_panel_width_like_a_static():
    app = PanelApp()
    async with app.run_test(size=(24, 12)) as pilot:
        panel = app.query_one("#auto", LinePanel)
        panel.update(Text("one two three four five six seven"))
        await wait_for(pilot, lambda: panel.size.height >= 2, what="the wrapped text laid out")
        shown = " ".join(screen_lines(app))
        assert all(word in shown for word in "one two three four five six seven".split())


async def test_recent_rows_shows_the_newest_rows_that_fit():
    class RowsApp(App):
        CSS = "RecentRows { height: 5; }"

        def compose(self):
            yield RecentRows(id="recent")

    from console.aggregate import RunAggregate

    agg = RunAggregate()
    agg.add_many([make_row(s) for s in range(25)])
    app = RowsApp()
    async with app.run_test(size=(100, 10)) as pilot:
        recent = app.query_one(RecentRows)
        recent.show_rows(agg.snapshot())
        await wait_for(pilot, lambda: recent.row_count == 4, what="four rows under the header")
        lines = screen_lines(app)
        assert lines[0].split()[:3] == ["seed", "outcome", "prog_final"]
        assert [line.split()[0] for line in lines[1:5]] == ["21", "22", "23", "24"]  # newest at the bottom


def test_recent_rows_text_lines_up_columns_and_cuts_to_the_width():
    rows = [make_row(5), make_row(123456, status="error", error="worker 3 crashed: " + "x" * 80)]
    text = recent_rows_text(rows, 60)
    lines = text.plain.split("\n")
    assert len(lines) == 3 and all(len(line) <= 60 for line in lines)
    assert lines[2].endswith("…")  # the long error note is cut, with a mark
    header, first, second = lines
    # the grid's word for each episode (prereg.rundir.outcomes.OUTCOME_LABELS), in one column
    assert header.index("outcome") == first.index("knocked away") == second.index("error")
    # numbers are right-aligned under their headers
    assert first.index("-6.10") + len("-6.10") == header.index("prog_final") + len("prog_final")
    assert recent_rows_text([], 40).plain.startswith("seed outcome")


async def test_text_lines_drawn_before_are_not_rendered_again():
    app = PanelApp()
    async with app.run_test(size=(40, 12)) as pilot:
        panel = app.query_one("#auto", LinePanel)
        panel.update(Text("\n".join(f"line {i}" for i in range(8))))
        await wait_for(pilot, lambda: any("line 7" in line for line in screen_lines(app)), what="eight lines")
        rendered = []
        original = app.console.render_lines

        def render_lines(renderable, *args, **kw):
            rendered.append(renderable.plain)
            return original(renderable, *args, **kw)

        app.console.render_lines = render_lines
        panel.update(Text("\n".join(f"line {i}" if i != 3 else "line three" for i in range(8))))
        assert rendered == ["line three"]


def test_the_log_says_what_an_episode_noted():
    row = make_row(5, note="video not written: ffmpeg exited 1")  # seed 5 tips in the fixture
    line = recent_rows_text([row], 200).plain.split("\n")[1]
    assert line.endswith("tipped; video not written: ffmpeg exited 1")
    assert recent_rows_text([make_row(1, note=None)], 200).plain.split("\n")[1].split()[-1] == "1"  # no note: the worker ends it


async def test_recent_rows_of_another_run_with_as_many_rows_replace_the_first_runs():
    """Row numbers alone do not say which rows are shown: two runs of five rows both number theirs 1-5."""
    class RowsApp(App):
        CSS = "RecentRows { height: 8; }"

        def compose(self):
            yield RecentRows(id="recent")

    from console.aggregate import RunAggregate

    first, second = RunAggregate(), RunAggregate()
    first.add_many([make_row(s) for s in range(5)])
    second.add_many([make_row(s) for s in range(100, 105)])
    app = RowsApp()
    async with app.run_test(size=(100, 10)) as pilot:
        recent = app.query_one(RecentRows)
        recent.show_rows(first.snapshot())
        await wait_for(pilot, lambda: any(line.startswith("4 ") for line in screen_lines(app)), what="the first run's rows")
        recent.show_rows(second.snapshot())
        await wait_for(pilot, lambda: any(line.startswith("104 ") for line in screen_lines(app)),
                       what="the second run's rows")


async def test_content_drawn_for_the_width_is_drawn_again_once_on_a_resize_and_when_shown():
    """update_for_width (the histogram): drawn for the panel's width; a resize draws it for the new width
    once (the app need not draw it again), and a panel updated while hidden is drawn for the width it
    comes forward at, not for the 0 it had hidden."""
    app = PanelApp()
    async with app.run_test(size=(40, 12)) as pilot:
        panel = app.query_one("#auto", LinePanel)
        widths: list[int] = []

        def draw(width: int) -> Text:
            widths.append(width)
            return Text(f"drawn for {width}")

        panel.update_for_width(draw)
        await wait_for(pilot, lambda: any("drawn for 36" in line for line in screen_lines(app)), what="the first draw")
        widths.clear()
        await pilot.resize_terminal(30, 12)
        await wait_for(pilot, lambda: any("drawn for 26" in line for line in screen_lines(app)), what="the new width")
        assert widths == [26]
        panel.display = False
        await pilot.pause()
        panel.update_for_width(draw)  # hidden: drawn for a stand-in width, not shown
        panel.display = True
        await wait_for(pilot, lambda: any("drawn for 26" in line for line in screen_lines(app)), what="shown again")
        assert panel.height_at(56) == 1 and widths[-1] in (26, 56)
        panel.update("plain text")  # a plain update forgets the drawer: a resize re-wraps the text only
        widths.clear()
        await pilot.resize_terminal(40, 12)
        await wait_for(pilot, lambda: any("plain text" in line for line in screen_lines(app)), what="plain text")
        assert widths == []
