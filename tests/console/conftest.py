"""Fixtures for the console tests: run directories on disk and a wait-on-condition helper."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

os.environ.setdefault("FONTAINE_IMAGES", "halfcell")  # frames in colour half-blocks, as in plain tmux (not a tty here)

from textual.css.query import NoMatches  # noqa: E402

from console.app import FontaineApp  # noqa: E402
from console.fixtures import FIXED_TIME, make_row, make_run_dir  # noqa: E402
from console.widgets.compare_screen import CompareScreen  # noqa: E402
from tests.helpers import wait_until  # noqa: E402


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition", state=None):
    """Let the app run until predicate() is true (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
            last_error = None
        except (NoMatches, AttributeError, LookupError) as exc:  # a widget or a detail not there yet
            last_error = exc
        await pilot.pause(0.05)
    if last_error is not None:  # the predicate never stopped raising: that error is the failure
        raise AssertionError(f"timed out after {timeout} s waiting for {what}: the predicate raised "
                             f"{type(last_error).__name__}: {last_error}") from last_error
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f"; state: {state()}" if state else ""))


async def until_steady(pilot, read, *, looks: int = 1, interval: float = 0.1, timeout: float = 10.0,
                       what: str = "the value"):
    """Let the app run until read() gives the same value `looks` times running, `interval` apart, and
    return it: a repaint or a paint still to land changes it (a fixed pause is too short under load)."""
    last, same = read(), 0
    deadline = time.monotonic() + timeout
    while same < looks:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} was still changing after {timeout} s")
        await pilot.pause(interval)
        now = read()
        same, last = (same + 1, last) if now == last else (0, now)
    return last


def screen_text(app) -> str:
    """The screen as the compositor paints it, as text with its styles (ANSI): what a screenshot shows,
    for telling two paints apart. App.export_screenshot renders the same update to SVG, 6x the cost
    (29 vs 4.4 ms at 120x40), and a test waiting for the screen to settle reads it every 0.1 s."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      record=True, legacy_windows=False, safe_box=False)  # export_screenshot's console
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=True)


async def press_button(pilot, selector: str, what: str = "") -> None:
    """Click the button `selector` once it can take a press. Textual's Button ignores a click while its
    press effect (`-active`, 0.2 s) from the click before is still on: a second Launch within 0.2 s is
    one press. No person changes a dialog and clicks again that fast; a test on a quiet machine does
    (test_a_plan_of_ten_million_seeds_is_refused_in_the_dialog_at_once failed half the time so)."""
    from textual.widgets import Button

    button = pilot.app.screen.query_one(selector, Button)
    await wait_for(pilot, lambda: button.display and not button.disabled and not button.has_class("-active"),
                   what=what or f"{selector} to take a press")
    await pilot.click(selector)


class ViewCells:
    """One of the compare view's tables as the tests read it: its cells by row key and column name,
    from the view the screen shows (CompareScreen.view); the screen draws them as a rich table."""

    def __init__(self, screen, rows: str, columns: tuple):
        self.screen, self.rows, self.columns = screen, rows, columns

    @property
    def row_count(self) -> int:
        return len(getattr(self.screen.view, self.rows)) if self.screen.view is not None else 0

    def get_cell(self, key: str, column: str) -> str:
        return dict(getattr(self.screen.view, self.rows))[key][self.columns.index(column)]


async def open_compare(pilot, app, run_name: str, what: str = "two arms"):
    """Wait until the run `run_name` is the one selected, press `c`, wait for the compare view and for its
    arms table to hold both arms' rows (`what` names them if they never come); returns (the screen, the arms'
    cells, a ViewCells)."""
    from console.compare import ARM_COLUMNS

    await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == run_name)
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
    screen = app.screen
    table = ViewCells(screen, "arms", ARM_COLUMNS)
    await wait_for(pilot, lambda: table.row_count == 2, what=what)
    return screen, table


@pytest.fixture
def runs_dir(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    return d


@pytest.fixture
def prereg_dir(tmp_path):
    d = tmp_path / "preregs"
    d.mkdir()
    return d


def make_app(runs_dir, prereg_dir=None, clock=None, **kw) -> FontaineApp:
    return FontaineApp(
        runs_dir=runs_dir,
        prereg_dirs=[prereg_dir] if prereg_dir else [],
        clock=clock or (lambda: FIXED_TIME + 5.0),
        poll_s=kw.pop("poll_s", 0.05),
        notifier=kw.pop("notifier", None),
        **kw,
    )


__all__ = ["wait_for", "make_app", "make_row", "make_run_dir", "FIXED_TIME", "asyncio"]


FAKE_DRIVER = __import__("pathlib").Path(__file__).with_name("fake_driver.py")


def notified(app, text: str) -> bool:
    """Whether the app has shown a notification containing `text`."""
    return any(text in str(n.message) for n in app._notifications)


def plain(widget) -> str:
    """The text a Static shows, whatever renderable it holds."""
    from rich.console import Console
    from rich.text import Text

    content = widget.content
    if isinstance(content, Text):
        return content.plain
    if isinstance(content, str):
        return content
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(content)
    return console.export_text()


@pytest.fixture
def procs():
    """Real detached processes started by a test; each is ended (by its own pid) at teardown."""
    import os
    import signal
    import subprocess
    import sys

    started: list[subprocess.Popen] = []

    def spawn(run_dir, *args):
        p = subprocess.Popen(
            [sys.executable, str(FAKE_DRIVER), str(run_dir), *map(str, args)],
            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True,
        )
        started.append(p)
        return p

    yield spawn
    for p in started:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait(timeout=10)


def wait_file(path, timeout=10.0):
    wait_until(path.exists, timeout=timeout, interval=0.02, what=f"{path} to appear")


@pytest.fixture
def fake(monkeypatch):
    """The loopback fake of Discord's API (tests/console/fake_discord.py), discord.py pointed at it."""
    import discord

    from tests.console.fake_discord import FakeDiscord

    server = FakeDiscord().start()
    monkeypatch.setattr(discord.http.Route, "BASE", server.base)
    yield server
    server.close()


def svg_cells(svg: str) -> dict[float, tuple]:
    """One terminal SVG (Textual's export) as {row y: (its text runs, its background runs)}, each run
    (x, width or style, text or colour), with the per-export class prefix taken out."""
    import html
    import re

    styles = dict(re.findall(r"\.terminal-(?:\d+-)?(r\d+) \{ ([^}]*) \}", svg))
    rows: dict[float, tuple[list, list]] = {}
    for fill, x, y, w in re.findall(r'<rect fill="(#\w+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"', svg):
        rows.setdefault(round(float(y)), ([], []))[1].append((float(x), float(w), fill))
    for cls, x, y, text in re.findall(r'<text class="terminal-(?:\d+-)?(r\d+)" x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)<', svg):
        rows.setdefault(round(float(y) - 18.5), ([], []))[0].append(
            (float(x), styles.get(cls, cls), html.unescape(text).replace("\xa0", " ")))
    return {y: (tuple(sorted(t)), tuple(sorted(b))) for y, (t, b) in rows.items()}


def snapshot_difference(expected: str, actual: str, limit: int = 6) -> str:
    """The screen rows where two terminal SVGs differ, in words: what CI prints when a snapshot
    fails, since its HTML report stays on the CI machine."""
    a, b = svg_cells(expected), svg_cells(actual)
    out = []
    for y in sorted(set(a) | set(b)):
        if a.get(y) != b.get(y):
            (ta, ba), (tb, bb) = a.get(y, ((), ())), b.get(y, ((), ()))
            what = "text" if ta != tb else "colours"
            out.append(f"screen row at y={y} differs in its {what}:\n  expected {(ta if ta != tb else ba)!r:.600}"
                       f"\n  actual   {(tb if ta != tb else bb)!r:.600}")
    return "\n".join(out[:limit] + ([f"... and {len(out) - limit} more rows"] if len(out) > limit else []))


@pytest.fixture
def snap_compare(snap_compare, request):
    """pytest-textual-snapshot's snap_compare, printing which screen rows differed when it fails."""
    import pickle

    from pytest_textual_snapshot import node_to_report_path

    def compare(*args, **kwargs) -> bool:
        same = snap_compare(*args, **kwargs)
        if not same:
            try:
                data = pickle.loads(node_to_report_path(request.node).read_bytes())
                print(snapshot_difference(data[1], data[2]))  # (result, expected svg, actual svg, ...)
            except Exception as exc:  # noqa: BLE001 - the mismatch itself is the failure to report
                print(f"(could not say where the snapshots differ: {type(exc).__name__}: {exc})")
        return same

    return compare


@pytest.fixture
def make_notifier():
    """make(**kw) -> a Notifier of the fake webhook, its backoff short (closed at the end of the test)."""
    from console.notify.delivery import RetryPolicy
    from console.notify.sender import Notifier
    from tests.console.fake_discord import FAKE_WEBHOOK_URL

    made = []

    def make(**kw) -> Notifier:
        retry = {"backoff_s": 0.05, "backoff_max_s": 0.2,
                 **{k: kw.pop(k) for k in list(kw) if k in RetryPolicy.__dataclass_fields__}}
        n = Notifier(FAKE_WEBHOOK_URL, retry=RetryPolicy(**retry), **kw)
        made.append(n)
        return n

    yield make
    for n in made:
        n.close(timeout=2.0)


def pytest_collection_modifyitems(items):
    """Under pytest-repeat (scripts/repeat.sh: `--count N`) each test's name gains '-1-N' ('test_x[1-N]'
    without a parameter), and syrupy names a snapshot by the test's name: every snapshot test then
    looked for a file that does not exist and failed. The repeated copies keep their own node ids
    (what pytest and xdist go by) and take back the name their snapshot was saved under."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "__pytest_repeat_step_number" not in callspec.params or "snap_compare" not in item.fixturenames:
            continue
        params, *step_and_count = callspec.id.rsplit("-", 2)  # '160x48-to-80x24-1-2' -> '160x48-to-80x24'; '1-2' alone
        item.name = f"{item.originalname}[{params}]" if len(step_and_count) == 2 else item.originalname
