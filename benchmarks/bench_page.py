"""The report's page (results.html) for a 100-seed registration with videos: its size and its load time.

    .venv/bin/python benchmarks/bench_page.py [--seeds 100] [--repeats 7]

Builds a comparison run of two arms over --seeds seeds (hand-made rows, every seed filmed: H.264 clips of
the engine's size and settings, 448x224 at 10 fps, libx264 quality 7, the way engine/workers/pool.py writes them),
reports it with `build_report` (which writes the pages), then opens the run's page and the registration's
page in the system's Chromium (tests/browser.py) from disk and from a loopback static server, at a phone's
and a desktop's width. Prints:

  1. the pages' bytes (and gzip-compressed, what a static host sends), the videos' bytes, and how many
     requests the page makes while it loads (videos are preload="none": none until a seed is opened);
  2. the load time (navigation start to the load event, median of --repeats) against a blank page
     loaded the same way in the same browser (the browser's own cost), as a ratio;
  3. the time from a click on a seed's cell to the first frame of its video playing;
  4. how much of the report's wall the pages cost (rendering them again from the same report objects).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prereg import rundir as rd  # noqa: E402
from prereg.document.seal import freeze  # noqa: E402
from prereg.outputs.page import PAGE, registration_page_name  # noqa: E402
from prereg.outputs.report import build_report  # noqa: E402
from tests.browser import DESKTOP, PHONE, browser, open_page, static_server  # noqa: E402

DOC = """---
fontaine: fontaine-prereg/1
id: bench-page
title: "Two arms of near skill, every seed filmed"
created: 2026-12-04
arms:
  - name: clumsy
    policy: scripted
    grasp_miss: 0.5
  - name: steady
    policy: scripted
    grasp_miss: 0.45
protocol:
  seeds: 0-{last}
  episode_seconds: 20
  workers: 8
  video_draw: all
reads:
  primary: successes
  interval: both
gates:
  gpu_hours: 1
decision_rules:
  - if: steady.successes > clumsy.successes
    then: the steadier arm succeeds more often
comparison: {{arms: [clumsy, steady], metric: success, test: savi, alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: {n}}}
---

# A benchmark registration

## Plain words

Two arms, {n} seeds each, every episode filmed: the size of the page and how fast it opens.
"""


def clips(folder: Path, k: int = 4, frames: int = 90) -> list[Path]:
    """k distinct H.264 clips as the engine writes them (textured, moving frames; ~9 s at 10 fps)."""
    import imageio.v2 as imageio
    import numpy as np

    rng = np.random.default_rng(7)
    out = []
    for i in range(k):
        path = folder / f"clip{i}.mp4"
        base = rng.integers(0, 255, size=(224, 448, 3), dtype=np.uint8)
        w = imageio.get_writer(str(path), fps=10, codec="libx264", macro_block_size=1, quality=7)
        for f in range(frames):
            w.append_data(np.roll(base, 3 * f + i, axis=1))
        w.close()
        out.append(path)
    return out


def build(root: Path, n: int) -> tuple[Path, Path]:
    from tests.comparison_run import make_comparison_run, row

    doc = root / "bench.md"
    doc.write_text(DOC.format(last=n - 1, n=n))
    freeze(doc)
    run = root / "runs" / "bench-clumsy-vs-steady"
    rng = random.Random(20261204)
    rows = []
    for s in range(n):
        for arm, p in (("clumsy", 0.5), ("steady", 0.55)):
            ok = rng.random() < p
            prog = 15.0 + rng.uniform(-3, 3) if ok else rng.uniform(-4, 6)
            rows.append(row(arm, s, ok, prog, video=f"{rd.VIDEOS}/rollout_{arm}_seed{s:03d}.mp4"))
    make_comparison_run(doc, run, rows, stop=False, state="done")
    (run / rd.VIDEOS).mkdir()
    source = clips(root)
    for i, r in enumerate(rows):
        shutil.copyfile(source[i % len(source)], run / r["video"])
    return doc, run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-page-"))
    try:
        run_bench(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_bench(root: Path, args) -> None:
    doc, run = build(root, args.seeds)
    t0 = time.perf_counter()
    rep = build_report(doc, {"clumsy-vs-steady": run}, append=False)
    report_s = time.perf_counter() - t0
    folder = run.parent
    reg = folder / registration_page_name(rep.registration_md.name)
    pages = {"run page": run / PAGE, "registration page": reg}
    videos = sorted((run / rd.VIDEOS).glob("*.mp4"))
    print(f"{args.seeds} seeds x 2 arms, every seed filmed; report (with its pages) {report_s:.2f} s")
    for name, p in pages.items():
        raw = p.read_bytes()
        print(f"  {name:18s} {len(raw) / 1024:8.1f} KiB   gzip {len(gzip.compress(raw)) / 1024:7.1f} KiB")
    vbytes = sum(v.stat().st_size for v in videos)
    print(f"  videos             {len(videos)} files, {vbytes / 2**20:.1f} MiB ({vbytes / len(videos) / 1024:.0f} KiB each)")
    render_s = render_only(rep, doc)
    print(f"  rendering both pages again from the report's objects: {render_s * 1000:.0f} ms "
          f"({render_s / report_s:.1%} of the report's wall)")
    (folder / "blank.html").write_text("<!doctype html><html><head><meta charset=utf-8><link rel=icon href='data:,'>"
                                       "<title>blank</title></head><body></body></html>")
    with browser() as b, static_server(folder) as base:
        for where, url_of in (("disk", lambda p: p.as_uri()), ("static server", lambda p: f"{base}/{p.relative_to(folder)}")):
            for vname, vp in (("phone", PHONE), ("desktop", DESKTOP)):
                blank = median_load(b, vp, url_of(folder / "blank.html"), args.repeats)[0]
                for name, p in pages.items():
                    ms, requests = median_load(b, vp, url_of(p), args.repeats)
                    first = first_frame(b, vp, url_of(p))
                    print(f"  {where:13s} {vname:7s} {name:18s} load {ms:7.1f} ms (blank page {blank:5.1f} ms: "
                          f"{ms / blank:5.1f}x)  requests while loading {requests}  cell click to first frame {first:6.1f} ms")


def render_only(rep, doc_path: Path) -> float:
    """The pages rendered again from the report's own objects (what building them costs inside the report)."""
    from prereg.core.colors import registration_colors
    from prereg.document.read import load_valid
    from prereg.outputs.page import registration_page, run_page
    from prereg.stats.verdict import Judgement

    doc = load_valid(doc_path)
    colors = registration_colors(doc)
    judgement = Judgement(rep.verdicts, rep.sequential)
    reps = list(rep.arms.values())
    folder = rep.registration_md.parent
    t0 = time.perf_counter()
    run_page(doc, reps, judgement, rep.generated_at, colors, unregistered=False,
             registration=folder / registration_page_name(rep.registration_md.name))
    registration_page(doc, rep.arms, judgement, rep.generated_at, colors, folder, unregistered=False)
    return time.perf_counter() - t0


def median_load(b, viewport: dict, url: str, repeats: int) -> tuple[float, int]:
    times, requests = [], 0
    for _ in range(repeats):
        w = open_page(b, viewport)
        w.page.goto(url, wait_until="load")
        nav = json.loads(w.page.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])"))
        times.append(nav["loadEventEnd"] - nav["startTime"])
        requests = len(w.requests)
        problems = w.problems()
        assert not problems, problems
        w.page.context.close()
    return statistics.median(times), requests


def first_frame(b, viewport: dict, url: str) -> float:
    w = open_page(b, viewport)
    page = w.page
    page.goto(url, wait_until="load")
    cell = page.locator('.grid[data-arm="steady"] a.cell').nth(50)
    t0 = time.perf_counter()
    cell.click()
    page.locator(".seed:target video").evaluate(
        "v => new Promise((ok, bad) => { v.addEventListener('playing', ok, {once: true}); "
        "v.addEventListener('error', () => bad(v.error), {once: true}); v.play(); })")
    ms = (time.perf_counter() - t0) * 1000
    w.page.context.close()
    return ms


if __name__ == "__main__":
    main()
