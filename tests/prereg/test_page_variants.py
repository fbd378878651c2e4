"""A crossed design on the results page (issue 48): each arm's variants table (k/n, rate and interval per
variant, decides/apart marks, the pooled rate with its interval, the worst variant), a grid line per
variant, and each seed's episode on every variant with its video. No browser: the HTML is parsed."""

from __future__ import annotations

import json
import re

from prereg import rundir as rd
from prereg.core.wilson import wilson_interval
from prereg.outputs.page import PAGE
from prereg.outputs.page_html import seed_id
from prereg.outputs.page_variants import variants_section
from prereg.outputs.report import build_report
from prereg.rundir.files import video_relpath
from prereg.stats.story import Story, VariantStory
from prereg.stats.variants import read_variants
from tests.crossed_run import ALL, CAMERA, VARIANTS, wins
from tests.prereg.conftest import make_row
from tests.prereg.test_page import Parsed
from tests.prereg.test_publish import NOW


def crossed_rows(seeds, filmed=()) -> list[dict]:
    out = []
    for s in seeds:
        for v in ALL:
            name = None if v == "base" else v
            ok = wins(v, s)
            out.append(make_row(s, variant=name, success=ok, progress_cm=8.0 if ok else 0.0,
                                progress_final_cm=7.5 if ok else 0.0,
                                video=video_relpath(s, None, name) if s in filmed else None))
    return out


def test_the_variants_table_states_the_story_with_each_variants_interval():
    rows = crossed_rows(range(8))
    told = VariantStory.of("scripted", read_variants(rows, range(8), ALL, camera=CAMERA), "base")
    html = variants_section([Story("r", "done", "VALID", (), (), (), variants=(told,))])
    p = Parsed(html)
    table = {a.get("data-variant") for t, a in p.elements if t == "tr" and a.get("data-variant")}
    assert table == {*ALL, "pooled"}
    k = [t for a, t in p.values if a.get("data-k") == "k"]
    assert k == ["6/8", "4/8", "2/8", "8/8"]  # base, dim, clutter, cam-left
    lo, hi = wilson_interval(4, 8)
    assert f"[{lo:.1%}, {hi:.1%}]" in [t for a, t in p.values if a.get("data-k") == "ci"]
    assert told.pooled_words() in html and p.value("worst") == "clutter"
    assert "decides" in html and "camera, apart" in html
    assert variants_section([Story("r", "done", "VALID", (), (), ())]) == ""  # one scene: no section


def test_a_crossed_runs_page_has_a_grid_line_per_variant_and_every_variants_episode_in_a_seed(demo, run_dir):
    rows = crossed_rows(range(6), filmed=range(6))
    manifest = {"config": {"variants": list(VARIANTS), "camera_variants": list(CAMERA), "read_variant": "base"}}
    d = run_dir("crossed", rows, status={"state": "done"}, launched=(demo, "scripted"), manifest=manifest)
    for r in rows:
        (d / r["video"]).parent.mkdir(exist_ok=True)
        (d / r["video"]).write_bytes(b"not a real mp4: the page links it")
    (d / r["video"]).unlink()  # the last seed's last variant: not filmed after all
    build_report(demo, {"scripted": d}, now=NOW)
    html = (d / PAGE).read_text()
    p = Parsed(html)
    grids = [a for t, a in p.elements if t == "div" and "grid" in a.get("class", "").split()]
    assert [g.get("data-variant") for g in grids] == [None, *VARIANTS]  # the read variant's grid, then each variant's
    dim = html.split('class="grid" data-arm="scripted" data-variant="dim">')[1].split("</div>")[0]
    cells = re.findall(r'data-seed="(\d+)" data-outcome="(\w+)"', dim)
    assert [(int(s), o == "success") for s, o in cells] == [(s, s % 2 == 0) for s in range(6)]  # dim wins even seeds
    box = html.split(f'id="{seed_id("scripted", 5)}"')[1].split("</section>")[0]
    items = box.split('<ul class="variants">')[1].split("</ul>")[0]
    assert [i.split('"')[1] for i in items.split("<li data-variant=")[1:]] == list(ALL)
    assert f'src="{video_relpath(5, None, "dim")}"' in items and "base (decides)" in items
    assert "not filmed" in items.split('"cam-left"')[1]
    # the report's story has the arm's variant reads: the page's table states them
    res = json.loads((d / rd.RESULTS_JSON).read_text())
    (told,) = Story.from_dict(res["story"]).variants
    table = html.split('<table class="variants" data-arm="scripted">')[1].split("</table>")[0]
    assert [c.variant for c in told.cells] == list(ALL) and all(f"{c.successes}/{c.n}" in table for c in told.cells)
    assert told.pooled_words() in html
    srcs = [a["src"] for t, a in p.elements if t == "video"]
    assert f"{rd.VIDEOS}/rollout_seed005.mp4" in srcs and video_relpath(0, None, "clutter") in srcs
