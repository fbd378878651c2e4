"""results.html in a real browser: Playwright driving the system's Chromium (tests/browser.py).

One real comparison run (two scripted arms of known skill, seeds 0-3 each filmed by the engine, about 14 s on
2 cores; 8 cells, every one opened and its video played) is reported; its run page and the registration's
page are opened from disk and from a plain
static server (what a Space is), at a phone's width and a desktop's: no console error, nothing asked of
another host, every video decodes and plays, the numbers are results.json's, each grid cell opens its
own seed, and the page fits the phone's width (the wide tables and charts scroll inside themselves).
Without JavaScript a cell still opens its seed. Skipped, with the reason, where Chromium or Playwright
cannot be had."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from prereg import rundir as rd
from prereg.document.seal import freeze
from prereg.outputs.page import PAGE, registration_page_name
from prereg.outputs.report import build_report
from tests.browser import DESKTOP, PHONE, browser, open_page, static_server
from tests.helpers import run_eval

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="needs the engine (MuJoCo) for a real run"),
]

DOC = """---
fontaine: fontaine-prereg/1
id: page-compare
title: "Two scripted arms of known skill, every seed filmed"
created: 2026-12-04
arms:
  - name: clumsy
    policy: scripted
    grasp_miss: 0.5
  - name: steady
    policy: scripted
    grasp_miss: 0.1
protocol:
  seeds: 0-3
  episode_seconds: 10
  workers: 2
  video_draw: all
reads:
  primary: successes
  interval: both
gates:
  gpu_hours: 0.05
decision_rules:
  - if: steady.successes > clumsy.successes
    then: the steadier oracle succeeds more often
comparison: {arms: [clumsy, steady], metric: success, test: savi, alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: 4}
---

# Two arms of known skill

## Plain words

Is `steady` better than `clumsy` at placing the boat? Both arms run seeds 0-3; every episode is filmed.
"""


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The real run, reported: (folder, run directory, results.json)."""
    root = tmp_path_factory.mktemp("page")
    doc = root / "compare.md"
    doc.write_text(DOC)
    freeze(doc)
    run = root / "runs" / "cmp"
    out = run_eval("--prereg", str(doc), "--arms", "clumsy,steady", "--run-dir", str(run), timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    build_report(doc, {"clumsy-vs-steady": run}, append=False)
    return root / "runs", run, json.loads((run / rd.RESULTS_JSON).read_text())


@pytest.fixture(scope="module")
def chromium():
    with browser() as b:
        yield b


def urls(folder: Path, run: Path, base: str | None) -> dict[str, str]:
    reg = registration_page_name("page-compare.results.md")
    if base is None:
        return {"run": (run / PAGE).as_uri(), "registration": (folder / reg).as_uri()}
    return {"run": f"{base}/{run.name}/{PAGE}", "registration": f"{base}/{reg}"}


def check_page(b, url: str, viewport: dict, res: dict, origin: str, *, play_all: bool) -> None:
    """The page at `url`: fits, its numbers, every cell opening its seed; every video played (`play_all`), else
    the first (each video is played from disk and from the server in one of the four combinations)."""
    w = open_page(b, viewport)
    page = w.page
    page.goto(url)
    page.wait_for_load_state("load")
    # the page fits the width; wide tables and charts scroll inside their own boxes
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], url
    # the numbers are results.json's
    for arm, a in res["arms"].items():
        def read(k, arm=arm):  # the arm's column of the reads table: a cell, or a value inside one
            return page.locator(f'#reads [data-arm="{arm}"][data-k="{k}"], #reads [data-arm="{arm}"] [data-k="{k}"]')
        assert read("successes").inner_text() == str(a["primary"]["successes"])
        assert read("n").inner_text() == str(a["primary"]["n"])
        for kind, (lo, hi) in a["primary"]["intervals"].items():
            assert read(f"interval-{kind}").inner_text() == f"[{lo:.1%}, {hi:.1%}]"
        assert read("valid").inner_text() == ("VALID" if a["valid"] else "INVALID")
    assert page.locator('[data-k="decision"]').inner_text() == res["comparison"]["text"]
    for v in res["verdicts"]:
        assert page.locator(f'li[data-key="{v["key"]}"] [data-k="label"]').text_content() == v["label"]
    # every cell opens its own seed; every video there decodes and plays
    cells = page.locator("a.cell")
    assert cells.count() == 8
    for i in range(cells.count()):
        cell = cells.nth(i)
        arm = cell.locator("xpath=..").get_attribute("data-arm")
        seed = cell.get_attribute("data-seed")
        cell.click()
        box = page.locator(".seed:target")
        assert box.is_visible() and box.get_attribute("data-seed") == seed and box.get_attribute("data-arm") == arm
        assert box.locator('tr[data-field="seed"] td').nth(1).inner_text() == seed
        src = box.locator("video").get_attribute("src")
        assert src.endswith(f"rollout_{arm}_seed{int(seed):03d}.mp4"), src
        if not play_all and i:
            box.locator("a.close").click()
            continue
        played = box.locator("video").evaluate(
            """async v => { await v.play(); const t0 = performance.now();
               while (v.currentTime < 0.3 && performance.now() - t0 < 20000) await new Promise(r => setTimeout(r, 50));
               v.pause(); return {t: v.currentTime, w: v.videoWidth, h: v.videoHeight, err: v.error && v.error.code}; }""")
        assert played["err"] is None and played["t"] >= 0.3 and (played["w"], played["h"]) == (448, 224), played
        box.locator("a.close").click()
        assert not page.locator(".seed:target").count()
    # a bar of the chart opens its seed too
    page.locator('#chart a g[data-arm="steady"][data-seed="2"]').click()
    assert page.locator(".seed:target").get_attribute("id") == "seed-steady-2"
    assert w.problems() == [], w.problems()
    assert [u for u in w.requests if not u.startswith(origin)] == []  # nothing from another host


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_pages_from_disk(reported, chromium, viewport):
    folder, run, res = reported
    for name, url in urls(folder, run, None).items():
        check_page(chromium, url, viewport, res, "file://", play_all=viewport is PHONE and name == "run")


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_pages_from_a_static_server(reported, chromium, viewport):
    folder, run, res = reported
    with static_server(folder) as base:
        for name, url in urls(folder, run, base).items():
            check_page(chromium, url, viewport, res, base, play_all=viewport is DESKTOP and name == "registration")


def test_without_javascript_a_cell_still_opens_its_seed(reported, chromium):
    folder, run, res = reported
    w = open_page(chromium, PHONE, javascript=False)
    w.page.goto((run / PAGE).as_uri())
    w.page.locator('.grid[data-arm="clumsy"] a.cell[data-seed="3"]').click()
    box = w.page.locator(".seed:target")
    assert box.is_visible() and box.get_attribute("id") == "seed-clumsy-3"
    assert box.locator("video").is_visible()
    assert w.problems() == []
