"""results.html, read as text and parsed (the browser's view is tests/prereg/test_page_browser.py).

The report writes one page per run and one per registration; each is self-contained (nothing from
another host, no local absolute path), every link and video on it resolves inside the folder, every
number is the report's (results.json's), a seed's cell opens that seed, and anything a document or a
row says is escaped."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from prereg import rundir as rd
from prereg.document.read import load
from prereg.document.seal import freeze
from prereg.outputs.page import PAGE, _question, registration_page_name
from prereg.outputs.page_html import seed_id
from prereg.outputs.report import build_report
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run
from tests.prereg.conftest import make_row
from tests.prereg.test_publish import NOW, reported_runs


class Parsed(HTMLParser):
    """Every element's attributes, the text of each `data-k` element, ids, links and media sources."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.sources: list[str] = []
        self.values: list[tuple[dict, str]] = []  # (the data-k element's attributes and its ancestors', its text)
        self._open: list[tuple[str, dict, list[str]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        for k in ("src", "poster", "data"):
            if k in a and tag in ("video", "img", "source", "script", "iframe", "object", "audio", "embed"):
                self.sources.append(a[k])
        if tag == "link" and "href" in a:
            self.sources.append(a["href"])
        if tag not in ("meta", "link", "br", "img", "source", "rect", "circle", "line", "polygon", "polyline"):
            self._open.append((tag, a, []))

    def handle_endtag(self, tag):
        while self._open:
            t, a, text = self._open.pop()
            if "data-k" in a:
                context = {**{k: v for _, aa, _ in self._open for k, v in aa.items() if k in ("data-arm", "data-key")}, **a}
                self.values.append((context, "".join(text).strip()))
            if self._open:
                self._open[-1][2].extend(text)
            if t == tag:
                break

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)

    def value(self, k: str, **where) -> str:
        found = [t for a, t in self.values if a.get("data-k") == k
                 and all(a.get(f"data-{w.replace('_', '-')}") == v for w, v in where.items())]
        assert len(found) == 1, (k, where, found)
        return found[0]


def local_targets(page: Path, refs: list[str]) -> list[Path]:
    """The files a page's relative links name (anchors within the page left out)."""
    out = []
    for ref in refs:
        parts = urlsplit(ref)
        if parts.scheme or parts.netloc or ref.startswith("#"):
            continue
        if parts.path:
            out.append((page.parent / unquote(parts.path)).resolve())
    return out


def assert_self_contained(page: Path, tmp_path: Path) -> Parsed:
    text = page.read_text()
    p = Parsed(text)
    assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text  # no local absolute path
    for ref in p.links + p.sources:
        parts = urlsplit(ref)
        if parts.scheme == "data":  # inline (the empty favicon)
            continue
        assert not parts.scheme and not parts.netloc and not ref.startswith("//"), ref  # nothing from another host
    assert not [a for t, a in p.elements if t == "script" and "src" in a]
    assert not [a for t, a in p.elements if t == "link" and a.get("rel") != "icon"]
    csp = next(a["content"] for t, a in p.elements if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "media-src 'self'" in csp
    for target in local_targets(page, p.links + p.sources):
        assert target.is_file(), f"{page.name} links {target}, which is not there"
    for ref in p.links:
        if ref.startswith("#"):
            assert ref[1:] in p.ids, f"{page.name}: #{ref[1:]} is not on the page"
    return p


def test_the_report_writes_a_page_per_run_and_one_for_the_registration(demo, run_dir, tmp_path):
    runs = reported_runs(run_dir, demo)
    rep = build_report(demo, runs, now=NOW)
    folder = tmp_path / "runs"
    reg = folder / registration_page_name(rep.registration_md.name)
    assert reg.is_file() and rep.registration_page == reg
    for arm, d in runs.items():
        assert (d / PAGE).is_file() and rep.arms[arm].page == d / PAGE
    pages = [reg] + [d / PAGE for d in runs.values()]
    for page in pages:
        assert_self_contained(page, tmp_path)
    # each run's page says where the registration's page is, and that one links every run's page
    for d in runs.values():
        assert f'href="../{reg.name}"' in (d / PAGE).read_text()
        assert f'href="{d.name}/{PAGE}"' in reg.read_text()


def test_every_number_is_the_reports_own(demo, run_dir, tmp_path):
    runs = reported_runs(run_dir, demo)
    build_report(demo, runs, now=NOW)
    for arm, d in runs.items():
        res = json.loads((d / rd.RESULTS_JSON).read_text())
        p = Parsed((d / PAGE).read_text())
        prim = res["primary"]
        assert p.value("successes", arm=arm) == str(prim["successes"]) and p.value("n", arm=arm) == str(prim["n"])
        for kind, (lo, hi) in prim["intervals"].items():
            assert p.value(f"interval-{kind}", arm=arm) == f"[{lo:.1%}, {hi:.1%}]"
        assert p.value("knock_aways", arm=arm) == str(res["knock_aways"])
        assert p.value("engaged", arm=arm) == str(res["engaged"])
        assert p.value("valid", arm=arm) == ("VALID" if res["valid"] else "INVALID")
        for v in res["verdicts"]:
            assert p.value("label", key=v["key"]) == v["label"]


def test_a_seed_cell_opens_that_seeds_video_and_row(demo, run_dir, tmp_path):
    runs = reported_runs(run_dir, demo)
    build_report(demo, runs, now=NOW)
    d = runs["scripted"]
    p = Parsed((d / PAGE).read_text())
    cells = [a for t, a in p.elements if t == "a" and "cell" in a.get("class", "") and a.get("data-seed")]
    assert sorted(int(a["data-seed"]) for a in cells) == list(range(6))
    for a in cells:
        seed = int(a["data-seed"])
        assert a["href"] == "#" + seed_id("scripted", seed)
        box = next(x for t, x in p.elements if t == "section" and x.get("id") == seed_id("scripted", seed))
        assert box["data-seed"] == str(seed) and box["data-arm"] == "scripted"
    videos = [a["src"] for t, a in p.elements if t == "video"]
    assert videos == [f"{rd.VIDEOS}/rollout_seed{s:03d}.mp4" for s in range(6)]  # in grid order, relative
    # a seed without a video says so; the grid marks the filmed ones
    (d / rd.VIDEOS / "rollout_seed004.mp4").unlink()
    build_report(demo, runs, now=NOW)
    p = Parsed((d / PAGE).read_text())
    assert [a["src"] for t, a in p.elements if t == "video"] == [f"{rd.VIDEOS}/rollout_seed{s:03d}.mp4"
                                                                  for s in (0, 1, 2, 3, 5)]
    box4 = (d / PAGE).read_text().split(f'id="{seed_id("scripted", 4)}"')[1].split("</section>")[0]
    assert "Not filmed" in box4
    cell4 = next(a for t, a in p.elements if t == "a" and a.get("data-seed") == "4" and "cell" in a.get("class", ""))
    assert "film" not in cell4["class"].split()


def test_what_a_document_or_a_row_says_is_escaped(tmp_path, run_dir):
    src = Path(__file__).resolve().parents[2] / "prereg" / "examples" / "demo.md"
    doc = tmp_path / "hostile.md"
    text = src.read_text().split("<!-- fontaine:sealed")[0].rstrip() + "\n"
    text = text.replace('title: "Demo:', 'title: "<script>alert(1)</script> Demo:')
    text = text.replace("## Plain words\n", "## Plain words\n\nA <img src=x onerror=alert(2)> in the words.\n")
    doc.write_text(text)
    freeze(doc)
    rows = [make_row(s, note="<b onmouseover=alert(3)>hi</b>") for s in range(6)]
    d = run_dir("scripted", rows, status={"state": "done"}, launched=(doc, "scripted"))
    build_report(doc, {"scripted": d}, append=False, now=NOW)
    page = (d / PAGE).read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "<b onmouseover" not in page and "&lt;b onmouseover=alert(3)&gt;" in page
    assert_self_contained(d / PAGE, tmp_path)


def test_a_comparison_page_draws_the_band_and_marks_the_decision(tmp_path):
    doc = compare_doc(tmp_path)
    a = [s % 2 == 0 for s in range(40)]  # clumsy wins every other seed, steady every seed: decided early
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows(a, [True] * 40))
    rep = build_report(doc, {"clumsy-vs-steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    assert c.outcome == "B better" and c.decided_at is not None
    page = run / PAGE
    p = assert_self_contained(page, tmp_path)
    res = json.loads((run / rd.RESULTS_JSON).read_text())
    assert p.value("decision") == res["comparison"]["text"]
    mark = next(a for t, a in p.elements if t == "text" and a.get("data-k") == "decided_at")
    assert mark["data-v"] == str(res["comparison"]["at"])
    assert p.value("savings") == res["comparison"]["savings_text"]  # an undecided run: more than the batch
    assert "episodes run against the batch's" in p.value("savings")
    assert [t for t, a in p.elements if t == "polygon"]  # the band
    for arm in ("clumsy", "steady"):
        assert p.value("successes", arm=arm) == str(res["arms"][arm]["primary"]["successes"])


def test_the_shipped_examples_pages_go_beside_the_runs_only(tmp_path, run_dir, examples_dir):
    shutil.copy(examples_dir / "demo.md", tmp_path / "demo-copy.md")
    d = run_dir("scripted", [make_row(s, success=True, progress_final_cm=7.0) for s in range(6)],
                status={"state": "done"}, launched=(tmp_path / "demo-copy.md", "scripted"))
    rep = build_report(examples_dir / "demo.md", {"scripted": d}, now=NOW)
    assert not rep.appended and (d / PAGE).is_file()
    assert not (examples_dir / PAGE).exists()


@pytest.mark.parametrize("seeds", [1, 100])
def test_the_chart_labels_stay_readable_at_any_number_of_seeds(tmp_path, run_dir, seeds):
    """The per-seed chart keeps 12 px text and at least 6 px a bar: wide runs scroll sideways rather than shrink."""
    src = Path(__file__).resolve().parents[2] / "prereg" / "examples" / "demo.md"
    doc = tmp_path / "wide.md"
    doc.write_text(src.read_text().split("<!-- fontaine:sealed")[0].replace("seeds: 0-5", f"seeds: 0-{seeds - 1}"))
    freeze(doc)
    d = run_dir("scripted", [make_row(s, success=s % 3 == 0, progress_final_cm=float(s % 7) - 2) for s in range(seeds)],
                status={"state": "done"}, launched=(doc, "scripted"))
    build_report(doc, {"scripted": d}, append=False, now=NOW)
    text = (d / PAGE).read_text()
    bars = re.findall(r'<g data-arm="scripted" data-seed="(\d+)"[^>]*><title>[^<]*</title><rect [^>]*width="([\d.]+)"', text)
    assert len(bars) == seeds and min(float(w) for _, w in bars) >= 5.9
    assert "font:12px" in (d / PAGE).read_text()


def test_an_unregistered_report_says_so_first_on_its_pages(demo, run_dir, tmp_path):
    d = run_dir("elsewhere", [make_row(s) for s in range(6)], status={"state": "done"})  # no manifest: not launched here
    rep = build_report(demo, {"scripted": d}, append=False, unregistered=True, now=NOW)
    for page in (d / PAGE, rep.registration_page):
        body = page.read_text().split("<main>", 1)[1]
        assert body.lstrip().startswith('<header><p class="banner">UNREGISTERED REPORT')
    assert f"wrote     {d / rd.RESULTS}, {d / rd.CHART}, {d / PAGE}" in rep.summary_text()


def test_a_seals_fields_are_escaped_on_the_page(examples_dir):
    """The seal's time and commit reach the page as the document holds them (a seal line is checked against its
    hash before a report, so here they are set on the loaded document): escaped like every other document value."""
    doc = load(examples_dir / "demo.md")
    seal = next(sm.section for sm in doc.sections if sm.section.sealed).seal
    seal.attrs["frozen_at"] = "<img/src=x/onerror=alert(4)>"
    seal.attrs["tool_commit"] = "<b>c</b>"
    html = _question(doc)
    assert "<img" not in html and "<b>" not in html

    class Text(HTMLParser):  # what a reader sees: the values in words, not markup
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.text = ""

        def handle_data(self, data):
            self.text += data
    seen = Text()
    seen.feed(html)
    assert "frozen <img/src=x/onerror=alert(4)>" in seen.text and "tool <b>c</b>" in seen.text
