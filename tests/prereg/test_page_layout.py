"""results.html's layout, measured in Chromium at a phone's 390 px and a desktop's 1280 px (issue 42, item 4).

A comparison run's page (hand-made rows, no engine: tests/comparison_run.py), one decided late and one
undecided at its max seeds, so the band is long and the decision mark far right. Measured with the
elements' bounding boxes: the Reads table's rows are short and the table fits its width; the band is
as wide as the page leaves it, with every seed and the decision mark (line and words) inside it and on
screen; the decision's words stand clear of the band; no legend covers a bar, the band or its mean."""

from __future__ import annotations

import pytest

from prereg.outputs.page import PAGE
from prereg.outputs.report import build_report
from prereg.stats.comparison import UNDECIDED
from tests.browser import DESKTOP, PHONE, browser, open_page
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

NOW = "2026-12-01T15:00:00Z"
ROW_MAX_PX = 160  # a Reads row taller than this is a sentence wrapped a word a line (it was 153-530 px)

RUNS = {  # name -> (clumsy's successes, steady's), seed by seed
    "late": ([s % 3 != 0 for s in range(30)], [True] * 30),  # a discordant seed every third: decided at 22
    # steady alone on 2 seeds in 4, clumsy alone on 1: not enough to decide by max seeds (60)
    "undecided": ([s % 4 == 0 for s in range(60)], [s % 4 in (1, 2) for s in range(60)]),
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    doc = compare_doc(root)
    out = {}
    for name, (a, b) in RUNS.items():
        run = make_comparison_run(doc, root / "runs" / name, comparison_rows(a, b))
        rep = build_report(doc, {"clumsy": run}, append=False, now=NOW)
        (c,) = rep.comparisons
        out[name] = (run / PAGE, c)
    assert out["late"][1].decided_at == 22 and out["undecided"][1].outcome == UNDECIDED
    return out


@pytest.fixture(scope="module")
def chromium():
    with browser() as b:
        yield b


BOXES = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom,
                                                                 w: r.width, h: r.height}; };
  const all = sel => [...document.querySelectorAll(sel)].map(box);
  const scroll = document.querySelector('#reads .scroll');
  const band = document.querySelector('.chart[data-chart="band"]');
  return {
    docWidth: document.documentElement.scrollWidth,
    readsRows: all('#reads table tr'),
    readsTable: box(document.querySelector('#reads table')), readsBox: box(scroll),
    readsScroll: [scroll.scrollWidth, scroll.clientWidth],
    plot: box(band.querySelector('.plot')), plotSvg: box(band.querySelector('.plot > svg')),
    markLine: box(band.querySelector('[data-k="decision_mark"]')),
    markWords: box(band.querySelector('[data-k="decided_at"]')),
    band: box(band.querySelector('svg[data-k="band"] polygon')),
    mean: box(band.querySelector('svg[data-k="band"] polyline')),
    seedLabels: [...band.querySelectorAll('.plot > svg > text:not([data-k])')].map(box),
    legends: all('.legend'),
    bars: all('.chart svg rect'),
  };
}"""


def overlaps(a: dict, b: dict) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1280px"])
@pytest.mark.parametrize("name", list(RUNS))
def test_the_comparison_page_is_readable_at_a_phones_and_a_desktops_width(pages, chromium, viewport, name):
    path, c = pages[name]
    w = open_page(chromium, viewport)
    w.page.goto(path.as_uri())
    w.page.wait_for_load_state("load")
    g = w.page.evaluate(BOXES)
    width = viewport["width"]
    assert g["docWidth"] <= width  # the page itself never scrolls sideways

    # the Reads table: short rows, and two arms fit the width (nothing hidden off to the right)
    assert len(g["readsRows"]) >= 12
    assert max(r["h"] for r in g["readsRows"]) <= ROW_MAX_PX, [round(r["h"]) for r in g["readsRows"]]
    assert g["readsScroll"][0] <= g["readsScroll"][1], g["readsScroll"]
    assert g["readsTable"]["r"] <= g["readsBox"]["r"] + 0.5

    # the band: as wide as its box, every seed's label inside it, the decision's line and words in view
    plot = g["plot"]
    assert g["plotSvg"]["w"] <= plot["w"] + 0.5 and plot["r"] <= width
    assert len(g["seedLabels"]) >= 5
    assert all(plot["l"] <= t["l"] and t["r"] <= plot["r"] + 0.5 for t in g["seedLabels"])
    for mark in (g["markLine"], g["markWords"]):
        assert plot["l"] <= mark["l"] and mark["r"] <= plot["r"] + 0.5, (mark, plot)
        assert 0 <= mark["l"] and mark["r"] <= width
    # the line stands where the decided seed is: its fraction of the seeds, across the plot
    n = len(c.path.at)
    frac = (g["markLine"]["l"] - plot["l"]) / plot["w"]
    assert abs(frac - (0.03 + 0.94 * (c.path.at.index(c.decided_at) + 0.5) / n)) < 0.01, frac
    # the decision's words above the data, never over the band or its mean
    assert g["markWords"]["b"] <= g["band"]["t"] and g["markWords"]["b"] <= g["mean"]["t"]

    # legends under their plots: none covers a bar, the band or its mean
    data = g["bars"] + [g["band"], g["mean"]]
    assert g["bars"] and g["legends"]
    assert not [(lg, d) for lg in g["legends"] for d in data if d["w"] and d["h"] and overlaps(lg, d)]
    assert w.problems() == [], w.problems()
