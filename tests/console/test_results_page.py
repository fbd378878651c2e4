"""The results view (`r`) says where the report's page is, and `o` opens it: with the system's opener where
there is a display (a real detached process here: a fake xdg-open on PATH that records its argv), else
the words to copy the run folder over SSH."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from console.widgets.dialogs import ResultsScreen
from prereg import rundir as rd
from tests.console.conftest import make_app, make_row, make_run_dir, notified, plain, wait_for
from tests.console.test_opener import fake_opener
from tests.helpers import wait_until
from tests.prereg.conftest import launched_manifest

DEMO = Path(__file__).resolve().parents[2] / "prereg" / "examples" / "demo.md"


async def test_the_results_view_names_the_page_and_opens_it(runs_dir, prereg_dir, tmp_path, monkeypatch):
    doc = prereg_dir / "demo.md"
    shutil.copy(DEMO, doc)
    d = make_run_dir(runs_dir, "demo-tiny-engine-scripted-20260101-000000", total=6, done=6,
                     rows=[make_row(s, run_id="demo-tiny-engine-scripted-20260101-000000") for s in range(6)])
    man = {**json.loads((d / rd.MANIFEST).read_text()), **launched_manifest(doc, "scripted", run_id=d.name)}
    (d / rd.MANIFEST).write_text(json.dumps(man))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_opener(bin_dir, "xdg-open")
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    app = make_app(runs_dir, prereg_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen))
        status = app.screen.query_one("#results-status")
        await wait_for(pilot, lambda: "page:" in plain(status), timeout=60, what="the report and its page")
        page = d / rd.RESULTS_HTML
        assert page.is_file() and f"page: {page}  (o opens it)" in plain(status)
        await pilot.press("o")
        argv = bin_dir / "xdg-open.argv"
        await wait_for(pilot, lambda: notified(app, "opened"), what="the opener's notice")
        wait_until(lambda: argv.exists() and argv.read_text().strip() == str(page), timeout=30, what="the opener's argv")
        monkeypatch.delenv("DISPLAY")  # tmux over SSH: nothing here can show it
        await pilot.press("o")
        await wait_for(pilot, lambda: notified(app, "scp -r"), what="the words to copy the folder")
        assert notified(app, str(d))
